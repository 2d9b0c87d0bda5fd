"""Any classification architecture of :mod:`torchvision.models` with a user checkpoint.

Built with ``weights=None`` plus the checkpoint (a state dict, ``module.``/``model.`` prefixes
stripped, ``.safetensors`` accepted); the number of classes is read from its final layer.
Embedding: the input of the final ``Linear`` layer. Last convolutional map: the output of the module
that hands the network's global average pooling its input (ResNet's ``layer4``, the ``features`` of
VGG, MobileNet, EfficientNet and ConvNeXt, RegNet's ``trunk_output``, Inception's ``Mixed_7c``), or
where a function call pools, its last top-level block holding a convolution
(:func:`analytics.models.conv_map.pooled_map_layer`). ImageNet normalisation after Backdrop's resize.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ._base import ARCH, CHECKPOINT, INPUT_SIZE, LABELS, ModelSource, Option, register_source

if TYPE_CHECKING:
    from torch import nn

    from analytics.models.spec import ModelSpec
    from analytics.workspace import Workspace


@register_source
class TorchvisionSource(ModelSource):
    name = "torchvision"
    label = "torchvision architecture + checkpoint"
    description = "a torchvision architecture (--arch resnet18, vit_b_16, …) with a state dict as --checkpoint"
    fallback = True
    copies_checkpoint = True
    options = (
        Option("arch", "--arch", "choice", ARCH.help, "Architecture", "models.arch", required=True),
        replace(CHECKPOINT, file_types=("pt", "pth", "bin", "safetensors")),
        LABELS,
        INPUT_SIZE,
    )

    def claims_arch(self, arch: str) -> str | None:
        return arch

    def choices(self, option: Option) -> Sequence[str]:
        import torchvision  # heavy: only when the form lists the architectures

        return torchvision.models.list_models(module=torchvision.models) if option.name == "arch" else option.choices

    def register(self, workspace: Workspace, name: str | None, **options: Any) -> ModelSpec:
        from analytics.models.registry import register_torchvision

        return register_torchvision(workspace, str(name), **options)

    def build(self, spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
        from analytics.models.networks import torchvision_network

        return torchvision_network(spec, workspace)

    def feature_layer(self, network: nn.Module, spec: ModelSpec) -> nn.Module:
        from analytics.models.conv_map import pooled_map_layer

        return pooled_map_layer(getattr(network, "body", network), spec.input_size)

    def conv_map_problem(self, workspace: Workspace, spec: ModelSpec) -> str | None:
        import torch
        import torchvision  # heavy: only for torchvision specs

        from analytics.exceptions import InvalidInputError
        from analytics.models.conv_map import pooled_map_layer

        config: dict[str, Any] = {"init_weights": False} if spec.arch in ("googlenet", "inception_v3") else {}
        if spec.arch.startswith("vit_"):
            config["image_size"] = spec.input_size
        with torch.device("meta"), warnings.catch_warnings():  # the layer names and shapes only: no memory, no weights
            warnings.simplefilter("ignore")
            network = torchvision.models.get_model(spec.arch, weights=None, **config).eval()
        try:
            pooled_map_layer(network, spec.input_size)
        except InvalidInputError as err:
            return str(err)
        return None
