"""The one registry of attribution methods: key -> class, in the order the page lists them.

A new method = one module with an :class:`~._base.AttributionMethod` subclass + one entry below.
"""

from __future__ import annotations

from ._base import AttributionMethod
from .gradcam import GradCAM
from .gradcam_plus_plus import GradCAMPlusPlus
from .guided_backprop import GuidedBackprop
from .input_x_gradient import InputXGradient
from .integrated_gradients import IntegratedGradients
from .occlusion import Occlusion
from .rise import RISE
from .vanilla_gradient import Saliency

#: Registry key → method class, in the order the page lists them.
METHODS: dict[str, type[AttributionMethod]] = {
    cls.key: cls
    for cls in (Saliency, IntegratedGradients, InputXGradient, GuidedBackprop, GradCAM, Occlusion, GradCAMPlusPlus, RISE)
}
