"""Classifier-patch keywords: an ImageNet classifier applied to the whole image and to a grid of patches.

The default keyword backend, because it works offline with the registry's EfficientNet-Lite models
(no ADE20K / Places365 weights exist in any registry). For each image it classifies ``1 + grid²``
views, the whole image and each cell of a ``grid`` x ``grid`` partition, each resized to the
model's input size (for a model with its own library transform, by that transform's resize, which
then runs once on each view). A keyword's score is its largest softmax probability over the views, and the
keyword is present when that score is >= ``threshold``. Patches let a 1000-class object classifier
name several things of a scene (``seashore`` in one corner, ``breakwater`` in another).

**Vocabulary.** By default (``vocabulary='auto'``, for an ImageNet-1k classifier) the keywords are
the scene and scene-object classes of :data:`SCENE_GROUPS` only: landscapes, buildings, rooms,
fences, street furniture ... , never animals, vehicles or other portable objects, which are what a
suite tests (the paper's keywords exclude foreground objects). ``vocabulary='all'`` keeps every
output (the default for a custom or IN-9 label space, whose outputs are not ImageNet classes).
Whatever the vocabulary, the outputs of the workspace's target classes (``exclude_classes``:
class -> ImageNet indices, mapped through the model's label space) are never keywords;
:func:`analytics.keywords.compute_keywords` refuses a backend that would emit one. The table's
params record the vocabulary (``vocabulary``, ``vocabulary_size``, ``excluded_classes``) so a page
can say which one a keyword table used. Keyword names are the model's class names (torchvision's ImageNet-1k
names are unique; a label space that repeats a name gets the class index appended to each use,
``name-3``, ``name-7``, as the precomputed backend does).

**Targets: masking the object.** A target's keywords describe its background part only. Object
pixels, dilated by 2 % of the image side to swallow the anti-aliased halo, are filled with the mean
colour of the remaining background pixels (a flat fill, not a blur: a blur would smear the object's
colours into the scene). Patch views that are more than half fill are dropped (their score is 0)
since they show mostly the grey-ish fill, not the scene; the whole-image view always counts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import cv2
import numpy as np
import torch

from analytics._choices import VOCABULARIES
from analytics._threads import cpu_count, cv2_single_threaded, prefetched
from analytics._validation import check_choice, check_fraction, check_image_batch, check_positive_int
from analytics.data import LabelSpace
from analytics.exceptions import InvalidInputError
from analytics.inference import BackOff, HostCopy, default_batch_size, empty_batch, to_host
from analytics.models import ImageTransform, LoadedModel

from ._base import KeywordBackend

#: The ImageNet-1k classes of the default ``scene`` vocabulary (group -> {index: name}), picked by
#: hand from the class names and grouped like WordNet's categories. Why a
#: list: the paper's keywords name scenes and their stuff (ADE20K's sky, grass, building, fence ...,
#: Places365's scenes), never the foreground objects a suite tests; the full 1000-class label space
#: is ~90 % portable objects and animals, which on a scene photo turn up as noise (water droplets
#: read as "scorpion, tick, bubble") and as rules such as "coffee mug -> face powder". Kept: classes
#: that name a place (landscapes, buildings, rooms, shops) or an object that belongs to a place and
#: is not carried into it (fences, street furniture, room fixtures, crops in a field). Left out:
#: animals, vehicles, boats, tools, food, clothing, instruments, furniture one moves (chairs), fungi
#: and textures (971 bubble, 599 honeycomb, 815 spider web).
SCENE_GROUPS: dict[str, dict[int, str]] = {
    "geological formations": {
        970: "alp", 972: "cliff", 973: "coral reef", 974: "geyser", 975: "lakeside", 976: "promontory",
        977: "sandbar", 978: "seashore", 979: "valley", 980: "volcano",
    },
    "waterside structures": {449: "boathouse", 460: "breakwater", 525: "dam", 536: "dock", 540: "drilling platform", 718: "pier"},
    "bridges": {821: "steel arch bridge", 839: "suspension bridge", 888: "viaduct"},
    "buildings and their parts": {
        410: "apiary", 425: "barn", 437: "beacon", 442: "bell cote", 483: "castle", 497: "church",
        500: "cliff dwelling", 538: "dome", 580: "greenhouse", 634: "lumbermill", 649: "megalith",
        663: "monastery", 668: "mosque", 682: "obelisk", 698: "palace", 727: "planetarium", 743: "prison",
        832: "stupa", 853: "thatch", 858: "tile roof", 873: "triumphal arch", 900: "water tower", 915: "yurt",
    },
    "shops, rooms and stages": {
        415: "bakery", 424: "barbershop", 454: "bookshop", 467: "butcher shop", 498: "cinema",
        509: "confectionery", 582: "grocery store", 624: "library", 706: "patio", 762: "restaurant",
        788: "shoe shop", 819: "stage", 860: "tobacco shop", 865: "toyshop",
    },
    "fences, walls, mazes and fountains": {
        489: "chainlink fence", 562: "fountain", 646: "maze", 716: "picket fence", 825: "stone wall", 912: "worm fence",
    },
    "fields, plants and wrecks": {913: "wreck", 958: "hay", 984: "rapeseed", 985: "daisy", 986: "yellow lady's slipper", 987: "corn"},
    "street and park furniture": {
        557: "flagpole", 571: "gas pump", 637: "mailbox", 640: "manhole cover", 645: "maypole", 703: "park bench",
        704: "parking meter", 707: "pay-phone", 733: "pole", 781: "scoreboard", 835: "sundial", 863: "totem pole",
        877: "turnstile", 919: "street sign", 920: "traffic light",
    },
    "playground and gym fixtures": {476: "carousel", 602: "horizontal bar", 843: "swing"},
    "room fixtures and built-in furniture": {
        406: "altar", 421: "bannister", 435: "bathtub", 453: "bookcase", 493: "chiffonier", 495: "china cabinet",
        526: "desk", 532: "dining table", 539: "doormat", 548: "entertainment center", 556: "fire screen",
        564: "four-poster", 598: "home theater", 736: "pool table", 741: "prayer rug", 753: "radiator",
        760: "refrigerator", 789: "shoji", 794: "shower curtain", 799: "sliding door", 827: "stove",
        831: "studio couch", 854: "theater curtain", 857: "throne", 894: "wardrobe", 896: "washbasin",
        904: "window screen", 905: "window shade",
    },
}  # fmt: skip
#: All classes of :data:`SCENE_GROUPS` (index -> name).
SCENE_CLASSES: dict[int, str] = {index: name for group in SCENE_GROUPS.values() for index, name in group.items()}
IMAGENET_CLASSES = 1000
FILL_DILATION = 0.02  # share of the image side by which the object mask grows before filling
MAX_FILL_SHARE = 0.5  # patch views with more fill than this are dropped


class ClassifierPatchBackend(KeywordBackend):
    """Keywords from an ImageNet classifier over the whole image and a grid of patches.

    Parameters
    ----------
    model : LoadedModel
        A registered classifier (``analytics.models.load_model``); its class names name the keywords.
    grid : int, default=3
        Patches per side (``grid²`` patches plus the whole image).
    threshold : float in (0, 1], default=0.1
        A keyword is present when its probability reaches this value in any view.
    batch_size : int or None, default=None
        Views per forward pass (see :func:`view_probabilities`; None: 256 on a GPU, 32 on a CPU).
    vocabulary : {'auto', 'scene', 'all'}, default='auto'
        Which outputs are keywords (see the module notes and :data:`VOCABULARIES`).
    exclude_classes : mapping of str to sequence of int, default=None
        Workspace classes (name -> ImageNet-1k indices, as ``analytics.data.list_classes``
        gives) whose model outputs are never keywords; a class without indices has no mapping and
        excludes nothing.

    Attributes
    ----------
    vocabulary : list of str, length n_keywords
    outputs : ndarray of shape (n_keywords,), int64
        The model output behind each keyword.
    scene_like : ndarray of shape (n_keywords,), bool
        True for the keywords of :data:`SCENE_CLASSES` (matched by index for 1000-class label
        spaces, by name otherwise).
    excluded : dict of str to list of int
        Class -> the model outputs it removed from the vocabulary.
    """

    name = "classifier-patch"

    def __init__(
        self,
        model: LoadedModel,
        *,
        grid: int = 3,
        threshold: float = 0.1,
        batch_size: int | None = None,
        vocabulary: str = "auto",
        exclude_classes: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        self.model = model
        self.grid = check_positive_int(grid, "grid")
        self.threshold = check_fraction(threshold, "threshold")
        self.batch_size = None if batch_size is None else check_positive_int(batch_size, "batch_size")
        check_choice(vocabulary, "vocabulary", VOCABULARIES)
        names = list(model.spec.label_space.names)
        if not names:
            raise InvalidInputError(f"model {model.spec.name!r} has no class names; a keyword vocabulary needs them")
        if vocabulary == "auto":
            vocabulary = "scene" if model.spec.label_space.kind == "imagenet" and len(names) == IMAGENET_CLASSES else "all"
        self.vocabulary_name = vocabulary
        self.excluded = class_outputs(model.spec.label_space, exclude_classes or {})
        scene = _scene_flags(names)
        keep = scene.copy() if vocabulary == "scene" else np.ones(len(names), bool)
        keep[[output for outputs in self.excluded.values() for output in outputs]] = False
        if not keep.any():
            raise InvalidInputError(
                f"model {model.spec.name!r} leaves no keyword in the {vocabulary!r} vocabulary once the target classes "
                f"{', '.join(sorted(self.excluded))} are removed; use an ImageNet-1k classifier (EfficientNet-Lite0 works offline)"
            )
        self.outputs = np.flatnonzero(keep)
        self.vocabulary = [_unique_names(names)[k] for k in self.outputs]
        self.scene_like = scene[self.outputs]

    def get_params(self) -> dict[str, Any]:
        return {
            "model": self.model.spec.name,
            "grid": self.grid,
            "threshold": self.threshold,
            "fill": "mean",
            "fill_dilation": FILL_DILATION,
            "max_fill_share": MAX_FILL_SHARE,
            "vocabulary": self.vocabulary_name,
            "vocabulary_size": len(self.vocabulary),
            "excluded_classes": {name: list(outputs) for name, outputs in sorted(self.excluded.items())},
        }

    def scores(self, images: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        """Largest keyword probability over the views of each image.

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8
        masks : ndarray of shape (n, height, width), bool, default=None
            Object pixels to ignore (filled before scoring, see the module docstring).

        Returns
        -------
        scores : ndarray of shape (n, n_keywords), float32 in [0, 1]
            The model's softmax probability (over all its outputs) of each keyword's output, at
            float16 precision (what the shared view cache holds; within 0.05 % of float32).
        """
        images = check_image_batch(images)
        if masks is None:
            return self.scores_and_views(images)[0]
        masks = np.asarray(masks, dtype=bool)
        if masks.shape != images.shape[:3]:
            raise InvalidInputError(f"masks must have shape {images.shape[:3]} to match the images; got {masks.shape}")
        grown = _grown(masks)
        views = view_probabilities(self.model, _fill(images, grown), grid=self.grid, batch_size=self.batch_size).astype(np.float16)
        # float16 as for backgrounds (:meth:`scores_and_views`): one precision for every score
        return (views[..., self.outputs].astype(np.float32) * _valid_views(grown, self.grid)[..., None]).max(axis=1)

    def scores_and_views(self, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`scores` of images without masks (backgrounds), and the view probabilities behind them.

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8

        Returns
        -------
        scores : ndarray of shape (n, n_keywords), float32
        views : ndarray of shape (n, 1 + grid², n_outputs), float16
            :func:`view_probabilities` of the images, at the precision the workspace caches them,
            so a background scores the same whether its views were computed now or read from the
            cache that pool screening shares (:mod:`analytics.keywords.view_cache`).
        """
        views = view_probabilities(self.model, check_image_batch(images), grid=self.grid, batch_size=self.batch_size).astype(np.float16)
        return self.scores_of_views(views), views

    def scores_of_views(self, views: np.ndarray) -> np.ndarray:
        """:meth:`scores` of backgrounds from their view probabilities (as :meth:`scores_and_views`
        returns them, or as the workspace caches them): ndarray of shape (n, n_keywords), float32."""
        return np.asarray(views)[..., self.outputs].astype(np.float32).max(axis=1)

    def present(self, scores: np.ndarray) -> np.ndarray:
        """Present when the score reaches ``threshold``: ndarray of shape (n, n_classes), bool."""
        return np.asarray(scores) >= self.threshold


