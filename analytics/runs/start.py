"""Running models over a suite and completing their runs: what a run's own job does.

After the forward passes (:func:`analytics.inference.run_models`), each run that did work is
completed here (:func:`complete_runs`): its summary (:func:`analytics.runs.summarize_run`), the
quantiles of its matrix cells at the default settings (:func:`analytics.runs.run_cell_quantiles`),
the matrices of its correctly classified targets and those of the assessor's subsample, of every
target and of the correct ones (:func:`analytics.runs.run_matrices`,
:func:`analytics.runs.subsample_matrices`), so a page that lists runs, draws a suite's colour
scale or trains the assessor only reads stored numbers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from analytics._progress import Progress
from analytics.exceptions import InvalidInputError
from analytics.team import require_permission
from analytics.workspace import Workspace

from .colour_scale import run_cell_quantiles
from .matrices import MATRIX_TARGETS, cached_matrices, run_matrices, subsample_matrices
from .read import _SUMMARY_VERSION, RunData, load_run, run_row, summarize_run


def start_runs(
    workspace: Workspace,
    model_names: Sequence[str],
    suite_id: str,
    *,
    device: str | None = None,
    batch_size: int | None = None,
    top_k: int = 3,
    progress: Progress | None = None,
    fill_conv: bool = False,
) -> list[str]:
    """Run models over a suite (resuming earlier attempts) and complete the runs that changed.

    :func:`analytics.inference.run_models` followed by :func:`complete_runs` (a finished run that
    is reused keeps its summary and its ``finished`` time, so caches keyed on them stay valid);
    arguments as there.

    Returns
    -------
    list of str
        Run ids in the order of ``model_names``.
    """
    require_permission(workspace, "run_models")
    from analytics.inference import (
        run_models,  # torch: only callers that run models pay for the import
    )

    run_ids = run_models(workspace, model_names, suite_id, device=device, batch_size=batch_size, top_k=top_k, progress=progress, fill_conv=fill_conv)
    complete_runs(workspace, run_ids)
    return run_ids


@dataclass(frozen=True)
class RunsStarted:
    """What :func:`start_runs_that_can` did: run ids of the models that ran, and why the others did not."""

    run_ids: dict[str, str]  # model -> run id, in the order asked
    failed: dict[str, str]  # model -> the one-line reason it could not run

    def to_dict(self) -> dict:
        return {"run_ids": list(self.run_ids.values()), "models": list(self.run_ids), "failed": dict(self.failed)}


def start_runs_that_can(workspace: Workspace, model_names: Sequence[str], suite_id: str, **options) -> RunsStarted:
    """:func:`start_runs` for every model that can score the suite's classes; the others are
    reported with their reason instead of failing the whole call, as a repository run does (a
    newcomer's own 4-class model beside an ImageNet one: before, neither ran).

    Raises
    ------
    InvalidInputError
        No model can score the suite's classes (the message gives each model's reason).
    """
    from analytics.inference import class_problems

    require_permission(workspace, "run_models")
    failed = class_problems(workspace, model_names, suite_id)
    runnable = [name for name in dict.fromkeys(model_names) if name not in failed]
    if not runnable:
        reasons = "; ".join(f"{name}: {reason}" for name, reason in failed.items())
        raise InvalidInputError(f"no model can score this suite's classes: {reasons}")
    run_ids = start_runs(workspace, runnable, suite_id, **options)
    return RunsStarted(dict(zip(runnable, run_ids)), failed)


def complete_runs(workspace: Workspace, run_ids: Sequence[str]) -> None:
    """Summarise each finished run whose summary is missing or old, and store its cell quantiles and
    the matrices of the assessor's subsample (the authors' ``sstv`` feature), reading the run once.

    A run over a suite without semantic distances has no matrices; it gets its summary alone.

    Parameters
    ----------
    workspace : Workspace
    run_ids : sequence of str
        Runs just run (a finished run whose summary, matrices and quantiles are stored costs a few reads).
    """
    for run_id in dict.fromkeys(run_ids):
        row = run_row(workspace, run_id)
        if row["status"] != "done":
            continue
        data: RunData | None = None  # read when something is missing, then shared
        if json.loads(row["summary"] or "{}").get("version") != _SUMMARY_VERSION:  # new or redone
            data = load_run(workspace, run_id)
            summarize_run(workspace, run_id, data=data)
        try:
            for targets in MATRIX_TARGETS:  # the authors' features read the correct targets' matrices
                if cached_matrices(workspace, run_id, targets=targets) is None:
                    data = load_run(workspace, run_id) if data is None else data
                    run_matrices(workspace, run_id, data=data, targets=targets)
                subsample_matrices(workspace, run_id, data=data, targets=targets)
            run_cell_quantiles(workspace, run_id)
        except InvalidInputError:  # no distances, so no matrices and no scale to feed
            continue
