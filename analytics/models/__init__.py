"""The model registry: which classifiers a workspace can test, and how to load and run them.

Modules, lowest first: :mod:`.spec` (what a registered model is; reading specs back),
:mod:`.transforms` (a model's own resize, crop and normalisation), :mod:`.checkpoints` (reading and
copying weights), :mod:`.timm_source` (timm models), :mod:`.transformers_source` (transformers
folders), :mod:`.onnx_source` (ONNX files), :mod:`.networks` (every source's network), :mod:`.conv_map` (the authors' last-conv-map
statistics), :mod:`.loaded` (running a model), :mod:`.registry` (registering, removing, loading),
:mod:`.libraries` (registering timm, transformers and ONNX models).
"""

from analytics._choices import RESIZE_FILTERS

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
    load_model,
    register_efficientnet_lite,
    register_head,
    register_model,
    register_torchscript,
    register_torchvision,
    remove_model,
)
from .spec import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    LABEL_KINDS,
    LITE_VARIANTS,
    PREPROCESSING,
    SOURCES,
    ModelSpec,
    get_model_spec,
    list_models,
)
from .transforms import INTERPOLATIONS, RESAMPLERS, ImageTransform, resize_images

__all__ = [
    "CHECKPOINT_DIR",
    "CONV_STATISTICS",
    "CPU_MICRO_BATCH",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "INTERPOLATIONS",
    "RESIZE_FILTERS",
    "LABEL_KINDS",
    "LITE_VARIANTS",
    "PREPROCESSING",
    "RESAMPLERS",
    "SOURCES",
    "ConvStatsNetwork",
    "HeadLayers",
    "ImageTransform",
    "LoadedModel",
    "ModelSpec",
    "Prediction",
    "build_efficientnet_lite",
    "conv_map_problem",
    "conv_map_statistics",
    "freeze_for_cpu",
    "get_model_spec",
    "list_models",
    "load_head",
    "load_model",
    "read_state_dict",
    "register_efficientnet_lite",
    "register_head",
    "register_model",
    "register_onnx",
    "register_timm",
    "register_transformers",
    "register_torchscript",
    "register_torchvision",
    "remove_model",
    "resize_images",
    "resolve_device",
]
