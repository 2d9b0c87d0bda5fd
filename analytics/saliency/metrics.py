"""How well attribution maps agree with the foreground mask, and how faithful they are.

The foreground mask plays the "human explanation" of Saliency-Bench. Alignment (per image):

* binarised map B: the top ``threshold`` share of pixels by value (``threshold_mode='top_fraction'``,
  ties at the cut included) or the pixels with value >= ``threshold`` (``'value'``); pixels at the
  map's minimum never count, so a constant map marks nothing;
* IoU = |B ∩ M| / |B ∪ M|, precision = |B ∩ M| / |B|, recall = |B ∩ M| / |M|, F1 their harmonic mean;
* pointing game (Zhang et al. 2016): 1 when the map's maximum is reached inside the mask, else 0;
* inside share: Σ_M max(a, 0) / Σ max(a, 0), the share of positive attribution on the object.

Faithfulness (Petsiuk et al. 2018, RISE §4.1): pixels are ranked by attribution; *deletion* replaces
them, most important first, with a baseline in ``n_steps`` equal steps and records the softmax
probability of the target after each; *insertion* starts from the baseline and puts them back.
AUC is the trapezoid area under probability against the fraction of pixels changed (0..1): high
insertion and low deletion AUC are good. Baselines: 'blank' (zeros in model-input space) or 'blur'
(a Gaussian blur of the input, the paper's insertion canvas).

Undefined values are NaN (a constant map: no pointing, no binarised pixels; no positive
attribution: no inside share); summaries average with NaNs left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from analytics._validation import check_choice, check_fraction, check_mask_batch, check_positive_int
from analytics.exceptions import InvalidInputError

from ._base import ForwardFunc, check_inputs, check_target, count_outputs

THRESHOLD_MODES = ("top_fraction", "value")
BASELINES = ("blank", "blur")


@dataclass(frozen=True)
class AlignmentScores:
    """Agreement of each map with its mask; every array has shape (n,), float64 (NaN: undefined).

    ``threshold`` and ``threshold_mode`` record how the maps were binarised.
    """

    iou: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    pointing_game: np.ndarray
    inside_share: np.ndarray
    threshold: float
    threshold_mode: str

    def summary(self) -> dict[str, float]:
        """Mean of each score over the images (NaNs left out; NaN when all are)."""
        return {f.name: _nanmean(getattr(self, f.name)) for f in fields(self) if f.name not in ("threshold", "threshold_mode")}


@dataclass(frozen=True)
class FaithfulnessScores:
    """Insertion and deletion curves and their AUCs.

    insertion_auc, deletion_auc : ndarray of shape (n,), float64
    fractions : ndarray of shape (n_steps + 1,), float64 — share of pixels changed, 0..1
    insertion_curve, deletion_curve : ndarray of shape (n, n_steps + 1), float64 — target probability
    baseline : str — 'blank' or 'blur'
    """

    insertion_auc: np.ndarray
    deletion_auc: np.ndarray
    fractions: np.ndarray
    insertion_curve: np.ndarray
    deletion_curve: np.ndarray
    baseline: str

    def summary(self) -> dict[str, float]:
        return {"insertion_auc": _nanmean(self.insertion_auc), "deletion_auc": _nanmean(self.deletion_auc)}


def _nanmean(values: np.ndarray) -> float:
    values = np.asarray(values, float)
    return float(values[~np.isnan(values)].mean()) if (~np.isnan(values)).any() else float("nan")


# -- alignment with the mask -----------------------------------------------------------------
def alignment(
    maps: np.ndarray | Tensor,
    masks: np.ndarray,
    *,
    threshold: float = 0.2,
    threshold_mode: str = "top_fraction",
) -> AlignmentScores:
    """IoU, precision, recall, F1, pointing game and inside share of each map against its mask.

    Parameters
    ----------
    maps : ndarray or Tensor of shape (n, height, width), float
        Attribution maps (any scale; higher = more important).
    masks : ndarray of shape (n, height, width), bool
        Foreground masks (True on the object).
    threshold : float, default=0.2
        Share of pixels kept (``top_fraction``, in (0, 1]) or the value cut (``value``).
    threshold_mode : {'top_fraction', 'value'}, default='top_fraction'

    Returns
    -------
    AlignmentScores

    Examples
    --------
    >>> maps = np.zeros((1, 4, 4)); maps[0, :2, :2] = 1
    >>> masks = np.zeros((1, 4, 4), bool); masks[0, :2, :] = True
    >>> s = alignment(maps, masks, threshold=0.25)
    >>> float(s.iou[0]), float(s.precision[0]), float(s.recall[0]), float(s.inside_share[0])
    (0.5, 1.0, 0.5, 1.0)
    """
    values = _check_maps(maps)
    inside = check_mask_batch(masks, values.shape) > 0.5
    binary = binarize(values, threshold=threshold, threshold_mode=threshold_mode)
    both = (binary & inside).sum((1, 2)).astype(float)
    n_binary, n_mask = binary.sum((1, 2)).astype(float), inside.sum((1, 2)).astype(float)
    union = (binary | inside).sum((1, 2)).astype(float)
    precision, recall = _ratio(both, n_binary), _ratio(both, n_mask)
    return AlignmentScores(
        iou=_ratio(both, union),
        precision=precision,
        recall=recall,
        f1=_ratio(2 * precision * recall, precision + recall, zero=0.0),
        pointing_game=_pointing_game(values, inside),
        inside_share=_inside_share(values, inside),
        threshold=float(threshold),
        threshold_mode=threshold_mode,
    )


def binarize(maps: np.ndarray | Tensor, *, threshold: float = 0.2, threshold_mode: str = "top_fraction") -> np.ndarray:
    """The salient pixels of each map (see the module docstring).

    Parameters
    ----------
    maps : ndarray or Tensor of shape (n, height, width), float
    threshold : float, default=0.2
    threshold_mode : {'top_fraction', 'value'}, default='top_fraction'

    Returns
    -------
    binary : ndarray of shape (n, height, width), bool
    """
    values = _check_maps(maps)
    check_choice(threshold_mode, "threshold_mode", THRESHOLD_MODES)
    flat = values.reshape(len(values), -1)
    if threshold_mode == "top_fraction":
        share = check_fraction(threshold, "threshold")
        k = max(1, math.ceil(share * flat.shape[1]))
        cut = -np.partition(-flat, k - 1, axis=1)[:, k - 1 : k]  # k-th largest value of each map
    else:
        if not np.isfinite(threshold):
            raise InvalidInputError(f"threshold must be a finite number with threshold_mode='value'; got {threshold}")
        cut = np.full((len(flat), 1), float(threshold))
    return ((flat >= cut) & (flat > flat.min(1, keepdims=True))).reshape(values.shape)


def pointing_game(maps: np.ndarray | Tensor, masks: np.ndarray) -> np.ndarray:
    """1.0 where a map's maximum lies inside the mask, 0.0 elsewhere, NaN for constant maps.

    Parameters
    ----------
    maps : ndarray or Tensor of shape (n, height, width), float
    masks : ndarray of shape (n, height, width), bool

    Returns
    -------
    hits : ndarray of shape (n,), float64
    """
    values = _check_maps(maps)
    return _pointing_game(values, check_mask_batch(masks, values.shape) > 0.5)


def inside_share(maps: np.ndarray | Tensor, masks: np.ndarray) -> np.ndarray:
    """Share of each map's positive attribution inside its mask (NaN: nothing positive).

    Parameters
    ----------
    maps : ndarray or Tensor of shape (n, height, width), float
    masks : ndarray of shape (n, height, width), bool

    Returns
    -------
    shares : ndarray of shape (n,), float64
    """
    values = _check_maps(maps)
    return _inside_share(values, check_mask_batch(masks, values.shape) > 0.5)


def _pointing_game(values: np.ndarray, inside: np.ndarray) -> np.ndarray:
    flat, inside = values.reshape(len(values), -1), inside.reshape(len(values), -1)
    peak = flat.max(1)
    best_inside = np.where(inside, flat, -np.inf).max(1)
    hit = (best_inside == peak).astype(float)
    return np.where(peak > flat.min(1), hit, np.nan)


def _inside_share(values: np.ndarray, inside: np.ndarray) -> np.ndarray:
    positive = np.clip(values, 0, None)
    return _ratio((positive * inside).sum((1, 2)), positive.sum((1, 2)))


def _ratio(numerator: np.ndarray, denominator: np.ndarray, *, zero: float = float("nan")) -> np.ndarray:
    """numerator / denominator, with ``zero`` where the denominator is 0."""
    safe = np.where(denominator > 0, denominator, 1)
    return np.where(denominator > 0, numerator / safe, zero)


def _check_maps(maps: np.ndarray | Tensor) -> np.ndarray:
    values = maps.detach().float().cpu().numpy() if isinstance(maps, Tensor) else np.asarray(maps, dtype=float)
    if values.ndim != 3 or values.size == 0:
        raise InvalidInputError(f"maps must have shape (n, height, width) with n >= 1; got {values.shape}")
    if not np.isfinite(values).all():
        raise InvalidInputError(f"maps hold {int((~np.isfinite(values)).sum())} NaN or infinite values; recompute them")
    return values.astype(float, copy=False)


# -- faithfulness ----------------------------------------------------------------------------
def faithfulness(
    forward_func: ForwardFunc,
    inputs: Tensor,
    maps: Tensor | np.ndarray,
    target: Tensor | int,
    *,
    n_steps: int = 32,
    baseline: str = "blank",
    blur_sigma: float = 5.0,
    batch_size: int = 64,
) -> FaithfulnessScores:
    """Insertion and deletion curves and AUCs (Petsiuk et al. 2018) of maps on their inputs.

    Parameters
    ----------
    forward_func : callable
        Float tensor (n, 3, H, W) → logits (n, n_outputs).
    inputs : Tensor of shape (n, 3, H, W), float
        Model-ready inputs the maps explain.
    maps : Tensor or ndarray of shape (n, H, W), float
        Attribution maps at the inputs' resolution.
    target : int or Tensor of shape (n,), int
        The output whose softmax probability is tracked.
    n_steps : int, default=32
        Equal steps from 0 to all pixels (n_steps + 1 points per curve).
    baseline : {'blank', 'blur'}, default='blank'
        What removed pixels become: zeros, or the input blurred with ``blur_sigma``.
    blur_sigma : float, default=5.0
        Standard deviation in pixels of the Gaussian blur (kernel side 2·ceil(3σ) + 1).
    batch_size : int, default=64
        Images per forward pass (at least one step of all n images).

    Returns
    -------
    FaithfulnessScores
    """
    inputs = check_inputs(inputs)
    check_positive_int(n_steps, "n_steps")
    check_positive_int(batch_size, "batch_size")
    check_choice(baseline, "baseline", BASELINES)
    if not (isinstance(blur_sigma, (int, float)) and blur_sigma > 0):
        raise InvalidInputError(f"blur_sigma must be a positive number of pixels; got {blur_sigma!r}")
    maps = torch.as_tensor(_check_maps(maps), dtype=torch.float32, device=inputs.device)
    if maps.shape != (len(inputs), *inputs.shape[2:]):
        raise InvalidInputError(
            f"maps must have shape {(len(inputs), *inputs.shape[2:])} to match the inputs; got {tuple(maps.shape)}; "
            "compute them at the model's input size"
        )
    with torch.inference_mode(False), torch.no_grad():
        inputs = inputs.clone() if inputs.is_inference() else inputs
        target = check_target(target, len(inputs), count_outputs(forward_func, inputs)).to(inputs.device)
        canvas = _canvas(inputs, baseline, blur_sigma)
        insertion, deletion = _curves(forward_func, inputs, canvas, maps, target, n_steps, batch_size)
    fractions = np.linspace(0, 1, n_steps + 1)
    return FaithfulnessScores(
        insertion_auc=np.trapezoid(insertion, fractions, axis=1),
        deletion_auc=np.trapezoid(deletion, fractions, axis=1),
        fractions=fractions,
        insertion_curve=insertion,
        deletion_curve=deletion,
        baseline=baseline,
    )


def _canvas(inputs: Tensor, baseline: str, sigma: float) -> Tensor:
    if baseline == "blank":
        return torch.zeros_like(inputs)
    from torchvision.transforms.v2.functional import gaussian_blur  # heavy (about a second): only the blurred baseline needs it

    kernel = min(2 * math.ceil(3 * sigma) + 1, 2 * min(inputs.shape[2:]) - 1)  # reflect padding needs pad < side
    return gaussian_blur(inputs, kernel_size=[kernel, kernel], sigma=[sigma, sigma])


def _curves(
    forward_func: ForwardFunc, inputs: Tensor, canvas: Tensor, maps: Tensor, target: Tensor, n_steps: int, batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities (n, n_steps + 1) after inserting / deleting the top pixels step by step."""
    n, n_pixels = len(inputs), maps[0].numel()
    order = torch.argsort(maps.flatten(1), dim=1, descending=True, stable=True)
    rank = torch.empty_like(order).scatter_(1, order, torch.arange(n_pixels, device=order.device).expand(n, -1))
    rank = rank.view(n, 1, *maps.shape[1:])
    counts = torch.linspace(0, n_pixels, n_steps + 1).round().long().tolist()
    steps = [(curve, k) for curve in (0, 1) for k in range(n_steps + 1)]  # 0 insertion, 1 deletion
    probs = torch.empty((2, n_steps + 1, n), device=inputs.device)
    per_pass = max(1, batch_size // n)
    for start in range(0, len(steps), per_pass):
        chunk = steps[start : start + per_pass]
        batch = torch.cat(
            [torch.where(rank < counts[k], inputs, canvas) if curve == 0 else torch.where(rank < counts[k], canvas, inputs) for curve, k in chunk]
        )
        p = F.softmax(forward_func(batch), dim=1).gather(1, target.repeat(len(chunk))[:, None]).view(len(chunk), n)
        for (curve, k), row in zip(chunk, p):
            probs[curve, k] = row
    curves = probs.permute(0, 2, 1).double().cpu().numpy()
    return curves[0], curves[1]