def view_probabilities(model: LoadedModel, images: np.ndarray, *, grid: int, batch_size: int | None = None) -> np.ndarray:
    """The model's softmax over the whole image and each cell of a ``grid`` x ``grid`` partition.

    Parameters
    ----------
    model : LoadedModel
    images : ndarray of shape (n, height, width, 3), uint8
    grid : int
        Patches per side.
    batch_size : int or None, default=None
        Views per forward pass (a model that does not fit the device halves it,
        :class:`~analytics.inference.backoff.BackOff`); None:
        :func:`~analytics.inference.device.default_batch_size` of the model's device.

    Returns
    -------
    probabilities : ndarray of shape (n, 1 + grid², n_outputs), float32
        View 0 is the whole image, view ``1 + r * grid + c`` the cell in row ``r``, column ``c``.
    """
    return next(iter_view_probabilities(model, [images], grid=grid, batch_size=batch_size))


def iter_view_probabilities(model: LoadedModel, chunks: Iterable[np.ndarray], *, grid: int, batch_size: int | None = None) -> Iterator[np.ndarray]:
    """:func:`view_probabilities` of each array of images in ``chunks``, in order, through one pipeline.

    On an accelerator the views are cut on every core ahead of the model, across chunks, and each
    batch's probabilities are read back while the next batch runs, also across chunks: a call per
    chunk drained that pipeline at every chunk's end (the device idle for its last batch's read
    back and the next chunk's first views). ``chunks`` is read as the pipeline needs it.
    """
    batch_size = default_batch_size(model.device) if batch_size is None else check_positive_int(batch_size, "batch_size")
    forward = BackOff(model, batch_size)
    per_image, n_outputs = 1 + grid**2, len(model.spec.label_space.names)
    page_locked = model.device.type == "cuda"

    def batches() -> Iterator[tuple[np.ndarray, int, np.ndarray | None]]:
        """(the chunk's output, the batch's first row in it, the batch) for every batch of every
        chunk; a chunk without images gives one entry without a batch."""
        for images in chunks:
            images = check_image_batch(images)
            out = np.zeros((len(images) * per_image, n_outputs), np.float32)
            if not len(out):
                yield out, 0, None
            for start, batch in zip(range(0, len(out), batch_size), _view_batches(images, grid, _input_side(model), batch_size, page_locked=page_locked, transform=model.spec.transform)):
                yield out, start, batch

    stream = batches()
    if model.device.type != "cpu":  # an accelerator runs each batch while the CPU cuts the next ones
        stream = prefetched(stream, 2, name="backdrop-views")
    pending = None  # the last batch: its chunk's output, its rows there, its probabilities on their way to the host
    with contextlib.closing(stream):  # an error or an early stop ends the threads cutting views now
        for out, start, batch in stream:
            if batch is None:  # no images: nothing to run, the chunks before it first
                if pending is not None:
                    yield from _landed(*pending, per_image)
                pending = None
                yield out.reshape(0, per_image, n_outputs)
                continue
            with torch.inference_mode():
                logits, _, _ = forward(batch)
                copy = to_host([torch.softmax(logits.float(), dim=1)], keep=batch)
            if pending is not None:
                yield from _landed(*pending, per_image)
            pending = (out, start, len(batch), copy)
    if pending is not None:
        yield from _landed(*pending, per_image)


