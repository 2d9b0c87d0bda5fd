"""Ontologies in the workspace: save, load, list, and what a suite records about the one it used."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import networkx as nx
import pandas as pd

from analytics.exceptions import NotFoundError
from analytics.team import require_permission
from analytics.workspace import Workspace, now

from .mining import ITEMSET_COLUMNS, RULE_COLUMNS, Ontology, OntologyParams

_ALGORITHM_NAMES = {"fpgrowth": "FP-Growth", "apriori": "Apriori"}


def save_ontology(workspace: Workspace, ontology: Ontology, *, tables: Sequence[str] = ()) -> str:
    """Store ``ontology`` (idempotent: its id is its content hash).

    The ``ontologies`` row holds the parameters, the graph as node-link JSON and a summary (counts,
    the keyword tables it came from, and the store hashes of its itemsets and rules).

    Returns
    -------
    id : str
    """
    require_permission(workspace, "build_suites")
    itemsets_hash = workspace.put_json(_itemsets_records(ontology.itemsets))
    rules_hash = workspace.put_json(_rules_records(ontology.rules))
    params = {**asdict(ontology.params), "n_transactions": ontology.n_transactions, "source": ontology.source}
    summary = {**ontology.summary, "tables": list(tables), "itemsets_hash": itemsets_hash, "rules_hash": rules_hash}
    with workspace.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO ontologies(id, params, graph, summary, created) VALUES (?, ?, ?, ?, ?)",
            (
                ontology.id,
                json.dumps(params, sort_keys=True),
                json.dumps(nx.node_link_data(ontology.graph, edges="edges")),
                json.dumps(summary, sort_keys=True),
                now(),
            ),
        )
    return ontology.id


def load_ontology(workspace: Workspace, ontology_id: str) -> Ontology:
    """The ontology stored under ``ontology_id``."""
    row = workspace.query_one("SELECT * FROM ontologies WHERE id = ?", (ontology_id,))
    if row is None:
        known = [r["id"] for r in workspace.query("SELECT id FROM ontologies ORDER BY created")]
        raise NotFoundError(f"no ontology {ontology_id!r} in {workspace.root}; known: {', '.join(known) or 'none'}")
    params, summary = json.loads(row["params"]), json.loads(row["summary"])
    n_transactions, source = params.pop("n_transactions"), params.pop("source")
    return Ontology(
        params=OntologyParams(**params),
        graph=nx.node_link_graph(json.loads(row["graph"]), directed=True, edges="edges"),
        itemsets=_itemsets_frame(_get_json(workspace, summary["itemsets_hash"])),
        rules=_rules_frame(_get_json(workspace, summary["rules_hash"])),
        n_transactions=n_transactions,
        source=source,
    )


def list_ontologies(workspace: Workspace) -> pd.DataFrame:
    """One row per stored ontology, oldest first: id, label (what a person reads:
    :func:`ontology_label`), algorithm, min_support, min_confidence, max_len, transactions,
    keywords, itemsets, rules, edges, tables, created."""
    records = []
    for row in workspace.query("SELECT id, params, summary, created FROM ontologies ORDER BY created, id"):  # not the graph
        params, summary = json.loads(row["params"]), json.loads(row["summary"])
        record = {
            "id": row["id"],
            **{key: params[key] for key in ("algorithm", "min_support", "min_confidence", "max_len")},
            **{key: summary[key] for key in ("transactions", "keywords", "itemsets", "rules", "edges")},
            "tables": ", ".join(summary.get("tables", [])),
            "created": row["created"],
        }
        records.append({**record, "label": ontology_label(record)})
    columns = ["id", "label", "algorithm", "min_support", "min_confidence", "max_len", "transactions", "keywords", "itemsets", "rules", "edges", "tables", "created"]
    return pd.DataFrame(records, columns=columns)


def ontology_label(ontology: Mapping[str, Any]) -> str:
    """How a person reads one stored ontology: ``FP-Growth, support 0.05, confidence 0.5: 42
    keywords, 118 rules · mined 2026-11-25 14:02`` (plain text; the id, a content hash, names none).

    Parameters
    ----------
    ontology : mapping
        A row of :func:`list_ontologies` (algorithm, min_support, min_confidence, keywords, rules, created).
    """
    algorithm = _ALGORITHM_NAMES.get(ontology["algorithm"], ontology["algorithm"])
    return (
        f"{algorithm}, support {ontology['min_support']:g}, confidence {ontology['min_confidence']:g}: "
        f"{ontology['keywords']} keywords, {ontology['rules']} rules · mined {str(ontology['created']).replace('T', ' ')[:16]}"
    )


def ontology_labels(workspace: Workspace) -> dict[str, str]:
    """Ontology id -> :func:`ontology_label` of every stored ontology (the id's first 8 characters
    added where two read alike: mined in the same minute with the same parameters and counts)."""
    table = list_ontologies(workspace)
    shared = table["label"].duplicated(keep=False)
    return {i: f"{label} · {i[:8]}" if twin else label for i, label, twin in zip(table["id"], table["label"], shared)}


def ontology_record(workspace: Workspace, ontology_id: str) -> dict[str, Any]:
    """What a suite records about the ontology it used: id, mining parameters, size and sources.

    Returns
    -------
    dict with keys id (str), algorithm (str), min_support, min_confidence (float), max_len
    (int or None), keywords, edges (int), tables (list of str: the keyword tables it was mined from)
    """
    row = workspace.query_one("SELECT params, summary FROM ontologies WHERE id = ?", (ontology_id,))
    if row is None:
        raise NotFoundError(f"no ontology {ontology_id!r} in {workspace.root}")
    params, summary = json.loads(row["params"]), json.loads(row["summary"])
    return {
        "id": ontology_id,
        **{key: params[key] for key in ("algorithm", "min_support", "min_confidence", "max_len")},
        **{key: summary[key] for key in ("keywords", "edges")},
        "tables": list(summary.get("tables", [])),
    }


def ontologies_from(workspace: Workspace, tables: Sequence[str]) -> list[str]:
    """Ids of the stored ontologies mined from exactly the keyword tables ``tables`` (any order),
    newest first."""
    wanted = set(tables)
    rows = workspace.query("SELECT id, summary FROM ontologies ORDER BY created DESC, id DESC")
    return [row["id"] for row in rows if set(json.loads(row["summary"]).get("tables", [])) == wanted]


def _get_json(workspace: Workspace, digest: str) -> Any:
    """``Workspace.get_json`` that also reads the 1-element arrays ``put_json`` writes today
    (``put_array``'s ``np.ascontiguousarray`` turns its 0-d array into shape (1,))."""
    return json.loads(str(workspace.get_array(digest).reshape(-1)[0]))


def _itemsets_records(itemsets: pd.DataFrame) -> list[dict[str, Any]]:
    return [{"support": float(s), "itemsets": sorted(i)} for s, i in zip(itemsets["support"], itemsets["itemsets"])]


def _itemsets_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(records, columns=ITEMSET_COLUMNS)
    frame["itemsets"] = frame["itemsets"].map(frozenset)
    return frame


def _rules_records(rules: pd.DataFrame) -> list[dict[str, Any]]:
    records = rules.to_dict(orient="records")
    for record in records:
        record["antecedents"], record["consequents"] = sorted(record["antecedents"]), sorted(record["consequents"])
    return records


def _rules_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(records, columns=RULE_COLUMNS)
    for column in ("antecedents", "consequents"):
        frame[column] = frame[column].map(frozenset)
    return frame
