"""A head on the embedding of another registered model (its backbone), its arrays in the workspace
array store: linear, or with one ReLU hidden layer. The model zoo registers them
(:func:`analytics.models.register_head`), not ``add-model`` or the form.

It sees what its backbone sees (the backbone's preprocessing) and shares its backbone's last
convolutional map and gradient support; its parameters are the head's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ._base import ModelSource, get_source, register_source

if TYPE_CHECKING:
    from torch import nn

    from analytics.models.spec import ModelSpec
    from analytics.workspace import Workspace


def _backbone(network: nn.Module) -> tuple[nn.Module, ModelSpec]:
    """A built head's backbone network and spec (:class:`analytics.models.networks._HeadClassifier`)."""
    return network.backbone, network.backbone_spec  # type: ignore[return-value]


@register_source
class HeadSource(ModelSource):
    name = "head"
    label = "Head on a registered backbone"
    description = "a head on the embedding of a registered model (the zoo's; analytics.models.register_head)"
    registrable = False

    def build(self, spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
        from analytics.models.networks import head_network

        return head_network(spec, workspace)

    def feature_layer(self, network: nn.Module, spec: ModelSpec) -> nn.Module:
        backbone, backbone_spec = _backbone(network)
        return get_source(backbone_spec.source).feature_layer(backbone, backbone_spec)

    def conv_map_problem(self, workspace: Workspace, spec: ModelSpec) -> str | None:
        from analytics.models.spec import get_model_spec

        backbone_spec = get_model_spec(workspace, str(spec.backbone))
        return get_source(backbone_spec.source).conv_map_problem(workspace, backbone_spec)

    def gradient_problem(self, network: nn.Module, spec: ModelSpec) -> str | None:
        backbone, backbone_spec = _backbone(network)
        problem = get_source(backbone_spec.source).gradient_problem(backbone, backbone_spec)
        return None if problem is None else f"is a head on {backbone_spec.name!r}, which {problem}"

    def backbone_problem(self, workspace: Workspace, spec: ModelSpec) -> str | None:
        return f"backbone {spec.name!r} is itself a head; attach heads to a network model (e.g. efficientnet-lite0)"

    def count_params(self, network: nn.Module) -> int:
        layers = cast("nn.Module", network.layers)
        return sum(int(p.numel()) for p in layers.parameters())  # the head's own