def _landed(out: np.ndarray, start: int, n: int, copy: HostCopy, per_image: int) -> Iterator[np.ndarray]:
    """Write a batch's probabilities into its chunk's output; the output (n_images, per_image, n_outputs)
    once this batch completes it."""
    out[start : start + n] = copy.arrays()[0]
    if start + n == len(out):
        yield out.reshape(-1, per_image, out.shape[1])


def _view_batches(
    images: np.ndarray, grid: int, side: int, batch_size: int, *, page_locked: bool = False, transform: ImageTransform | None = None
) -> Iterator[np.ndarray]:
    """Every image's views (:func:`_view`), in order, as batches of ``batch_size`` views (the last may be
    shorter), cut and resized on every core (one GPU outran a single thread 7 to 1) straight into
    the batch: each thread resizes a contiguous share of the batch's views into its rows (stacking
    them afterwards was one thread copying every view again, 15 ms a 256-view batch).
    ``page_locked``: each batch in page-locked memory, for an asynchronous upload to a GPU.
    ``transform``: a model's own library transform, whose resize (to ``side``, its ``resize``) makes
    the views, so the model's preprocessing then only crops and normalises them: its pipeline runs
    once on each view, as on a composite (``ModelSpec.composite_size``)."""
    threads, per_image = cpu_count(), 1 + grid**2
    total = len(images) * per_image
    edges = _cell_edges(images.shape[1], grid), _cell_edges(images.shape[2], grid)  # the images share one size
    with ThreadPoolExecutor(threads, thread_name_prefix="backdrop-views") as pool, cv2_single_threaded(threads > 1):
        for start in range(0, total, batch_size):
            batch = empty_batch((min(batch_size, total - start), side, side, 3), page_locked=page_locked)
            bounds = np.linspace(0, len(batch), min(threads, len(batch)) + 1).astype(int)

            def cut(a: int, b: int, batch: np.ndarray = batch, start: int = start) -> None:
                for row in range(a, b):
                    image, view = divmod(start + row, per_image)
                    if transform is None:
                        _resize(_view(images[image], edges, view), side, out=batch[row])
                    else:
                        batch[row] = transform.resize_square(np.ascontiguousarray(_view(images[image], edges, view))[None])[0]

            list(pool.map(cut, bounds[:-1], bounds[1:]))
            yield batch


