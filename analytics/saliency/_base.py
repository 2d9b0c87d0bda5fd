"""The attribution-method family: one base class, one public method, explicit settings.

Like captum, a method is built around the model and does its work in one call::

    method = METHODS["gradcam"](forward_func, layer=layer)
    maps = method.attribute(inputs, target)          # (n, H, W) float32

The base class fixes the pipeline (validate → ``_attribute`` → reduce channels → normalise); a
subclass implements only ``_attribute``, which may assume valid input and returns a per-channel map
of shape (n, c, H, W) (c = 3 for pixel-gradient methods, c = 1 for CAM methods and RISE).

Channel reduction (``reduce``):

* ``'sum'``      signed sum over channels (keeps the sign of the evidence: occlusion's default);
* ``'abs_sum'``  sum of absolute values (captum's ``visualize_image_attr`` "absolute_value");
* ``'max_abs'``  max over channels of the absolute value (Simonyan et al. 2014, §3.1);
* ``'l2'``       Euclidean norm over channels.

Normalisation per image (``normalize``):

* ``'none'``          raw values (what the metrics need to compare methods' own scales);
* ``'minmax'``        (a − min) / (max − min) into [0, 1] (a constant map becomes all zeros);
* ``'max_abs'``       a / max|a| into [−1, 1], keeping the sign;
* ``'percentile99'``  a / (99th percentile of |a|), clipped to [−1, 1]: the top 1 % of outliers
  saturate instead of washing out the rest (captum's visualisation scaling).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar, final

import numpy as np
import torch
from torch import Tensor, nn

from analytics._validation import check_choice
from analytics.exceptions import InvalidInputError

REDUCTIONS = ("sum", "abs_sum", "max_abs", "l2")
NORMALIZATIONS = ("none", "minmax", "max_abs", "percentile99")

ForwardFunc = Callable[[Tensor], Tensor]


@dataclass(frozen=True)
class Setting:
    """A numeric setting of an attribution method, described once for checks and for forms.

    Parameters
    ----------
    name : str
        Keyword of the method's constructor.
    default : int or float
        Default value; its type says whether the setting is an integer.
    minimum, maximum : int or float
        Closed range of allowed values (``maximum=None``: unbounded).
    help : str
        One line shown beside the widget.
    """

    name: str
    default: int | float
    minimum: int | float
    maximum: int | float | None = None
    help: str = ""

    @property
    def integer(self) -> bool:
        return isinstance(self.default, int)

    def check(self, value: int | float) -> int | float:
        """Return ``value`` (as int or float) if it obeys this setting's type and range."""
        kind = Integral if self.integer else Real
        top = "inf" if self.maximum is None else self.maximum
        rule = f"{'an integer' if self.integer else 'a number'} in [{self.minimum}, {top}]"
        if isinstance(value, bool) or not isinstance(value, kind) or np.isnan(value):
            raise InvalidInputError(f"{self.name} must be {rule}; got {value!r}")
        if value < self.minimum or (self.maximum is not None and value > self.maximum):
            raise InvalidInputError(f"{self.name} must be {rule}; got {value}")
        return int(value) if self.integer else float(value)


