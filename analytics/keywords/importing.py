"""Keyword files into a workspace: a file's rows matched to the targets and pool, stored as keyword tables.

:func:`import_keyword_table` stores a table read by :mod:`analytics.keywords.readers` as the keyword
tables of a workspace's targets and pool. A file's image names are matched to the workspace's items
by id (``zebra/zebra-field`` for a target, ``beach`` or ``beach@0,12,300`` for a background), else by
the original file's name or stem (``zebra-field.jpg``, ``zebra-field``; a photo's name covers all of
its crops). Names that match nothing are reported; items without a row get an empty keyword set,
also reported. The reference HDF5 names no images (its rows are numbered), so it needs
``row_names``, one per row (:func:`analytics.keywords.readers.read_row_names`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analytics.data import list_backgrounds, list_targets
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace, content_id

from ._base import KeywordTable
from .precomputed import PrecomputedBackend
from .store import check_item_kinds, save_keyword_table


@dataclass(frozen=True)
class KeywordImport:
    """What :func:`import_keyword_table` stored, and what it could not match.

    Attributes
    ----------
    tables : dict {item kind: table name}
        The stored keyword tables (``'target'`` / ``'background'``).
    matched : dict {item kind: int}
        Items of that kind named by the file.
    without_rows : dict {item kind: list of str}
        Ids of the items the file does not name: they got an empty keyword set.
    unknown : list of str
        File names that name no target and no background of the workspace (skipped).
    """

    tables: dict[str, str]
    matched: dict[str, int]
    without_rows: dict[str, list[str]]
    unknown: list[str]

    @property
    def warnings(self) -> list[str]:
        """One sentence per problem (unknown names, items without rows), each naming a few."""
        notes = []
        if self.unknown:
            notes.append(
                f"{len(self.unknown)} image names of the file match no target or background and were skipped "
                f"(first: {_few(self.unknown)}); name images by workspace id or original file name"
            )
        for kind, ids in self.without_rows.items():
            if ids:
                notes.append(f"{len(ids)} {kind}s have no row in the file and get no keywords (first: {_few(ids)})")
        return notes

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: tables, matched, counts and first few names of unknown / row-less items, warnings."""
        return {
            "tables": dict(self.tables),
            "matched": dict(self.matched),
            "without_rows": {kind: {"count": len(ids), "first": ids[:FEW]} for kind, ids in self.without_rows.items()},
            "unknown": {"count": len(self.unknown), "first": self.unknown[:FEW]},
            "warnings": self.warnings,
        }


FEW = 5  # names quoted in a report


def import_keyword_table(
    workspace: Workspace,
    table: KeywordTable,
    *,
    item_kinds: Sequence[str] = ("target", "background"),
    row_names: Sequence[str] | None = None,
) -> KeywordImport:
    """Store the rows of a keyword file as the workspace's keyword tables of ``item_kinds``.

    Each stored table has one row per item of its kind (workspace order), the file's vocabulary,
    and ``params`` of the file plus ``matched`` / ``without_rows`` counts; it is saved as
    ``precomputed/<kind>/<content id>`` (replacing a table of that name). Target tables carry
    the class names as labels.

    Parameters
    ----------
    workspace : Workspace
    table : KeywordTable
        A file read by :func:`read_keyword_file` or :func:`read_keyword_csv`; its ids name images
        (see the module docstring for how names match items).
    item_kinds : sequence of {'target', 'background'}, default both
    row_names : sequence of str or None, length table.n_items
        Image names replacing ``table.ids`` (required for the reference HDF5, whose rows are numbered).

    Returns
    -------
    KeywordImport

    Raises
    ------
    InvalidInputError
        A reference file without ``row_names``; a name matching items of several files; two rows
        for one item; a kind of which the file names no item (or the workspace has none).
    """
    kinds = check_item_kinds(item_kinds)
    table = _named_rows(table, row_names)
    listings = {"target": list_targets(workspace), "background": list_backgrounds(workspace)}
    rows, unknown = _match_rows(table, listings, str(table.params.get("file", "keyword file")))
    tables, matched, without = {}, {}, {}
    for kind in kinds:
        frame = listings[kind]
        aligned, matched[kind], without[kind] = _aligned(table, frame, [rows.get((kind, item)) for item in frame["id"]], kind, workspace)
        name = f"{PrecomputedBackend.name}/{kind}/{content_id(aligned.params, aligned.ids, aligned.digest())}"
        tables[kind] = save_keyword_table(workspace, aligned, name=name, item_kind=kind, replace=True)
    return KeywordImport(tables, matched, without, unknown)


