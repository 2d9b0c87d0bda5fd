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

from analytics.runs import current_runs
from analytics.suites import list_suites
from analytics.workspace import Workspace

from .assignments import _alias, _blind_key, _check_suite, assigned_models, get_plan, judgeable_runs, judging_accounts, list_assignments
from .judgments import judgment_history, latest_judgments, latest_judgments_by_suite, unjudged_models

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


def annotator_queue(workspace: Workspace, annotator: str, suite_id: str, *, blind_only: bool = False) -> tuple[list[QueueItem], int]:
    """The Judge page's queue of ``annotator`` on ``suite_id`` and how many models are in its scope.

    The scope is the models assigned to the annotator that have a finished current run over the suite
    (:func:`.assignments.judgeable_runs`); a lead (``blind_only`` False) without such assignments
    judges every model with one, as in solo mode; an annotator who judges blind (``blind_only``) never
    more than what is assigned.

    Returns
    -------
    queue : list of QueueItem
        :func:`queue` of the scope.
    scope : int
        Models in the scope, judged or not.
    """
    finished = list(judgeable_runs(workspace, suite_id)["model"])
    mine = [model for model in assigned_models(workspace, annotator, suite_id) if model in finished]
    scope = mine if mine or blind_only else sorted(finished)
    return queue(workspace, annotator, suite_id, models=scope), len(scope)


def last_judgment(workspace: Workspace, annotator: str, suite_id: str) -> pd.Series | None:
    """The annotator's most recent judgment on the suite (a row of :func:`.judgments.judgment_history`), or None."""
    history = judgment_history(workspace, suite_id=suite_id)
    mine = history[history["annotator"] == annotator]
    return None if mine.empty else mine.iloc[-1]


def judgeable_suites(workspace: Workspace, *, annotator: str | None = None) -> pd.DataFrame:
    """Suites with at least one finished current run, most models first (ties: by id).

    Parameters
    ----------
    annotator : str, optional
        Only the suites with models assigned to this annotator (someone who judges blind).

    Returns
    -------
    DataFrame
        Columns ``id``, ``suite`` (its label, :func:`analytics.suites.list_suites`) and ``runs``
        (int64: models with a finished current run over it).
    """
    runs = current_runs(workspace)
    counts = runs[runs["status"] == "done"].groupby("suite_id")["model"].nunique()
    suites = list_suites(workspace).set_index("id")
    rows = [
        (suite_id, suites.at[suite_id, "label"], int(count))
        for suite_id, count in counts.items()
        if suite_id in suites.index and (annotator is None or assigned_models(workspace, annotator, suite_id))
    ]
    table = pd.DataFrame(rows, columns=["id", "suite", "runs"]).astype({"runs": "int64"})
    return table.sort_values(["runs", "id"], ascending=[False, True], ignore_index=True)


def judged_suite_counts(workspace: Workspace) -> pd.DataFrame:
    """Suites with current judgments, most judged models first (ties: by id).

    Returns
    -------
    DataFrame
        Columns ``id``, ``suite`` (its label), ``models`` and ``annotators`` (int64: distinct models
        judged on it and annotators who judged there, latest current judgments).
    """
    latest = latest_judgments_by_suite(workspace)
    counts = latest.groupby("suite_id").agg(models=("model", "nunique"), annotators=("annotator", "nunique"))
    suites = list_suites(workspace).set_index("id")
    rows = [
        (suite_id, suites.at[suite_id, "label"], int(row.models), int(row.annotators))
        for suite_id, row in counts.iterrows() if suite_id in suites.index
    ]  # fmt: skip
    table = pd.DataFrame(rows, columns=["id", "suite", "models", "annotators"]).astype({"models": "int64", "annotators": "int64"})
    return table.sort_values(["models", "id"], ascending=[False, True], ignore_index=True)


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
