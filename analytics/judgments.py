"""Judgments: an analyst's decision that a model is invariant, borderline or variant (DESIGN §1.10).

Judgments live in the workspace table ``judgments`` and keep their history: changing a judgment
adds a new row, and the latest row per (annotator, model) is the one that counts. Each write is one
``BEGIN IMMEDIATE`` transaction on a WAL database, so analysts judging at the same time in several
browsers (or scripts) never lose a judgment: SQLite serialises the writers and each waits up to the
connection's busy timeout for its turn.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from ._validation import check_choice, check_fraction
from .exceptions import InvalidInputError, NotFoundError
from .workspace import Workspace, now

LABELS: tuple[str, ...] = ("invariant", "borderline", "variant")
"""The labels, ordered from least to most background reliance."""

COLUMNS: list[str] = ["id", "annotator", "model", "run_id", "suite_id", "label", "confidence", "note", "created"]


@dataclass(frozen=True)
class Judgment:
    """One stored judgment (one row of the ``judgments`` table).

    ``id`` grows with every write, so of two judgments by the same annotator on the same model the
    one with the larger id is the current one.
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
        The run (or suite) whose matrices the annotator looked at; must exist when given.
    confidence : float in [0, 1], default=None
    note : str, default=''

    Returns
    -------
    Judgment
        The stored row, with its id and creation time.

    Raises
    ------
    InvalidInputError
        Empty annotator, unknown label, confidence outside [0, 1].
    NotFoundError
        The model, run or suite is not in the workspace.

    Examples
    --------
    >>> add_judgment(ws, annotator="ana", model="lite0", label="borderline")  # doctest: +SKIP
    Judgment(id=1, annotator='ana', model='lite0', label='borderline', ...)
    """
    annotator = _check_annotator(annotator)
    check_choice(label, "label", LABELS)
    if confidence is not None:
        confidence = check_fraction(confidence, "confidence", low_open=False)
    if not isinstance(note, str):
        raise InvalidInputError(f"note must be text; got {type(note).__name__}")
    created = now()
    with workspace.transaction() as conn:
        _check_exists(conn, "models", "name", model, "model", "register it first (`python -m analytics add-model`) or check the spelling")
        if run_id is not None:
            _check_exists(conn, "runs", "id", run_id, "run", "pass the id of an existing run")
        if suite_id is not None:
            _check_exists(conn, "suites", "id", suite_id, "suite", "pass the id of an existing suite")
        cursor = conn.execute(
            "INSERT INTO judgments(annotator, model, run_id, suite_id, label, confidence, note, created)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (annotator, model, run_id, suite_id, label, confidence, note, created),
        )
        row_id = int(cursor.lastrowid)
    return Judgment(row_id, annotator, model, label, run_id, suite_id, confidence, note, created)


def latest_judgments(workspace: Workspace) -> pd.DataFrame:
    """The judgments that count: the latest one per (annotator, model).

    Returns
    -------
    DataFrame
        Columns ``id, annotator, model, run_id, suite_id, label, confidence, note, created``, one row
        per (annotator, model), sorted by model then annotator; empty (with these columns) when
        nothing has been judged.
    """
    rows = workspace.query(
        "SELECT j.* FROM judgments AS j"
        " JOIN (SELECT MAX(id) AS id FROM judgments GROUP BY annotator, model) AS latest USING (id)"
        " ORDER BY j.model, j.annotator"
    )
    return _frame(rows)


def judgment_history(workspace: Workspace, model: str | None = None) -> pd.DataFrame:
    """Every judgment ever stored (of ``model`` when given), oldest first; columns as
    :func:`latest_judgments`."""
    sql, params = "SELECT * FROM judgments", ()
    if model is not None:
        sql, params = sql + " WHERE model = ?", (model,)
    return _frame(workspace.query(sql + " ORDER BY id", params))


def unjudged_models(workspace: Workspace, annotator: str, models: Sequence[str] | None = None) -> list[str]:
    """The Judge queue: models ``annotator`` has not judged yet.

    Parameters
    ----------
    workspace : Workspace
    annotator : str
    models : sequence of str, default=None
        The candidates, in queue order; ``None`` means every registered model, sorted by name.

    Returns
    -------
    list of str
        The candidates without a judgment by ``annotator``, in their given order.
    """
    annotator = _check_annotator(annotator)
    if models is None:
        models = [row["name"] for row in workspace.query("SELECT name FROM models ORDER BY name")]
    judged = {row["model"] for row in workspace.query("SELECT DISTINCT model FROM judgments WHERE annotator = ?", (annotator,))}
    return [name for name in models if name not in judged]


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
