"""The eight Backgrounds Challenge variants (Xiao et al., "Noise or Signal", Table 1) from any targets with masks.

Original, Only-BG-B (the object's bounding box black), Only-BG-T (the box refilled by tiling the
largest object-free strip, the paper's Appendix A), No-FG (the object's pixels black), Only-FG
(the object on black), and Mixed-Same / Mixed-Rand / Mixed-Next: the object pasted on the Only-BG-T
image of another target of the same class, of a random class (its own included, as the paper's), of
the next class in ``class_order``. The paste is hard (no blending), as the paper's; ``blend=True`` uses Backdrop's
seam blending (:func:`analytics.data.compose.composite`) instead.

Pairings are drawn by :func:`pair_backgrounds` from ``numpy.random.default_rng([seed, variant])``,
so every variant's pairing is reproducible on its own. Each generated image carries its source
target and the target whose background it shows (:class:`VariantPlan`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from analytics._validation import check_image_batch
from analytics.data import composite
from analytics.exceptions import InvalidInputError

VARIANTS = ("original", "only_bg_b", "only_bg_t", "no_fg", "only_fg", "mixed_same", "mixed_rand", "mixed_next")
VARIANT_NAMES = {
    "original": "Original",
    "only_bg_b": "Only-BG-B",
    "only_bg_t": "Only-BG-T",
    "no_fg": "No-FG",
    "only_fg": "Only-FG",
    "mixed_same": "Mixed-Same",
    "mixed_rand": "Mixed-Rand",
    "mixed_next": "Mixed-Next",
}
MIXED = ("mixed_same", "mixed_rand", "mixed_next")
_NO_POOL = np.zeros(0, np.int64)


@dataclass(frozen=True)
class ChallengeData:
    """Targets ready for the challenge.

    Attributes
    ----------
    ids : tuple of str
        Target ids, one per image.
    classes : tuple of str
        Class of each target.
    images : ndarray of shape (n, h, w, 3), uint8
    masks : ndarray of shape (n, h, w), bool
        True = object.
    class_order : tuple of str
        The stated class order of Mixed-Next (class k takes backgrounds of class k + 1, cyclically).
    """

    ids: tuple[str, ...]
    classes: tuple[str, ...]
    images: np.ndarray
    masks: np.ndarray
    class_order: tuple[str, ...]


@dataclass(frozen=True)
class VariantPlan:
    """Which images a variant holds: image k shows target ``sources[k]``'s object (or its own
    scene) over the background of target ``backgrounds[k]`` (equal to the source outside Mixed-*).

    sources, backgrounds : ndarray of shape (k,), int64 (indices into :class:`ChallengeData`).
    """

    variant: str
    sources: np.ndarray
    backgrounds: np.ndarray


def challenge_data(
    ids: Sequence[str], classes: Sequence[str], images: np.ndarray, masks: np.ndarray, *, class_order: Sequence[str] | None = None
) -> ChallengeData:
    """Check and bundle targets.

    Parameters
    ----------
    ids, classes : sequence of str, length n
    images : ndarray of shape (n, h, w, 3), uint8
    masks : ndarray of shape (n, h, w), bool (or 0/1)
    class_order : sequence of str, optional
        Order of Mixed-Next; default: the class names sorted (``00_dog`` … ``08_fish`` for IN-9).

    Returns
    -------
    ChallengeData

    Raises
    ------
    InvalidInputError
        Lengths or shapes disagree, a target without object pixels, or ``class_order`` missing a class.
    """
    images = check_image_batch(images)
    masks = np.asarray(masks)
    if masks.shape != images.shape[:3]:
        raise InvalidInputError(f"masks must have shape {images.shape[:3]} to match the images; got {masks.shape}")
    masks = masks > 0.5
    if not len(ids) == len(classes) == len(images):
        raise InvalidInputError(f"ids ({len(ids)}), classes ({len(classes)}) and images ({len(images)}) must have the same length")
    empty = [ids[i] for i in np.flatnonzero(~masks.any(axis=(1, 2)))]
    if empty:
        raise InvalidInputError(f"targets without object pixels in their masks: {', '.join(empty[:5])}; fix or remove their masks")
    order = tuple(class_order) if class_order is not None else tuple(sorted(set(classes)))
    missing = sorted(set(classes) - set(order))
    if missing:
        raise InvalidInputError(f"class_order {list(order)} misses the classes {missing}; list every class once")
    return ChallengeData(tuple(ids), tuple(classes), images, masks, order)


# -- pixels ------------------------------------------------------------------------------------
def bounding_boxes(masks: np.ndarray) -> np.ndarray:
    """Tight box of each mask.

    Parameters
    ----------
    masks : ndarray of shape (n, h, w), bool, each non-empty

    Returns
    -------
    boxes : ndarray of shape (n, 4), int64
        Rows ``(top, bottom, left, right)`` with bottom/right exclusive.
    """
    rows, cols = masks.any(axis=2), masks.any(axis=1)
    top, left = rows.argmax(axis=1), cols.argmax(axis=1)
    bottom = rows.shape[1] - rows[:, ::-1].argmax(axis=1)
    right = cols.shape[1] - cols[:, ::-1].argmax(axis=1)
    return np.stack([top, bottom, left, right], axis=1).astype(np.int64)


def only_bg_b(images: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The object's bounding box filled black.

    Parameters
    ----------
    images : ndarray of shape (n, h, w, 3), uint8
    masks : ndarray of shape (n, h, w), bool

    Returns
    -------
    ndarray of shape (n, h, w, 3), uint8
    """
    out = images.copy()
    for i, (top, bottom, left, right) in enumerate(bounding_boxes(masks)):
        out[i, top:bottom, left:right] = 0
    return out


