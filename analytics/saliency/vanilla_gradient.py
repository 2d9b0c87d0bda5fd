"""Vanilla gradient saliency (Simonyan, Vedaldi & Zisserman 2014, "Deep Inside Convolutional
Networks"), via captum's :class:`captum.attr.Saliency`."""

from __future__ import annotations

from torch import Tensor

from ._base import AttributionMethod
from ._captum import captum_module


class Saliency(AttributionMethod):
    """|∂ logit_target / ∂ x|, reduced over colour channels by their maximum (the paper's §3.1).

    Captum's ``abs`` option is off: the absolute value comes from ``reduce`` (default 'max_abs'),
    so ``reduce='sum'`` shows the signed gradient.
    """

    name = "Saliency (gradient)"
    key = "saliency"
    needs_gradients = True
    default_reduce = "max_abs"
    reference = "Simonyan et al. 2014, ICLR workshop, arXiv:1312.6034"

    def _attribute(self, inputs: Tensor, target: Tensor) -> Tensor:
        return captum_module().Saliency(self.forward_func).attribute(inputs.requires_grad_(), target=target, abs=False)
