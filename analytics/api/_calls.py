"""The public API's calls: each reads what a dashboard page shows, by calling the library function
that page calls (no computation of its own beyond picking rows and resolving a suite's name)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pandas as pd

from analytics._validation import ParameterNames
from analytics.exceptions import NotFoundError
from analytics.findings import FailureTable, build_report, failure_table, keyword_model_matrix
from analytics.gate import CheckResult, Policy, load_policy
from analytics.gate import check as gate_check
from analytics.judging import Agreement, latest_judgments, measure_agreement
from analytics.models import list_models
from analytics.runs import ColourScale, current_runs, list_runs, load_run, run_accuracies, run_matrices, run_point_clouds, suite_colour_scale
from analytics.suites import list_suites, resolve_suite
from analytics.variance import DEFAULT_SETTINGS, MatrixSettings, PointCloud, VarianceMatrix
from analytics.workspace import Workspace

#: Fewest composites of a keyword in the failure tables: the Failures page's default.
MIN_COUNT = 3


def open_workspace(path: str | os.PathLike[str] | None = None, *, create: bool = False) -> Workspace:
    """The workspace folder at ``path``, as the CLI's ``--workspace`` opens it.

    Parameters
    ----------
    path : path-like, optional
        Default: ``$BACKDROP_WORKSPACE``, else the default workspace (:func:`analytics.workspace.default_workspace_path`).
    create : bool, default=False
        Make an empty workspace when there is none (otherwise :class:`~analytics.exceptions.WorkspaceError`).
    """
    return Workspace(path, create=create)


def models(workspace: Workspace) -> pd.DataFrame:
    """One row per registered model (:meth:`analytics.models.ModelSpec.summary`, as ``python -m analytics models``
    and the Models page list them), by name; a frame with a ``name`` column and no rows when there is none."""
    rows = [spec.summary() for spec in list_models(workspace)]
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=["name"])


def suites(workspace: Workspace) -> pd.DataFrame:
    """One row per saved suite, newest first (:func:`analytics.suites.list_suites`: id, name, label, method, n, ...)."""
    return list_suites(workspace)


def runs(workspace: Workspace, *, model: str | None = None, suite: str | None = None) -> pd.DataFrame:
    """Runs, newest first, with status, accuracies and whether they are stale (:func:`analytics.runs.list_runs`).

    Parameters
    ----------
    workspace : Workspace
    model : str, optional
        Only this model's runs.
    suite : str, optional
        Only runs over this suite: its id, label or name.
    """
    return list_runs(workspace, model=model, suite_id=_suite_id(workspace, suite))


def latest_run(workspace: Workspace, *, model: str, suite: str | None = None) -> str:
    """The id of ``model``'s newest finished current run (over ``suite``: id, label or name; default any suite).

    Raises
    ------
    NotFoundError
        The model has no such run (the message says how to start one).
    """
    found = current_runs(workspace, model=model, suite_id=_suite_id(workspace, suite))
    done = found[found["status"] == "done"]
    if done.empty:
        over = f" over suite {suite!r}" if suite else ""
        raise NotFoundError(
            f"model {model!r} has no finished current run{over} in {workspace.root}; start one with "
            f"`run(workspace, models={model!r}, suite=...)`, on the Run page or with `python -m analytics run`"
        )
    return str(done["id"].iloc[0])


def point_clouds(workspace: Workspace, run_id: str) -> dict[str, PointCloud]:
    """The run's point cloud per signal (:func:`analytics.runs.run_point_clouds`), for :func:`analytics.figures.point_scatter`."""
    return run_point_clouds(workspace, run_id)


def matrices(
    workspace: Workspace, run_id: str, *, settings: MatrixSettings = DEFAULT_SETTINGS, classes: Sequence[str] | None = None
) -> dict[str, VarianceMatrix]:
    """The run's variance matrices, one per signal of :data:`analytics.runs.SIGNALS` (the Matrices page's
    heatmaps; :func:`analytics.runs.run_matrices`, cached in the workspace).

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    settings : MatrixSettings, default=DEFAULT_SETTINGS
        Interpolation, e.g. ``MatrixSettings.of("fine")``.
    classes : sequence of str, optional
        Only the targets of these classes (the page's Classes filter).
    """
    return run_matrices(workspace, run_id, settings=settings, classes=classes)


def accuracies(workspace: Workspace, run_id: str, *, classes: Sequence[str] | None = None) -> dict[str, float]:
    """The run's ``accuracy``, ``original_accuracy`` and ``worst_case_accuracy`` in [0, 1], as the Matrices
    page shows them (:func:`analytics.runs.run_accuracies`; over the targets of ``classes`` when given)."""
    return run_accuracies(load_run(workspace, run_id), classes=classes)


