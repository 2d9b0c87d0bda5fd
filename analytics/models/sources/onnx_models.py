"""An ONNX file run by ONNX Runtime (:mod:`analytics.models.onnx_source`).

Preprocessing: the graph's input side, the given mean and std (a graph does not record them),
optionally a resize interpolation and centre crop. Embedding: a second 2-D output, else the logits.
No gradients and no layers to hook: no GradCAM, no last convolutional map; its parameters are the
graph's initializers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from analytics._choices import IMAGENET_MEAN, IMAGENET_STD
from analytics.exceptions import InvalidInputError

from ._base import CHECKPOINT, CROP_PCT, INTERPOLATION, LABELS, MEAN, OWN_INPUT_SIZE, STD, ModelSource, register_source

if TYPE_CHECKING:
    from torch import nn

    from analytics.models.spec import ModelSpec
    from analytics.workspace import Workspace


@register_source
class OnnxSource(ModelSource):
    name = "onnx"
    label = "ONNX file"
    description = "an ONNX file as --checkpoint (--arch onnx), run by ONNX Runtime; --mean and --std required"
    form_caption = "An ONNX graph gives its input side but not its normalisation."
    copies_checkpoint = True
    arch_word = "onnx"
    options = (
        replace(CHECKPOINT, file_types=("onnx",)),
        LABELS,
        OWN_INPUT_SIZE,
        replace(MEAN, in_form=True, default=",".join(map(str, IMAGENET_MEAN))),
        replace(STD, in_form=True, default=",".join(map(str, IMAGENET_STD))),
        CROP_PCT,
        INTERPOLATION,
    )

    def register(self, workspace: Workspace, name: str | None, **options: Any) -> ModelSpec:
        from analytics.models.libraries import register_onnx

        return register_onnx(workspace, str(name), **options)

    def build(self, spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
        from analytics.models.onnx_source import onnx_network

        return onnx_network(spec, workspace)

    def feature_layer(self, network: nn.Module, spec: ModelSpec) -> nn.Module:
        from analytics.models.onnx_source import NO_GRADIENTS

        raise InvalidInputError(NO_GRADIENTS)

    def conv_map_problem(self, workspace: Workspace, spec: ModelSpec) -> str | None:
        from analytics.models.onnx_source import NO_GRADIENTS

        return f"{NO_GRADIENTS}, so its last convolutional map cannot be read"

    def gradient_problem(self, network: nn.Module, spec: ModelSpec) -> str | None:
        from analytics.models.onnx_source import NO_GRADIENTS

        return f"is ONNX: {NO_GRADIENTS}"

    def backbone_problem(self, workspace: Workspace, spec: ModelSpec) -> str | None:
        from analytics.models.checkpoints import _checkpoint_path
        from analytics.models.onnx_source import read_onnx_graph

        if read_onnx_graph(_checkpoint_path(workspace, spec), check_tensors=False).embedding:  # a registered copy: checked then
            return None
        return (
            f"backbone {spec.name!r} is an ONNX graph whose only output is its logits, so it exposes no embedding for a head to "
            "read; export the graph with the embedding (e.g. the pooled features) as a second output of shape (batch, d) "
            "and register it again"
        )

    def count_params(self, network: nn.Module) -> int:
        return int(getattr(network, "n_params"))  # the graph's initializers, not torch parameters
