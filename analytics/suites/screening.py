"""Backgrounds free of the object under test (docs/method.md, 'Background sampling': a suite never uses a background
that shows its target's class).

Two rules decide which pool backgrounds a target may not use:

* **Classifier screening** (:func:`screen_pool`). An ImageNet classifier (by default the
  workspace's EfficientNet-Lite0, the keyword model) looks at each background whole and at the
  cells of a 3 x 3 grid, the views of the classifier-patch keyword backend. A class's score on a
  view is the *summed* softmax probability of its ImageNet indices (``cattle`` = ox + water buffalo
  + bison), and a background is excluded from the suites of a class when that score exceeds
  :data:`DEFAULT_SCREENING_THRESHOLD` on any view. A background holding a zebra says nothing about a zebra
  classifier's background invariance; a small zebra in one corner is what the patches are for.
  Classes without ImageNet indices cannot be screened and are listed as such, and every suite built
  without screening a class carries a warning saying so (:func:`screening_warning`; the Data page:
  :func:`screening_gaps`). A class mapped only to an IN-9 class is screened with that class's
  ImageNet indices in the official ImageNet -> IN-9 map (``analytics.data.list_classes``).
* **Own photo** (:func:`own_photo_backgrounds`). A crop of the photo a target was cut from is never
  that target's background: it shows the target's own scene again (on the demo, two crops of its
  home photo sat at distances 0.02 and 0.04 in a zebra's suite) and tests nothing. A target's
  source photo is its ``origin``; a cut-out pasted on a home photo records ``"<cut-out> on <home
  photo>"`` (the demo and the ``cutouts`` import with a home), and the home is what counts. A
  background's photo is its ``origin`` (every crop of one photo shares it). See
  ``analytics.data.on_home`` / ``source_photo``.

**Threshold.** 0.2 of summed probability on some view (see :data:`DEFAULT_SCREENING_THRESHOLD` for how it
was checked). Excluding a clean background by mistake costs the pool one scene; missing an object
costs the suite its meaning, so the bar sits low, just above what clean scenes reach.

**Cache.** A background's per-view probabilities are stored once per (model, grid, image) in the
workspace's result cache, arrays first and then all rows of a batch in one transaction, so a
new class or a larger pool screens only what is new; class scores are sums over that cache,
reduced image by image (only (pool, classes) scores stay in memory). The classifier-patch keywords
of the pool fill the same cache (:mod:`analytics.keywords.view_cache`): screening after them,
with the keyword model, runs no network at all.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from analytics._progress import Progress
from analytics._validation import check_fraction, check_positive_int
from analytics.data import list_backgrounds, list_classes, list_targets, source_photo
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.inference import default_batch_size
from analytics.keywords import class_outputs, computed_views, stored_views, view_cache_keys
from analytics.models import LoadedModel, ModelSpec, get_model_spec, list_models, load_model, register_hint
from analytics.workspace import Workspace

from .sampling import SampledBackground, Sampler, SamplingContext, SamplingResult

#: Summed class probability above which a view shows the class. Checked with EfficientNet-Lite0,
#: grid 3, on real demo assets (.cache/assets): 56 clean 256 px crops of 28 demo background photos
#: (8 drawn at random, 20 picked as likely to confuse: flowers, cups, a ladybird, fruit trees, rocks)
#: x the 15 demo classes = 840 pairs: largest score 0.42 (``orange`` on orange petals, then ``bear``
#: on mossy rocks, 0.39), 3 pairs above 0.2, 2 above 0.3, none above 0.5. The class's Tux Paint stamp
#: pasted at 30 % of the side at a random place on 4 of those crops (60 images): 42 above 0.1,
#: 40 above 0.2, 35 above 0.3, 26 above 0.5 (the misses are mostly stamps Lite0 does not recognise
#: at that size: guitar, chicken). 0.2 catches most pasted objects at a false exclusion rate of
#: about 0.4 % of (background, class) pairs.
DEFAULT_SCREENING_THRESHOLD = 0.2
DEFAULT_SCREENING_GRID = 3  # the keyword backend's grid: patches of a third of the side
SUMMARY_COLUMNS = ["class", "excluded_by_classifier", "excluded_as_own_photo"]


@dataclass(frozen=True)
class PoolScreening:
    """Class scores of a background pool.

    Attributes
    ----------
    pool_ids : list of str, length n_pool
    classes : list of str, length n_classes
        The screened classes (those with ImageNet indices the model maps).
    scores : ndarray of shape (n_pool, n_classes), float32 in [0, 1]
        Largest summed class probability over the views of each background.
    threshold : float
    model : str
        Registered name of the classifier.
    grid : int
    unscreened : list of str
        Workspace classes that could not be screened (no ImageNet indices, or none the model has).
    """

    pool_ids: list[str]
    classes: list[str]
    scores: np.ndarray = field(repr=False)
    threshold: float
    model: str
    grid: int
    unscreened: list[str] = field(default_factory=list)

    def excluded(self, class_name: str) -> list[str]:
        """Backgrounds whose score for ``class_name`` exceeds the threshold (none for an unscreened class)."""
        if class_name not in self.classes:
            return []
        column = self.scores[:, self.classes.index(class_name)]
        return [self.pool_ids[k] for k in np.flatnonzero(column > self.threshold)]


@dataclass(frozen=True)
class PoolExclusions:
    """What each target of a suite may not use, and why.

    Attributes
    ----------
    excluded : dict of str to frozenset of str
        Target id -> background ids excluded for it (empty set: none).
    record : dict
        JSON-serialisable provenance (a suite's ``params['pool_screening']``): ``model`` (None when
        nothing was screened, with ``note`` saying why), ``threshold``, ``grid``, ``unscreened``
        (classes the classifier could not check), ``classes`` ({class: {'classifier': backgrounds
        excluded as showing it, 'own_photo': distinct backgrounds cut from the photo of one of its
        targets}}) and ``own_photo_pairs`` (target, background) pairs excluded as own photo.
    """

    excluded: dict[str, frozenset[str]]
    record: dict[str, Any]


# -- screening -------------------------------------------------------------------------------------
def screen_pool(
    workspace: Workspace,
    *,
    pool_ids: Sequence[str] | None = None,
    classes: Mapping[str, Sequence[int]] | None = None,
    model: str | None = None,
    threshold: float = DEFAULT_SCREENING_THRESHOLD,
    grid: int = DEFAULT_SCREENING_GRID,
    batch_size: int | None = None,
    device: str | None = None,
    progress: Progress | None = None,
    compute: bool = True,
) -> PoolScreening:
    """Score every pool background for every class (cached per model, grid and image).

    Parameters
    ----------
    workspace : Workspace
    pool_ids : sequence of str or None
        Backgrounds to screen; None = all of the workspace.
    classes : mapping of str to sequence of int, or None
        Class -> ImageNet-1k indices; None = ``analytics.data.list_classes(workspace)``.
    model : str or None
        A registered classifier; None = :func:`default_screening_model`.
    threshold : float in (0, 1], default=DEFAULT_SCREENING_THRESHOLD
    grid : int, default=3
    batch_size : int or None, default=None
        Backgrounds per step and views per forward pass; None: 256 on a GPU, 32 on a CPU
        (:func:`~analytics.keywords.view_probabilities`).
    device : str or None
    progress : callable (done, total) or None
        Called with counts of backgrounds scored (cached ones count as done).
    compute : bool, default=True
        False reads the cache only (fast, for a page) and raises when a background is not in it.

    Returns
    -------
    PoolScreening

    Raises
    ------
    InvalidInputError
        No model given and none registered, or an unknown background id.
    NotFoundError
        ``compute=False`` and some backgrounds were never screened with this model and grid.
    """
    threshold = check_fraction(threshold, "threshold")
    grid = check_positive_int(grid, "grid")
    if batch_size is not None:
        check_positive_int(batch_size, "batch_size")
    frame = list_backgrounds(workspace)
    hashes = dict(zip(frame["id"], frame["image_hash"]))
    pool = list(hashes) if pool_ids is None else list(dict.fromkeys(pool_ids))
    unknown = [b for b in pool if b not in hashes]
    if unknown:
        raise InvalidInputError(f"pool_ids: {len(unknown)} ids are not backgrounds of {workspace.root}: {', '.join(unknown[:5])}")
    classes = list_classes(workspace) if classes is None else dict(classes)
    name = model or default_screening_model(workspace)
    if name is None:
        raise InvalidInputError(
            f"screening the pool needs an ImageNet classifier and {workspace.root} has none: {register_hint(imagenet_classifier=True)}"
        )
    spec = get_model_spec(workspace, name)
    outputs = class_outputs(spec.label_space, classes)
    load = lambda: load_model(workspace, name, device=device)  # noqa: E731  (only when something is not cached)
    scores = _class_scores(workspace, spec, load, [hashes[b] for b in pool], grid, list(outputs.values()), batch_size, progress, compute)
    return PoolScreening(pool, list(outputs), scores, threshold, name, grid, sorted(set(classes) - set(outputs)))


def default_keyword_model(workspace: Workspace) -> str:
    """The model the classifier-patch backend uses by default: the first registered EfficientNet-Lite,
    else the first model with an ImageNet label space.

    Raises
    ------
    InvalidInputError
        No ImageNet classifier is registered.
    """
    specs = [spec for spec in list_models(workspace) if spec.label_space.kind == "imagenet"]
    specs.sort(key=lambda spec: (spec.source != "efficientnet-lite", spec.name))
    if not specs:
        raise InvalidInputError(
            f"classifier-patch keywords need an ImageNet classifier and {workspace.root} has none: {register_hint(imagenet_classifier=True)}"
        )
    return specs[0].name


def default_screening_model(workspace: Workspace) -> str | None:
    """The classifier that screens by default: the keyword model (first registered EfficientNet-Lite,
    else first ImageNet classifier), or None when no ImageNet classifier is registered."""
    try:
        return default_keyword_model(workspace)
    except InvalidInputError:
        return None


def _class_scores(
    workspace: Workspace,
    spec: ModelSpec,
    load: Callable[[], LoadedModel],
    image_hashes: list[str],
    grid: int,
    outputs: list[list[int]],
    batch_size: int | None,
    progress: Progress | None,
    compute: bool,
) -> np.ndarray:
    """Each image's largest summed probability of each class's ``outputs`` over its views:
    (n, n_classes), float32, from the cached view probabilities (float16; computing and caching
    those not stored yet).

    An image's views are reduced as soon as they are read or computed: what stays is (n, n_classes),
    not (n, 1 + grid², n_outputs) (800 MB at 20,000 backgrounds). The model is loaded (``load()``)
    only when some image is not in the cache, e.g. not seen by the classifier-patch keywords.
    """
    keys = view_cache_keys(spec, grid, image_hashes)
    stored = stored_views(workspace, keys)
    missing = [k for k, key in enumerate(keys) if key not in stored]
    if missing and not compute:
        raise NotFoundError(f"{len(missing)} of {len(keys)} backgrounds are not screened with {spec.name!r} yet")
    scores = np.zeros((len(keys), len(outputs)), np.float32)
    for k, key in enumerate(keys):
        if key in stored:
            scores[k] = _reduced(workspace.get_array(stored[key])[None], outputs)[0]
    if not missing:
        return scores
    model = load()
    batch_size = default_batch_size(model.device) if batch_size is None else batch_size
    done = len(keys) - len(missing)
    images_of = lambda rows: np.stack([workspace.get_array(image_hashes[k]) for k in rows])  # noqa: E731
    passes = computed_views(workspace, model, keys, images_of, missing, grid=grid, chunk=batch_size, batch_size=batch_size)
    with contextlib.closing(passes):  # a cancelled job keeps the views computed so far, now
        for rows, views in passes:
            scores[rows] = _reduced(views, outputs)  # as cached: a rerun agrees
            done += len(rows)
            if progress is not None:
                progress(done, len(keys))
    return scores


def _reduced(views: np.ndarray, outputs: list[list[int]]) -> np.ndarray:
    """(m, views, n_outputs) float16 view probabilities -> (m, n_classes) float32: each class's summed
    probability, at its largest over the views."""
    views = views.astype(np.float32)
    out = np.zeros((len(views), len(outputs)), np.float32)
    for c, columns in enumerate(outputs):
        out[:, c] = views[..., columns].sum(axis=-1).max(axis=-1)
    return out


# -- own photos ------------------------------------------------------------------------------------
def own_photo_backgrounds(workspace: Workspace, target_ids: Sequence[str], pool_ids: Sequence[str]) -> dict[str, frozenset[str]]:
    """The pool backgrounds cut from each target's own source photo.

    Parameters
    ----------
    workspace : Workspace
    target_ids, pool_ids : sequence of str

    Returns
    -------
    own : dict of str to frozenset of str
        Target id -> ids of pool backgrounds whose ``origin`` is the target's source photo
        (``analytics.data.source_photo``).
    """
    targets = list_targets(workspace).set_index("id")["origin"]
    backgrounds = list_backgrounds(workspace).set_index("id")["origin"]
    by_photo: dict[str, set[str]] = {}
    for background in pool_ids:
        by_photo.setdefault(_normalised(str(backgrounds[background])), set()).add(background)
    return {target: frozenset(by_photo.get(_normalised(source_photo(str(targets[target]))), ())) for target in target_ids}


def _normalised(origin: str) -> str:
    """An origin compared as a path when it is one (``a/./b`` = ``a/b``), else as written."""
    origin = origin.strip()
    return os.path.normpath(origin) if origin and ":/" not in origin else origin


# -- what suites use -------------------------------------------------------------------------------
def pool_exclusions(
    workspace: Workspace,
    target_ids: Sequence[str],
    pool_ids: Sequence[str],
    *,
    model: str | None = None,
    threshold: float = DEFAULT_SCREENING_THRESHOLD,
    batch_size: int | None = None,
    device: str | None = None,
    compute: bool = True,
) -> PoolExclusions:
    """Backgrounds each target may not use: screened as showing its class, or cut from its own photo.

    Without any class to screen (no ImageNet indices) or without an ImageNet classifier, only the
    own-photo rule applies and the record says why.

    Parameters
    ----------
    workspace : Workspace
    target_ids, pool_ids : sequence of str
        The suite's targets and pool.
    model, threshold, batch_size, device, compute : see :func:`screen_pool`

    Returns
    -------
    PoolExclusions
    """
    frame = list_targets(workspace).set_index("id")["class_name"]
    class_of = {target: str(frame[target]) for target in target_ids}
    classes = {name: indices for name, indices in list_classes(workspace).items() if name in set(class_of.values())}
    name = model or default_screening_model(workspace)
    if name is None:  # the same order as screening_gaps: the classifier first
        return _exclusions(workspace, class_of, pool_ids, None, threshold, _NO_CLASSIFIER)
    if not any(classes.values()):
        return _exclusions(workspace, class_of, pool_ids, None, threshold, _NO_INDICES)
    screening = screen_pool(
        workspace, pool_ids=pool_ids, classes=classes, model=name, threshold=threshold, batch_size=batch_size, device=device, compute=compute
    )
    return _exclusions(workspace, class_of, pool_ids, screening, threshold, "")


def _exclusions(
    workspace: Workspace, class_of: dict[str, str], pool_ids: Sequence[str], screening: PoolScreening | None, threshold: float, why_not: str
) -> PoolExclusions:
    """Both rules together, and their record (``why_not``: why there is no screening)."""
    wanted = sorted(set(class_of.values()))
    by_class = {c: frozenset(screening.excluded(c)) if screening is not None else frozenset() for c in wanted}
    own = own_photo_backgrounds(workspace, list(class_of), pool_ids)
    per_class = {
        c: {"classifier": len(by_class[c]), "own_photo": len(set().union(*(own[t] for t in own if class_of[t] == c)))} for c in wanted
    }
    record: dict[str, Any] = {
        "threshold": threshold,
        "grid": DEFAULT_SCREENING_GRID,
        "model": None if screening is None else screening.model,
        "unscreened": list(wanted) if screening is None else screening.unscreened,
        "classes": per_class,
        "own_photo_pairs": sum(len(v) for v in own.values()),
    }
    if why_not:
        record["note"] = f"{why_not}: only crops of the targets' own photos were excluded"
    return PoolExclusions({t: by_class[class_of[t]] | own[t] for t in class_of}, record)


def sample_screened(
    sampler: Sampler,
    target_ids: Sequence[str],
    pool_ids: Sequence[str],
    *,
    n: int,
    seed: int,
    context: SamplingContext,
    excluded: Mapping[str, frozenset[str]],
) -> SamplingResult:
    """``sampler.sample`` where each target draws only from the pool minus its excluded backgrounds.

    Targets with the same exclusions are sampled together on the pool without them (the context
    restricted to those rows and columns); with no exclusion at all this is ``sampler.sample``
    itself. A target left with fewer than ``n`` backgrounds gets them all and a warning.

    Parameters
    ----------
    sampler : Sampler
    target_ids, pool_ids : sequence of str
    n, seed : int
    context : SamplingContext
        Aligned with ``target_ids`` and ``pool_ids``.
    excluded : mapping of str to frozenset of str
        Target id -> background ids it may not use (:attr:`PoolExclusions.excluded`).

    Returns
    -------
    SamplingResult
        Items grouped by target in the order of ``target_ids``.
    """
    in_pool = frozenset(pool_ids)
    groups: dict[frozenset[str], list[int]] = {}
    for i, target in enumerate(target_ids):
        groups.setdefault(frozenset(excluded.get(target, ())) & in_pool, []).append(i)
    if list(groups) == [frozenset()]:
        return sampler.sample(target_ids, pool_ids, n=n, seed=seed, context=context)
    by_target: dict[str, list[SampledBackground]] = {}
    warnings: list[str] = []
    for banned, rows in groups.items():
        columns = [j for j, background in enumerate(pool_ids) if background not in banned]
        group = [target_ids[i] for i in rows]
        if len(columns) < n:
            warnings += [
                f"target {t!r}: {len(columns)} of {n} backgrounds left once {len(banned)} showing its class or cut from its "
                "own photo are excluded" for t in group
            ]
        if not columns:
            continue
        context_part = _restricted(context, rows, columns, len(pool_ids))
        part = sampler.sample(group, [pool_ids[j] for j in columns], n=min(n, len(columns)), seed=seed, context=context_part)
        for item in part.items:
            by_target.setdefault(item.target_id, []).append(item)
        warnings += part.warnings
    return SamplingResult([item for target in target_ids for item in by_target.get(target, [])], warnings)


def _restricted(context: SamplingContext, rows: list[int], columns: list[int], n_pool: int) -> SamplingContext:
    """``context`` for the targets ``rows`` and the pool backgrounds ``columns`` (indices renumbered)."""
    new_index = np.full(n_pool, -1)
    new_index[columns] = np.arange(len(columns))
    proxy, keywords, carriers = context.proxy_distances, context.target_keywords, context.background_keywords
    realism, reference = context.realism, context.realism_reference
    return replace(
        context,
        proxy_distances=None if proxy is None else np.asarray(proxy)[np.ix_(rows, columns)],
        target_keywords=None if keywords is None else [keywords[i] for i in rows],
        background_keywords=None if carriers is None else {word: new_index[c][new_index[c] >= 0] for word, c in carriers.items()},
        realism=None if realism is None else (lambda i, j: realism(rows[i], columns[j])),
        realism_reference=None if reference is None else (lambda i: reference(rows[i])),
    )


# -- saying what was not screened -------------------------------------------------------------------
_NO_CLASSIFIER = "no ImageNet classifier is registered"
_NO_INDICES = "no class has ImageNet indices"  # a record whose note starts with it: the classes lack indices, not the workspace a classifier


def screening_warning(record: Mapping[str, Any]) -> str:
    """A warning naming the classes a suite's pool was not screened for, and the fix ('' when none).

    Parameters
    ----------
    record : mapping
        :attr:`PoolExclusions.record` (a suite's ``params['pool_screening']``).
    """
    unscreened = list(record.get("unscreened") or [])
    if not unscreened:
        return ""
    no_classifier = record.get("model") is None and not str(record.get("note", "")).startswith(_NO_INDICES)
    return _gap_message(unscreened, _NO_CLASSIFIER if no_classifier else "")


def screening_gaps(workspace: Workspace, *, model: str | None = None) -> str:
    """:func:`screening_warning` for the workspace's classes with targets, from mappings and models alone (nothing runs).

    Parameters
    ----------
    workspace : Workspace
    model : str or None
        The screening classifier; None = :func:`default_screening_model`.
    """
    wanted = set(list_targets(workspace)["class_name"])
    classes = {name: indices for name, indices in list_classes(workspace).items() if name in wanted}
    if not classes:
        return ""
    if (model or default_screening_model(workspace)) is None:
        return _gap_message(sorted(classes), _NO_CLASSIFIER)
    return _gap_message([name for name, indices in classes.items() if not indices], "")


def _gap_message(classes: list[str], no_classifier: str) -> str:
    if not classes:
        return ""
    shown = ", ".join(classes[:8]) + (f" and {len(classes) - 8} more" if len(classes) > 8 else "")
    if no_classifier:
        why, fix = no_classifier, f"register one: {register_hint(imagenet_classifier=True)}"
    else:
        why = "they have no ImageNet indices"
        fix = "map them in the class editor on the Data page, with `analytics.data.set_class_mapping(workspace, name, imagenet=[...])` or `python -m analytics set-class`"
    return (
        f"pool screening skipped for {shown}: {why}, so backgrounds showing these classes may reach their suites "
        f"(only crops of the targets' own photos are kept out); {fix}, then rebuild the suite"
    )


# -- what the Data page shows ----------------------------------------------------------------------
def exclusion_summary(
    workspace: Workspace, *, model: str | None = None, threshold: float = DEFAULT_SCREENING_THRESHOLD, compute: bool = False
) -> pd.DataFrame:
    """How many pool backgrounds each class's suites exclude, and why (the whole pool, all targets).

    Parameters
    ----------
    workspace : Workspace
    model, threshold : see :func:`screen_pool`
    compute : bool, default=False
        Screen the backgrounds not in the cache (the classifier runs over them: minutes for a
        few hundred on a CPU); False leaves the classifier column NA until they are.

    Returns
    -------
    summary : DataFrame
        Columns class (str), excluded_by_classifier (Int64; NA when the class cannot be screened
        or the pool is not screened yet), excluded_as_own_photo (int: distinct backgrounds cut
        from the photo of some target of the class); one row per class with targets, by name.
    """
    frame = list_targets(workspace)
    pool = list_backgrounds(workspace)["id"].tolist()
    if frame.empty or not pool:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    try:
        record = pool_exclusions(workspace, frame["id"].tolist(), pool, model=model, threshold=threshold, compute=compute).record
    except NotFoundError:  # the classifier never saw (part of) the pool: own photos only, classifier NA
        class_of = dict(zip(frame["id"], frame["class_name"]))
        record = _exclusions(workspace, class_of, pool, None, threshold, "the pool is not screened yet").record
    unscreened = set(record["unscreened"])
    rows = [(c, pd.NA if c in unscreened else n["classifier"], n["own_photo"]) for c, n in sorted(record["classes"].items())]
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS).astype({"excluded_by_classifier": "Int64", "excluded_as_own_photo": int})