def class_outputs(label_space: LabelSpace, classes: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """The outputs of a model's label space that stand for the workspace classes with ImageNet indices.

    Parameters
    ----------
    label_space : LabelSpace
        The model's (``model.spec.label_space``).
    classes : mapping of str to sequence of int
        Class name -> ImageNet-1k indices (``analytics.data.list_classes``).

    Returns
    -------
    outputs : dict of str to list of int
        Class -> outputs (``LabelSpace.class_outputs``); classes without indices, or whose indices
        have no output in this label space (an IN-9 model and a class outside IN-9), are left out.
    """
    out = {}
    for name, indices in classes.items():
        if not indices:
            continue
        try:
            out[name] = label_space.class_outputs({name: indices})[name]
        except InvalidInputError:  # no output of this label space stands for the class
            continue
    return out


def _view(image: np.ndarray, edges: tuple[np.ndarray, np.ndarray], view: int) -> np.ndarray:
    """View 0 is the whole image, view ``1 + r * grid + c`` its grid cell in row ``r``, column ``c``
    (``edges``: the cells' row and column edges, :func:`_cell_edges`)."""
    if view == 0:
        return image
    rows, cols = edges
    r, c = divmod(view - 1, len(rows) - 1)
    return image[rows[r] : rows[r + 1], cols[c] : cols[c + 1]]


def _valid_views(fill: np.ndarray, grid: int) -> np.ndarray:
    """(n, 1 + grid²) float32: 0 for the patches that are mostly ``fill`` (the filled pixels), else 1."""
    rows, cols = _cell_edges(fill.shape[1], grid), _cell_edges(fill.shape[2], grid)
    valid = np.ones((len(fill), 1 + grid**2), np.float32)
    for r in range(grid):
        for c in range(grid):
            valid[:, 1 + r * grid + c] = fill[:, rows[r] : rows[r + 1], cols[c] : cols[c + 1]].mean(axis=(1, 2)) <= MAX_FILL_SHARE
    return valid


def _cell_edges(length: int, grid: int) -> np.ndarray:
    return np.linspace(0, length, grid + 1).round().astype(int)


def fill_objects(images: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Replace object pixels (mask grown by :data:`FILL_DILATION`) by the mean colour of the rest.

    Parameters
    ----------
    images : ndarray of shape (n, height, width, 3), uint8
    masks : ndarray of shape (n, height, width), bool (True = object)

    Returns
    -------
    filled : ndarray of shape (n, height, width, 3), uint8 (a new array)
    """
    images = check_image_batch(images)
    masks = np.asarray(masks, dtype=bool)
    if masks.shape != images.shape[:3]:
        raise InvalidInputError(f"masks must have shape {images.shape[:3]} to match the images; got {masks.shape}")
    return _fill(images, _grown(masks))


def _fill(images: np.ndarray, grown: np.ndarray) -> np.ndarray:
    filled = images.copy()
    for image, mask in zip(filled, grown):
        rest = image[~mask]
        colour = rest.mean(axis=0) if len(rest) else np.full(3, 127.0)
        image[mask] = np.round(colour).astype(np.uint8)
    return filled


def _grown(masks: np.ndarray) -> np.ndarray:
    """Masks dilated by FILL_DILATION of the image side: (n, h, w) bool."""
    radius = max(1, round(FILL_DILATION * min(masks.shape[1:3])))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
    return np.stack([cv2.dilate(m.astype(np.uint8), kernel).astype(bool) for m in masks]) if len(masks) else masks


def _resize(image: np.ndarray, side: int, *, out: np.ndarray) -> None:
    """``image`` resized to (side, side, 3) into ``out``, a C-contiguous array of that shape."""
    shrink = image.shape[0] > side or image.shape[1] > side
    cv2.resize(np.ascontiguousarray(image), (side, side), dst=out, interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)


def _input_side(model: LoadedModel) -> int:
    """The side views are cut at: the model's ``composite_size`` (its input size, Backdrop's own
    preprocessing), else its transform's resize side (the transform's own resize makes them)."""
    transform = model.spec.transform
    size = model.spec.input_size if transform is None else transform.resize
    return int(size if np.isscalar(size) else size[0])


def _unique_names(names: Sequence[str]) -> list[str]:
    """Class names made unique: a name used more than once gets ``-<index>`` on every use."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return [name if counts[name] == 1 else f"{name}-{index}" for index, name in enumerate(names)]


def _scene_flags(names: Sequence[str]) -> np.ndarray:
    if len(names) == IMAGENET_CLASSES:
        flags = np.zeros(len(names), bool)
        flags[list(SCENE_CLASSES)] = True
        return flags
    scene_names = set(SCENE_CLASSES.values())
    return np.array([name.split(",")[0].strip().lower() in scene_names for name in names])
