"""What is left to judge: an annotator's queue on a suite and the judging progress of the suite.

The queue holds the models an annotator is to judge (:func:`.assignments.assigned_models`) that have a
finished current run over the suite and no current judgment by the annotator there
(:func:`.judgments.unjudged_models`). Models short of their wanted judgments come first, the one with
the most judgments so far first: a model collects its k judgments before the next model is begun, so
the first judgments of different annotators land on the same models and agreement can be measured
after a few minutes of work, not only once every model is done.
Progress counts, per model and per annotator, the current judgments against the assignments or the
suite's judging plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from analytics.workspace import Workspace

from .assignments import _alias, _blind_key, _check_suite, assigned_models, get_plan, judgeable_runs, judging_accounts, list_assignments
from .judgments import latest_judgments, unjudged_models

#: Columns of :func:`judging_progress` (one row per model) and :func:`annotator_progress` (one per annotator).
MODEL_PROGRESS_COLUMNS = ["model", "alias", "run_id", "judged", "wanted", "complete", "annotators"]
ANNOTATOR_PROGRESS_COLUMNS = ["annotator", "done", "assigned"]


@dataclass(frozen=True)
class QueueItem:
    """One model an annotator still has to judge on a suite.

    ``alias`` is :func:`.assignments.blind_name`; ``judged`` counts the annotators with a current judgment of the
    model on the suite so far, ``wanted`` how many the plan or the assignments want.
    """

    model: str
    run_id: str
    alias: str
    judged: int
    wanted: int


def queue(workspace: Workspace, annotator: str, suite_id: str, *, models: Sequence[str] | None = None) -> list[QueueItem]:
    """The models ``annotator`` still has to judge on ``suite_id``.

    Parameters
    ----------
    workspace : Workspace
    annotator : str
    suite_id : str
        An existing suite.
    models : sequence of str, default=None
        The candidates; None: the models assigned to the annotator (:func:`.assignments.assigned_models`). A lead
        without assignments judges every model (the Judge page passes them all).

    Returns
    -------
    list of QueueItem
        The candidates with a finished current run over the suite and no current judgment by the
        annotator there; in the order of the module notes.

    Raises
    ------
    NotFoundError
        Unknown suite.
    """
    _check_suite(workspace, suite_id)
    table = judging_progress(workspace, suite_id).set_index("model")
    scope = assigned_models(workspace, annotator, suite_id) if models is None else models
    candidates = [m for m in scope if m in table.index and table.at[m, "run_id"]]
    items = [
        QueueItem(m, table.at[m, "run_id"], table.at[m, "alias"], int(table.at[m, "judged"]), int(table.at[m, "wanted"]))
        for m in unjudged_models(workspace, annotator, suite_id, candidates)
    ]
    return sorted(items, key=_queue_order)


def _queue_order(item: QueueItem) -> tuple[bool, int, str]:
    """Sort key of a queue: models still short of their wanted judgments before complete ones, then the
    most judged first (finish a begun model before starting another, so annotators overlap), then by
    alias (an order that says nothing about names, the same for every annotator)."""
    return (item.judged >= item.wanted > 0, -item.judged, item.alias)


def judging_progress(workspace: Workspace, suite_id: str) -> pd.DataFrame:
    """Per model of the suite: judgments so far and wanted.

    Parameters
    ----------
    workspace : Workspace
    suite_id : str
        An existing suite.

    Returns
    -------
    DataFrame
        Columns :data:`MODEL_PROGRESS_COLUMNS`: ``model`` (str), ``alias`` (:func:`.assignments.blind_name`),
        ``run_id`` (its newest finished current run, '' when none), ``judged`` (int64: annotators with
        a current judgment on the suite), ``wanted`` (int64: under an everyone plan its k; under a
        plan without everyone the larger of k and the number of annotators assigned; without a plan
        that number, 0 when nobody is assigned), ``complete`` (bool: judged >= wanted > 0),
        ``annotators`` (comma-separated annotators assigned the model, '' when none). One row per
        model that has a finished run or an assignment, sorted by model.
    """
    _check_suite(workspace, suite_id)
    finished = judgeable_runs(workspace, suite_id)
    runs = dict(zip(finished["model"], finished["id"]))
    assigned: dict[str, list[str]] = {}
    for a in list_assignments(workspace, suite_id):
        assigned.setdefault(a.model, []).append(a.annotator)
    judged = latest_judgments(workspace, suite_id).groupby("model")["annotator"].nunique()
    plan = get_plan(workspace, suite_id)
    rows, key = [], _blind_key(workspace)  # one read of the key, not one per model
    for model in sorted(set(runs) | set(assigned)):
        names = assigned.get(model, [])
        wanted = max(plan.judgments_wanted if plan else 0, 0 if plan and plan.everyone else len(names))
        done = int(judged.get(model, 0))
        rows.append((model, _alias(key, suite_id, model), runs.get(model, ""), done, wanted, wanted > 0 and done >= wanted, ", ".join(names)))
    return pd.DataFrame(rows, columns=MODEL_PROGRESS_COLUMNS).astype({"judged": "int64", "wanted": "int64", "complete": bool})


def annotator_progress(workspace: Workspace, suite_id: str) -> pd.DataFrame:
    """Per annotator of the suite: models judged of those assigned.

    Returns
    -------
    DataFrame
        Columns :data:`ANNOTATOR_PROGRESS_COLUMNS`: ``annotator`` (str), ``done`` and ``assigned``
        (int64). Annotators are those assigned, those who judged on the suite and, under an everyone
        plan, every enabled account that may judge; sorted by name.
    """
    _check_suite(workspace, suite_id)
    latest = latest_judgments(workspace, suite_id)
    names = {a.annotator for a in list_assignments(workspace, suite_id)} | set(latest["annotator"])
    plan = get_plan(workspace, suite_id)
    if plan is not None and plan.everyone:
        names |= set(judging_accounts(workspace))
    rows = []
    for name in sorted(names):
        mine = set(assigned_models(workspace, name, suite_id))
        done = set(latest.loc[latest["annotator"] == name, "model"]) & mine
        rows.append((name, len(done), len(mine)))
    return pd.DataFrame(rows, columns=ANNOTATOR_PROGRESS_COLUMNS).astype({"done": "int64", "assigned": "int64"})
