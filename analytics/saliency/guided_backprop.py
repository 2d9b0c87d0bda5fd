"""Guided backpropagation (Springenberg et al. 2015, "Striving for Simplicity: The All
Convolutional Net"), via captum's :class:`captum.attr.GuidedBackprop`, extended to ReLU6.

Captum overrides the backward pass of ``torch.nn.ReLU`` *modules* only: functional
``F.relu`` calls are not seen, and ``torch.nn.ReLU6`` (a ``Hardtanh``, not a ``ReLU``) is skipped.
EfficientNet-Lite uses ``nn.ReLU6`` modules everywhere, so captum's class alone returns the plain
gradient for it, silently. This subclass also hooks ``nn.ReLU6`` with the same rule: the
gradient entering the activation, grad_out · 1[0 < x < 6], is passed on only where positive
(relu of it), which is guided backprop with ReLU6's own local derivative. A network with neither
module is refused rather than explained with an unguided gradient.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

from torch import Tensor, nn

from analytics.exceptions import InvalidInputError

from ._base import AttributionMethod, ForwardFunc
from ._captum import captum_module

GUIDED_ACTIVATIONS = (nn.ReLU, nn.ReLU6)


@functools.cache
def _guided_backprop_relu6() -> type[Any]:
    """Captum's guided backprop, hooking ReLU6 modules as well as ReLU modules (the class is made on
    first use, so that importing this module does not import captum)."""
    register_backward_hook = captum_module("captum._utils.common")._register_backward_hook  # the hook captum itself puts on ReLUs

    class GuidedBackpropReLU6(captum_module().GuidedBackprop):  # type: ignore[misc]
        def _register_hooks(self, module: nn.Module) -> None:
            if isinstance(module, GUIDED_ACTIVATIONS):
                self.backward_hooks.extend(register_backward_hook(module, self._backward_hook, self))

    return GuidedBackpropReLU6


class GuidedBackprop(AttributionMethod):
    """Gradient whose negative parts are cut at every ReLU/ReLU6 on the way back.

    ``forward_func`` must be a ``torch.nn.Module`` holding the network's ReLU or ReLU6 modules
    (:func:`analytics.saliency.logits_module` wraps a loaded model so).
    """

    name = "Guided Backprop"
    key = "guided_backprop"
    needs_gradients = True
    reference = "Springenberg et al. 2015, ICLR workshop, arXiv:1412.6806"

    def __init__(
        self,
        forward_func: ForwardFunc,
        *,
        layer: nn.Module | None = None,
        reduce: str | None = None,
        normalize: str = "none",
    ) -> None:
        super().__init__(forward_func, layer=layer, reduce=reduce, normalize=normalize)
        if not isinstance(forward_func, nn.Module):
            raise InvalidInputError(
                "guided_backprop needs forward_func to be a torch.nn.Module (its ReLU/ReLU6 modules are hooked); "
                f"got {type(forward_func).__name__}; wrap a loaded model with analytics.saliency.logits_module(model)"
            )
        if not any(isinstance(m, GUIDED_ACTIVATIONS) for m in forward_func.modules()):
            raise InvalidInputError(
                f"guided_backprop found no nn.ReLU or nn.ReLU6 module in {type(forward_func).__name__}; with functional "
                "activations it would return the plain gradient: use the 'saliency' method instead"
            )

    def _attribute(self, inputs: Tensor, target: Tensor) -> Tensor:
        with warnings.catch_warnings():
            # captum announces its hooks on every call; they are removed when it returns
            warnings.filterwarnings("ignore", message="Setting backward hooks on ReLU activations")
            return _guided_backprop_relu6()(self.forward_func).attribute(inputs.requires_grad_(), target=target)