def colour_scale(workspace: Workspace, suite: str, *, settings: MatrixSettings = DEFAULT_SETTINGS) -> ColourScale:
    """The suite's fixed colour range per signal (:func:`analytics.runs.suite_colour_scale`, never freezing it),
    for comparable heatmaps: ``zmin, zmax = scale.colour_range(signal)``, then ``variance_heatmap(m, zmin=zmin, zmax=zmax)``."""
    return suite_colour_scale(workspace, resolve_suite(workspace, suite), settings=settings)


def failures(workspace: Workspace, run_id: str, *, min_count: int = MIN_COUNT, classes: Sequence[str] | None = None) -> FailureTable:
    """The Failures page's table of a run: error rate and probability drop per scene keyword and ontology
    level, with 95 % intervals (:func:`analytics.findings.failure_table`; ``.keywords`` is a DataFrame).

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    min_count : int, default=3
        Leave out keywords with fewer composites (the page's default).
    classes : sequence of str, optional
        Only the composites of these classes.
    """
    return failure_table(workspace, run_id, min_count=min_count, classes=classes)


def keyword_error_rates(
    workspace: Workspace, run_ids: Sequence[str], *, min_count: int = MIN_COUNT, classes: Sequence[str] | None = None
) -> pd.DataFrame:
    """Keyword x model error rates of runs over one suite (:func:`analytics.findings.keyword_model_matrix`),
    what :func:`analytics.figures.keyword_heatmap` draws."""
    return keyword_model_matrix(workspace, run_ids, min_count=min_count, classes=classes)


def judgments(workspace: Workspace, suite: str) -> pd.DataFrame:
    """The judgments that count on a suite: the latest per annotator and model (:func:`analytics.judging.latest_judgments`)."""
    return latest_judgments(workspace, _suite_id(workspace, suite))


def agreement(workspace: Workspace, suite: str) -> Agreement:
    """Agreement of the annotators on a suite, as the Agreement page shows it: Fleiss' and Cohen's κ,
    Krippendorff's α, agreement with the majority, each with a bootstrap interval
    (:func:`analytics.judging.measure_agreement` of :func:`judgments`)."""
    return measure_agreement(judgments(workspace, suite))


def check(
    workspace: Workspace,
    *,
    model: str,
    policy: str | os.PathLike[str] | Policy,
    baseline: str | None = None,
    suite: str | None = None,
    out: str | os.PathLike[str] = "backdrop-check",
    report: bool = True,
    device: str | None = None,
    batch_size: int = 32,
) -> CheckResult:
    """The release gate, as ``python -m analytics check`` runs it (:func:`analytics.gate.check`): ``model``
    against ``policy`` (and ``baseline``), writing ``junit.xml``, ``summary.md`` and ``report.html`` into ``out``.

    Parameters
    ----------
    workspace : Workspace
    model : str
        The candidate, a registered model.
    policy : path-like or Policy
        A TOML policy file (see ``examples/policy.toml``) or :func:`analytics.gate.load_policy`'s result.
    baseline : str, optional
        The last release; ``[baseline]`` rules need it.
    suite : str, optional
        Suite id, label or name; default the policy's ``[suite]``.
    out : path-like, default='backdrop-check'
    report : bool, default=True
        Also write the HTML report.
    device : str, optional
        ``cpu``, ``cuda`` or ``cuda:N``; default CUDA when available.
    batch_size : int, default=32

    Returns
    -------
    CheckResult
        ``.passed``, ``.results``; :func:`analytics.gate.verdict_table` of ``.results`` is the verdict as a DataFrame.
    """
    policy = policy if isinstance(policy, Policy) else load_policy(policy)
    return gate_check(
        workspace, policy, model, out=out, baseline=baseline, suite_id=_suite_id(workspace, suite), report=report, device=device, batch_size=batch_size,
        names=ParameterNames({"suite_id": "suite"}),
    )  # fmt: skip


def report(workspace: Workspace, model: str, *, compare: Sequence[str] = (), suite: str | None = None, min_count: int = MIN_COUNT) -> str:
    """The self-contained HTML report of ``model`` beside the models of ``compare`` (:func:`analytics.findings.build_report`),
    as the pages' "Build report" button makes it; write it with ``Path("report.html").write_text(...)``."""
    return build_report(workspace, model, compare=list(compare), suite_id=_suite_id(workspace, suite), min_count=min_count)


def _suite_id(workspace: Workspace, suite: str | None) -> str | None:
    return None if suite is None else resolve_suite(workspace, suite)