def only_bg_t(images: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The object's bounding box refilled from the largest object-free strip, tiled over the image.

    The candidate strips are the full-width bands above and below the box and the full-height
    bands left and right of it; the largest (ties: top, bottom, left, right) is repeated from its
    own position across the image, and its tiling replaces the box. A box that covers the whole
    image leaves no strip and is filled black.

    Parameters
    ----------
    images : ndarray of shape (n, h, w, 3), uint8
    masks : ndarray of shape (n, h, w), bool, each non-empty

    Returns
    -------
    tiled : ndarray of shape (n, h, w, 3), uint8
    """
    n, h, w = masks.shape
    boxes = bounding_boxes(masks)
    top, bottom, left, right = boxes.T
    # strips as (start, length) along their tiling axis; areas pick the largest
    starts = np.stack([np.zeros(n, np.int64), bottom, np.zeros(n, np.int64), right], axis=1)
    lengths = np.stack([top, h - bottom, left, w - right], axis=1)
    areas = lengths * np.array([w, w, h, h])
    choice = areas.argmax(axis=1)
    start, length = starts[np.arange(n), choice], np.maximum(lengths[np.arange(n), choice], 1)
    # source row / column of every box pixel: tiles repeat the strip from its own position
    out = images.copy()
    for i, (top, bottom, left, right) in enumerate(boxes):
        if areas[i, choice[i]] == 0:
            out[i, top:bottom, left:right] = 0
        elif choice[i] < 2:
            out[i, top:bottom, left:right] = images[i, start[i] + (np.arange(top, bottom) - start[i]) % length[i], left:right]
        else:
            out[i, top:bottom, left:right] = images[i, top:bottom][:, start[i] + (np.arange(left, right) - start[i]) % length[i]]
    return out


def no_fg(images: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The object's pixels black.

    Parameters
    ----------
    images : ndarray of shape (n, h, w, 3), uint8
    masks : ndarray of shape (n, h, w), bool

    Returns
    -------
    ndarray of shape (n, h, w, 3), uint8
    """
    return _copy_where(images.copy(), np.zeros_like(images), masks)


def only_fg(images: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The object on black.

    Parameters
    ----------
    images : ndarray of shape (n, h, w, 3), uint8
    masks : ndarray of shape (n, h, w), bool

    Returns
    -------
    ndarray of shape (n, h, w, 3), uint8
    """
    return _copy_where(np.zeros_like(images), images, masks)


def _copy_where(out: np.ndarray, source: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``out`` with ``source`` copied in where ``masks`` is True (OpenCV's masked copy per image,
    several times faster than a broadcast ``np.where`` over three channels)."""
    flags = np.ascontiguousarray(masks).view(np.uint8)
    for i in range(len(out)):
        cv2.copyTo(source[i], flags[i], out[i])
    return out


def paste(images: np.ndarray, masks: np.ndarray, backgrounds: np.ndarray, *, blend: bool = False) -> np.ndarray:
    """Objects on backgrounds: the paper's hard paste, or Backdrop's seam blending with ``blend=True``.

    Parameters
    ----------
    images : ndarray of shape (n, h, w, 3), uint8
    masks : ndarray of shape (n, h, w), bool
    backgrounds : ndarray of shape (n, h, w, 3), uint8
    blend : bool, default=False

    Returns
    -------
    ndarray of shape (n, h, w, 3), uint8
    """
    if blend:
        return composite(images, masks, backgrounds, blend=True)
    return _copy_where(backgrounds.copy(), images, masks)


# -- pairings ------------------------------------------------------------------------------------
def pair_backgrounds(classes: Sequence[str], variant: str, *, seed: int, class_order: Sequence[str]) -> np.ndarray:
    """The background target of each target for a Mixed-* variant.

    Parameters
    ----------
    classes : sequence of str, length n
    variant : {'mixed_same', 'mixed_rand', 'mixed_next'}
        Same class (never the target itself); a class drawn uniformly among all classes present,
        the target's own included (the paper's "random background of a random class", so the
        background says nothing about the label: a share 1/C of same-class backgrounds), then
        another target of it; the next class in ``class_order`` (cyclic).
    seed : int
    class_order : sequence of str

    Returns
    -------
    backgrounds : ndarray of shape (n,), int64
        Index of the background's target, -1 where none exists (a class of one target, or one class).
    """
    if variant not in MIXED:
        raise InvalidInputError(f"variant must be one of {', '.join(MIXED)} to pair backgrounds; got {variant!r}")
    rng = np.random.default_rng([seed, VARIANTS.index(variant)])
    labels = np.asarray(classes)
    members = {name: np.flatnonzero(labels == name) for name in class_order}
    present = [name for name in class_order if len(members[name])]
    result = np.full(len(labels), -1, np.int64)
    for i, name in enumerate(labels):
        if variant == "mixed_same":
            pool = members[name][members[name] != i]
        elif variant == "mixed_rand":
            pool = _random_class_pool(members, present, name, i, rng)
        else:
            following = present[(present.index(name) + 1) % len(present)]
            pool = members[following] if following != name else _NO_POOL
        if len(pool):
            result[i] = pool[rng.integers(len(pool))]
    return result


def _random_class_pool(members: dict[str, np.ndarray], present: list[str], name: str, i: int, rng: np.random.Generator) -> np.ndarray:
    """Mixed-Rand: the targets of a class drawn uniformly from ``present`` (own class included),
    less target ``i`` itself; a draw of the own class when ``i`` is its only target is redrawn
    among the others (nothing else to show)."""
    drawn = present[rng.integers(len(present))]
    pool = members[drawn][members[drawn] != i]
    if len(pool) or len(present) == 1:
        return pool
    others = [c for c in present if c != name]
    return members[others[rng.integers(len(others))]]


def plan_variant(data: ChallengeData, variant: str, *, seed: int = 0) -> VariantPlan:
    """Which (source, background) pairs a variant holds; Mixed-* targets without a partner are left out.

    Parameters
    ----------
    data : ChallengeData
    variant : str
        One of :data:`VARIANTS`.
    seed : int, default=0

    Returns
    -------
    VariantPlan
    """
    if variant not in VARIANTS:
        raise InvalidInputError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    sources = np.arange(len(data.ids), dtype=np.int64)
    if variant not in MIXED:
        return VariantPlan(variant, sources, sources.copy())
    backgrounds = pair_backgrounds(data.classes, variant, seed=seed, class_order=data.class_order)
    kept = backgrounds >= 0
    return VariantPlan(variant, sources[kept], backgrounds[kept])


def render(data: ChallengeData, plan: VariantPlan, rows: slice | np.ndarray | None = None, *, blend: bool = False) -> np.ndarray:
    """The images of a plan (or of its ``rows``).

    Parameters
    ----------
    data : ChallengeData
    plan : VariantPlan
    rows : slice or ndarray of int, optional
        Which of the plan's images (default all), so a caller can render batch by batch.
    blend : bool, default=False
        Mixed-*: Backdrop's blended compositing instead of the hard paste.

    Returns
    -------
    images : ndarray of shape (k, h, w, 3), uint8
        k = the number of rows selected.
    """
    rows = slice(None) if rows is None else rows
    sources, backgrounds = plan.sources[rows], plan.backgrounds[rows]
    images, masks = data.images[sources], data.masks[sources]
    if plan.variant == "original":
        return images.copy()
    if plan.variant in MIXED:
        return paste(images, masks, only_bg_t(data.images[backgrounds], data.masks[backgrounds]), blend=blend)
    make = {"only_bg_b": only_bg_b, "only_bg_t": only_bg_t, "no_fg": no_fg, "only_fg": only_fg}[plan.variant]
    return make(images, masks)
