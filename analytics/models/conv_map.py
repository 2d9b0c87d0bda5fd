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

Which layer that is, is each model source's :meth:`~analytics.models.sources.ModelSource.feature_layer`,
the one definition of "last convolutional map" (GradCAM reads the same layer); for torchvision's
networks it is :func:`pooled_map_layer`.

Of the eight statistics ``fill_conv`` stores, the authors' assessor reads two (ML4ML
``ML4MLassessor.py``: ``chosen_sn = ['max', 'max_mean']``), and those two are computed here:
``max``, the largest value of the whole map, and ``max_mean``, the mean over channels of each
channel's largest value.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace

from .sources._base import get_source
from .spec import ModelSpec

#: The statistics of :func:`conv_map_statistics`, in column order (the authors' names).
CONV_STATISTICS = ("max", "max_mean")


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


class _Found(Exception):
    """Stops the probe pass of :func:`pooled_map_layer` at the pooling."""


def pooled_map_layer(body: nn.Module, input_size: int) -> nn.Module:
    """The module whose output is the map ``body`` global-average-pools (its last ``AdaptiveAvgPool2d``):
    a torchvision network's last convolutional map.

    Found on one probe pass of a blank (1, 3, ``input_size``, ``input_size``) image on the body's
    device (the meta device costs nothing), stopped at the pooling: the outermost module whose output
    is the very tensor the pooling reads (ResNet's ``layer4``, ``features``, RegNet's
    ``trunk_output``, Inception's ``Mixed_7c``). A network that pools with a function call (DenseNet,
    ShuffleNet, MNASNet), or whose pooled map no module returns, gives its last top-level block
    holding a convolution.

    Raises
    ------
    InvalidInputError
        A network ending in attention (a transformer) or without a convolution.
    """
    attention = next((type(m).__name__ for m in body.modules() if "Attention" in type(m).__name__), None)
    if attention is not None:
        raise InvalidInputError(f"it ends in transformer blocks ({attention}), not a convolution, so it has no last convolutional map")
    if not any(isinstance(m, nn.Conv2d) for m in body.modules()):
        raise InvalidInputError("it has no convolution layer, so it has no convolutional map")
    blocks = [m for m in body.children() if any(isinstance(inner, nn.Conv2d) for inner in m.modules())]
    pools = [m for m in body.modules() if isinstance(m, nn.AdaptiveAvgPool2d)]
    if not pools:
        return blocks[-1]
    pool, outputs, pooled = pools[-1], [], []

    def stop(module: nn.Module, args: tuple) -> None:
        pooled.append(args[0])
        raise _Found

    handles = [m.register_forward_hook(lambda module, args, output: outputs.append((module, output))) for m in body.modules() if m is not body]
    handles.append(pool.register_forward_pre_hook(stop))
    parameter = next(body.parameters(), None)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            body(torch.zeros(1, 3, input_size, input_size, device=parameter.device if parameter is not None else "cpu"))
    except _Found:
        pass
    finally:
        for handle in handles:
            handle.remove()
    producers = [module for module, output in outputs if pooled and output is pooled[0]]
    return producers[-1] if producers else blocks[-1]


class ConvStatsNetwork(nn.Module):
    """A Backdrop network returning ``(logits, embedding, statistics)``: :func:`conv_map_statistics`
    of the output of ``layer``, its last convolutional map (its source's ``feature_layer``).

    The hook stores a map only during this module's own forward pass, so the wrapped network
    keeps no maps when it runs alone (saliency, evaluation). Tracing records the statistics, so
    the frozen CPU copy (:func:`analytics.models.freeze_for_cpu`) computes them too.
    """

    def __init__(self, network: nn.Module, layer: nn.Module) -> None:
        super().__init__()
        self.network = network
        self._maps: list[torch.Tensor] = []
        self._active = False
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

    Reads the spec only (its source's ``conv_map_problem``: a torchvision or timm architecture is
    built on the meta device, without memory or weights), so a planner can ask before loading the model.
    """
    return get_source(spec.source).conv_map_problem(workspace, spec)
