"""Building test suites: for each target, N backgrounds chosen by a sampler, with their provenance.

:func:`build_suite` samples, screens and measures a suite and saves it (:mod:`analytics.suites.store`
holds the record and its storage). Inputs per method (:data:`analytics.suites.SAMPLERS`):

* ``nearest`` / ``interval`` rank the pool by proxy distances from the distance-model ensemble
  (:func:`analytics.suites.proxy_distances`);
* ``keyword`` uses the targets' detected keywords (level 0, ranked by score) and the pool's
  keyword table;
* ``ontology`` expands the targets' keywords through an ontology (:func:`analytics.ontology.expand_table`,
  ranked by level then aggregated weight; level 0 by detection score). The ontology must fit the
  keyword tables: by default the newest one mined from exactly them, and any ontology that expands
  fewer than half of the targets to keywords the pool carries is refused (:func:`analytics.suites.check_expansion`):
  an ontology of another vocabulary would silently turn the suite into a keyword suite.

Provenance (``Suite.params``, stored as the ``suites.params`` JSON): the keyword tables (name,
backend, digest) and the ontology (id, mining parameters, size, source tables) a suite used, and
for keyword methods the share of backgrounds topped up at random (:func:`analytics.suites.topup_record`).

A target without detected keywords starts from the most frequent keywords of its class
(``keyword``: those keywords themselves; ``ontology``: their expansion) and the suite's warnings
say so.

:func:`ensure_keyword_tables` and :func:`ensure_ontology` supply the inputs of the keyword methods
with defaults (CLI and page).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from analytics._choices import DEFAULT_REALISM, DEFAULT_REALISM_THRESHOLD
from analytics._progress import Progress
from analytics._validation import check_choice, check_fraction, check_positive_int
from analytics.data import list_backgrounds, list_classes, list_targets
from analytics.exceptions import InvalidInputError
from analytics.inference import CPU_BATCH, SuiteImage, default_batch_size
from analytics.keywords import (
    ClassifierPatchBackend,
    KeywordTable,
    compute_keywords,
    keyword_table_name,
    load_keyword_table,
    newest_keyword_tables,
)
from analytics.models import get_model_spec, load_model
from analytics.ontology import (
    DEFAULT_MAXITS,
    DEFAULT_MIN_CONFIDENCE,
    DEFAULT_MIN_SUPPORT,
    Ontology,
    OntologyParams,
    build_ontology,
    list_ontologies,
    load_ontology,
    ontologies_from,
    ontology_record,
    save_ontology,
)
from analytics.workspace import Workspace, content_id

from .naming import check_suite_name
from .ranking import check_expansion, detected_keywords, expanded_keywords
from .sampling import REALISM_SCORERS, SAMPLERS, KeywordSampler, SamplingContext, SamplingResult
from .screening import default_keyword_model, pool_exclusions, sample_screened, screening_warning
from .similarity import composite_distances, proxy_distances, resolve_distance_models
from .store import ITEM_COLUMNS, ITEM_TYPES, Suite, load_suite, name_suite, save_suite, suite_exists, topup_record

logger = logging.getLogger(__name__)

#: Decoded images the realism scorer keeps (least recently used go first). A sampler works target by
#: target, so a few targets suffice; backgrounds recur among the nearest of a class's targets.
REALISM_TARGETS = 4
REALISM_BACKGROUNDS = 256


def build_suite(
    workspace: Workspace,
    *,
    method: str,
    n: int = 32,
    seed: int = 0,
    classes: Sequence[str] | None = None,
    target_ids: Sequence[str] | None = None,
    fit_target_ids: Sequence[str] | None = None,
    pool_ids: Sequence[str] | None = None,
    keyword_tables: Mapping[str, str] | None = None,
    ontology_id: str | None = None,
    distance_models: Sequence[str] | None = None,
    screening_model: str | None = None,
    realism: str = DEFAULT_REALISM,
    realism_threshold: float = DEFAULT_REALISM_THRESHOLD,
    top_up: bool = True,
    maxits: int = DEFAULT_MAXITS,
    batch_size: int | None = None,
    device: str | None = None,
    save: bool = True,
    name: str = "",
    progress: Progress | None = None,
    say: Callable[[str], None] | None = None,
) -> Suite:
    """Sample a suite for every target of the workspace and (by default) save it.

    Parameters
    ----------
    workspace : Workspace
    method : {'random', 'nearest', 'interval', 'keyword', 'ontology'}
    n : int, default=32
        Backgrounds per target; at most the pool size (a suite never repeats a background).
    seed : int, default=0
    classes : sequence of str or None, default=None
        Cover only the targets of these classes (None = every class); recorded in ``params`` as
        ``selection`` (with ``target_ids`` when both are given), so it shows in the provenance.
    target_ids, pool_ids : sequence of str or None, default=None
        Targets to cover (within ``classes``, see :func:`select_targets`) and backgrounds to choose
        from; None = all of the workspace.
    fit_target_ids : sequence of str or None, default=None
        Targets the ontology's fit (:func:`check_expansion`) is judged on; None = ``target_ids``.
        A preview of a few targets passes the whole suite's targets, so that its small sample
        neither refuses a suite the save would build nor lets through one it would refuse.
    keyword_tables : mapping {'target': name, 'background': name} or None
        Keyword tables (``keyword`` / ``ontology``); a missing entry = the newest table of that
        item kind.
    ontology_id : str or None
        Ontology for ``ontology``; None = the newest one mined from exactly these keyword tables
        (else the newest saved one). Either way it must expand at least half of the targets to
        keywords the pool carries (:func:`check_expansion`), or the suite is refused.
    distance_models : sequence of str or None
        Ensemble for distances; None = :func:`analytics.suites.default_distance_models`.
        Without any registered model, ``nearest``/``interval`` fail and the other methods save
        NaN distances with a warning.
    screening_model : str or None
        The ImageNet classifier that screens the pool for backgrounds showing a target's class
        (:func:`analytics.suites.pool_exclusions`); None = :func:`analytics.suites.default_screening_model`.
        Recorded in ``params['pool_screening']``, so it is part of the suite's id.
    realism : str, default='seam-harmony'
        Realism scorer (:data:`analytics.suites.REALISM_SCORERS`).
    realism_threshold : float in [0, 1], default=0.25
        Candidates scoring below are skipped, unless they score at least as well as the target on
        its own original scene; 0 accepts everything.
    top_up : bool, default=True
        ``keyword`` / ``ontology``: fill up with random backgrounds (level -1) when the keywords
        run out (see :class:`analytics.suites.KeywordSampler`).
    maxits : int, default=5
        MAXITS of the ontology expansion.
    batch_size : int or None, default=None
        Images per forward pass of the pool's screening and of the distance models. None: the
        screening takes its device's (256 on a GPU, where it backs off when the model does not
        fit; 32 on a CPU), the distances 32.
    device : str or None, default=None
        Where the distance models run.
    save : bool, default=True
        Store the suite; False returns an unsaved preview (``created`` = '') unless the same
        suite is already saved, which is then returned either way.
    name : str, default=''
        A name for people to call the suite by (:func:`analytics.suites.check_suite_name`: at most
        60 letters, digits, spaces and plain punctuation); not part of its id, so building the same
        suite again with another name renames it. '' = none: it is called by method, N, seed and targets.
    progress : callable (done, total) or None
        Called while exact distances are computed (the slow step), with image counts.
    say : callable (str) or None
        Called with each step as it starts (``'screening the pool: 264 backgrounds'``, ``'loading the
        distance models'``, ``'sampling backgrounds'``, ``'exact distances of 120 composites'``), so a
        caller can say what a wait is for before ``progress`` has a count (issue 47.8).

    Returns
    -------
    Suite

    Raises
    ------
    InvalidInputError
        Unknown method, ``n`` larger than the pool, missing keyword tables / ontology / models,
        an empty selection, or a class or target id the workspace lacks.
    """
    check_choice(method, "method", SAMPLERS)
    name = check_suite_name(name)
    n = check_positive_int(n, "n")
    seed = check_positive_int(seed, "seed", minimum=0)
    check_choice(realism, "realism", REALISM_SCORERS)
    realism_threshold = check_fraction(realism_threshold, "realism_threshold", low_open=False)
    sampler_cls = SAMPLERS[method]
    targets = select_targets(workspace, classes=classes, target_ids=target_ids)
    known_targets = list_targets(workspace)["id"].tolist()
    fit_targets = targets if fit_target_ids is None else _ids(fit_target_ids, known_targets, "fit_target_ids", "targets", workspace)
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
    if classes is not None:  # only then: a suite of every class keeps the id it had before selections existed
        params["selection"] = {"classes": sorted(set(classes)), "target_ids": None if target_ids is None else sorted(set(target_ids))}
    if sampler_cls.needs_keywords:
        params["top_up"] = bool(top_up)
    if ontology is not None:
        params["maxits"] = check_positive_int(maxits, "maxits", minimum=0)
    # backgrounds showing a target's class or cut from its own photo (analytics.suites.screening)
    say = say or (lambda _step: None)
    say(f"screening the pool: {len(pool):,} backgrounds for the classes of {len(targets):,} targets")
    exclusions = pool_exclusions(workspace, targets, pool, model=screening_model, batch_size=batch_size, device=device)
    params["pool_screening"] = exclusions.record
    notes += [warning for warning in [screening_warning(exclusions.record)] if warning]  # never skipped silently
    suite_id = content_id(method, n, seed, params, targets, pool)
    if suite_exists(workspace, suite_id):
        logger.info("suite %s (%s, n=%d, seed=%d) exists; loading it", suite_id, method, n, seed)
        return name_suite(workspace, suite_id, name) if save and name else load_suite(workspace, suite_id)
    if models:
        say(f"loading the distance models ({', '.join(name for name, _ in models)})")
    loaded = _load_models(workspace, models, device)
    embed_batch = CPU_BATCH if batch_size is None else batch_size  # the distance models have no out-of-memory back-off
    say(f"sampling {n} backgrounds for each of {len(targets):,} targets" + (" (proxy distances of the pool first)" if sampler_cls.needs_distances else ""))
    context = _context(workspace, sampler_cls, targets, fit_targets, pool, tables, ontology, loaded, params, embed_batch, notes)
    sampler = sampler_cls(top_up=top_up) if issubclass(sampler_cls, KeywordSampler) else sampler_cls()
    result = sample_screened(sampler, targets, pool, n=n, seed=seed, context=context, excluded=exclusions.excluded)
    if loaded:
        say(f"exact distances of {len(result.items):,} composites")
    items = _items(workspace, result, loaded, embed_batch, progress)
    if sampler_cls.needs_keywords:  # an outcome, recorded after the id: what the keywords could not supply
        params = {**params, **topup_record(items)}
    suite = Suite(suite_id, method, n, seed, params, items, tuple(notes + result.warnings), name=name)
    return save_suite(workspace, suite) if save else suite


def select_targets(workspace: Workspace, *, classes: Sequence[str] | None = None, target_ids: Sequence[str] | None = None) -> list[str]:
    """The targets a suite covers: those of ``classes`` (None = every class), narrowed to
    ``target_ids`` (None = all of those), in id order.

    Raises
    ------
    InvalidInputError
        An empty selection, a class without targets in the workspace, or a target id that is not
        a target of the selected classes; the message says where the valid names are listed.
    """
    table = list_targets(workspace)
    if classes is not None:
        wanted = list(dict.fromkeys(classes))
        if not wanted:
            raise InvalidInputError("classes must name at least one class; got none (leave it out to cover every class)")
        present = sorted(set(table["class_name"]))
        unknown = [name for name in wanted if name not in present]
        if unknown:
            raise InvalidInputError(
                f"classes: {', '.join(unknown[:5])} {'is not a class' if len(unknown) == 1 else 'are not classes'} of the targets in "
                f"{workspace.root}; its classes are {', '.join(present) or 'none'} (`python -m analytics info` lists them with their counts)"
            )
        table = table[table["class_name"].isin(wanted)]
    if target_ids is not None:
        outside = sorted(set(target_ids) - set(table["id"]))
        if outside:
            where = "" if classes is None else f" of the classes {', '.join(sorted(set(classes)))}"
            raise InvalidInputError(
                f"target_ids: {len(outside)} ids are not targets{where} in {workspace.root}: {', '.join(outside[:5])}; "
                "the Data page lists the targets with their ids and classes"
            )
    return _ids(target_ids, table["id"].tolist(), "target_ids", "targets", workspace)


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
    try:
        resolved = resolve_distance_models(workspace, names)
    except InvalidInputError:
        if required or names is not None:
            raise
        notes.append("no registered model: distances are not recorded (register one and rebuild to get them)")
        return []
    return [(name, get_model_spec(workspace, name).content_key()) for name in resolved]


def _load_models(workspace: Workspace, models: list[tuple[str, str]], device: str | None) -> list:
    return [load_model(workspace, name, device=device) for name, _ in models]


def _keyword_tables(workspace: Workspace, names: Mapping[str, str] | None) -> dict[str, tuple[str, KeywordTable]]:
    """{'target': (name, table), 'background': (name, table)}: given names or the newest not stale of each kind."""
    names = dict(names or {})
    unknown = sorted(set(names) - {"target", "background"})
    if unknown:
        raise InvalidInputError(f"keyword_tables keys must be 'target' and 'background'; got {unknown}")
    newest = newest_keyword_tables(workspace)
    out = {}
    for kind in ("target", "background"):
        name = names.get(kind) or newest.get(kind)
        if name is None:
            raise InvalidInputError(
                f"no {kind} keyword table in {workspace.root}; compute one (`python -m analytics suite` does it with the "
                "classifier-patch backend) or import one on the Ontology page"
            )
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
                "`python -m analytics ontology`, or build the suite with `analytics.api.build_suite`, which mines one"
            )
        ontology_id = matching[0] if matching else str(listing["id"].iloc[-1])
    return load_ontology(workspace, ontology_id)


def _context(workspace, sampler_cls, targets, fit_targets, pool, tables, ontology, models, params, batch_size, notes) -> SamplingContext:
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
            judged = target_keywords
            if fit_targets != targets:  # a preview: judge the ontology on the whole suite's targets
                fit_table = _subset(tables["target"][1], fit_targets, "target keyword table", tables["target"][0])
                judged = expanded_keywords(ontology, fit_table, maxits=params["maxits"])
            check_expansion(judged, carriers, params)
    realism, reference = _realism(workspace, targets, pool, params["realism"]) if params["realism_threshold"] > 0 else (None, None)
    return SamplingContext(proxy, target_keywords, carriers, realism, params["realism_threshold"], reference)


def _realism(workspace: Workspace, targets: list[str], pool: list[str], name: str) -> tuple[Callable[[int, int], float], Callable[[int], float]]:
    """Score of target i on pool background j (computed when the sampler asks, then kept: a short
    suite's fill ranks the rejected candidates by it again), and the score of target i on its own
    original scene (the reference bar).

    Images are read when first asked for, never the whole pool at once (20,000 backgrounds of
    256 px are 3.9 GB): a target's side of the score is prepared once (:meth:`RealismScorer.for_target`),
    and only the last :data:`REALISM_TARGETS` targets and :data:`REALISM_BACKGROUNDS` backgrounds
    stay decoded. Two queries find every image's hash, whatever the pool's size.
    """
    scorer = REALISM_SCORERS[name]()
    target_rows = list_targets(workspace).set_index("id").loc[targets]
    image_of, mask_of = target_rows["image_hash"].tolist(), target_rows["mask_hash"].tolist()
    background_of = list_backgrounds(workspace).set_index("id")["image_hash"].loc[pool].tolist()

    @functools.lru_cache(maxsize=REALISM_TARGETS)
    def target(i: int) -> tuple[np.ndarray, Callable[[np.ndarray], float]]:
        image = workspace.get_array(image_of[i])
        return image, scorer.for_target(image, workspace.get_array(mask_of[i]))

    @functools.lru_cache(maxsize=REALISM_BACKGROUNDS)
    def background(j: int) -> np.ndarray:
        return workspace.get_array(background_of[j])

    @functools.cache
    def score(i: int, j: int) -> float:
        return target(i)[1](background(j))

    @functools.cache
    def own(i: int) -> float:
        image, scored = target(i)
        return scored(image)

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


def _items(workspace, result: SamplingResult, models, batch_size, progress) -> pd.DataFrame:
    """The suite's rows, with exact ensemble distances when models are available."""
    items = pd.DataFrame(
        [(s.target_id, s.position, s.background_id, s.keyword, s.level, s.below_realism) for s in result.items], columns=ITEM_COLUMNS[:-1]
    )
    items["distance"] = np.nan
    if models and len(items):
        jobs = [SuiteImage(s.target_id, s.position, s.background_id) for s in result.items]
        items["distance"] = composite_distances(workspace, jobs, models=models, batch_size=batch_size, progress=progress)
    return items.astype(ITEM_TYPES)


# -- inputs with defaults (CLI and page) ----------------------------------------------------------
def ensure_keyword_tables(
    workspace: Workspace,
    *,
    model: str | None = None,
    grid: int = 3,
    threshold: float = 0.1,
    batch_size: int | None = None,
    device: str | None = None,
    progress: Progress | None = None,
) -> tuple[dict[str, str], list[str]]:
    """Keyword tables for the targets and the pool: the newest existing one of each kind (not
    stale: its model still has the weights it was computed with), or a classifier-patch table
    computed (and saved) over all items of that kind.

    Parameters
    ----------
    model : str or None, default=None
        Classifier of the backend; None = :func:`analytics.suites.default_keyword_model`.
    grid, threshold : see :class:`analytics.keywords.ClassifierPatchBackend`
    batch_size : int or None, default=None
        Images per call and views per forward pass; None: the model's device's (256 on a GPU,
        32 on a CPU, :func:`~analytics.inference.device.default_batch_size`).

    Returns
    -------
    names : dict {'target': name, 'background': name}
    computed : list of str
        The item kinds whose table this call computed.
    """
    newest = newest_keyword_tables(workspace)
    names, computed, backend = {}, [], None
    for kind in ("target", "background"):
        if kind in newest:
            names[kind] = newest[kind]
            continue
        if backend is None:
            loaded = load_model(workspace, model or default_keyword_model(workspace), device=device)
            backend = ClassifierPatchBackend(
                loaded, grid=grid, threshold=threshold, batch_size=batch_size, exclude_classes=list_classes(workspace)
            )
        images_per_call = default_batch_size(backend.model.device) if batch_size is None else batch_size
        table = compute_keywords(workspace, backend=backend, item_kind=kind, batch_size=images_per_call, progress=progress)
        names[kind] = keyword_table_name(table.backend, kind, table.ids, table.params)
        computed.append(kind)
    return names, computed


def ensure_ontology(
    workspace: Workspace,
    tables: Mapping[str, str],
    *,
    min_support: float | None = None,
    min_confidence: float | None = None,
) -> tuple[str, bool]:
    """An ontology that fits the keyword tables ``tables`` (item kind -> name): the newest one
    mined from exactly these tables (with the settings asked, when any is), else one mined now
    (FP-Growth, pairs) from them and saved.

    An ontology mined from other keyword tables is never returned: its vocabulary may not be theirs
    (another backend), and the expansion would then be empty (see :func:`analytics.suites.check_expansion`).

    Parameters
    ----------
    min_support, min_confidence : float in (0, 1] or None, default=None
        Mining settings. Neither given: the newest ontology of these tables whatever its settings,
        else one mined with the defaults of :mod:`analytics.ontology` (0.005, 0.1). Either given: the
        newest one of these tables mined with these settings (the other one at its default), else
        one mined now with them (small data may need a lower support or confidence than the
        defaults for its rules to reach the pool's keywords).

    Returns
    -------
    ontology_id : str
    built : bool
        True when this call mined it.
    """
    names = list(dict.fromkeys(tables.values()))
    matching = ontologies_from(workspace, names)
    asked = min_support is not None or min_confidence is not None
    settings = OntologyParams(
        min_support=DEFAULT_MIN_SUPPORT if min_support is None else min_support,
        min_confidence=DEFAULT_MIN_CONFIDENCE if min_confidence is None else min_confidence,
    )  # checked before any work
    wanted = (settings.algorithm, settings.min_support, settings.min_confidence, settings.max_len)
    for ontology_id in matching:
        record = ontology_record(workspace, ontology_id)
        if not asked or (record["algorithm"], record["min_support"], record["min_confidence"], record["max_len"]) == wanted:
            return ontology_id, False
    ontology = build_ontology(
        [load_keyword_table(workspace, name) for name in names], min_support=settings.min_support, min_confidence=settings.min_confidence
    )
    return save_ontology(workspace, ontology, tables=names), True
