"""Matrix features of labelled models on one suite, for the automated assessor."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from analytics._progress import Progress
from analytics.assessor import DEFAULT_FEATURE_SET, features_table
from analytics.exceptions import NotFoundError
from analytics.models import list_models
from analytics.runs import current_runs, start_runs
from analytics.variance import MatrixSettings
from analytics.workspace import Workspace

logger = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class AssessmentInput:
    """Matrix features of labelled models on one suite, ready for :func:`analytics.assessor.evaluate_assessors`.

    Attributes
    ----------
    suite_id : str
    features : DataFrame
        One row per model (index ``model``): :func:`analytics.assessor.features_table` of each model's
        latest finished run on the suite.
    ran : tuple of str
        Models that had no finished run on the suite and were run now.
    """

    suite_id: str
    features: pd.DataFrame
    ran: tuple[str, ...]


def assessment_input(
    workspace: Workspace,
    models: Sequence[str],
    *,
    suite_id: str | None = None,
    preset: str = "smooth",
    feature_set: str = DEFAULT_FEATURE_SET,
    crops: Sequence[int] = (),
    targets: str | None = None,
    run_missing: bool = True,
    device: str | None = None,
    batch_size: int = 32,
    progress: Progress | None = None,
    notify: Callable[[str], None] | None = None,
) -> AssessmentInput:
    """Features of the latest finished run of every model on a suite, running the models that lack one.

    Parameters
    ----------
    workspace : Workspace
    models : sequence of str
        The labelled models; names no longer registered are skipped (``notify`` says so).
    suite_id : str or None, default=None
        None: :func:`default_suite`.
    preset : str, default='smooth'
        Interpolation preset of the matrices (:data:`analytics.variance.PRESETS`).
    feature_set : str, default='authors'
        Key of :data:`analytics.assessor.FEATURE_SETS`.
    crops : sequence of int, default=()
        Nested centre-crop margins (authors' set only; :func:`analytics.assessor.features_table`).
    targets : {'all', 'correct'}, optional
        Whose matrices are measured; None: the feature set's own (:func:`analytics.assessor.run_features`).
    run_missing : bool, default=True
        Run the models without a finished run on the suite (heads sharing a backbone run together,
        one backbone pass per image); with False they are left out.
    device, batch_size, progress
        For :func:`analytics.runs.start_runs` (``progress(done, total)`` counts images).
    notify : callable (str) or None
        Receives one line per notable step (models run or skipped), e.g. to print on stderr.

    Returns
    -------
    AssessmentInput
    """
    say = notify or logger.info
    registered = {spec.name for spec in list_models(workspace)}
    unknown = [m for m in models if m not in registered]
    if unknown:
        say(f"skipping {len(unknown)} labelled models that are no longer registered: {', '.join(unknown[:5])}")
    names = [m for m in dict.fromkeys(models) if m in registered]
    suite_id = default_suite(workspace, names) if suite_id is None else suite_id
    latest = _latest_runs(current_runs(workspace, suite_id=suite_id), names)  # a retrained head's old runs are stale
    missing = [m for m in names if m not in latest]
    if missing and run_missing:
        say(f"running {len(missing)} models without a finished run on suite {suite_id}: {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}")
        latest.update(zip(missing, start_runs(workspace, missing, suite_id, device=device, batch_size=batch_size, progress=progress)))
    elif missing:
        say(f"leaving out {len(missing)} models without a finished run on suite {suite_id}")
    run_ids = [latest[m] for m in names if m in latest]
    features = features_table(workspace, run_ids, settings=MatrixSettings.of(preset), feature_set=feature_set, crops=crops, targets=targets)
    return AssessmentInput(suite_id, features, tuple(missing) if run_missing else ())


def _latest_runs(runs: pd.DataFrame, models: Sequence[str]) -> dict[str, str]:
    """Model -> id of its newest finished run in ``runs`` (as :func:`analytics.runs.current_runs`, newest first)."""
    done = runs[(runs["status"] == "done") & runs["model"].isin(list(models))]
    return done.drop_duplicates("model").set_index("model")["id"].to_dict()


def default_suite(workspace: Workspace, models: Sequence[str] = ()) -> str:
    """The suite with the most finished runs of ``models`` (then of any model, then the newest).

    Raises
    ------
    NotFoundError
        The workspace has no suite.
    """
    rows = workspace.query(
        "SELECT s.id, SUM(r.status = 'done' AND r.model IN (SELECT value FROM json_each(?))) AS mine, "
        "SUM(r.status = 'done') AS done FROM suites s LEFT JOIN runs r ON r.suite_id = s.id "
        "GROUP BY s.id ORDER BY IFNULL(mine, 0) DESC, IFNULL(done, 0) DESC, s.created DESC, s.id LIMIT 1",
        (json.dumps(list(models)),),
    )
    if not rows:
        raise NotFoundError(
            f"workspace {workspace.root} has no suite to run the models on; build one with "
            "`analytics.api.build_suite(workspace, method='random')`, on the Suites page or with `python -m analytics suite` "
            "(or the zoo's with `python -m analytics zoo`)"
        )
    return rows[0]["id"]
