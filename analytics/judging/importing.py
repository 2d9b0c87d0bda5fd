"""Judgment import: the CSV :func:`~.adjudication.export_judgments_csv` writes, read back into a workspace.

:func:`import_judgments` checks every row before it writes any, then adds all of them in one
transaction, or none: the first bad row is reported in one line that names the row (the header is
row 1, as a spreadsheet numbers them), the column, the value and the fix, with how many other rows
are bad. ``id`` and ``counts`` are the exporting workspace's and are not read: rows get new ids,
and what counts follows from the imported histories. A row already in the workspace (same fields,
same ``created``) is skipped, and so is a row the file repeats: importing a file twice adds nothing
the second time, and a file holding a row twice adds it once.

Text the export neutralised for spreadsheets (``'=…``, ``'+…``, ``'-…``, ``'@…``; see
:func:`analytics.workspace.to_csv`) gets its ``'`` removed; a value that began with ``'`` and a
formula character before the export was quoted once more by it and comes back as it was.

Team mode (``workspace.actor`` set) runs the checks of :func:`~.judgments.add_judgment` and
:func:`~.adjudication.add_consensus` on every row: judgment rows need the ``judge`` permission and
must be the actor's own (blind annotators only on models assigned to them), consensus rows need
``adjudicate`` and must name the actor as adjudicator. In a workspace with accounts every annotator
and adjudicator must be an account.
"""

from __future__ import annotations

import csv
import io
import math
import sqlite3
from dataclasses import asdict, dataclass
from datetime import datetime
from os import PathLike
from pathlib import Path
from typing import Any

from analytics._validation import user_path
from analytics.exceptions import BackdropError, InvalidInputError, NotFoundError, PermissionDeniedError
from analytics.models import register_hint
from analytics.team import MAX_CSV_UPLOAD_MB, allowed, require_permission
from analytics.workspace import Workspace, restore_formula

from .adjudication import EXPORT_COLUMNS
from .assignments import may_judge
from .judgments import LABELS

#: Largest file :func:`import_judgments` reads (bytes): far above any team's judgments, far below a memory problem.
MAX_IMPORT_BYTES = MAX_CSV_UPLOAD_MB * 2**20
#: Longest cell (characters): a note or reason longer than this is not a judgment.
MAX_CELL_CHARS = 100_000
#: Columns that belong to the exporting workspace and are not imported.
DERIVED_COLUMNS = ("id", "counts")
RECORDS = ("judgment", "consensus")

_JUDGMENT_FIELDS = ("annotator", "model", "run_id", "suite_id", "label", "confidence", "note", "created", "model_key")
_CONSENSUS_FIELDS = ("model", "suite_id", "model_key", "label", "reason", "adjudicator", "created")


@dataclass(frozen=True)
class ImportSummary:
    """What :func:`import_judgments` did: rows added per record kind, rows already present."""

    source: str
    judgments: int
    consensus: int
    skipped: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _RowError(Exception):
    """One bad cell: the message without the row number, and the error class to raise."""

    def __init__(self, message: str, kind: type[BackdropError] = InvalidInputError) -> None:
        super().__init__(message)
        self.kind = kind


def import_judgments(workspace: Workspace, path: str | PathLike) -> ImportSummary:
    """Add the judgments and consensus of an ``export-judgments`` CSV file, all or nothing.

    Parameters
    ----------
    workspace : Workspace
        Its ``actor`` (team mode) must be allowed every row (module notes); None: the CLI, all allowed.
    path : path-like
        A CSV file with the header :data:`~.adjudication.EXPORT_COLUMNS` (any order), UTF-8, at most
        :data:`MAX_IMPORT_BYTES` bytes.

    Returns
    -------
    ImportSummary

    Raises
    ------
    InvalidInputError
        The file is missing, too large, not UTF-8 CSV, has other columns, or a row has a bad value
        (unknown record, label, confidence outside [0, 1], bad time, a run of another model or suite).
    NotFoundError
        A row names a model, suite, run, annotator or adjudicator the workspace does not have.
    PermissionDeniedError
        The actor may not write a row (another annotator's judgment, a consensus without ``adjudicate``).
    """
    source = user_path(path, "path")
    rows = _read(source)
    if any(row["record"] == "judgment" for _, row in rows):
        require_permission(workspace, "judge")
    if any(row["record"] == "consensus" for _, row in rows):
        require_permission(workspace, "adjudicate")
    with workspace.transaction() as conn:
        checker = _Checker(workspace, conn)
        errors: list[tuple[int, _RowError]] = []
        judgments, consensus = [], []
        for number, row in rows:
            try:
                record = checker.check(row)
            except _RowError as err:
                errors.append((number, err))
                continue
            (judgments if row["record"] == "judgment" else consensus).append(record)
        if errors:
            number, first = errors[0]
            more = f" ({len(errors) - 1} more bad rows after it)" if len(errors) > 1 else ""
            raise first.kind(f"{source}: row {number}: {first}{more}; nothing was imported")
        new_judgments = _new(conn, "judgments", _JUDGMENT_FIELDS, judgments)
        new_consensus = _new(conn, "consensus", _CONSENSUS_FIELDS, consensus)
        conn.executemany(_insert("judgments", _JUDGMENT_FIELDS), new_judgments)
        conn.executemany(_insert("consensus", _CONSENSUS_FIELDS), new_consensus)
    skipped = len(judgments) + len(consensus) - len(new_judgments) - len(new_consensus)
    return ImportSummary(str(source), len(new_judgments), len(new_consensus), skipped)


