"""A TorchScript file (``torch.jit.load``).

If its ``forward`` returns ``(logits, embedding)`` the second output is the embedding; otherwise
the logits serve as embedding. TorchScript modules accept no forward hooks, so no inner layer can be
read: no last convolutional map, no GradCAM (the gradient methods work). The user says which
normalisation it expects (``--preprocessing``) and its input side.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from analytics.exceptions import InvalidInputError

from ._base import CHECKPOINT, INPUT_SIZE, LABELS, ModelSource, Option, register_source

if TYPE_CHECKING:
    from torch import nn

    from analytics.models.spec import ModelSpec
    from analytics.workspace import Workspace

NO_HOOKS = "it is TorchScript, whose layers accept no hooks"


@register_source
class TorchScriptSource(ModelSource):
    name = "torchscript"
    label = "TorchScript file"
    description = "a TorchScript file as --checkpoint (--arch torchscript), returning logits or (logits, embedding)"
    copies_checkpoint = True
    arch_word = "torchscript"
    options = (
        replace(CHECKPOINT, file_types=("pt", "pth", "ts")),
        LABELS,
        INPUT_SIZE,
        Option(
            "preprocessing", "--preprocessing", "choice", "TorchScript only: input normalisation (default imagenet)", "Normalisation",
            "models.preprocessing", default="imagenet", choices=("imagenet", "efficientnet-lite"), in_form=False,
        ),
    )  # fmt: skip

    def register(self, workspace: Workspace, name: str | None, **options: Any) -> ModelSpec:
        from analytics.models.registry import register_torchscript

        options["input_size"] = options.get("input_size") or 224
        return register_torchscript(workspace, str(name), **options)

    def build(self, spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
        from analytics.models.networks import torchscript_network

        return torchscript_network(spec, workspace)

    def feature_layer(self, network: nn.Module, spec: ModelSpec) -> nn.Module:
        raise InvalidInputError(f"{NO_HOOKS}; register the architecture as a torchvision model with a state dict instead")

    def conv_map_problem(self, workspace: Workspace, spec: ModelSpec) -> str | None:
        return NO_HOOKS
