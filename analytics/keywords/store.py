"""Keyword tables in the workspace (table ``keyword_tables``; ids, scores and presence in the array store).

Labels have no column of their own in schema version 1: their array hash travels in the ``params``
JSON under the reserved key ``_labels_hash`` and is taken out again on load.

Tables are computed by :mod:`analytics.keywords.compute` or imported from keyword files
(:mod:`analytics.keywords.importing`); :func:`list_keyword_tables` says which backend, source and
vocabulary each table used.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analytics._validation import check_choice
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.team import require_permission
from analytics.workspace import ModelKeys, Workspace, model_keys, now

from ._base import KeywordTable

KEYWORD_ITEM_KINDS = ("target", "background")
LABELS_KEY = "_labels_hash"
LIST_COLUMNS = ["name", "backend", "item_kind", "n_items", "n_keywords", "source", "vocabulary", "present_hash", "created", "stale"]
VOCABULARY_PREVIEW = 4  # keywords quoted in a table's vocabulary description


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
    require_permission(workspace, "build_suites")
    check_choice(item_kind, "item_kind", KEYWORD_ITEM_KINDS)
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
    """One row per keyword table: name, backend, item_kind, n_items, n_keywords, source,
    vocabulary, present_hash, created, stale.

    ``source`` and ``vocabulary`` describe, from the table's params, what produced it (file, model
    or checkpoints) and its keywords; ``present_hash`` identifies the table's transactions (a cache
    key for what is built from them). ``stale`` (bool) marks a table computed by a model that has
    been re-registered with other weights since (:func:`is_stale_table`); "the newest table"
    defaults skip those.
    """
    rows = workspace.query("SELECT * FROM keyword_tables ORDER BY name")
    keys = model_keys(workspace)
    records = []
    for row in rows:
        vocabulary, params = json.loads(row["vocabulary"]), json.loads(row["params"])
        records.append(
            {
                "name": row["name"],
                "backend": row["backend"],
                "item_kind": row["item_kind"],
                "n_items": int(workspace.get_array(row["present_hash"], mmap=True).shape[0]),
                "n_keywords": len(vocabulary),
                "source": describe_source(params),
                "vocabulary": describe_vocabulary(vocabulary, params),
                "present_hash": row["present_hash"],
                "created": row["created"],
                "stale": is_stale_table(row["backend"], params, row["created"], keys),
            }
        )
    return pd.DataFrame(records, columns=LIST_COLUMNS).astype({"stale": bool})


def newest_keyword_tables(workspace: Workspace, *, listing: pd.DataFrame | None = None) -> dict[str, str]:
    """The newest current keyword table of each item kind: what "the newest tables" defaults (the keyword
    methods, the default ontology, the Suites page) take.

    Parameters
    ----------
    workspace : Workspace
    listing : DataFrame, optional
        :func:`list_keyword_tables` of ``workspace``, when already read.

    Returns
    -------
    dict of str to str
        Item kind ('target', 'background', ...) -> table name: the latest ``created`` (ties: the last
        name) among the tables not stale (:func:`is_stale_table`); a kind without one is left out.
    """
    listing = list_keyword_tables(workspace) if listing is None else listing
    current = listing[~listing["stale"].astype(bool)].sort_values(["created", "name"])
    return {str(kind): str(names.iloc[-1]) for kind, names in current.groupby("item_kind", sort=True)["name"]}


def is_stale_table(backend: str, params: dict[str, Any], created: str, keys: ModelKeys) -> bool:
    """Whether a classifier-patch table was computed with weights its model no longer has.

    Parameters
    ----------
    backend : str
        The table's backend; only ``'classifier-patch'`` tables come from a registered model.
    params : dict
        The table's params (``model``, and ``model_key`` since tables record it).
    created : str
        When the table was stored (ISO text).
    keys : ModelKeys
        :func:`analytics.workspace.model_keys` of the workspace.

    Returns
    -------
    bool
        True when its model is registered with another key, or (a table without ``model_key``)
        was registered after the table was made; False for other backends and for a model no
        longer registered (nothing to compare with).
    """
    model = params.get("model")
    if backend != "classifier-patch" or model not in keys.keys:
        return False
    return not keys.is_current(model, str(params.get("model_key", "")), created)


def describe_source(params: dict[str, Any]) -> str:
    """What a table's scores came from, read from its params: a file, a model or checkpoints."""
    if "file" in params:
        return f"file {Path(str(params['file'])).name} ({params.get('format', 'unknown format')})"
    if "model" in params:
        return f"model {params['model']}"
    if "checkpoints" in params:
        digests = params["checkpoints"]
        return "checkpoints " + ", ".join(f"{role} {str(digest)[:8]}" for role, digest in sorted(digests.items()))
    return "unknown (no source in its params)"


def describe_vocabulary(vocabulary: Sequence[str], params: dict[str, Any]) -> str:
    """``'<n> keywords[ (<params['vocabulary']>)]: first, second, …'``."""
    named = f" ({params['vocabulary']})" if isinstance(params.get("vocabulary"), str) else ""
    more = ", …" if len(vocabulary) > VOCABULARY_PREVIEW else ""
    return f"{len(vocabulary)} keywords{named}: {', '.join(vocabulary[:VOCABULARY_PREVIEW])}{more}"


def table_summary(table: KeywordTable) -> dict[str, Any]:
    """Counts of a table: n_items, n_keywords, items_without_keywords, mean_keywords (per item)."""
    per_item = table.present.sum(axis=1)
    return {
        "n_items": table.n_items,
        "n_keywords": len(table.vocabulary),
        "items_without_keywords": int((per_item == 0).sum()),
        "mean_keywords": float(per_item.mean()) if table.n_items else 0.0,
    }


def check_item_kinds(item_kinds: Sequence[str]) -> list[str]:
    """``item_kinds`` without repeats, each checked to be 'target' or 'background' (at least one)."""
    kinds = list(dict.fromkeys(item_kinds))
    if not kinds:
        raise InvalidInputError("item_kinds is empty; give 'target', 'background' or both")
    for kind in kinds:
        check_choice(kind, "item kind", KEYWORD_ITEM_KINDS)
    return kinds


def delete_keyword_table(workspace: Workspace, name: str) -> None:
    """Remove table ``name`` (its arrays stay in the store; other records may share them)."""
    require_permission(workspace, "build_suites")
    _row(workspace, name)
    with workspace.transaction() as conn:
        conn.execute("DELETE FROM keyword_tables WHERE name = ?", (name,))


def _row(workspace: Workspace, name: str):
    row = workspace.query_one("SELECT * FROM keyword_tables WHERE name = ?", (name,))
    if row is None:
        known = [r["name"] for r in workspace.query("SELECT name FROM keyword_tables ORDER BY name")]
        raise NotFoundError(f"no keyword table {name!r} in {workspace.root}; known: {', '.join(known) or 'none'}")
    return row
