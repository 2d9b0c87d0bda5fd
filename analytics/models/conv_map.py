"""The authors' last-convolutional-map signals (Liao & Chen's code, bgtest ``save_testdata.py``,
``fill_conv``): statistics of the feature map a classifier pools into its embedding, read by a hook.

The map is the input of the network's global average pooling, as the authors take it: ResNet's
``layer4`` output, VGG's ``features`` output, EfficientNet-Lite's head convolution after its batch
norm and ReLU6, the ``features`` / trunk output of torchvision's EfficientNet, MobileNet, ConvNeXt,
RegNet, Inception and GoogLeNet. A network that pools with a function call instead of a module
(DenseNet, ShuffleNet, MNASNet) gives the output of its last top-level block holding a convolution
(``features``, ``conv5``, ``layers``). Zoo heads read their backbone's map,
so the heads on one backbone share these signals. TorchScript modules accept no hooks and
transformers (ViT, Swin, MaxViT) end in attention, not a convolution: they have no such map
(:func:`conv_map_problem` says why).

Of the eight statistics ``fill_conv`` stores, the authors' assessor reads two (ML4ML
``ML4MLassessor.py``: ``chosen_sn = ['max', 'max_mean']``), and those two are computed here:
``max``, the largest value of the whole map, and ``max_mean``, the mean over channels of each
channel's largest value.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from analytics._optional import import_optional
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace

from .checkpoints import _checkpoint_path
from .networks import _HeadClassifier, _LiteClassifier, _ScriptedClassifier, _SplitClassifier
from .onnx_source import NO_GRADIENTS, _OnnxClassifier
from .spec import ModelSpec, get_model_spec
from .timm_source import _TimmClassifier, timm_feature_layer
from .transformers_source import _TransformersClassifier, feature_map_problem, transformers_feature_layer

#: The statistics of :func:`conv_map_statistics`, in column order (the authors' names).
CONV_STATISTICS = ("max", "max_mean")
_TORCHSCRIPT = "it is TorchScript, whose layers accept no hooks"


def conv_map_statistics(feature_map: torch.Tensor) -> torch.Tensor:
    """The authors' ``max`` and ``max_mean`` of a batch of feature maps.

    Parameters
    ----------
    feature_map : Tensor of shape (n, channels, height, width)

    Returns
    -------
    Tensor of shape (n, 2), float32
        Per image: the largest value of the map, and the mean over channels of each channel's largest value.
    """
    channel_max = feature_map.flatten(2).amax(2).float()  # the same maxima as converting the map first (exact and monotone), without a float32 copy of it
    return torch.stack([channel_max.amax(1), channel_max.mean(1)], dim=1)


def conv_map_tap(network: nn.Module) -> tuple[nn.Module, bool]:
    """Where a Backdrop network's last convolutional map is read: ``(layer, reads_input)``, the
    layer's input (a forward pre-hook) when ``reads_input``, else its output.

    Raises
    ------
    InvalidInputError
        A TorchScript network, a transformer, or a network without a convolution.
    """
    if isinstance(network, _HeadClassifier):
        network = network.backbone
    if isinstance(network, _ScriptedClassifier):
        raise InvalidInputError(f"{_TORCHSCRIPT}, so its last convolutional map cannot be read")
    if isinstance(network, _OnnxClassifier):
        raise InvalidInputError(f"{NO_GRADIENTS}, so its last convolutional map cannot be read")
    if isinstance(network, _LiteClassifier):
        return network.net._avg_pooling, True
    if isinstance(network, _TimmClassifier):  # the last stage of timm's feature_info, the map its head pools
        return timm_feature_layer(network), False
    if isinstance(network, _TransformersClassifier):  # the last stage's output, the map the model pools
        return transformers_feature_layer(network), False
    body = network.body if isinstance(network, _SplitClassifier) else network
    attention = next((type(m).__name__ for m in body.modules() if "Attention" in type(m).__name__), None)
    if attention is not None:
        raise InvalidInputError(f"it ends in transformer blocks ({attention}), not a convolution, so it has no last convolutional map")
    if not any(isinstance(m, nn.Conv2d) for m in body.modules()):
        raise InvalidInputError("it has no convolution layer, so it has no convolutional map")
    pools = [m for m in body.modules() if isinstance(m, nn.AdaptiveAvgPool2d)]
    if pools:
        return pools[-1], True
    blocks = [m for m in body.children() if any(isinstance(inner, nn.Conv2d) for inner in m.modules())]
    return blocks[-1], False


class ConvStatsNetwork(nn.Module):
    """A Backdrop network returning ``(logits, embedding, statistics)``: :func:`conv_map_statistics`
    of the map a hook reads at :func:`conv_map_tap`.

    The hook stores a map only during this module's own forward pass, so the wrapped network
    keeps no maps when it runs alone (saliency, evaluation). Tracing records the statistics, so
    the frozen CPU copy (:func:`analytics.models.freeze_for_cpu`) computes them too.
    """

    def __init__(self, network: nn.Module) -> None:
        super().__init__()
        self.network = network
        layer, reads_input = conv_map_tap(network)
        self._maps: list[torch.Tensor] = []
        self._active = False
        if reads_input:
            layer.register_forward_pre_hook(lambda module, args: self._keep(args[0]))
        else:
            layer.register_forward_hook(lambda module, args, output: self._keep(output))

    def _keep(self, feature_map: torch.Tensor) -> None:
        if self._active:
            self._maps.append(feature_map)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        self._maps.clear()
        self._active = True
        try:
            logits, embedding = self.network(x)
        finally:
            self._active = False
        feature_map = self._maps[-1]
        self._maps.clear()
        return logits, embedding, conv_map_statistics(feature_map)


def conv_map_problem(workspace: Workspace, spec: ModelSpec) -> str | None:
    """Why a registered model has no last convolutional map, or None when it has one.

    Reads the spec only (a torchvision architecture is built without memory or weights), so a
    planner can ask before loading the model.
    """
    if spec.source == "head":
        return conv_map_problem(workspace, get_model_spec(workspace, spec.backbone))
    if spec.source == "torchscript":
        return _TORCHSCRIPT
    if spec.source == "timm":
        return _timm_problem(spec)
    if spec.source == "onnx":
        return f"{NO_GRADIENTS}, so its last convolutional map cannot be read"
    if spec.source == "transformers":
        return feature_map_problem(_checkpoint_path(workspace, spec))
    if spec.source != "torchvision":  # EfficientNet-Lite
        return None
    import torchvision  # heavy: only for torchvision specs

    config = {"init_weights": False} if spec.arch in ("googlenet", "inception_v3") else {}
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        network = torchvision.models.get_model(spec.arch, weights=None, **config)
    try:
        conv_map_tap(network)
    except InvalidInputError as err:
        return str(err)
    return None


def _timm_problem(spec: ModelSpec) -> str | None:
    timm = import_optional("timm", extra="timm")  # heavy: only for timm specs

    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        network = _TimmClassifier(timm.create_model(spec.arch, pretrained=False))
    try:
        timm_feature_layer(network)
    except InvalidInputError as err:
        return str(err)
    return None
