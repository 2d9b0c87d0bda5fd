"""Keyword tables in the workspace (table ``keyword_tables``; ids, scores and presence in the array store).

Labels have no column of their own in schema version 1: their array hash travels in the ``params``
JSON under the reserved key ``_labels_hash`` and is taken out again on load.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .._validation import check_choice
from ..exceptions import InvalidInputError, NotFoundError
from ..workspace import Workspace, now
from ._base import KeywordTable

ITEM_KINDS = ("target", "background")
LABELS_KEY = "_labels_hash"
LIST_COLUMNS = ["name", "backend", "item_kind", "n_items", "n_keywords", "present_hash", "created"]


def save_keyword_table(
    workspace: Workspace,
    table: KeywordTable,
    *,
    name: str,
    item_kind: str = "target",
    replace: bool = False,
) -> str:
    """Store ``table`` under ``name``: arrays first, then its row in one transaction.

    Parameters
    ----------
    workspace : Workspace
    table : KeywordTable
    name : str
        Table name, unique in the workspace.
    item_kind : {'target', 'background'}, default='target'
        What the rows are: target images (keywords of their background part) or pool backgrounds.
    replace : bool, default=False
        Overwrite an existing table of that name; otherwise an existing name raises.

    Returns
    -------
    name : str
    """
    check_choice(item_kind, "item_kind", ITEM_KINDS)
    if not name or not name.strip():
        raise InvalidInputError("name of a keyword table must be a non-empty string")
    if LABELS_KEY in table.params:
        raise InvalidInputError(f"table params must not use the reserved key {LABELS_KEY!r}")
    params = dict(table.params)
    if table.labels is not None:
        params[LABELS_KEY] = workspace.put_array(np.array(table.labels, dtype=str))
    ids_hash = workspace.put_array(np.array(table.ids, dtype=str))
    scores_hash = workspace.put_array(table.scores)
    present_hash = workspace.put_array(table.present)
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    with workspace.transaction() as conn:
        if not replace and conn.execute("SELECT 1 FROM keyword_tables WHERE name = ?", (name,)).fetchone():
            raise InvalidInputError(f"keyword table {name!r} already exists in {workspace.root}; choose another name or replace it")
        conn.execute(
            f"{verb} INTO keyword_tables(name, backend, item_kind, params, ids_hash, scores_hash, present_hash, "
            "vocabulary, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (name, table.backend, item_kind, json.dumps(params, sort_keys=True), ids_hash, scores_hash,
             present_hash, json.dumps(table.vocabulary), now()),
        )
    return name


def load_keyword_table(workspace: Workspace, name: str) -> KeywordTable:
    """The keyword table stored under ``name`` (raises :class:`NotFoundError` listing the names)."""
    row = _row(workspace, name)
    params = json.loads(row["params"])
    labels_hash = params.pop(LABELS_KEY, None)
    return KeywordTable(
        ids=workspace.get_array(row["ids_hash"]).tolist(),
        vocabulary=json.loads(row["vocabulary"]),
        scores=workspace.get_array(row["scores_hash"]),
        present=workspace.get_array(row["present_hash"]),
        labels=None if labels_hash is None else workspace.get_array(labels_hash).tolist(),
        backend=row["backend"],
        params=params,
    )


def table_item_kind(workspace: Workspace, name: str) -> str:
    """``'target'`` or ``'background'``: what the rows of table ``name`` are."""
    return _row(workspace, name)["item_kind"]


def list_keyword_tables(workspace: Workspace) -> pd.DataFrame:
    """One row per keyword table: name, backend, item_kind, n_items, n_keywords, present_hash, created.

    ``present_hash`` identifies the table's transactions (a cache key for what is built from them).
    """
    rows = workspace.query("SELECT * FROM keyword_tables ORDER BY name")
    records = [
        {
            "name": row["name"],
            "backend": row["backend"],
            "item_kind": row["item_kind"],
            "n_items": int(workspace.get_array(row["present_hash"], mmap=True).shape[0]),
            "n_keywords": len(json.loads(row["vocabulary"])),
            "present_hash": row["present_hash"],
            "created": row["created"],
        }
        for row in rows
    ]
    return pd.DataFrame(records, columns=LIST_COLUMNS)


def delete_keyword_table(workspace: Workspace, name: str) -> None:
    """Remove table ``name`` (its arrays stay in the store; other records may share them)."""
    _row(workspace, name)
    with workspace.transaction() as conn:
        conn.execute("DELETE FROM keyword_tables WHERE name = ?", (name,))


def _row(workspace: Workspace, name: str):
    row = workspace.query_one("SELECT * FROM keyword_tables WHERE name = ?", (name,))
    if row is None:
        known = [r["name"] for r in workspace.query("SELECT name FROM keyword_tables ORDER BY name")]
        raise NotFoundError(f"no keyword table {name!r} in {workspace.root}; known: {', '.join(known) or 'none'}")
    return row