def _read(source: Path) -> list[tuple[int, dict[str, str]]]:
    """The data rows of the file as (row number, cells with neutralising quotes removed), after the file-level checks."""
    if not source.is_file():
        raise InvalidInputError(f"{source} is not a file; give the CSV that `python -m analytics export-judgments` wrote")
    size = source.stat().st_size
    if size > MAX_IMPORT_BYTES:
        raise InvalidInputError(
            f"{source} is {size / 2**20:.0f} MiB, over the {MAX_IMPORT_BYTES // 2**20} MiB an import reads; split it or check it is the right file"
        )
    try:
        with source.open(encoding="utf-8-sig", newline="") as handle:  # newline="": a note's \r\n or lone \r stays as typed
            text = handle.read()
    except UnicodeDecodeError as err:
        raise InvalidInputError(f"{source} is not UTF-8 text (byte {err.start}); export it again with `export-judgments`") from err
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise InvalidInputError(f"{source} is empty; it needs the header {','.join(EXPORT_COLUMNS)}")
        header = [restore_formula(name) for name in header]
        missing = [name for name in EXPORT_COLUMNS if name not in header]
        extra = [name for name in header if name not in EXPORT_COLUMNS]
        if missing or extra or len(set(header)) != len(header):
            raise InvalidInputError(
                f"{source}: the header must be the columns export-judgments writes ({','.join(EXPORT_COLUMNS)}); "
                f"missing {missing or 'none'}, unexpected {[name[:40] for name in extra] or 'none'}"
                + ("" if len(set(header)) == len(header) else ", and a column repeated")
            )
        rows = []
        for number, cells in enumerate(reader, start=2):
            if not any(cells):
                continue  # a blank line, as spreadsheets leave at the end
            if len(cells) != len(header):
                raise InvalidInputError(f"{source}: row {number} has {len(cells)} cells, the header {len(header)}; fix the row or export again")
            long = next((name for name, cell in zip(header, cells) if len(cell) > MAX_CELL_CHARS), None)
            if long is not None:
                raise InvalidInputError(f"{source}: row {number}: {long} is over {MAX_CELL_CHARS} characters; shorten it")
            rows.append((number, {name: restore_formula(cell) for name, cell in zip(header, cells)}))
    except csv.Error as err:
        raise InvalidInputError(f"{source}: not valid CSV near row {reader.line_num}: {err}; export it again with `export-judgments`") from err
    return rows


