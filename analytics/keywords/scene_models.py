"""ADE20K + Places365 keywords from the published checkpoints (the paper's reference setup).

Liao & Chen describe each image by a scene-understanding model's keywords (docs/method.md, 'Scene keywords'): the 150
ADE20K classes of a semantic-segmentation network, present when they cover more than 1 % of the
pixels, plus the 365 Places365 scene categories of a scene classifier, present when among the top
k of its softmax (the paper keeps the arg-max, its code the top 5). No such weights exist in any
package registry, so this backend runs only when the user supplies the published checkpoints:

* ``encoder_epoch_20.pth`` and ``decoder_epoch_20.pth`` of the CSAIL model
  ``ade20k-resnet18dilated-ppm_deepsup`` (CSAILVision/semantic-segmentation-pytorch; plain state
  dicts),
* ``resnet18_places365.pth.tar`` (CSAILVision/places365; ``{'state_dict': {'module.…': …}}``),
* their class-name files ``object150_info.csv`` (the segmentation repository's ``data/``) and
  ``categories_places365.txt`` (the Places365 repository), by default looked up next to the
  decoder and the Places365 checkpoint. No installed package ships these names, so Backdrop does
  not bundle them.

All files are read with ``torch.load(weights_only=True)``.

**Scores** have the layout of the reference keyword file (``bgdb_items_val.hdf5`` minus its label
column), so tables from the checkpoints and from that file are interchangeable: columns 0-149 are
ADE20K pixel shares in **percent** of the counted pixels (each row sums to 100), columns 150-514
the Places365 **logits**. Keyword names are those :func:`~analytics.keywords.readers.read_keyword_file`
gives the reference file's columns (``ade:<first synonym>``, ``places:<category>``), and
:meth:`SceneModelsBackend.get_params` records the same ``rules`` as a reference import, so a
table of this backend can also be served by :class:`~analytics.keywords.PrecomputedBackend`.

**Preprocessing** follows the two projects' test code: RGB scaled to [0, 1] and normalised with
the ImageNet mean and standard deviation. Segmentation runs at one scale, the short side resized
to ``input_size`` (the long side capped at 1000 px, both rounded up to a multiple of 8 as in CSAIL's
``TestDataset``); its logits are upsampled bilinearly to the image size and the arg-max class of
each pixel is counted. (CSAIL's evaluation averages five scales, 300-600 px; one scale of 300 px
keeps CPU runs affordable.) Places365 sees the image resized to 224 x 224.

**Targets: masking the object.** Pixels where ``masks`` is True are not counted, so the shares
describe the background part only and sum to 100 over the remaining pixels (all zero when no
pixel remains). The segmentation network still sees the whole image, since its context makes the
labels of the remaining pixels better. The scene classifier cannot ignore pixels, so it sees the
image with the object filled by the mean background colour
(:func:`~analytics.keywords.classifier_patch.fill_objects`, the classifier-patch backend's fill).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from analytics._validation import check_fraction, check_image_batch, check_mask_batch, check_positive_int
from analytics.exceptions import InvalidInputError
from analytics.models import read_state_dict, resolve_device

from ._base import KeywordBackend
from ._csail import ADE20K_CLASSES, PLACES365_CLASSES, PPMDeepSup, ResNet18Dilated, build_places_resnet18
from .classifier_patch import fill_objects
from .precomputed import PresenceRule, apply_rules
from .readers import OBJECT_NAMES_FILE, SCENE_NAMES_FILE, read_object_names, read_scene_names

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
PLACES_SIZE = 224
MAX_SIDE = 1000  # CSAIL's imgMaxSize
PADDING_CONSTANT = 8  # CSAIL rounds input sides up to this multiple (the encoder's output stride)
SHARE_SCALE = 100.0  # shares are percentages, as in the reference file


@dataclass(frozen=True)
class _Checkpoint:
    """What one checkpoint file must hold: its role, published file name and class-layer key."""

    role: str
    published: str
    class_key: str | None = None
    n_classes: int = 0

    def describe(self) -> str:
        return f"{self.role} checkpoint (expected: {self.published})"


ENCODER = _Checkpoint("ADE20K encoder", "encoder_epoch_20.pth of CSAIL ade20k-resnet18dilated-ppm_deepsup")
DECODER = _Checkpoint(
    "ADE20K decoder", "decoder_epoch_20.pth of CSAIL ade20k-resnet18dilated-ppm_deepsup", "conv_last.4.weight", ADE20K_CLASSES
)
PLACES = _Checkpoint("Places365", "resnet18_places365.pth.tar of CSAIL places365", "fc.weight", PLACES365_CLASSES)


class SceneModelsBackend(KeywordBackend):
    """Scene keywords from the CSAIL ADE20K segmentation model and the Places365 ResNet-18.

    Parameters
    ----------
    encoder_path, decoder_path : path-like
        ``encoder_epoch_20.pth`` / ``decoder_epoch_20.pth`` of ``ade20k-resnet18dilated-ppm_deepsup``.
    places_path : path-like
        ``resnet18_places365.pth.tar`` (a plain state dict is accepted too).
    ade_names : path-like, default=None
        ``object150_info.csv`` (150 rows); None looks next to ``decoder_path``.
    places_names : path-like, default=None
        ``categories_places365.txt`` (365 lines); None looks next to ``places_path``.
    device : str or torch.device, default=None
        None = CUDA when available, else CPU.
    input_size : int, default=300
        Short side of the segmentation input in pixels (rounded up to a multiple of 8).
    min_share : float in [0, 1], default=0.01
        An ADE20K class is present when it covers more than this fraction of the counted pixels.
    places_top_k : int, default=1
        A Places365 scene is present when among this many largest logits (5 in the paper's code).
    batch_size : int, default=8
        Images per forward pass.

    Attributes
    ----------
    vocabulary : list of str, length 515
        150 ``ade:`` names, then 365 ``places:`` names.

    Raises
    ------
    InvalidInputError
        A missing, unreadable or unsafe file; a checkpoint whose keys, shapes or class count do not
        fit the published model it stands for; a names file with the wrong number of classes.

    Examples
    --------
    >>> backend = SceneModelsBackend("ckpt/encoder_epoch_20.pth", "ckpt/decoder_epoch_20.pth",
    ...                              "places/resnet18_places365.pth.tar")  # doctest: +SKIP
    >>> backend.table(images, ids, masks=masks).keywords_of(0)  # doctest: +SKIP
    ['ade:sky', 'ade:grass', 'ade:tree', 'places:pasture']
    """

    name: ClassVar[str] = "ade20k-places365"

    def __init__(
        self,
        encoder_path: str | os.PathLike,
        decoder_path: str | os.PathLike,
        places_path: str | os.PathLike,
        *,
        ade_names: str | os.PathLike | None = None,
        places_names: str | os.PathLike | None = None,
        device: str | torch.device | None = None,
        input_size: int = 300,
        min_share: float = 0.01,
        places_top_k: int = 1,
        batch_size: int = 8,
    ) -> None:
        self.input_size = check_positive_int(input_size, "input_size", minimum=PADDING_CONSTANT)
        self.min_share = check_fraction(min_share, "min_share", low_open=False)
        self.places_top_k = check_positive_int(places_top_k, "places_top_k")
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.device = resolve_device(device)
        self._paths = {"encoder": Path(encoder_path), "decoder": Path(decoder_path), "places": Path(places_path)}
        objects = _names(ade_names, self._paths["decoder"].parent / OBJECT_NAMES_FILE, "ade_names", read_object_names, ADE20K_CLASSES)
        scenes = _names(places_names, self._paths["places"].parent / SCENE_NAMES_FILE, "places_names", read_scene_names, PLACES365_CLASSES)
        self.vocabulary = objects + scenes
        self.encoder = _load(ResNet18Dilated(), self._paths["encoder"], ENCODER).to(self.device)
        self.decoder = _load(PPMDeepSup(), self._paths["decoder"], DECODER).to(self.device)
        self.places = _load(build_places_resnet18(), self._paths["places"], PLACES).to(self.device)
        self.rules = (
            PresenceRule(0, ADE20K_CLASSES, "threshold", self.min_share * SHARE_SCALE),
            PresenceRule(ADE20K_CLASSES, len(self.vocabulary), "top-k", self.places_top_k),
        )

    @cached_property
    def _digests(self) -> dict[str, str]:
        return {role: _file_digest(path) for role, path in self._paths.items()}

    def get_params(self) -> dict[str, Any]:
        """Checkpoint digests (SHA-256), preprocessing and the presence rules (as a reference import records them)."""
        return {
            "checkpoints": dict(self._digests),
            "input_size": self.input_size,
            "places_size": PLACES_SIZE,
            "share_scale": "percent",
            "min_share": self.min_share,
            "places_top_k": self.places_top_k,
            "rules": [asdict(rule) for rule in self.rules],
        }

    def scores(self, images: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        """ADE20K pixel shares and Places365 logits.

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8
        masks : ndarray of shape (n, height, width), bool, default=None
            Object pixels (True) that are not counted; the Places365 input has them filled.

        Returns
        -------
        scores : ndarray of shape (n, 515), float32
            Columns 0-149: percent of the counted pixels labelled with each ADE20K class (rows sum
            to 100, or to 0 when every pixel is masked). Columns 150-514: Places365 logits.
        """
        images = check_image_batch(images)
        keep = None
        if masks is not None:
            keep = check_mask_batch(masks, images.shape[:3]) < 0.5
            scenes_input = fill_objects(images, ~keep)
        else:
            scenes_input = images
        out = np.empty((len(images), len(self.vocabulary)), np.float32)
        for start in range(0, len(images), self.batch_size):
            stop = start + self.batch_size
            labels = self._labels(images[start:stop])
            out[start:stop, :ADE20K_CLASSES] = _shares(labels, None if keep is None else torch.from_numpy(keep[start:stop]))
            out[start:stop, ADE20K_CLASSES:] = self._scene_logits(scenes_input[start:stop])
        return out

    def present(self, scores: np.ndarray) -> np.ndarray:
        """ADE20K share > ``min_share`` (in percent: > 100 · min_share); Places365 among the
        ``places_top_k`` largest logits (ties by column order).

        scores : ndarray of shape (n, 515), float32 → present : ndarray of shape (n, 515), bool
        """
        scores = np.asarray(scores, dtype=np.float32)
        if scores.ndim != 2 or scores.shape[1] != len(self.vocabulary):
            raise InvalidInputError(f"scores must have shape (n, {len(self.vocabulary)}); got {scores.shape}")
        return apply_rules(scores, self.rules)

    def segment(self, images: np.ndarray) -> np.ndarray:
        """ADE20K class index (0-149, row order of ``object150_info.csv``) of every pixel.

        images : ndarray of shape (n, height, width, 3), uint8 → labels : ndarray of shape
        (n, height, width), int64
        """
        images = check_image_batch(images)
        parts = [self._labels(images[start : start + self.batch_size]).numpy() for start in range(0, len(images), self.batch_size)]
        return np.concatenate(parts) if parts else np.empty(images.shape[:3], np.int64)

    def _labels(self, images: np.ndarray) -> torch.Tensor:
        """Arg-max ADE20K class per pixel at the image's own size: (n, h, w) int64 on the CPU."""
        height, width = images.shape[1:3]
        batch = _normalised(images, _segmentation_size(height, width, self.input_size), self.device)
        with torch.inference_mode():
            logits = self.decoder(self.encoder(batch))
            # upsample one image at a time: 150 full-size logit maps of a whole batch are too big
            labels = [
                F.interpolate(image[None], (height, width), mode="bilinear", align_corners=False)[0].argmax(0)
                for image in logits
            ]
        return torch.stack(labels).cpu()

    def _scene_logits(self, images: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return self.places(_normalised(images, (PLACES_SIZE, PLACES_SIZE), self.device)).float().cpu().numpy()


def _shares(labels: torch.Tensor, keep: torch.Tensor | None) -> np.ndarray:
    """Percent of each image's kept pixels per class: labels (n, h, w) int64, keep (n, h, w) bool
    or None → (n, 150) float32."""
    n = len(labels)
    flat = (labels + ADE20K_CLASSES * torch.arange(n)[:, None, None]).reshape(n, -1)
    weights = None if keep is None else keep.reshape(n, -1).to(torch.float64)
    counts = torch.bincount(flat.reshape(-1), None if weights is None else weights.reshape(-1), minlength=n * ADE20K_CLASSES)
    counts = counts.reshape(n, ADE20K_CLASSES).to(torch.float64)
    totals = counts.sum(dim=1, keepdim=True)
    return (SHARE_SCALE * counts / totals.clamp(min=1)).numpy().astype(np.float32)


def _segmentation_size(height: int, width: int, short_side: int) -> tuple[int, int]:
    """CSAIL's test-time size: short side to ``short_side``, long side at most 1000, rounded up to a multiple of 8."""
    scale = min(short_side / min(height, width), MAX_SIDE / max(height, width))
    return tuple(PADDING_CONSTANT * max(1, math.ceil(int(side * scale) / PADDING_CONSTANT)) for side in (height, width))


def _normalised(images: np.ndarray, size: tuple[int, int], device: torch.device) -> torch.Tensor:
    """uint8 (n, h, w, 3) → float32 (n, 3, *size) on ``device``: resized (bilinear, antialiased when
    shrinking), scaled to [0, 1], ImageNet-normalised."""
    batch = torch.from_numpy(np.ascontiguousarray(images)).to(device).permute(0, 3, 1, 2).float() / 255.0
    if tuple(batch.shape[2:]) != size:
        batch = F.interpolate(batch, size, mode="bilinear", align_corners=False, antialias=True)
    mean = torch.tensor(IMAGENET_MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD, device=device).view(1, 3, 1, 1)
    return (batch - mean) / std


# -- loading -----------------------------------------------------------------------------------
def _names(
    given: str | os.PathLike | None, default: Path, parameter: str, reader: Callable[[Path], list[str]], n_classes: int
) -> list[str]:
    """Keyword names from ``given`` (or ``default`` next to a checkpoint), checked to number ``n_classes``."""
    path = Path(given) if given is not None else default
    if not path.is_file():
        where = "" if given is not None else f" (looked next to the checkpoint because {parameter} was not given)"
        raise InvalidInputError(
            f"{parameter}: class-name file {path} not found{where}; pass {parameter}= the {default.name} published "
            "with the checkpoints (Backdrop does not bundle it)"
        )
    names = reader(path)
    if len(names) != n_classes:
        raise InvalidInputError(
            f"{parameter}: {path} names {len(names)} classes; the published model has {n_classes}; pass its {default.name}"
        )
    return names


def _load(network: nn.Module, path: Path, checkpoint: _Checkpoint) -> nn.Module:
    """``network`` with the weights of ``path`` (checked against its keys and shapes), in eval mode."""
    try:
        state = read_state_dict(path)
    except InvalidInputError as err:
        raise InvalidInputError(f"{checkpoint.describe()}: {err}") from err
    _check_classes(state, path, checkpoint)
    _check_keys(network.state_dict(), state, path, checkpoint)
    # strict=False only tolerates missing BatchNorm 'num_batches_tracked' counters (older torch
    # did not save them; inference does not use them); every other key was checked above
    network.load_state_dict(state, strict=False)
    return network.eval()


def _check_classes(state: Mapping[str, torch.Tensor], path: Path, checkpoint: _Checkpoint) -> None:
    if checkpoint.class_key is None or checkpoint.class_key not in state:
        return  # a missing key is reported by _check_keys
    found = state[checkpoint.class_key].shape[0]
    if found != checkpoint.n_classes:
        raise InvalidInputError(
            f"{checkpoint.describe()} {path}: its class layer {checkpoint.class_key!r} has {found} classes; "
            f"the backend needs the {checkpoint.n_classes}-class model; pass the published file"
        )


def _check_keys(expected: Mapping[str, torch.Tensor], state: Mapping[str, torch.Tensor], path: Path, checkpoint: _Checkpoint) -> None:
    missing = [key for key in expected if key not in state and not key.endswith("num_batches_tracked")]
    unexpected = [key for key in state if key not in expected]
    wrong_shape = [
        f"{key} {tuple(state[key].shape)} (needs {tuple(expected[key].shape)})"
        for key in expected
        if key in state and state[key].shape != expected[key].shape
    ]
    problems = [
        f"{label} {len(keys)} ({', '.join(keys[:3])}{', …' if len(keys) > 3 else ''})"
        for label, keys in (("missing keys", missing), ("unexpected keys", unexpected), ("wrong shapes", wrong_shape))
        if keys
    ]
    if problems:
        raise InvalidInputError(
            f"{checkpoint.describe()} {path}: the weights do not fit the network: {'; '.join(problems)}; "
            "pass the published file for this role"
        )


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
