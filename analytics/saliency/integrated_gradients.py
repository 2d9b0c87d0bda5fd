"""Integrated gradients (Sundararajan, Taly & Yan 2017, ICML, "Axiomatic Attribution for Deep
Networks"), via captum's :class:`captum.attr.IntegratedGradients`."""

from __future__ import annotations

from torch import Tensor, nn

from ._base import AttributionMethod, ForwardFunc, Setting
from ._captum import captum_module


class IntegratedGradients(AttributionMethod):
    """(x − x') ⊙ ∫₀¹ ∂ logit_target(x' + α(x − x')) / ∂ x dα, by Gauss–Legendre quadrature.

    Parameters
    ----------
    forward_func, layer, reduce, normalize
        See :class:`~analytics.saliency.AttributionMethod`.
    n_steps : int, default=32
        Quadrature points along the path from the baseline to the input.
    internal_batch_size : int, default=32
        Path points evaluated per forward pass (bounds memory: n_steps × n images in all).
    baseline : float or Tensor broadcastable to (n, 3, H, W), float, default=0.0
        The black image x' in model-input space. 0.0 is black only for inputs scaled to [0, 1];
        :func:`analytics.saliency.explainer` passes the model's preprocessed black image.
    """

    name = "Integrated Gradients"
    key = "integrated_gradients"
    needs_gradients = True
    reference = "Sundararajan et al. 2017, ICML, arXiv:1703.01365"
    black_baseline = True  # analytics.saliency.explainer passes the model's black image as baseline
    settings = (
        Setting("n_steps", 32, 2, 1024, "points on the straight path from the black baseline to the image"),
        Setting("internal_batch_size", 32, 1, 4096, "path points per forward pass (memory)"),
    )

    def __init__(
        self,
        forward_func: ForwardFunc,
        *,
        layer: nn.Module | None = None,
        reduce: str | None = None,
        normalize: str = "none",
        n_steps: int = 32,
        internal_batch_size: int = 32,
        baseline: float | Tensor = 0.0,
    ) -> None:
        super().__init__(forward_func, layer=layer, reduce=reduce, normalize=normalize)
        self.n_steps = self._setting("n_steps", n_steps)
        self.internal_batch_size = self._setting("internal_batch_size", internal_batch_size)
        self.baseline = baseline

    def _attribute(self, inputs: Tensor, target: Tensor) -> Tensor:
        baseline = self.baseline.to(inputs) if isinstance(self.baseline, Tensor) else float(self.baseline)
        return captum_module().IntegratedGradients(self.forward_func).attribute(
            inputs,
            baselines=baseline,
            target=target,
            n_steps=self.n_steps,
            internal_batch_size=self.internal_batch_size,
        )
