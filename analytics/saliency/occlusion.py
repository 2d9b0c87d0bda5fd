"""Occlusion (Zeiler & Fergus 2014, ECCV, "Visualizing and Understanding Convolutional Networks"),
via captum's :class:`captum.attr.Occlusion`."""

from __future__ import annotations

from torch import Tensor, nn

from analytics.exceptions import InvalidInputError

from ._base import AttributionMethod, ForwardFunc, Setting
from ._captum import captum_module


class Occlusion(AttributionMethod):
    """Drop of the target logit when a ``window`` × ``window`` square (all channels) is set to the
    baseline, slid with ``stride``; each pixel averages the drops of the windows covering it.

    Parameters
    ----------
    forward_func, layer, reduce, normalize
        See :class:`~analytics.saliency.AttributionMethod`. ``reduce`` defaults to 'sum': all three
        channels carry the same drop, and its sign matters (negative: hiding the patch helps).
    window : int, default=32
        Side of the occluding square in input pixels (at most the input's side).
    stride : int, default=16
        Step between window positions in pixels (at most ``window``).
    perturbations_per_eval : int, default=16
        Occluded copies per forward pass (memory against speed).
    baseline : float or Tensor broadcastable to (n, 3, H, W), float, default=0.0
        Value written into the window, in model-input space (captum's default 0).
    """

    name = "Occlusion"
    key = "occlusion"
    needs_gradients = False
    default_reduce = "sum"
    reference = "Zeiler & Fergus 2014, ECCV, arXiv:1311.2901"
    settings = (
        Setting("window", 32, 1, 4096, "side of the occluding square (px of the model input)"),
        Setting("stride", 16, 1, 4096, "step between occluding squares (px)"),
        Setting("perturbations_per_eval", 16, 1, 4096, "occluded copies per forward pass (memory)"),
    )

    def __init__(
        self,
        forward_func: ForwardFunc,
        *,
        layer: nn.Module | None = None,
        reduce: str | None = None,
        normalize: str = "none",
        window: int = 32,
        stride: int = 16,
        perturbations_per_eval: int = 16,
        baseline: float | Tensor = 0.0,
    ) -> None:
        super().__init__(forward_func, layer=layer, reduce=reduce, normalize=normalize)
        self.window = self._setting("window", window)
        self.stride = self._setting("stride", stride)
        if self.stride > self.window:  # captum asserts it: a stride past the window skips pixels
            raise InvalidInputError(f"stride must be at most window={self.window} px, or pixels go unoccluded; got {self.stride}")
        self.perturbations_per_eval = self._setting("perturbations_per_eval", perturbations_per_eval)
        self.baseline = baseline

    def _attribute(self, inputs: Tensor, target: Tensor) -> Tensor:
        side = min(inputs.shape[2:])
        if self.window > side:
            raise InvalidInputError(f"window must be at most the input side {side} px; got {self.window}; lower window")
        baseline = self.baseline.to(inputs) if isinstance(self.baseline, Tensor) else float(self.baseline)
        return captum_module().Occlusion(self.forward_func).attribute(
            inputs,
            sliding_window_shapes=(3, self.window, self.window),
            strides=(3, self.stride, self.stride),
            baselines=baseline,
            target=target,
            perturbations_per_eval=self.perturbations_per_eval,
        )
