"""Judgments: an analyst's decision that a model is invariant, borderline or variant (docs/method.md, 'Judgments and agreement').

Judgments live in the workspace table ``judgments`` and keep their history: changing a judgment
adds a new row. A judgment belongs to a suite (the suite whose matrices were judged; given, or the
suite of the named run) and to the weights it judged (``model_key``: the run's, else the model's
current key, see :mod:`analytics.runs`). What counts is the latest *current* judgment per
(annotator, model, suite): judgments of weights the model has been re-registered away from are
stale and never count (rows from before ``model_key`` was recorded follow the registration-time
rule of :mod:`analytics.runs`). Each write is one ``BEGIN IMMEDIATE`` transaction on a WAL
database, so analysts judging at the same time in several browsers (or scripts) never lose a
judgment: SQLite serialises the writers and each waits up to the connection's busy timeout for its
turn.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from analytics._choices import LABELS
from analytics._validation import ParameterNames, check_choice, check_fraction
from analytics.exceptions import InvalidInputError, NotFoundError, PermissionDeniedError
from analytics.models import register_hint
from analytics.team import allowed, require_permission
from analytics.workspace import Workspace, model_keys, now

from .assignments import may_judge

COLUMNS: list[str] = ["id", "annotator", "model", "run_id", "suite_id", "label", "confidence", "note", "created", "model_key"]


@dataclass(frozen=True)
class Judgment:
    """One stored judgment (one row of the ``judgments`` table).

    ``id`` grows with every write, so of two judgments by the same annotator on the same model and
    suite the one with the larger id is the current one. ``model_key`` names the weights judged.
    """

    id: int
    annotator: str
    model: str
    label: str
    run_id: str | None = None
    suite_id: str | None = None
    confidence: float | None = None
    note: str = ""
    created: str = ""
    model_key: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def add_judgment(
    workspace: Workspace,
    *,
    annotator: str,
    model: str,
    label: str,
    run_id: str | None = None,
    suite_id: str | None = None,
    confidence: float | None = None,
    note: str = "",
    names: ParameterNames | None = None,
) -> Judgment:
    """Store one judgment and return it.

    Parameters
    ----------
    workspace : Workspace
    annotator : str
        Who judges; surrounding white space is removed and the rest must not be empty.
    model : str
        A model registered in the workspace's ``models`` table.
    label : {'invariant', 'borderline', 'variant'}
    run_id, suite_id : str, default=None
        The run (or suite) whose matrices the annotator looked at; must exist when given. With a
        run only, the suite is the run's; with both, the run must be over the suite.
    confidence : float in [0, 1], default=None
    note : str, default=''
    names : ParameterNames, optional
        How messages name ``suite_id`` (:func:`analytics.api.judge` calls it ``suite``).

    Returns
    -------
    Judgment
        The stored row, with its id and creation time.

    Raises
    ------
    InvalidInputError
        Empty annotator, unknown label, confidence outside [0, 1], a run of another model or over
        another suite.
    NotFoundError
        The model, run or suite is not in the workspace.
    PermissionDeniedError
        Team mode (``workspace.actor`` set): the actor may not judge, ``annotator`` is not the actor's
        name, or an actor who judges blind (annotator role) judges a model not assigned to them on
        the suite (:func:`.assignments.may_judge`).

    Examples
    --------
    >>> add_judgment(ws, annotator="ana", model="lite0", label="borderline")  # doctest: +SKIP
    Judgment(id=1, annotator='ana', model='lite0', label='borderline', ...)
    """
    annotator = _check_annotator(annotator)
    _check_actor(workspace, annotator)
    check_choice(label, "label", LABELS)
    if confidence is not None:
        confidence = check_fraction(confidence, "confidence", low_open=False)
    if not isinstance(note, str):
        raise InvalidInputError(f"note must be text; got {type(note).__name__}")
    _check_blind_scope(workspace, annotator, suite_id, run_id, model)
    created = now()
    current_key = model_keys(workspace).keys.get(model, "")
    with workspace.transaction() as conn:
        _check_exists(conn, "models", "name", model, "model", f"register it first with {register_hint()} or check the spelling")
        model_key = current_key
        if run_id is not None:
            _check_exists(conn, "runs", "id", run_id, "run", "pass the id of an existing run")
            run = conn.execute("SELECT model, suite_id, model_key FROM runs WHERE id = ?", (run_id,)).fetchone()
            if run["model"] != model:
                raise InvalidInputError(f"run {run_id!r} is a run of model {run['model']!r}, not {model!r}; pass a run of the judged model")
            if suite_id is not None and suite_id != run["suite_id"]:
                raise InvalidInputError(f"run {run_id!r} is over suite {run['suite_id']!r}, not {suite_id!r}; pass the run's suite or leave {(names or ParameterNames())('suite_id')} out")
            suite_id = run["suite_id"]
            model_key = run["model_key"] or current_key  # the weights judged are the run's
        if suite_id is not None:
            _check_exists(conn, "suites", "id", suite_id, "suite", "pass the id of an existing suite")
        cursor = conn.execute(
            "INSERT INTO judgments(annotator, model, run_id, suite_id, label, confidence, note, created, model_key)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (annotator, model, run_id, suite_id, label, confidence, note, created, model_key),
        )
        row_id = int(cursor.lastrowid)
    return Judgment(row_id, annotator, model, label, run_id, suite_id, confidence, note, created, model_key)


def latest_judgments(workspace: Workspace, suite_id: str | None = None) -> pd.DataFrame:
    """The judgments that count: the latest current one per (annotator, model) on a suite.

    Parameters
    ----------
    workspace : Workspace
    suite_id : str, optional
        The suite whose judgments count (:func:`unjudged_models`, agreement per suite). None: every
        suite and judgments without one, the latest per (annotator, model) over all of them (a
        model's most recent label, e.g. for the assessor).

    Returns
    -------
    DataFrame
        Columns :data:`COLUMNS`, one row per (annotator, model), sorted by model then annotator;
        empty (with these columns) when nothing has been judged. Stale judgments (of weights the
        model no longer has) are left out.
    """
    latest = _current(workspace, suite_id).drop_duplicates(["annotator", "model"], keep="last")
    return latest.sort_values(["model", "annotator"], ignore_index=True)


def latest_judgments_by_suite(workspace: Workspace) -> pd.DataFrame:
    """The latest current judgment per (annotator, model, suite), over every suite.

    Returns
    -------
    DataFrame
        Columns :data:`COLUMNS` (``suite_id`` never null), sorted by suite, model, annotator.
    """
    history = _current(workspace, None)
    history = history[history["suite_id"].notna()]
    latest = history.drop_duplicates(["annotator", "model", "suite_id"], keep="last")
    return latest.sort_values(["suite_id", "model", "annotator"], ignore_index=True)


def judgment_history(workspace: Workspace, model: str | None = None, *, suite_id: str | None = None) -> pd.DataFrame:
    """Every judgment ever stored (of ``model`` / on ``suite_id`` when given), stale ones included,
    oldest first; columns :data:`COLUMNS` (a judgment naming only a run gets the run's suite)."""
    rows = workspace.query(
        "SELECT j.id, j.annotator, j.model, j.run_id, COALESCE(j.suite_id, r.suite_id) AS suite_id, j.label, j.confidence,"
        " j.note, j.created, j.model_key FROM judgments AS j LEFT JOIN runs AS r ON r.id = j.run_id"
        " WHERE (? IS NULL OR j.model = ?) AND (? IS NULL OR COALESCE(j.suite_id, r.suite_id) = ?) ORDER BY j.id",
        (model, model, suite_id, suite_id),
    )
    return _frame(rows)


def unjudged_models(workspace: Workspace, annotator: str, suite_id: str, models: Sequence[str] | None = None) -> list[str]:
    """The Judge queue: models ``annotator`` has no current judgment of on ``suite_id``.

    Parameters
    ----------
    workspace : Workspace
    annotator : str
    suite_id : str
        The suite being judged; judgments on other suites do not count.
    models : sequence of str, default=None
        The candidates, in queue order; ``None`` means every registered model, sorted by name.

    Returns
    -------
    list of str
        The candidates without a current judgment by ``annotator`` on the suite, in their given
        order (a model re-registered with other weights is back in the queue).
    """
    annotator = _check_annotator(annotator)
    if not isinstance(suite_id, str) or not suite_id:
        raise InvalidInputError(f"suite_id must name the suite being judged; got {suite_id!r}")
    if models is None:
        models = [row["name"] for row in workspace.query("SELECT name FROM models ORDER BY name")]
    current = _current(workspace, suite_id)
    judged = set(current.loc[current["annotator"] == annotator, "model"])
    return [name for name in models if name not in judged]


def _current(workspace: Workspace, suite_id: str | None) -> pd.DataFrame:
    """:func:`judgment_history` (on ``suite_id`` when given) without the stale judgments."""
    history = judgment_history(workspace, suite_id=suite_id)
    keys = model_keys(workspace)
    current = [keys.is_current(m, k, c) for m, k, c in zip(history["model"], history["model_key"], history["created"])]
    return history[pd.Series(current, index=history.index, dtype=bool)]


def _check_actor(workspace: Workspace, annotator: str) -> None:
    """Team mode: the signed-in account judges, and only in its own name."""
    require_permission(workspace, "judge")
    actor = workspace.actor
    if actor is not None and annotator != actor.name:
        raise PermissionDeniedError(
            f"{actor.name} may not judge as {annotator!r}: the annotator of a judgment is always the signed-in account"
        )


def _check_blind_scope(workspace: Workspace, annotator: str, suite_id: str | None, run_id: str | None, model: str) -> None:
    """Team mode: an actor who judges blind (no ``browse``) judges only the models assigned to them on the suite."""
    actor = workspace.actor
    if actor is None or allowed(actor.role, "browse"):
        return
    if suite_id is None and run_id is not None:  # the judged suite is the run's
        run = workspace.query_one("SELECT suite_id FROM runs WHERE id = ?", (run_id,))
        suite_id = None if run is None else run["suite_id"]
    if not may_judge(workspace, annotator, suite_id, model):
        raise PermissionDeniedError(
            f"{actor.name} ({actor.role}) may judge only the models assigned to them on a suite, and this model is not "
            f"assigned to them on suite {suite_id!r}; ask a lead to assign it"
        )


def _check_annotator(annotator: str) -> str:
    name = annotator.strip() if isinstance(annotator, str) else ""
    if not name:
        raise InvalidInputError(f"annotator must be a non-empty name; got {annotator!r}")
    return name


def _check_exists(conn: sqlite3.Connection, table: str, key: str, value: str, what: str, fix: str) -> None:
    if conn.execute(f"SELECT 1 FROM {table} WHERE {key} = ?", (value,)).fetchone() is None:
        raise NotFoundError(f"{what} {value!r} is not in the workspace; {fix}")


def _frame(rows: list[sqlite3.Row]) -> pd.DataFrame:
    frame = pd.DataFrame([dict(row) for row in rows], columns=COLUMNS)
    return frame.astype({"id": "int64", "confidence": "float64"})
