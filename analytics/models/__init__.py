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

from analytics._choices import IMAGENET_MEAN, IMAGENET_STD, RESIZE_FILTERS

from .sources import SOURCES, ModelSource, Option, add_model, get_source, register_source, registrable_sources, source_for_arch

if TYPE_CHECKING:
    from .checkpoints import (
        CHECKPOINT_DIR,
        read_state_dict,
    )
    from .conv_map import (
        CONV_STATISTICS,
        ConvStatsNetwork,
        conv_map_problem,
        conv_map_statistics,
    )
    from .libraries import register_onnx, register_timm, register_transformers
    from .loaded import (
        CPU_MICRO_BATCH,
        LoadedModel,
        Prediction,
        freeze_for_cpu,
        resolve_device,
    )
    from .networks import (
        HeadLayers,
        build_efficientnet_lite,
        load_head,
    )
    from .registry import (
        head_backbone_problem,
        load_model,
        register_efficientnet_lite,
        register_head,
        register_model,
        register_torchscript,
        register_torchvision,
        remove_model,
    )
    from .spec import (
        LABEL_KINDS,
        LITE_VARIANTS,
        PREPROCESSING,
        ModelSpec,
        class_scorers,
        get_model_spec,
        list_models,
        unscored_classes,
    )
    from .transforms import INTERPOLATIONS, RESAMPLERS, ImageTransform, resize_images

#: Name -> the module it is imported from when first used.
_LAZY = {
    **dict.fromkeys(("CHECKPOINT_DIR", "read_state_dict"), ".checkpoints"),
    **dict.fromkeys(("CONV_STATISTICS", "ConvStatsNetwork", "conv_map_problem", "conv_map_statistics"), ".conv_map"),
    **dict.fromkeys(("register_onnx", "register_timm", "register_transformers"), ".libraries"),
    **dict.fromkeys(("CPU_MICRO_BATCH", "LoadedModel", "Prediction", "freeze_for_cpu", "resolve_device"), ".loaded"),
    **dict.fromkeys(("HeadLayers", "build_efficientnet_lite", "load_head"), ".networks"),
    **dict.fromkeys(
        ("head_backbone_problem", "load_model", "register_efficientnet_lite", "register_head", "register_model", "register_torchscript", "register_torchvision", "remove_model"), ".registry"
    ),
    **dict.fromkeys(("LABEL_KINDS", "LITE_VARIANTS", "PREPROCESSING", "ModelSpec", "class_scorers", "get_model_spec", "list_models", "unscored_classes"), ".spec"),
    **dict.fromkeys(("INTERPOLATIONS", "RESAMPLERS", "ImageTransform", "resize_images"), ".transforms"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "CHECKPOINT_DIR",
    "CONV_STATISTICS",
    "CPU_MICRO_BATCH",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "INTERPOLATIONS",
    "LABEL_KINDS",
    "LITE_VARIANTS",
    "PREPROCESSING",
    "RESAMPLERS",
    "RESIZE_FILTERS",
    "SOURCES",
    "ConvStatsNetwork",
    "HeadLayers",
    "ImageTransform",
    "LoadedModel",
    "ModelSource",
    "ModelSpec",
    "Option",
    "Prediction",
    "add_model",
    "build_efficientnet_lite",
    "class_scorers",
    "conv_map_problem",
    "conv_map_statistics",
    "freeze_for_cpu",
    "get_model_spec",
    "get_source",
    "head_backbone_problem",
    "list_models",
    "load_head",
    "load_model",
    "read_state_dict",
    "register_efficientnet_lite",
    "register_head",
    "register_model",
    "register_onnx",
    "register_source",
    "register_timm",
    "register_torchscript",
    "register_torchvision",
    "register_transformers",
    "registrable_sources",
    "remove_model",
    "resize_images",
    "resolve_device",
    "source_for_arch",
    "unscored_classes",
]
