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

from ._base import NORMALIZATIONS, REDUCTIONS
from ._model import CLEAREST_FIRST, Explanation, available_methods, explain, logits_module, unavailable_methods
from .heatmap import OVERLAY_ALPHA, heat_colours, heat_overlay
from .metrics import BASELINES, binarize
from .registry import METHODS
from .survey import object_share

__all__ = [
    "BASELINES",
    "CLEAREST_FIRST",
    "METHODS",
    "NORMALIZATIONS",
    "OVERLAY_ALPHA",
    "REDUCTIONS",
    "Explanation",
    "available_methods",
    "binarize",
    "explain",
    "heat_colours",
    "heat_overlay",
    "logits_module",
    "object_share",
    "unavailable_methods",
]
