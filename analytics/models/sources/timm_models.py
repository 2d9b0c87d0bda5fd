"""Any timm architecture with a user checkpoint (:mod:`analytics.models.timm_source`).

Preprocessing: timm's eval transform (``resolve_data_config``), overridable by the options.
Embedding: the pre-logits features (``forward_head(..., pre_logits=True)``). Last convolutional map:
the last stage of timm's ``feature_info`` when it holds a convolution.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from ._base import ARCH, CHECKPOINT, CROP_PCT, INTERPOLATION, LABELS, MEAN, OWN_INPUT_SIZE, STD, ModelSource, Option, register_source

if TYPE_CHECKING:
    from torch import nn

    from analytics.models.spec import ModelSpec
    from analytics.workspace import Workspace

PREFIX = "timm:"  # --arch timm:resnet18 (timm and torchvision share names such as resnet18)


@register_source
class TimmSource(ModelSource):
    name = "timm"
    label = "timm architecture + checkpoint"
    description = "a timm architecture (--arch timm:NAME) with a state dict as --checkpoint; its preprocessing read from timm"
    form_caption = "timm models read their preprocessing from timm."
    copies_checkpoint = True
    options = (
        Option("arch", "--arch", "text", ARCH.help, "timm architecture", "models.timm_arch", required=True),
        replace(CHECKPOINT, file_types=("pt", "pth", "safetensors")),
        LABELS,
        OWN_INPUT_SIZE,
        MEAN,
        STD,
        CROP_PCT,
        replace(INTERPOLATION, default=None),
    )

    def claims_arch(self, arch: str) -> str | None:
        return arch.removeprefix(PREFIX) if arch.startswith(PREFIX) else None

    def register(self, workspace: Workspace, name: str | None, **options: Any) -> ModelSpec:
        from analytics.models.libraries import register_timm

        options["arch"] = options["arch"].removeprefix(PREFIX)
        return register_timm(workspace, str(name), **options)

    def build(self, spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
        from analytics.models.timm_source import timm_network

        return timm_network(spec, workspace)

    def feature_layer(self, network: nn.Module, spec: ModelSpec) -> nn.Module:
        from analytics.models.timm_source import timm_feature_layer

        return timm_feature_layer(cast(Any, network))  # a timm_source._TimmClassifier, as build makes it

    def conv_map_problem(self, workspace: Workspace, spec: ModelSpec) -> str | None:
        from analytics.models.timm_source import feature_map_problem

        return feature_map_problem(spec.arch)