class AttributionMethod:
    """Base class of the attribution methods (captum-style: model in, one ``attribute`` call).

    Parameters
    ----------
    forward_func : callable or torch.nn.Module
        Maps a float tensor of shape (n, 3, H, W) to logits of shape (n, n_outputs). For a loaded
        Backdrop model use :func:`analytics.saliency.logits_module`.
    layer : torch.nn.Module or None, default=None
        The convolutional layer CAM methods read (its output must be (n, k, h, w)); required when
        ``needs_layer`` is True, ignored otherwise.
    reduce : {'sum', 'abs_sum', 'max_abs', 'l2'} or None, default=None
        How channels become one map (see the module docstring); None takes the method's
        ``default_reduce``.
    normalize : {'none', 'minmax', 'max_abs', 'percentile99'}, default='none'
        Per-image scaling of the map (see the module docstring).

    Class attributes
    ----------------
    name : str            display name
    key : str             registry key (``analytics.saliency.METHODS``)
    needs_gradients : bool  whether the method back-propagates (it never runs under inference mode)
    needs_layer : bool    whether ``layer`` is required
    default_reduce : str  channel reduction used when ``reduce`` is None
    settings : tuple of Setting   the method's numeric settings (constructor keywords)
    reference : str       the paper the method follows
    black_baseline : bool  whether its ``baseline`` means "a black image" (explainer passes the model's)
    """

    name: ClassVar[str]
    key: ClassVar[str]
    needs_gradients: ClassVar[bool]
    needs_layer: ClassVar[bool] = False
    default_reduce: ClassVar[str] = "abs_sum"
    settings: ClassVar[tuple[Setting, ...]] = ()
    reference: ClassVar[str] = ""
    black_baseline: ClassVar[bool] = False

    def __init__(
        self,
        forward_func: ForwardFunc,
        *,
        layer: nn.Module | None = None,
        reduce: str | None = None,
        normalize: str = "none",
    ) -> None:
        if not callable(forward_func):
            raise InvalidInputError(f"forward_func must be callable (a torch.nn.Module or function); got {type(forward_func).__name__}")
        if self.needs_layer and not isinstance(layer, nn.Module):
            raise InvalidInputError(
                f"{self.key} needs layer, the torch.nn.Module of the last convolutional block; got {layer!r} "
                "(a loaded model offers it as model.gradcam_layer)"
            )
        self.forward_func = forward_func
        self.layer = layer if self.needs_layer else None
        self.reduce = check_choice(self.default_reduce if reduce is None else reduce, "reduce", REDUCTIONS)
        self.normalize = check_choice(normalize, "normalize", NORMALIZATIONS)
        self._n_outputs: int | None = None

    def __repr__(self) -> str:
        values = ", ".join(f"{s.name}={getattr(self, s.name)!r}" for s in self.settings)
        extra = f", {values}" if values else ""
        return f"{type(self).__name__}(reduce={self.reduce!r}, normalize={self.normalize!r}{extra})"

    def _setting(self, name: str, value: int | float) -> int | float:
        """Check a constructor keyword against the class's :class:`Setting` of that name."""
        return next(s for s in self.settings if s.name == name).check(value)

    @final
    def attribute(self, inputs: Tensor, target: Tensor | int | Sequence[int]) -> Tensor:
        """Attribution maps of a batch.

        Parameters
        ----------
        inputs : Tensor of shape (n, 3, H, W), float
            Model-ready inputs (already preprocessed), on the model's device.
        target : int, sequence of int or Tensor of shape (n,), int
            The output index explained for each image (one int: the same for all).

        Returns
        -------
        maps : Tensor of shape (n, H, W), float32, detached, on the inputs' device

        Raises
        ------
        InvalidInputError
            ``inputs`` is not a float (n, 3, H, W) tensor, or a target is out of range.
        """
        inputs = check_inputs(inputs)
        # Saliency needs autograd: leave any caller's inference mode; inference tensors are cloned
        # into normal ones (autograd refuses to save inference tensors for backward).
        with torch.inference_mode(False), torch.set_grad_enabled(self.needs_gradients):
            if inputs.is_inference():
                inputs = inputs.clone()
            target = self._check_target(inputs, target)
            raw = self._attribute(inputs.detach(), target)
        maps = reduce_channels(raw.detach().float(), self.reduce)
        return normalize_maps(maps, self.normalize)

    def _attribute(self, inputs: Tensor, target: Tensor) -> Tensor:
        """The method itself. inputs (n, 3, H, W) float, target (n,) int64, both on one device;
        returns (n, c, H, W)."""
        raise NotImplementedError

    def _check_target(self, inputs: Tensor, target: Tensor | int | Sequence[int]) -> Tensor:
        if self._n_outputs is None:
            self._n_outputs = count_outputs(self.forward_func, inputs)
        return check_target(target, len(inputs), self._n_outputs).to(inputs.device)


def count_outputs(forward_func: ForwardFunc, inputs: Tensor) -> int:
    """The number of logits ``forward_func`` returns, from one image (and checked to be 2-D).

    Parameters
    ----------
    forward_func : callable
        Float tensor (n, 3, H, W) → logits (n, n_outputs).
    inputs : Tensor of shape (n, 3, H, W), float
        Only the first image is passed.
    """
    with torch.no_grad():
        logits = forward_func(inputs[:1])
    if not isinstance(logits, Tensor) or logits.ndim != 2 or len(logits) != 1:
        shape = tuple(logits.shape) if isinstance(logits, Tensor) else type(logits).__name__
        raise InvalidInputError(
            f"forward_func must return logits of shape (n, n_outputs); got {shape} "
            "(for a loaded model pass analytics.saliency.logits_module(model))"
        )
    return int(logits.shape[1])


