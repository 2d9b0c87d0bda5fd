"""Saved suites: the :class:`Suite` record, its storage in the workspace and what is read from it.

A suite records per target and position 1..n the background, the keyword and expansion level it
was sampled for ('' and -1 for distance-based methods and top-up rows) and the exact semantic
distance of the composite to the original (:func:`analytics.suites.composite_distances`).
Position 0 is the original image and has no row. Composites are generated on demand from these
rows (:func:`images_of`, :func:`analytics.inference.iter_composites`), never stored.

Suites live in the tables ``suites`` and ``suite_items``; a suite's id is the content hash of its
method, parameters, seed, targets and pool (:func:`analytics.suites.build_suite`), so a stored id
always holds the same rows.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.inference import SuiteImage
from analytics.team import require_permission
from analytics.workspace import Workspace, now

from .naming import check_suite_name, suite_labels
from .sampling import SAMPLERS

ITEM_COLUMNS = ["target_id", "position", "background_id", "keyword", "level", "below_realism", "distance"]
#: dtypes of the columns of :attr:`Suite.items` that are not text.
ITEM_TYPES = {"position": int, "level": int, "below_realism": bool, "distance": float}
LIST_COLUMNS = ["id", "name", "label", "method", "n", "seed", "targets", "classes", "items", "mean_distance", "created"]


@dataclass(frozen=True)
class Suite:
    """A saved (or previewed) suite.

    Attributes
    ----------
    id : str
        Content id (method, params, seed, targets, pool).
    method : str
        Sampler name.
    n : int
        Backgrounds asked for per target (some targets may have fewer; see ``warnings``).
    seed : int
    params : dict
        Everything else that determined the suite (keyword tables with name, backend and digest;
        the ontology's id, mining parameters, size and source tables; distance models, realism
        scorer and threshold, top-up, ...); for keyword methods also what sampling could not do
        (``topped_up``, ``topped_up_targets``, ``topup_share``: see :func:`topup_record`).
    items : DataFrame
        Columns target_id (str), position (int, 1..), background_id (str), keyword (str),
        level (int, -1 = none), distance (float, NaN when no distance model was available).
    warnings : tuple of str
        Targets with fewer backgrounds, topped-up or fallback keywords, missing distances.
    created : str
        ISO time of saving ('' for an unsaved preview).
    name : str
        The name the user gave it ('' for none; see :func:`analytics.suites.suite_label`).
    """

    id: str
    method: str
    n: int
    seed: int
    params: dict[str, Any]
    items: pd.DataFrame = field(repr=False)
    warnings: tuple[str, ...] = ()
    created: str = ""
    name: str = ""

    @property
    def target_ids(self) -> list[str]:
        """Targets in the order of their rows."""
        return list(dict.fromkeys(self.items["target_id"]))

    def target_items(self, target_id: str) -> pd.DataFrame:
        """The rows of one target, by position."""
        return self.items[self.items["target_id"] == target_id].sort_values("position").reset_index(drop=True)


@dataclass(frozen=True)
class SuiteStats:
    """Summary of a suite.

    ``keyword_diversity`` = mean over targets of the number of distinct non-empty keywords among
    its backgrounds; ``distance_*`` over all items with a distance (NaN when none); ``spread`` is
    the standard deviation of the distances; ``below_realism`` counts the items that failed the
    realism bar and fill a target's suite only because too few passed. Keyword methods only (None
    otherwise): ``topped_up`` backgrounds were drawn at random because the target's keywords ran
    out, ``topped_up_targets`` targets have any, and ``topup_share`` = topped_up / items.
    """

    targets: int
    items: int
    per_target_min: int
    per_target_max: int
    keyword_diversity: float
    distance_mean: float
    distance_std: float
    distance_min: float
    distance_max: float
    below_realism: int = 0
    topped_up: int | None = None
    topped_up_targets: int | None = None
    topup_share: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- storage -------------------------------------------------------------------------------------
def save_suite(workspace: Workspace, suite: Suite) -> Suite:
    """Store ``suite`` (its row and all items in one transaction); an existing id keeps its rows,
    and takes ``suite.name`` when that is not empty.

    Returns
    -------
    Suite
        The stored suite (with ``created`` set).
    """
    require_permission(workspace, "build_suites")
    name = check_suite_name(suite.name)
    created = now()
    record = {**suite.params, "warnings": list(suite.warnings)}
    rows = [
        (suite.id, r.target_id, int(r.position), r.background_id, r.keyword, int(r.level), int(r.below_realism), None if np.isnan(r.distance) else float(r.distance))
        for r in suite.items.itertuples(index=False)
    ]
    with workspace.transaction() as conn:
        inserted = conn.execute(
            "INSERT OR IGNORE INTO suites(id, method, n, seed, params, created, name) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (suite.id, suite.method, suite.n, suite.seed, json.dumps(record, sort_keys=True), created, name),
        ).rowcount
        if inserted:  # a suite's id is its content: an existing one already holds these rows
            conn.executemany(
                f"INSERT INTO suite_items(suite_id, {', '.join(ITEM_COLUMNS)}) VALUES (?, {', '.join('?' * len(ITEM_COLUMNS))})",
                rows,
            )
        elif name:
            conn.execute("UPDATE suites SET name = ? WHERE id = ?", (name, suite.id))
    return load_suite(workspace, suite.id)


def name_suite(workspace: Workspace, suite_id: str, name: str) -> Suite:
    """Give the saved suite ``suite_id`` the name ``name`` ('' removes it; checked by
    :func:`analytics.suites.check_suite_name`); its id and rows stay as they are."""
    require_permission(workspace, "build_suites")
    name = check_suite_name(name)
    with workspace.transaction() as conn:
        if not conn.execute("UPDATE suites SET name = ? WHERE id = ?", (name, suite_id)).rowcount:
            raise NotFoundError(f"no suite {suite_id!r} in {workspace.root}; list them with `python -m analytics suites`")
    return load_suite(workspace, suite_id)


def load_suite(workspace: Workspace, suite_id: str) -> Suite:
    """The suite stored under ``suite_id`` (raises :class:`NotFoundError` naming recent suites)."""
    row = workspace.query_one("SELECT * FROM suites WHERE id = ?", (suite_id,))
    if row is None:
        recent = [f"{label} ({i})" for i, label in list_suites(workspace)[["id", "label"]].head(5).itertuples(index=False)]
        raise NotFoundError(f"no suite {suite_id!r} in {workspace.root}; recent suites: {'; '.join(recent) or 'none'}")
    record = json.loads(row["params"])
    warnings = tuple(record.pop("warnings", []))
    rows = workspace.query(
        f"SELECT {', '.join(ITEM_COLUMNS)} FROM suite_items WHERE suite_id = ? ORDER BY target_id, position", (suite_id,)
    )
    items = pd.DataFrame([dict(r) for r in rows], columns=ITEM_COLUMNS).astype(ITEM_TYPES)
    return Suite(row["id"], row["method"], int(row["n"]), int(row["seed"]), record, items, warnings, row["created"], row["name"])


def list_suites(workspace: Workspace) -> pd.DataFrame:
    """One row per saved suite, newest first.

    Returns
    -------
    DataFrame
        Columns :data:`LIST_COLUMNS`: id, name ('' = none), label (what a person reads:
        :func:`analytics.suites.suite_labels`, unique in the listing), method, n, seed, targets,
        classes (tuple of the selected classes; empty = every class), items, mean_distance, created.
    """
    rows = workspace.query(
        "SELECT s.id, s.name, s.method, s.n, s.seed, COUNT(DISTINCT i.target_id) AS targets, COUNT(i.position) AS items, "
        "AVG(i.distance) AS mean_distance, s.created, json_extract(s.params, '$.selection.classes') AS classes "
        "FROM suites s LEFT JOIN suite_items i ON i.suite_id = s.id GROUP BY s.id ORDER BY s.created DESC, s.id"
    )
    table = pd.DataFrame([_decoded(r) for r in rows], columns=LIST_COLUMNS)
    table["label"] = table["id"].map(suite_labels(table)) if len(table) else pd.Series(dtype=str)
    return table


def suite_labels_of(workspace: Workspace) -> dict[str, str]:
    """Suite id -> label of every saved suite, the ``label`` column of :func:`list_suites` without
    its item statistics: a suite's distinct targets are counted on the ``suite_items`` key alone
    (what run listings and job results name a suite by, on every page rerun)."""
    rows = workspace.query(
        "SELECT s.id, s.name, s.method, s.n, s.seed, s.created, json_extract(s.params, '$.selection.classes') AS classes, "
        "(SELECT COUNT(DISTINCT i.target_id) FROM suite_items i WHERE i.suite_id = s.id) AS targets FROM suites s"
    )
    return suite_labels(pd.DataFrame([_decoded(r) for r in rows], columns=["id", "name", "method", "n", "seed", "created", "classes", "targets"]))


def resolve_suite(workspace: Workspace, reference: str) -> str:
    """The id of the suite ``reference`` names: its id, its label (:func:`suite_labels_of`, as pages
    and ``python -m analytics suites`` show it) or the name its user gave it.

    A reference that names no suite is returned unchanged, so the caller's own check reports it
    (:func:`load_suite` names the recent suites).

    Raises
    ------
    InvalidInputError
        A name given to more than one suite (the message lists their labels and ids).
    """
    if suite_exists(workspace, reference):
        return reference
    labels = suite_labels_of(workspace)
    by_label = [suite_id for suite_id, label in labels.items() if label == reference]
    if by_label:
        return by_label[0]  # labels are unique within the listing
    named = [row["id"] for row in workspace.query("SELECT id FROM suites WHERE name = ? AND name != ''", (reference.strip(),))]
    if len(named) > 1:
        shown = "; ".join(f"{labels[i]} ({i})" for i in named)
        raise InvalidInputError(f"{len(named)} suites are named {reference!r}: {shown}; give the id or the full label")
    return named[0] if named else reference


def _decoded(row) -> dict[str, Any]:
    """A suite row with its ``classes`` (JSON or NULL) as a tuple (empty = every class)."""
    return {**dict(row), "classes": tuple(json.loads(row["classes"])) if row["classes"] else ()}


def suite_params(workspace: Workspace) -> dict[str, dict[str, Any]]:
    """Suite id -> :attr:`Suite.params` (what it was built with: selection, sampler settings,
    ``topup_share`` where recorded; its warnings left out), for every saved suite, without its items."""
    records = {row["id"]: json.loads(row["params"]) for row in workspace.query("SELECT id, params FROM suites")}
    return {suite_id: {k: v for k, v in record.items() if k != "warnings"} for suite_id, record in records.items()}


def suite_exists(workspace: Workspace, suite_id: str) -> bool:
    """Whether a suite with id ``suite_id`` is stored."""
    return workspace.query_one("SELECT 1 FROM suites WHERE id = ?", (suite_id,)) is not None


# -- use -----------------------------------------------------------------------------------------
def images_of(suite: Suite) -> list[SuiteImage]:
    """The images of a suite for the run engine: per target, position 0 (the original) then 1..n.

    Returns
    -------
    list of SuiteImage
        Grouped by target (in the suite's target order), positions ascending.
    """
    jobs = []
    for target_id in suite.target_ids:
        jobs.append(SuiteImage(target_id, 0, None))
        jobs += [SuiteImage(target_id, int(r.position), r.background_id) for r in suite.target_items(target_id).itertuples(index=False)]
    return jobs


def suite_stats(suite: Suite) -> SuiteStats:
    """Keyword diversity and distance statistics of a suite (see :class:`SuiteStats`)."""
    items = suite.items
    counts = items.groupby("target_id").size()
    keywords = items[items["keyword"] != ""].groupby("target_id")["keyword"].nunique().reindex(counts.index, fill_value=0)
    distances = items["distance"].dropna().to_numpy(float)
    summary = [float(f(distances)) for f in (np.mean, np.std, np.min, np.max)] if len(distances) else [float("nan")] * 4
    return SuiteStats(
        len(counts),
        len(items),
        int(counts.min()) if len(counts) else 0,
        int(counts.max()) if len(counts) else 0,
        float(keywords.mean()) if len(counts) else 0.0,
        *summary,
        below_realism=int(items["below_realism"].sum()),
        **(topup_record(items) if SAMPLERS[suite.method].needs_keywords else {}),
    )


def topup_record(items: pd.DataFrame) -> dict[str, Any]:
    """How much of a keyword suite its keywords could not supply (rows with no keyword, level -1).

    Parameters
    ----------
    items : DataFrame with columns target_id (str), keyword (str), as :attr:`Suite.items`

    Returns
    -------
    dict with keys topped_up (int: backgrounds drawn at random), topped_up_targets (int: targets
    with any) and topup_share (float in [0, 1]: topped_up / items; 0 for an empty suite)
    """
    random = items["keyword"] == ""
    return {
        "topped_up": int(random.sum()),
        "topped_up_targets": int(items.loc[random, "target_id"].nunique()),
        "topup_share": float(random.mean()) if len(items) else 0.0,
    }