def _named_rows(table: KeywordTable, row_names: Sequence[str] | None) -> KeywordTable:
    source = table.params.get("file", "keyword file")
    if row_names is None:
        if table.params.get("format") == "reference":
            raise InvalidInputError(
                f"{source}: the reference layout numbers its rows and names no images; give a row-names file "
                f"(one workspace id or image file name per line, {table.n_items} lines in row order)"
            )
        return table
    names = [str(name).strip() for name in row_names]
    if len(names) != table.n_items:
        raise InvalidInputError(f"{source}: {len(names)} row names for {table.n_items} rows; give one name per row, in row order")
    return replace(table, ids=names)


def _match_rows(
    table: KeywordTable, listings: dict[str, pd.DataFrame], source: str
) -> tuple[dict[tuple[str, str], int], list[str]]:
    """File row of each (kind, id) named by the file, and the names matching no item."""
    by_id: dict[str, list[tuple[str, str]]] = {}
    by_file: dict[str, dict[str, list[tuple[str, str]]]] = {}  # name or stem -> origin -> items
    for kind, frame in listings.items():
        for item, origin in zip(frame["id"], frame["origin"]):
            by_id.setdefault(item, []).append((kind, item))
            for key in {Path(origin).name, Path(origin).stem}:
                by_file.setdefault(key, {}).setdefault(origin, []).append((kind, item))
    rows: dict[tuple[str, str], int] = {}
    unknown: list[str] = []
    for row, name in enumerate(table.ids):
        items = by_id.get(name)
        if items is None and name in by_file:
            origins = by_file[name]
            if len(origins) > 1:
                raise InvalidInputError(
                    f"{source}: image name {name!r} matches {len(origins)} imported files ({_few(sorted(origins))}); "
                    "name that row by its workspace id instead"
                )
            items = next(iter(origins.values()))
        if items is None:
            unknown.append(name)
            continue
        for item in items:
            if item in rows:
                raise InvalidInputError(
                    f"{source}: {item[0]} {item[1]!r} is named by two rows ({table.ids[rows[item]]!r} and {name!r}); keep one"
                )
            rows[item] = row
    return rows, unknown


def _aligned(
    table: KeywordTable, frame: pd.DataFrame, rows: list[int | None], kind: str, workspace: Workspace
) -> tuple[KeywordTable, int, list[str]]:
    """The file's rows in the order of the workspace's items of ``kind``; items without one are empty."""
    ids = frame["id"].tolist()
    source = table.params.get("file", "keyword file")
    if not ids:
        raise InvalidInputError(f"workspace {workspace.root} has no {kind}s to attach keywords to; import some first")
    found = [index for index, row in enumerate(rows) if row is not None]
    if not found:
        raise InvalidInputError(
            f"{source}: names none of the {len(ids)} {kind}s of {workspace.root} (file names: {_few(table.ids)}; "
            f"workspace ids: {_few(ids)}); name images by workspace id or original file name"
        )
    scores = np.zeros((len(ids), len(table.vocabulary)), np.float32)
    present = np.zeros(scores.shape, bool)
    scores[found] = table.scores[[rows[index] for index in found]]
    present[found] = table.present[[rows[index] for index in found]]
    without = [ids[index] for index, row in enumerate(rows) if row is None]
    aligned = KeywordTable(
        ids=ids,
        vocabulary=list(table.vocabulary),
        scores=scores,
        present=present,
        labels=frame["class_name"].tolist() if kind == "target" else None,
        backend=PrecomputedBackend.name,
        params={**table.params, "matched": len(found), "without_rows": len(without)},
    )
    return aligned, len(found), without


def _few(names: Sequence[str]) -> str:
    return ", ".join(repr(name) for name in list(names)[:FEW]) + (", …" if len(names) > FEW else "")