def check_target(target: Tensor | int | Sequence[int], n: int, n_outputs: int) -> Tensor:
    """``target`` as an int64 tensor of shape (n,), each in [0, n_outputs); one int means all.

    Parameters
    ----------
    target : int, sequence of int or Tensor of shape (n,), int
    n : int
    n_outputs : int

    Returns
    -------
    target : Tensor of shape (n,), int64, on the CPU unless ``target`` was a tensor elsewhere
    """
    if isinstance(target, Integral) and not isinstance(target, bool):
        target = torch.full((n,), int(target), dtype=torch.long)
    target = torch.as_tensor(target)
    if target.dtype.is_floating_point or target.dtype == torch.bool or target.shape != (n,):
        raise InvalidInputError(
            f"target must be an int or {n} ints, one per image; got {target.dtype} of shape {tuple(target.shape)}"
        )
    bad = (target < 0) | (target >= n_outputs)
    if bad.any():
        raise InvalidInputError(
            f"target must index the model's {n_outputs} outputs (0..{n_outputs - 1}); got {target[bad].tolist()[:5]}"
        )
    return target.long()


def check_inputs(inputs: Tensor) -> Tensor:
    """Return ``inputs`` unchanged if it is a float Tensor of shape (n, 3, H, W) with n >= 1, else raise.

    Parameters
    ----------
    inputs : Tensor of shape (n, 3, H, W), float

    Returns
    -------
    inputs : Tensor of shape (n, 3, H, W), float (the same object)
    """
    if not isinstance(inputs, Tensor):
        raise InvalidInputError(f"inputs must be a torch.Tensor of shape (n, 3, H, W); got {type(inputs).__name__}")
    if inputs.ndim != 4 or inputs.shape[1] != 3 or len(inputs) == 0:
        raise InvalidInputError(
            f"inputs must have shape (n, 3, H, W) with n >= 1 (a preprocessed batch); got {tuple(inputs.shape)}"
        )
    if not inputs.dtype.is_floating_point:
        raise InvalidInputError(f"inputs must be a float tensor (preprocess uint8 images first); got {inputs.dtype}")
    return inputs


def reduce_channels(attributions: Tensor, reduce: str) -> Tensor:
    """Turn per-channel attributions into one map per image; see the module docstring.

    Parameters
    ----------
    attributions : Tensor of shape (n, c, H, W), float
    reduce : {'sum', 'abs_sum', 'max_abs', 'l2'}

    Returns
    -------
    maps : Tensor of shape (n, H, W), float (the attributions' dtype)
    """
    if reduce == "sum":
        return attributions.sum(1)
    if reduce == "abs_sum":
        return attributions.abs().sum(1)
    if reduce == "max_abs":
        return attributions.abs().amax(1)
    return torch.linalg.vector_norm(attributions, dim=1)


def normalize_maps(maps: Tensor, normalize: str) -> Tensor:
    """Scale each map on its own; see the module docstring.

    Parameters
    ----------
    maps : Tensor of shape (n, H, W), float
    normalize : {'none', 'minmax', 'max_abs', 'percentile99'}

    Returns
    -------
    maps : Tensor of shape (n, H, W), float (the maps' dtype)
    """
    if normalize == "none":
        return maps
    flat = maps.flatten(1)
    if normalize == "minmax":
        low = flat.amin(1, keepdim=True)
        span = flat.amax(1, keepdim=True) - low
        return ((flat - low) / torch.where(span > 0, span, 1)).view_as(maps)
    magnitude = flat.abs()
    if normalize == "max_abs":
        scale = magnitude.amax(1, keepdim=True)
    else:  # percentile99; kthvalue, since torch.quantile refuses inputs over 16 M values
        k = max(1, int(np.ceil(0.99 * flat.shape[1])))
        scale = magnitude.kthvalue(k, dim=1, keepdim=True).values
        # a map with under 1 % non-zero pixels has a zero percentile: scale by its maximum instead
        scale = torch.where(scale > 0, scale, magnitude.amax(1, keepdim=True))
    return (flat / torch.where(scale > 0, scale, 1)).clamp(-1, 1).view_as(maps)
