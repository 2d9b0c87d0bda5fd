"""Grad-CAM (Selvaraju et al. 2017, ICCV), via captum's :class:`captum.attr.LayerGradCam` on the
last convolutional block, upsampled to the input with :meth:`captum.attr.LayerAttribution.interpolate`."""

from __future__ import annotations

from torch import Tensor

from ._base import AttributionMethod
from ._captum import captum_module


class GradCAM(AttributionMethod):
    """relu(Σ_k w_k A^k) with w_k the spatial mean of ∂ logit_target / ∂ A^k, bilinearly upsampled.

    A^k are the channels of ``layer``'s output (n, k, h, w). The ReLU is the paper's (captum leaves
    it off by default); the map has one channel, so ``reduce`` changes nothing but its sign.
    """

    name = "Grad-CAM"
    key = "gradcam"
    needs_gradients = True
    needs_layer = True
    default_reduce = "sum"
    reference = "Selvaraju et al. 2017, ICCV, arXiv:1610.02391"

    def _attribute(self, inputs: Tensor, target: Tensor) -> Tensor:
        cam = captum_module().LayerGradCam(self.forward_func, self.layer).attribute(inputs, target=target, relu_attributions=True)
        return upsample(cam, inputs)


def upsample(cam: Tensor, inputs: Tensor) -> Tensor:
    """Bilinear upsampling of a layer map to the inputs' (H, W).

    Parameters
    ----------
    cam : Tensor of shape (n, 1, h, w), float
    inputs : Tensor of shape (n, 3, H, W), float
        Only its shape is read.

    Returns
    -------
    cam : Tensor of shape (n, 1, H, W), float (the cam's dtype)
    """
    return captum_module().LayerAttribution.interpolate(cam, tuple(inputs.shape[2:]), interpolate_mode="bilinear")
