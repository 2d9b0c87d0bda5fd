"""Test suites: for each target, N backgrounds chosen by a sampler, with their provenance.

A suite records per target and position 1..n the background, the keyword and expansion level it
was sampled for ('' and -1 for distance-based methods and top-up rows) and the exact semantic
distance of the composite to the original (:func:`analytics.similarity.composite_distances`).
Position 0 is the original image and has no row. Composites are generated on demand from these
rows (:func:`suite_jobs`, :func:`analytics.inference.iter_composites`), never stored.

Suites live in the tables ``suites`` and ``suite_items``; a suite's id is the content hash of its
method, parameters, seed, targets and pool, so building the same suite twice reuses the first.

Inputs per method (:data:`analytics.sampling.SAMPLERS`):

* ``nearest`` / ``interval`` rank the pool by proxy distances from the distance-model ensemble
  (:func:`analytics.similarity.proxy_distances`);
* ``keyword`` uses the targets' detected keywords (level 0, ranked by score) and the pool's
  keyword table;
* ``ontology`` expands the targets' keywords through an ontology (:func:`analytics.ontology.expand_table`,
  ranked by level then aggregated weight; level 0 by detection score). The ontology must fit the
  keyword tables: by default the newest one mined from exactly them, and any ontology that expands
  fewer than half of the targets to keywords the pool carries is refused (:func:`check_expansion`):
  an ontology of another vocabulary would silently turn the suite into a keyword suite.

Provenance (``Suite.params``, stored as the ``suites.params`` JSON): the keyword tables (name,
backend, digest) and the ontology (id, mining parameters, size, source tables) a suite used, and
for keyword methods the share of backgrounds topped up at random (:func:`topup_record`).

A target without detected keywords starts from the most frequent keywords of its class
(``keyword``: those keywords themselves; ``ontology``: their expansion) and the suite's warnings
say so.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ._validation import check_choice, check_fraction, check_positive_int
from .datasets import list_backgrounds, list_classes, list_targets, load_backgrounds, load_targets
from .exceptions import InvalidInputError, NotFoundError
from .keywords import KeywordTable, list_keyword_tables, load_keyword_table
from .ontology import (
    DEFAULT_MAXITS,
    DEFAULT_MIN_CONFIDENCE,
    DEFAULT_MIN_SUPPORT,
    Expansion,
    Ontology,
    build_ontology,
    class_keywords,
    expand_table,
    list_ontologies,
    load_ontology,
    ontologies_from,
    ontology_record,
    save_ontology,
)
from .sampling import (
    REALISM_SCORERS,
    SAMPLERS,
    KeywordSampler,
    RankedKeyword,
    SamplingContext,
    SamplingResult,
)
from .screening import pool_exclusions, sample_screened
from .similarity import composite_distances, proxy_distances, resolve_distance_models
from .team.roles import require_permission
from .workspace import Workspace, content_id, now

if TYPE_CHECKING:
    from .inference import ImageJob

logger = logging.getLogger(__name__)

ITEM_COLUMNS = ["target_id", "position", "background_id", "keyword", "level", "below_realism", "distance"]
_ITEM_TYPES = {"position": int, "level": int, "below_realism": bool, "distance": float}
LIST_COLUMNS = ["id", "method", "n", "seed", "targets", "items", "mean_distance", "created"]
DEFAULT_REALISM = "seam-harmony"
DEFAULT_REALISM_THRESHOLD = 0.25
FALLBACK_TOP = 3  # class keywords a target without keywords starts from
MIN_EXPANDED_SHARE = 0.5  # targets the ontology must expand to pool keywords (check_expansion)


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
    """

    id: str
    method: str
    n: int
    seed: int
    params: dict[str, Any]
    items: pd.DataFrame = field(repr=False)
    warnings: tuple[str, ...] = ()
    created: str = ""

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