class _Checker:
    """Checks one row against the workspace (read inside the import's transaction) and the actor."""

    def __init__(self, workspace: Workspace, conn: sqlite3.Connection) -> None:
        self.workspace = workspace
        self.actor = workspace.actor
        self.models = {row["name"] for row in conn.execute("SELECT name FROM models")}
        self.suites = {row["id"] for row in conn.execute("SELECT id FROM suites")}
        self.runs = {row["id"]: (row["model"], row["suite_id"]) for row in conn.execute("SELECT id, model, suite_id FROM runs")}
        self.accounts = {row["name"] for row in conn.execute("SELECT name FROM users")}

    def check(self, row: dict[str, str]) -> tuple:
        """The row's values in the order of its table's fields (:data:`_JUDGMENT_FIELDS` or :data:`_CONSENSUS_FIELDS`)."""
        record = row["record"]
        if record not in RECORDS:
            raise _RowError(f"record {record!r} is neither 'judgment' nor 'consensus'; fix the cell")
        model = row["model"]
        if model not in self.models:
            raise _RowError(f"model {model!r} is not registered here; register it with {register_hint()} or fix the cell", NotFoundError)
        suite_id = row["suite_id"] or None
        if suite_id is not None and suite_id not in self.suites:
            raise _RowError(f"suite {suite_id!r} is not in this workspace; build it here first or fix the cell", NotFoundError)
        label = row["label"]
        if label not in LABELS:
            raise _RowError(f"label {label!r} is not one of {', '.join(LABELS)}; fix the cell")
        created = _created(row["created"])
        if record == "consensus":
            return self._consensus(row, model, suite_id, label, created)
        return self._judgment(row, model, suite_id, label, created)

    def _judgment(self, row: dict[str, str], model: str, suite_id: str | None, label: str, created: str) -> tuple:
        annotator = self._person(row["annotator"], "annotator")
        if self.actor is not None and annotator != self.actor.name:
            raise _RowError(f"{self.actor.name} may not import a judgment by {annotator!r}: a judgment is always its annotator's own", PermissionDeniedError)
        run_id = row["run_id"] or None
        if run_id is not None:
            if run_id not in self.runs:
                raise _RowError(f"run {run_id!r} is not in this workspace; clear the run_id cell (the suite_id stays) or run it here", NotFoundError)
            run_model, run_suite = self.runs[run_id]
            if run_model != model or (suite_id is not None and suite_id != run_suite):
                raise _RowError(f"run {run_id!r} is a run of {run_model!r} over suite {run_suite!r}, not of this row's model and suite; fix the cells")
            suite_id = run_suite
        if self.actor is not None and not allowed(self.actor.role, "browse") and not may_judge(self.workspace, annotator, suite_id, model):
            raise _RowError(f"{self.actor.name} ({self.actor.role}) may judge only the models assigned to them on a suite; ask a lead", PermissionDeniedError)
        return (annotator, model, run_id, suite_id, label, _confidence(row["confidence"]), row["note"], created, row["model_key"])

    def _consensus(self, row: dict[str, str], model: str, suite_id: str | None, label: str, created: str) -> tuple:
        if suite_id is None:
            raise _RowError("a consensus row needs its suite_id; fill the cell")
        adjudicator = self._person(row["adjudicator"], "adjudicator")
        if self.actor is not None and adjudicator != self.actor.name:
            raise _RowError(f"{self.actor.name} may not import a consensus by {adjudicator!r}: the adjudicator is always the signed-in account", PermissionDeniedError)
        reason = row["reason"].strip()
        if not reason:
            raise _RowError("a consensus row needs its reason; fill the cell")
        return (model, suite_id, row["model_key"], label, reason, adjudicator, created)

    def _person(self, value: str, column: str) -> str:
        name = value.strip()
        if not name:
            raise _RowError(f"{column} is empty; fill the cell")
        if self.accounts and name not in self.accounts:
            raise _RowError(f"{column} {name!r} is not an account of this workspace; add it (`python -m analytics user add`) or fix the cell", NotFoundError)
        return name


def _created(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise _RowError(f"created {value[:40]!r} is not an ISO time like 2026-01-31T12:00:00+00:00; fix the cell") from None
    return value


def _confidence(value: str) -> float | None:
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not 0 <= number <= 1:  # also refuses NaN
        raise _RowError(f"confidence {value[:40]!r} is not a number in [0, 1]; fix or clear the cell")
    return number


def _new(conn: sqlite3.Connection, table: str, fields: tuple[str, ...], records: list[tuple]) -> list[tuple]:
    """The records not already stored in ``table`` (equal in every field), each once: a row the
    file holds twice is added once, like a row already stored (the rest count as skipped)."""
    seen = {tuple(row) for row in conn.execute(f"SELECT {', '.join(fields)} FROM {table}")}
    new = []
    for record in records:
        if record not in seen:
            seen.add(record)
            new.append(record)
    return new


def _insert(table: str, fields: tuple[str, ...]) -> str:
    return f"INSERT INTO {table}({', '.join(fields)}) VALUES ({', '.join('?' * len(fields))})"
