"""Attribution for a loaded Backdrop model on workspace images: the glue the CLI and the page share.

A loaded model (:class:`analytics.models.LoadedModel`) offers ``network``, ``device``,
``preprocess(images) -> (n, 3, s, s)``, ``forward(batch) -> (logits, embedding)`` and
``gradcam_layer``; only those are used here (duck typing), so this module does not import
:mod:`analytics.models` (and tests can pass a stand-in).

Geometry: maps are computed at the model's input size s and resized bilinearly to the workspace's
image size for the mask metrics. ``preprocess`` resizes the whole square image, so model pixels and
image pixels cover the same scene, unless the model's own transform centre-crops (timm's
``crop_pct``, a processor's crop): then ``model.crop_box`` says which part of each side the network
sees, the map is resized onto that part and the border the network never sees gets 0.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from analytics._validation import check_choice, check_image_batch, check_mask_batch, check_positive_int
from analytics.exceptions import InvalidInputError

from ._base import AttributionMethod
from .metrics import AlignmentScores, FaithfulnessScores, alignment, faithfulness
from .registry import METHODS


class _Logits(nn.Module):
    """A loaded model seen as a module returning logits only (what captum's methods call).

    Holding ``network`` as a submodule lets guided backprop find and hook its ReLU/ReLU6 modules.
    """

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.network = model.network
        self._forward = model.forward

    def forward(self, inputs: Tensor) -> Tensor:
        return self._forward(inputs)[0]


def logits_module(model: Any) -> nn.Module:
    """Wrap a loaded model (``forward`` returns ``(logits, embedding)``) as an ``nn.Module`` → logits."""
    return _Logits(model)


def explainer(model: Any, method: str, **settings: Any) -> AttributionMethod:
    """Build attribution method ``method`` for a loaded model.

    CAM methods get ``model.gradcam_layer``; a method with ``black_baseline`` (integrated
    gradients) gets the model's preprocessed black image as its baseline unless ``settings``
    holds one.

    Parameters
    ----------
    model : LoadedModel
    method : str
        A key of :data:`analytics.saliency.METHODS`.
    **settings
        Keywords of that method's constructor (``reduce``, ``normalize``, its :class:`Setting`s).
    """

    cls = METHODS[check_choice(method, "method", METHODS)]
    known = set(inspect.signature(cls).parameters) - {"forward_func", "layer"}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise InvalidInputError(f"{method} has no setting {', '.join(unknown)}; its settings are {', '.join(sorted(known))}")
    problem = getattr(model, "gradient_problem", None)
    if cls.needs_gradients and problem:
        raise InvalidInputError(f"{cls.name} back-propagates, but {problem}; the perturbation methods (occlusion, RISE) read only its outputs")
    if cls.black_baseline and "baseline" not in settings:
        settings["baseline"] = black_input(model)
    return cls(logits_module(model), layer=model.gradcam_layer if cls.needs_layer else None, **settings)


#: Method keys from the clearest maps to the noisiest (the order pages list them in; the first one a
#: model can run is its default): CAM maps and occlusion are coarse and smooth and read at a glance,
#: RISE is smooth but a Monte-Carlo estimate, gradient maps show pixel-level detail that reads as speckle.
CLEAREST_FIRST = (
    "gradcam", "gradcam_plus_plus", "occlusion", "rise", "integrated_gradients", "guided_backprop", "input_x_gradient", "saliency",
)  # fmt: skip


def available_methods(model: Any) -> list[str]:
    """The attribution methods a loaded model can run, clearest first (:data:`CLEAREST_FIRST`).

    A method is available when :func:`explainer` can build it for the model: TorchScript models
    accept no hooks and expose no layers, so the CAM methods (which read ``model.gradcam_layer``)
    and guided backprop (which hooks ReLU modules) are left out for them; a network without a
    convolution has no CAM either; an ONNX model runs in ONNX Runtime, which computes no
    gradients (``model.gradient_problem``), so only occlusion and RISE remain.
    :func:`unavailable_methods` says why each other method is left out.

    Parameters
    ----------
    model : LoadedModel

    Returns
    -------
    list of str
        Keys of :data:`analytics.saliency.METHODS`; never empty (the plain gradient needs only
        the forward pass).
    """
    missing = unavailable_methods(model)
    return [key for key in CLEAREST_FIRST if key not in missing]


def unavailable_methods(model: Any) -> dict[str, str]:
    """The attribution methods a loaded model cannot run, each with why (:func:`explainer`'s message).

    Returns
    -------
    dict of str to str
        Method key -> one line, clearest first (``{'saliency': "Saliency back-propagates, but model
        'm' is ONNX: it runs in ONNX Runtime, which computes no gradients …"}`` for an ONNX model).
    """
    reasons = {}
    for key in CLEAREST_FIRST:
        try:
            explainer(model, key)
        except InvalidInputError as err:
            reasons[key] = str(err)
    return reasons


def black_input(model: Any) -> Tensor:
    """A black image through the model's preprocessing.

    Returns
    -------
    image : Tensor of shape (1, 3, input_size, input_size), float32, on the model's device
    """
    return torch.as_tensor(model.preprocess(np.zeros((1, 32, 32, 3), np.uint8))).to(model.device)


@dataclass(frozen=True)
class Explanation:
    """One method's maps and scores over a batch of workspace images.

    maps : ndarray of shape (n, height, width), float32 — at the images' resolution, min-max scaled
        to [0, 1] per image for display (the metrics use the method's own values)
    target_output : ndarray of shape (n,), int64 — the explained output (the true class's most
        probable output)
    target_probability : ndarray of shape (n,), float64 — softmax probability of that output
    true_probability : ndarray of shape (n,), float64 — summed probability of the true class's outputs
    predicted_output : ndarray of shape (n,), int64 — arg-max output
    alignment : AlignmentScores
    faithfulness : FaithfulnessScores or None (None when not asked for)
    """

    method: str
    maps: np.ndarray = field(repr=False)
    target_output: np.ndarray
    target_probability: np.ndarray
    true_probability: np.ndarray
    predicted_output: np.ndarray
    alignment: AlignmentScores = field(repr=False)
    faithfulness: FaithfulnessScores | None = field(repr=False)

    def summary(self) -> dict[str, float]:
        """Mean scores over the images: alignment scores, plus the AUCs when computed."""
        scores = self.alignment.summary()
        if self.faithfulness is not None:
            scores |= self.faithfulness.summary()
        return scores


def explain(
    model: Any,
    images: np.ndarray,
    masks: np.ndarray,
    true_outputs: Sequence[Sequence[int]],
    *,
    method: str,
    settings: dict[str, Any] | None = None,
    threshold: float = 0.2,
    threshold_mode: str = "top_fraction",
    faithfulness_steps: int | None = 16,
    baseline: str = "blank",
    batch_size: int = 8,
) -> Explanation:
    """Attribution maps of the true class on workspace images, scored against their masks.

    Parameters
    ----------
    model : LoadedModel
    images : ndarray of shape (n, height, width, 3), uint8
    masks : ndarray of shape (n, height, width), bool
        Foreground masks (True on the object).
    true_outputs : sequence of sequences of int, length n
        The model outputs that count as each image's true class (``label_space.class_outputs``);
        the most probable of them is explained.
    method : str
        A key of :data:`analytics.saliency.METHODS`.
    settings : dict or None
        Constructor keywords of the method (see :func:`explainer`).
    threshold, threshold_mode
        Binarisation for IoU/precision/recall/F1 (see :func:`analytics.saliency.alignment`).
    faithfulness_steps : int or None, default=16
        Steps of the insertion/deletion curves; None skips them (they cost 2·(steps + 1) forwards).
    baseline : {'blank', 'blur'}, default='blank'
        Baseline of the insertion/deletion curves.
    batch_size : int, default=8
        Images attributed together.

    Returns
    -------
    Explanation
    """
    images = check_image_batch(images)
    inside = check_mask_batch(masks, images.shape[:3]) > 0.5
    outputs = [[int(i) for i in out] for out in true_outputs]
    if len(outputs) != len(images) or not all(outputs):
        raise InvalidInputError(
            f"true_outputs must give a non-empty list of output indices per image ({len(images)} images); "
            f"got {len(outputs)} lists, {sum(not o for o in outputs)} empty"
        )
    check_positive_int(batch_size, "batch_size")
    if faithfulness_steps is not None:
        check_positive_int(faithfulness_steps, "faithfulness_steps")
    attribution = explainer(model, method, **(settings or {}))
    parts = [
        _explain_batch(model, attribution, images[i : i + batch_size], outputs[i : i + batch_size], faithfulness_steps, baseline)
        for i in range(0, len(images), batch_size)
    ]
    maps = np.concatenate([p.maps for p in parts])
    scores = alignment(maps, inside, threshold=threshold, threshold_mode=threshold_mode)
    shown = (maps - maps.min((1, 2), keepdims=True)) / np.maximum(np.ptp(maps, axis=(1, 2), keepdims=True), 1e-12)
    return Explanation(
        method=method,
        maps=shown.astype(np.float32),
        target_output=np.concatenate([p.target for p in parts]),
        target_probability=np.concatenate([p.target_probability for p in parts]),
        true_probability=np.concatenate([p.true_probability for p in parts]),
        predicted_output=np.concatenate([p.predicted for p in parts]),
        alignment=scores,
        faithfulness=None if faithfulness_steps is None else _join_faithfulness([p.faithfulness for p in parts]),
    )


@dataclass(frozen=True)
class _Batch:
    """What one batch contributes to an :class:`Explanation` (maps at the images' resolution, raw)."""

    maps: np.ndarray
    target: np.ndarray
    target_probability: np.ndarray
    true_probability: np.ndarray
    predicted: np.ndarray
    faithfulness: FaithfulnessScores | None


def _explain_batch(
    model: Any,
    attribution: AttributionMethod,
    images: np.ndarray,
    outputs: list[list[int]],
    faithfulness_steps: int | None,
    baseline: str,
) -> _Batch:
    inputs = torch.as_tensor(model.preprocess(images)).to(model.device)
    with torch.inference_mode():
        probs = F.softmax(model.forward(inputs)[0].float(), dim=1).cpu().numpy()
    # explain the most probable of the true class's outputs (an IN-9 class spans many ImageNet ones)
    target = np.array([out[int(np.argmax(probs[i, out]))] for i, out in enumerate(outputs)], dtype=np.int64)
    target_t = torch.as_tensor(target, device=inputs.device)
    maps = attribution.attribute(inputs, target_t)
    faithful = None
    if faithfulness_steps is not None:
        faithful = faithfulness(attribution.forward_func, inputs, maps, target_t, n_steps=faithfulness_steps, baseline=baseline)
    resized = _onto_images(maps, images.shape[1:3], getattr(model, "crop_box", (0.0, 1.0)))
    return _Batch(
        maps=resized.cpu().numpy(),
        target=target,
        target_probability=probs[np.arange(len(target)), target].astype(float),
        true_probability=np.array([probs[i, out].sum() for i, out in enumerate(outputs)], dtype=float),
        predicted=probs.argmax(1).astype(np.int64),
        faithfulness=faithful,
    )


def _onto_images(maps: Tensor, shape: tuple[int, int], crop_box: tuple[float, float]) -> Tensor:
    """Maps (n, s, s) at the model's input resized onto the part of the (height, width) images the
    network saw (``crop_box``: fractions of each side), 0 outside it."""
    height, width = shape
    start, end = crop_box
    if (start, end) == (0.0, 1.0):
        return F.interpolate(maps[:, None], size=shape, mode="bilinear", align_corners=False)[:, 0]
    top, bottom = round(start * height), round(end * height)
    left, right = round(start * width), round(end * width)
    out = maps.new_zeros((len(maps), height, width))
    out[:, top:bottom, left:right] = F.interpolate(maps[:, None], size=(bottom - top, right - left), mode="bilinear", align_corners=False)[:, 0]
    return out


def _join_faithfulness(parts: list[FaithfulnessScores]) -> FaithfulnessScores:
    return FaithfulnessScores(
        insertion_auc=np.concatenate([p.insertion_auc for p in parts]),
        deletion_auc=np.concatenate([p.deletion_auc for p in parts]),
        fractions=parts[0].fractions,
        insertion_curve=np.concatenate([p.insertion_curve for p in parts]),
        deletion_curve=np.concatenate([p.deletion_curve for p in parts]),
        baseline=parts[0].baseline,
    )