# -- building ------------------------------------------------------------------------------------
def build_suite(
    workspace: Workspace,
    *,
    method: str,
    n: int = 32,
    seed: int = 0,
    target_ids: Sequence[str] | None = None,
    pool_ids: Sequence[str] | None = None,
    keyword_tables: Mapping[str, str] | None = None,
    ontology_id: str | None = None,
    distance_models: Sequence[str] | None = None,
    realism: str = DEFAULT_REALISM,
    realism_threshold: float = DEFAULT_REALISM_THRESHOLD,
    top_up: bool = True,
    maxits: int = DEFAULT_MAXITS,
    batch_size: int = 32,
    device: str | None = None,
    save: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Suite:
    """Sample a suite for every target of the workspace and (by default) save it.

    Parameters
    ----------
    workspace : Workspace
    method : {'random', 'nearest', 'interval', 'keyword', 'ontology'}
    n : int, default=32
        Backgrounds per target; at most the pool size (a suite never repeats a background).
    seed : int, default=0
    target_ids, pool_ids : sequence of str or None, default=None
        Targets to cover and backgrounds to choose from; None = all of the workspace.
    keyword_tables : mapping {'target': name, 'background': name} or None
        Keyword tables (``keyword`` / ``ontology``); a missing entry = the newest table of that
        item kind.
    ontology_id : str or None
        Ontology for ``ontology``; None = the newest one mined from exactly these keyword tables
        (else the newest saved one). Either way it must expand at least half of the targets to
        keywords the pool carries (:func:`check_expansion`), or the suite is refused.
    distance_models : sequence of str or None
        Ensemble for distances; None = :func:`analytics.similarity.default_distance_models`.
        Without any registered model, ``nearest``/``interval`` fail and the other methods save
        NaN distances with a warning.
    realism : str, default='seam-harmony'
        Realism scorer (:data:`analytics.sampling.REALISM_SCORERS`).
    realism_threshold : float in [0, 1], default=0.25
        Candidates scoring below are skipped, unless they score at least as well as the target on
        its own original scene; 0 accepts everything.
    top_up : bool, default=True
        ``keyword`` / ``ontology``: fill up with random backgrounds (level -1) when the keywords
        run out (see :class:`analytics.sampling.KeywordSampler`).
    maxits : int, default=5
        MAXITS of the ontology expansion.
    batch_size : int, default=32
    device : str or None, default=None
        Where the distance models run.
    save : bool, default=True
        Store the suite; False returns an unsaved preview (``created`` = '') unless the same
        suite is already saved, which is then returned either way.
    progress : callable (done, total) or None
        Called while exact distances are computed (the slow step), with image counts.

    Returns
    -------
    Suite

    Raises
    ------
    InvalidInputError
        Unknown method, ``n`` larger than the pool, missing keyword tables / ontology / models.
    """
    check_choice(method, "method", SAMPLERS)
    n = check_positive_int(n, "n")
    seed = check_positive_int(seed, "seed", minimum=0)
    check_choice(realism, "realism", REALISM_SCORERS)
    realism_threshold = check_fraction(realism_threshold, "realism_threshold", low_open=False)
    sampler_cls = SAMPLERS[method]
    targets = _ids(target_ids, list_targets(workspace)["id"].tolist(), "target_ids", "targets", workspace)
    pool = _ids(pool_ids, list_backgrounds(workspace)["id"].tolist(), "pool_ids", "backgrounds", workspace)
    if n > len(pool):
        raise InvalidInputError(
            f"n={n} backgrounds per target exceeds the pool of {len(pool)} backgrounds in {workspace.root}; a suite never "
            "repeats a background, so lower n or import more backgrounds"
        )
    notes: list[str] = []
    models = _distance_models(workspace, distance_models, sampler_cls.needs_distances, notes)
    tables = _keyword_tables(workspace, keyword_tables) if sampler_cls.needs_keywords else {}
    ontology = _ontology(workspace, ontology_id, tables) if sampler_cls.needs_ontology else None
    params = {
        "realism": realism,
        "realism_threshold": realism_threshold,
        "distance_models": {name: spec_key for name, spec_key in models},
        "keyword_tables": {kind: _table_record(name, table) for kind, (name, table) in tables.items()},
        "ontology": None if ontology is None else ontology_record(workspace, ontology.id),
    }
    if sampler_cls.needs_keywords:
        params["top_up"] = bool(top_up)
    if ontology is not None:
        params["maxits"] = check_positive_int(maxits, "maxits", minimum=0)
    # backgrounds showing a target's class or cut from its own photo (analytics.screening)
    exclusions = pool_exclusions(workspace, targets, pool, batch_size=batch_size, device=device)
    params["pool_screening"] = exclusions.record
    suite_id = content_id(method, n, seed, params, targets, pool)
    if _exists(workspace, suite_id):
        logger.info("suite %s (%s, n=%d, seed=%d) exists; loading it", suite_id, method, n, seed)
        return load_suite(workspace, suite_id)
    loaded = _load_models(workspace, models, device)
    context = _context(workspace, sampler_cls, targets, pool, tables, ontology, loaded, params, batch_size, notes)
    sampler = sampler_cls(top_up=top_up) if issubclass(sampler_cls, KeywordSampler) else sampler_cls()
    result = sample_screened(sampler, targets, pool, n=n, seed=seed, context=context, excluded=exclusions.excluded)
    items = _items(workspace, result, loaded, batch_size, progress)
    if sampler_cls.needs_keywords:  # an outcome, recorded after the id: what the keywords could not supply
        params = {**params, **topup_record(items)}
    suite = Suite(suite_id, method, n, seed, params, items, tuple(notes + result.warnings))
    return save_suite(workspace, suite) if save else suite


def _ids(given: Sequence[str] | None, known: list[str], name: str, what: str, workspace: Workspace) -> list[str]:
    if given is None:
        if not known:
            raise InvalidInputError(f"workspace {workspace.root} has no {what}; import some on the Data page first")
        return known
    ids = list(dict.fromkeys(given))
    missing = sorted(set(ids) - set(known))
    if missing:
        raise InvalidInputError(f"{name}: {len(missing)} ids are not {what} of {workspace.root}: {', '.join(missing[:5])}")
    if not ids:
        raise InvalidInputError(f"{name} must name at least one of the workspace's {what}; got none")
    return ids


def _distance_models(workspace: Workspace, names: Sequence[str] | None, required: bool, notes: list[str]) -> list[tuple[str, str]]:
    """(name, spec content key) of the ensemble; empty (with a note) when optional and unavailable."""
    from .models import get_model_spec

    try:
        resolved = resolve_distance_models(workspace, names)
    except InvalidInputError:
        if required or names is not None:
            raise
        notes.append("no registered model: distances are not recorded (register one and rebuild to get them)")
        return []
    return [(name, get_model_spec(workspace, name).content_key()) for name in resolved]


def _load_models(workspace: Workspace, models: list[tuple[str, str]], device: str | None) -> list:
    from .models import load_model

    return [load_model(workspace, name, device=device) for name, _ in models]


def _keyword_tables(workspace: Workspace, names: Mapping[str, str] | None) -> dict[str, tuple[str, KeywordTable]]:
    """{'target': (name, table), 'background': (name, table)}: given names or the newest not stale of each kind."""
    names = dict(names or {})
    unknown = sorted(set(names) - {"target", "background"})
    if unknown:
        raise InvalidInputError(f"keyword_tables keys must be 'target' and 'background'; got {unknown}")
    listing = list_keyword_tables(workspace)
    out = {}
    for kind in ("target", "background"):
        name = names.get(kind)
        if name is None:
            candidates = listing[(listing["item_kind"] == kind) & ~listing["stale"]].sort_values(["created", "name"])
            if candidates.empty:
                raise InvalidInputError(
                    f"no {kind} keyword table in {workspace.root}; compute one (`python -m analytics suite` does it with the "
                    "classifier-patch backend) or import one on the Ontology page"
                )
            name = str(candidates["name"].iloc[-1])
        out[kind] = (name, load_keyword_table(workspace, name))
    return out


def _table_record(name: str, table: KeywordTable) -> dict[str, str]:
    """What a suite records about a keyword table it used: name, backend and content digest."""
    return {"name": name, "backend": table.backend, "digest": table.digest()}


def _ontology(workspace: Workspace, ontology_id: str | None, tables: Mapping[str, tuple[str, KeywordTable]]) -> Ontology:
    """The given ontology, else the newest mined from exactly these keyword tables, else the newest
    (whose fit :func:`check_expansion` then judges)."""
    if ontology_id is None:
        matching = ontologies_from(workspace, [name for name, _ in tables.values()])
        listing = list_ontologies(workspace)
        if not matching and listing.empty:
            raise InvalidInputError(
                f"method 'ontology' needs an ontology and {workspace.root} has none; build one on the Ontology page or with "
                "`python -m analytics ontology --workspace DIR`"
            )
        ontology_id = matching[0] if matching else str(listing["id"].iloc[-1])
    return load_ontology(workspace, ontology_id)


def check_expansion(target_keywords: Sequence[Sequence[RankedKeyword]], carriers: Mapping[str, np.ndarray], record: dict[str, Any]) -> None:
    """Refuse an ontology that does not fit the keyword tables of a suite.

    An ontology mined from other keywords (another backend, another vocabulary) shares few keywords
    with the tables: the targets' keywords expand to nothing, or to keywords no pool background
    carries, and an "ontology" suite silently becomes a keyword suite (or a random one).

    Parameters
    ----------
    target_keywords : sequence (one per target) of sequence of RankedKeyword
        The targets' ranked expansions (level 0 = detected).
    carriers : mapping keyword -> ndarray of int
        Pool indices of the backgrounds carrying each keyword.
    record : dict
        The suite's provenance (``ontology`` and ``keyword_tables`` entries), for the message.

    Raises
    ------
    InvalidInputError
        Fewer than :data:`MIN_EXPANDED_SHARE` of the targets have an expanded keyword (level >= 1)
        that some pool background carries.
    """
    reached = sum(any(k.level > 0 and len(carriers.get(k.keyword, ())) for k in ranked) for ranked in target_keywords)
    if not target_keywords or reached >= MIN_EXPANDED_SHARE * len(target_keywords):
        return
    ontology, tables = record["ontology"], record["keyword_tables"]
    used = ", ".join(f"{kind} {t['name']!r} ({t['backend'] or 'unknown backend'})" for kind, t in tables.items())
    names = " ".join(f"--table {t['name']}" for t in tables.values())
    raise InvalidInputError(
        f"ontology {ontology['id']} (mined from {', '.join(ontology['tables']) or 'keywords outside this workspace'}) expands "
        f"only {reached} of {len(target_keywords)} targets to keywords the pool carries, with the keyword tables {used}: "
        "an 'ontology' suite would be a keyword suite. Mine an ontology from these tables (Ontology page, or `python -m "
        f"analytics ontology --workspace DIR {names}`) and leave the ontology unset to use it"
    )


def _context(workspace, sampler_cls, targets, pool, tables, ontology, models, params, batch_size, notes) -> SamplingContext:
    proxy = proxy_distances(workspace, targets, pool, models=models, batch_size=batch_size) if sampler_cls.needs_distances else None
    target_keywords = carriers = None
    if sampler_cls.needs_keywords:
        target_table = _subset(tables["target"][1], targets, "target keyword table", tables["target"][0])
        pool_table = _subset(tables["background"][1], pool, "background keyword table", tables["background"][0])
        if ontology is None:
            target_keywords = detected_keywords(target_table, notes)
        else:
            target_keywords = expanded_keywords(ontology, target_table, maxits=params["maxits"], notes=notes)
        carriers = {word: np.flatnonzero(pool_table.present[:, j]) for j, word in enumerate(pool_table.vocabulary)}
        if ontology is not None and params["maxits"] > 0:
            check_expansion(target_keywords, carriers, params)
    realism, reference = _realism(workspace, targets, pool, params["realism"]) if params["realism_threshold"] > 0 else (None, None)
    return SamplingContext(proxy, target_keywords, carriers, realism, params["realism_threshold"], reference)


def _realism(workspace: Workspace, targets: list[str], pool: list[str], name: str) -> tuple[Callable[[int, int], float], Callable[[int], float]]:
    """Score of target i on pool background j (computed when the sampler asks, then kept: a short
    suite's fill ranks the rejected candidates by it again; images loaded once), and the score of
    target i on its own original scene (the reference bar)."""
    scorer = REALISM_SCORERS[name]()
    images, masks = load_targets(workspace, targets)
    backgrounds = load_backgrounds(workspace, pool)

    @functools.cache
    def score(i: int, j: int) -> float:
        return float(scorer.score(images[i : i + 1], masks[i : i + 1], backgrounds[j : j + 1])[0])

    def own(i: int) -> float:
        return float(scorer.score(images[i : i + 1], masks[i : i + 1], images[i : i + 1])[0])

    return score, own


def _subset(table: KeywordTable, ids: list[str], what: str, name: str) -> KeywordTable:
    """The rows of ``table`` for ``ids``, in that order."""
    row_of = {item: k for k, item in enumerate(table.ids)}
    missing = [item for item in ids if item not in row_of]
    if missing:
        raise InvalidInputError(
            f"{what} {name!r} has no row for {len(missing)} items ({', '.join(missing[:5])}); recompute it over the "
            "current workspace"
        )
    rows = [row_of[item] for item in ids]
    return KeywordTable(
        ids=list(ids),
        vocabulary=table.vocabulary,
        scores=table.scores[rows],
        present=table.present[rows],
        labels=None if table.labels is None else [table.labels[k] for k in rows],
        backend=table.backend,
        params=table.params,
    )


def detected_keywords(table: KeywordTable, notes: list[str] | None = None) -> list[list[RankedKeyword]]:
    """Each item's detected keywords (level 0), ranked by score (descending, then name).

    An item without keywords gets the :data:`FALLBACK_TOP` most frequent keywords of its class
    (needs labels) and a note in ``notes``.

    Returns
    -------
    list (one per row of ``table``) of list of RankedKeyword
    """
    fallback = class_keywords(table, top=FALLBACK_TOP) if table.labels is not None else {}
    column = {word: j for j, word in enumerate(table.vocabulary)}
    ranked = []
    for row in range(table.n_items):
        words = table.keywords_of(row)
        if not words:
            label = table.labels[row] if table.labels is not None else None
            words = fallback.get(label, [])
            _note(notes, f"target {table.ids[row]!r}: no keywords detected; using the {len(words)} most frequent keywords of class {label!r}")
        entries = [RankedKeyword(word, 0, float(table.scores[row, column[word]])) for word in words]
        ranked.append(sorted(entries, key=lambda k: (-k.weight, k.keyword)))
    return ranked


def expanded_keywords(ontology: Ontology, table: KeywordTable, *, maxits: int = DEFAULT_MAXITS, notes: list[str] | None = None) -> list[list[RankedKeyword]]:
    """Each item's ontology expansion OL_x as ranked keywords.

    Ranked by level; level 0 (detected) by detection score, deeper levels by the aggregated
    (product) weight of their path, as :func:`analytics.ontology.expand_table` orders them.
    Fallback expansions (no detected keyword) are noted in ``notes``.
    """
    expansions = expand_table(ontology, table, maxits=maxits, fallback_top=FALLBACK_TOP)
    column = {word: j for j, word in enumerate(table.vocabulary)}
    return [_ranked_expansion(expansion, table, row, column, notes) for row, expansion in enumerate(expansions)]


def _ranked_expansion(expansion: Expansion, table: KeywordTable, row: int, column: dict[str, int], notes) -> list[RankedKeyword]:
    if expansion.note:
        _note(notes, f"target {table.ids[row]!r}: {expansion.note}")
    seeds = [e for e in expansion.keywords if e.level == 0]
    rest = [RankedKeyword(e.keyword, e.level, e.product) for e in expansion.keywords if e.level > 0]
    detected = expansion.fallback is False
    level0 = [RankedKeyword(e.keyword, 0, float(table.scores[row, column[e.keyword]]) if detected else 1.0) for e in seeds]
    return sorted(level0, key=lambda k: (-k.weight, k.keyword)) + rest


def _note(notes: list[str] | None, text: str) -> None:
    if notes is not None:
        notes.append(text)


def _items(workspace, result: SamplingResult, models, batch_size, progress) -> pd.DataFrame:
    """The suite's rows, with exact ensemble distances when models are available."""
    from .inference import ImageJob

    items = pd.DataFrame(
        [(s.target_id, s.position, s.background_id, s.keyword, s.level, s.below_realism) for s in result.items], columns=ITEM_COLUMNS[:-1]
    )
    items["distance"] = np.nan
    if models and len(items):
        jobs = [ImageJob(s.target_id, s.position, s.background_id) for s in result.items]
        items["distance"] = composite_distances(workspace, jobs, models=models, batch_size=batch_size, progress=progress)
    return items.astype(_ITEM_TYPES)


# -- storage -------------------------------------------------------------------------------------
def save_suite(workspace: Workspace, suite: Suite) -> Suite:
    """Store ``suite`` (its row and all items in one transaction); an existing id is kept as it is.

    Returns
    -------
    Suite
        The stored suite (with ``created`` set).
    """
    require_permission(workspace, "build_suites")
    created = now()
    record = {**suite.params, "warnings": list(suite.warnings)}
    rows = [
        (suite.id, r.target_id, int(r.position), r.background_id, r.keyword, int(r.level), int(r.below_realism), None if np.isnan(r.distance) else float(r.distance))
        for r in suite.items.itertuples(index=False)
    ]
    with workspace.transaction() as conn:
        inserted = conn.execute(
            "INSERT OR IGNORE INTO suites(id, method, n, seed, params, created) VALUES (?, ?, ?, ?, ?, ?)",
            (suite.id, suite.method, suite.n, suite.seed, json.dumps(record, sort_keys=True), created),
        ).rowcount
        if inserted:  # a suite's id is its content: an existing one already holds these rows
            conn.executemany(
                f"INSERT INTO suite_items(suite_id, {', '.join(ITEM_COLUMNS)}) VALUES (?, {', '.join('?' * len(ITEM_COLUMNS))})",
                rows,
            )
    return load_suite(workspace, suite.id)


def load_suite(workspace: Workspace, suite_id: str) -> Suite:
    """The suite stored under ``suite_id`` (raises :class:`NotFoundError` naming recent suites)."""
    row = workspace.query_one("SELECT * FROM suites WHERE id = ?", (suite_id,))
    if row is None:
        recent = [r["id"] for r in workspace.query("SELECT id FROM suites ORDER BY created DESC LIMIT 5")]
        raise NotFoundError(f"no suite {suite_id!r} in {workspace.root}; recent suites: {', '.join(recent) or 'none'}")
    record = json.loads(row["params"])
    warnings = tuple(record.pop("warnings", []))
    rows = workspace.query(
        f"SELECT {', '.join(ITEM_COLUMNS)} FROM suite_items WHERE suite_id = ? ORDER BY target_id, position", (suite_id,)
    )
    items = pd.DataFrame([dict(r) for r in rows], columns=ITEM_COLUMNS).astype(_ITEM_TYPES)
    return Suite(row["id"], row["method"], int(row["n"]), int(row["seed"]), record, items, warnings, row["created"])


def list_suites(workspace: Workspace) -> pd.DataFrame:
    """One row per saved suite: id, method, n, seed, targets, items, mean_distance, created (newest first)."""
    rows = workspace.query(
        "SELECT s.id, s.method, s.n, s.seed, COUNT(DISTINCT i.target_id) AS targets, COUNT(i.position) AS items, "
        "AVG(i.distance) AS mean_distance, s.created FROM suites s LEFT JOIN suite_items i ON i.suite_id = s.id "
        "GROUP BY s.id ORDER BY s.created DESC, s.id"
    )
    return pd.DataFrame([dict(r) for r in rows], columns=LIST_COLUMNS)


def _exists(workspace: Workspace, suite_id: str) -> bool:
    return workspace.query_one("SELECT 1 FROM suites WHERE id = ?", (suite_id,)) is not None


# -- use -----------------------------------------------------------------------------------------
def suite_jobs(suite: Suite) -> list[ImageJob]:
    """The images of a suite for the run engine: per target, position 0 (the original) then 1..n.

    Returns
    -------
    list of ImageJob
        Grouped by target (in the suite's target order), positions ascending.
    """
    from .inference import ImageJob

    jobs = []
    for target_id in suite.target_ids:
        jobs.append(ImageJob(target_id, 0, None))
        jobs += [ImageJob(target_id, int(r.position), r.background_id) for r in suite.target_items(target_id).itertuples(index=False)]
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


# -- inputs with defaults (CLI and page) ----------------------------------------------------------
def default_keyword_model(workspace: Workspace) -> str:
    """The model the classifier-patch backend uses by default: the first registered EfficientNet-Lite,
    else the first model with an ImageNet label space.

    Raises
    ------
    InvalidInputError
        No ImageNet classifier is registered.
    """
    from .models import list_models

    specs = [spec for spec in list_models(workspace) if spec.label_space.kind == "imagenet"]
    specs.sort(key=lambda spec: (spec.source != "efficientnet-lite", spec.name))
    if not specs:
        raise InvalidInputError(
            f"classifier-patch keywords need an ImageNet classifier and {workspace.root} has none; register one with "
            "`python -m analytics add-model` (EfficientNet-Lite0 works offline)"
        )
    return specs[0].name


def ensure_keyword_tables(
    workspace: Workspace,
    *,
    model: str | None = None,
    grid: int = 3,
    threshold: float = 0.1,
    batch_size: int = 32,
    device: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """Keyword tables for the targets and the pool: the newest existing one of each kind (not
    stale: its model still has the weights it was computed with), or a classifier-patch table
    computed (and saved) over all items of that kind.

    Parameters
    ----------
    model : str or None, default=None
        Classifier of the backend; None = :func:`default_keyword_model`.
    grid, threshold : see :class:`analytics.keywords.classifier_patch.ClassifierPatchBackend`

    Returns
    -------
    names : dict {'target': name, 'background': name}
    computed : list of str
        The item kinds whose table this call computed.
    """
    from .keywords.classifier_patch import ClassifierPatchBackend, compute_keywords, keyword_table_name
    from .models import load_model

    listing = list_keyword_tables(workspace)
    names, computed, backend = {}, [], None
    for kind in ("target", "background"):
        existing = listing[(listing["item_kind"] == kind) & ~listing["stale"]].sort_values(["created", "name"])
        if not existing.empty:
            names[kind] = str(existing["name"].iloc[-1])
            continue
        if backend is None:
            loaded = load_model(workspace, model or default_keyword_model(workspace), device=device)
            backend = ClassifierPatchBackend(
                loaded, grid=grid, threshold=threshold, batch_size=batch_size, exclude_classes=list_classes(workspace)
            )
        table = compute_keywords(workspace, backend=backend, item_kind=kind, batch_size=batch_size, progress=progress)
        names[kind] = keyword_table_name(table.backend, kind, table.ids, table.params)
        computed.append(kind)
    return names, computed


def ensure_ontology(
    workspace: Workspace,
    tables: Mapping[str, str],
    *,
    min_support: float = DEFAULT_MIN_SUPPORT,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
) -> tuple[str, bool]:
    """An ontology that fits the keyword tables ``tables`` (item kind -> name): the newest one
    mined from exactly these tables, else one mined now (FP-Growth, pairs) from them and saved.

    An ontology mined from other keyword tables is never returned: its vocabulary may not be theirs
    (another backend), and the expansion would then be empty (see :func:`check_expansion`).

    Parameters
    ----------
    min_support, min_confidence : float in (0, 1], default=0.005, 0.1
        Mining settings of a new ontology (the defaults of :mod:`analytics.ontology`).

    Returns
    -------
    ontology_id : str
    built : bool
        True when this call mined it.
    """
    names = list(dict.fromkeys(tables.values()))
    matching = ontologies_from(workspace, names)
    if matching:
        return matching[0], False
    ontology = build_ontology(
        [load_keyword_table(workspace, name) for name in names], min_support=min_support, min_confidence=min_confidence
    )
    return save_ontology(workspace, ontology, tables=names), True
