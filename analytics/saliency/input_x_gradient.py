"""Input × gradient (Shrikumar et al. 2016, "Not Just a Black Box"), via captum's
:class:`captum.attr.InputXGradient`."""

from __future__ import annotations

from torch import Tensor

from ._base import AttributionMethod
from ._captum import captum_module


class InputXGradient(AttributionMethod):
    """x ⊙ ∂ logit_target / ∂ x (in model-input space, so a zero input pixel gets zero)."""

    name = "Input × Gradient"
    key = "input_x_gradient"
    needs_gradients = True
    reference = "Shrikumar et al. 2016, arXiv:1605.01713"

    def _attribute(self, inputs: Tensor, target: Tensor) -> Tensor:
        return captum_module().InputXGradient(self.forward_func).attribute(inputs.requires_grad_(), target=target)
