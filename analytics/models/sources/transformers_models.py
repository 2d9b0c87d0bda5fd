"""A transformers image classifier from a ``save_pretrained`` folder with safetensors weights
(:mod:`analytics.models.transformers_source`).

Preprocessing: its image processor's resize, crop and normalisation. Embedding: the input of its
classifier (a forward pre-hook). Last convolutional map: the last of its ``stages`` (ConvNeXt,
ResNet, …); attention models (ViT, Swin) have none.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from ._base import CHECKPOINT, LABELS, MEAN, OWN_INPUT_SIZE, STD, ModelSource, register_source

if TYPE_CHECKING:
    from torch import nn

    from analytics.models.spec import ModelSpec
    from analytics.workspace import Workspace


@register_source
class TransformersSource(ModelSource):
    name = "transformers"
    label = "transformers model (zip of a save_pretrained folder)"
    description = "a transformers save_pretrained folder as --checkpoint (--arch transformers); labels from its config.json unless --labels"
    copies_checkpoint = True
    arch_word = "transformers"
    options = (
        replace(CHECKPOINT, file_types=("zip",)),
        replace(LABELS, default=None),  # None: config.json's id2label
        replace(OWN_INPUT_SIZE, in_form=False),
        MEAN,
        STD,
    )

    def register(self, workspace: Workspace, name: str | None, **options: Any) -> ModelSpec:
        from analytics.models.libraries import register_transformers

        return register_transformers(workspace, str(name), folder=options.pop("checkpoint"), **options)

    def build(self, spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
        from analytics.models.transformers_source import transformers_network

        return transformers_network(spec, workspace)

    def feature_layer(self, network: nn.Module, spec: ModelSpec) -> nn.Module:
        from analytics.models.transformers_source import transformers_feature_layer

        return transformers_feature_layer(cast(Any, network))  # a transformers_source._TransformersClassifier, as build makes it

    def conv_map_problem(self, workspace: Workspace, spec: ModelSpec) -> str | None:
        from analytics.models.checkpoints import _checkpoint_path
        from analytics.models.transformers_source import feature_map_problem

        return feature_map_problem(_checkpoint_path(workspace, spec))
