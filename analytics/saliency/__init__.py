"""Attribution maps and how much of them falls on the object (the methods and metrics of the Saliency-Bench XAI benchmark).

One base class (:class:`AttributionMethod`, captum-style: model in the constructor, one
``attribute(inputs, target)`` call returning (n, H, W) maps), one file per method, and the registry
:data:`METHODS` that the page and the CLI read. :mod:`.metrics` scores maps against foreground
masks (IoU, precision, recall, F1, pointing game, inside share) and by insertion/deletion AUC.
:func:`explain` runs a method and the metrics for a loaded Backdrop model on workspace images;
:func:`available_methods` says which methods a loaded model can run (TorchScript: no hooks, so no
CAM and no guided backprop; ONNX: no gradients, so occlusion and RISE only), clearest first, and
:func:`unavailable_methods` why the others are left out. :mod:`.survey` is the long work over many targets
(the background job kind ``saliency``).
"""

from __future__ import annotations

from ._base import NORMALIZATIONS, REDUCTIONS, AttributionMethod, Setting, normalize_maps, reduce_channels
from ._model import CLEAREST_FIRST, Explanation, available_methods, explain, explainer, logits_module, unavailable_methods
from .gradcam import GradCAM
from .gradcam_plus_plus import GradCAMPlusPlus
from .guided_backprop import GuidedBackprop
from .heatmap import OVERLAY_ALPHA, heat_colours, heat_overlay
from .input_x_gradient import InputXGradient
from .integrated_gradients import IntegratedGradients
from .metrics import BASELINES, THRESHOLD_MODES, AlignmentScores, FaithfulnessScores, alignment, binarize, faithfulness
from .occlusion import Occlusion
from .registry import METHODS
from .rise import RISE
from .survey import object_share
from .vanilla_gradient import Saliency

__all__ = [
    "BASELINES",
    "CLEAREST_FIRST",
    "METHODS",
    "NORMALIZATIONS",
    "OVERLAY_ALPHA",
    "REDUCTIONS",
    "RISE",
    "THRESHOLD_MODES",
    "AlignmentScores",
    "AttributionMethod",
    "Explanation",
    "FaithfulnessScores",
    "GradCAM",
    "GradCAMPlusPlus",
    "GuidedBackprop",
    "InputXGradient",
    "IntegratedGradients",
    "Occlusion",
    "Saliency",
    "Setting",
    "alignment",
    "available_methods",
    "binarize",
    "explain",
    "explainer",
    "faithfulness",
    "heat_colours",
    "heat_overlay",
    "logits_module",
    "normalize_maps",
    "object_share",
    "reduce_channels",
    "unavailable_methods",
]
