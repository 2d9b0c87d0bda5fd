"""Grad-CAM++ (Chattopadhay, Sarkar, Howlader & Balasubramanian 2018, WACV, arXiv:1710.11063).

Captum has no Grad-CAM++, so it is written here from the paper. With A^k the channels of the last
convolutional layer, S the target logit and g = ∂S/∂A^k, the paper takes Y = exp(S); its higher
derivatives are then powers of g (its Eq. 19), and the pixel weights become

    α^k_ij = g_ij² / (2 g_ij² + Σ_ab A^k_ab · g_ij³)          (α = 0 where the denominator is 0)
    w^k    = Σ_ij α^k_ij · relu(g_ij)                          (exp(S) > 0 only scales all w^k)
    L      = relu(Σ_k w^k A^k)

then L is bilinearly upsampled to the input, as for Grad-CAM. Compared with Grad-CAM's plain mean
of g, the α weights let several separate object parts all count (the paper's motivation).
"""

from __future__ import annotations

import torch
from torch import Tensor

from analytics.exceptions import InvalidInputError

from ._base import AttributionMethod
from .gradcam import upsample


class GradCAMPlusPlus(AttributionMethod):
    """Grad-CAM++ on ``layer`` (see the module docstring for the formula)."""

    name = "Grad-CAM++"
    key = "gradcam_plus_plus"
    needs_gradients = True
    needs_layer = True
    default_reduce = "sum"
    reference = "Chattopadhay et al. 2018, WACV, arXiv:1710.11063"

    def _attribute(self, inputs: Tensor, target: Tensor) -> Tensor:
        activations, grads = self._activations_and_gradients(inputs, target)
        g2, g3 = grads.pow(2), grads.pow(3)
        denominator = 2 * g2 + activations.sum((2, 3), keepdim=True) * g3
        alpha = torch.where(denominator != 0, g2 / torch.where(denominator != 0, denominator, 1), 0)
        weights = (alpha * grads.clamp(min=0)).sum((2, 3), keepdim=True)
        cam = (weights * activations).sum(1, keepdim=True).clamp(min=0)
        return upsample(cam, inputs)

    def _activations_and_gradients(self, inputs: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
        """The layer's output A (n, k, h, w) and ∂ logit_target / ∂ A, from one forward and backward."""
        captured: list[Tensor] = []
        handle = self.layer.register_forward_hook(lambda module, args, output: captured.append(output))
        try:
            logits = self.forward_func(inputs)
        finally:
            handle.remove()
        if len(captured) != 1 or not isinstance(captured[0], Tensor) or captured[0].ndim != 4:
            found = [tuple(c.shape) if isinstance(c, Tensor) else type(c).__name__ for c in captured]
            raise InvalidInputError(
                f"layer {type(self.layer).__name__} must run once per forward and output (n, k, h, w); got outputs {found}; "
                "pass the last convolutional block"
            )
        score = logits.gather(1, target[:, None]).sum()  # images are independent: one backward for all
        (grads,) = torch.autograd.grad(score, captured[0])
        return captured[0].detach(), grads.detach()
