"""The model registry: which classifiers a workspace can test, and how to load and run them.

Modules, lowest first: :mod:`.spec` (what a registered model is; reading specs back),
:mod:`.transforms` (a model's own resize, crop and normalisation), :mod:`.checkpoints` (reading and
copying weights), :mod:`.timm_source` (timm models), :mod:`.transformers_source` (transformers
folders), :mod:`.onnx_source` (ONNX files), :mod:`.networks` (every source's network), :mod:`.conv_map` (the authors' last-conv-map
statistics), :mod:`.loaded` (running a model), :mod:`.registry` (registering, removing, loading),
:mod:`.libraries` (registering timm, transformers and ONNX models).

:mod:`.sources` holds the model sources (:data:`SOURCES`, one class per source). The package imports
lazily: ``import analytics.models`` and :mod:`.sources` import no torch (the command line builds
``add-model``'s options from the sources); a name is imported from its module when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .sources import SOURCES, ModelSource, Option, add_model, get_source, registrable_sources, source_for_arch

if TYPE_CHECKING:
    from .checkpoints import read_state_dict
    from .conv_map import conv_map_problem
    from .loaded import LoadedModel, resolve_device
    from .networks import (
        HeadLayers,
        build_efficientnet_lite,
        load_head,
    )
    from .registry import head_backbone_problem, load_model, register_efficientnet_lite, register_head, register_torchscript, register_torchvision
    from .spec import LITE_VARIANTS, ModelSpec, class_scorers, get_model_spec, list_models, register_hint, unscored_classes
    from .transforms import ImageTransform, resize_images

#: Name -> the module it is imported from when first used.
_LAZY = {
    "read_state_dict": ".checkpoints",
    "conv_map_problem": ".conv_map",
    **dict.fromkeys(("LoadedModel", "resolve_device"), ".loaded"),
    **dict.fromkeys(("HeadLayers", "build_efficientnet_lite", "load_head"), ".networks"),
    **dict.fromkeys(("head_backbone_problem", "load_model", "register_efficientnet_lite", "register_head", "register_torchscript", "register_torchvision"), ".registry"),
    **dict.fromkeys(("LITE_VARIANTS", "ModelSpec", "class_scorers", "get_model_spec", "list_models", "register_hint", "unscored_classes"), ".spec"),
    **dict.fromkeys(("ImageTransform", "resize_images"), ".transforms"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "LITE_VARIANTS",
    "SOURCES",
    "HeadLayers",
    "ImageTransform",
    "LoadedModel",
    "ModelSource",
    "ModelSpec",
    "Option",
    "add_model",
    "build_efficientnet_lite",
    "class_scorers",
    "conv_map_problem",
    "get_model_spec",
    "get_source",
    "head_backbone_problem",
    "list_models",
    "load_head",
    "load_model",
    "read_state_dict",
    "register_efficientnet_lite",
    "register_head",
    "register_hint",
    "register_torchscript",
    "register_torchvision",
    "registrable_sources",
    "resize_images",
    "resolve_device",
    "source_for_arch",
    "unscored_classes",
]
