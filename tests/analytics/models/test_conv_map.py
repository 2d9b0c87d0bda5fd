"""The authors' last-conv-map statistics (bgtest ``fill_conv``'s ``max`` and ``max_mean``): the hook
reads the map the network pools, on a network whose map is computed here by hand, and each model
source gets its map or a reason why it has none."""

from __future__ import annotations

import pytest
import torch
import torchvision
from torch import nn

from analytics.exceptions import InvalidInputError
from analytics.models import get_source
from analytics.models.conv_map import ConvStatsNetwork, conv_map_statistics, pooled_map_layer
from analytics.models.loaded import freeze_for_cpu
from analytics.models.networks import _LiteClassifier, _ScriptedClassifier, _SplitClassifier


class OneByOne(nn.Module):
    """A 1x1 convolution to 2 channels (R+G+B and R-B), ReLU, global average pool: the map is easy by hand."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 2, 1, bias=False)
        self.conv.weight.data = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, -1.0]]).view(2, 3, 1, 1)
        self.relu = nn.ReLU()
        self.avgpool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.avgpool(self.relu(self.conv(x))).flatten(1)


def one_by_one() -> _SplitClassifier:
    return _SplitClassifier(OneByOne(), nn.Linear(2, 2), "fc").eval()


def conv_stats(network: _SplitClassifier) -> ConvStatsNetwork:
    return ConvStatsNetwork(network, pooled_map_layer(network.body, 8))


# a 2x2 image: channel 0 = R+G+B = [[3, 2], [4, 10]]; channel 1 = ReLU(R-B) = ReLU([[-1, 2], [3, -1]]) = [[0, 2], [3, 0]]
IMAGE = torch.tensor([[[1.0, 2.0], [3.0, 4.0]], [[0.0, 0.0], [1.0, 1.0]], [[2.0, 0.0], [0.0, 5.0]]])


def test_the_hook_reads_the_pooled_map_and_gives_the_authors_max_and_max_mean():
    network = conv_stats(one_by_one()).eval()
    batch = torch.stack([IMAGE, IMAGE * 2])
    with torch.no_grad():
        _, embedding, stats = network(batch)
    # max = 10 (channel 0); max_mean = mean of the channel maxima (10, 3) = 6.5; doubled image doubles both
    assert stats.tolist() == [[10.0, 6.5], [20.0, 13.0]]
    assert embedding[0].tolist() == [19 / 4, 5 / 4]  # the network's own outputs are unchanged
    assert torch.equal(conv_map_statistics(torch.relu(network.network.body.conv(batch))), stats)
    with torch.no_grad():
        network.network(batch)  # the wrapped network alone keeps no maps
    assert network._maps == []


def test_the_frozen_cpu_copy_computes_the_same_statistics():
    network = conv_stats(one_by_one()).eval()
    batch = torch.rand(3, 3, 8, 8)
    frozen = freeze_for_cpu(network, batch)
    assert isinstance(frozen, torch.jit.ScriptModule)  # traced with the hook, not the eager fallback
    with torch.no_grad():
        assert torch.allclose(frozen(batch)[2], network(batch)[2])


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
def test_each_source_has_its_map_or_says_why_not():
    with torch.device("meta"):
        resnet, densenet, shufflenet, vit, inception = (
            torchvision.models.get_model(a, weights=None).eval() for a in ("resnet18", "densenet121", "shufflenet_v2_x0_5", "vit_b_16", "inception_v3")
        )
    assert conv_stats_layer(resnet) is resnet.layer4  # the map its avgpool reads, the authors' ResNet reading
    assert conv_stats_layer(inception, 299) is inception.Mixed_7c
    assert conv_stats_layer(densenet) is densenet.features  # pooled by a function call: its last block
    assert conv_stats_layer(shufflenet) is shufflenet.conv5
    with pytest.raises(InvalidInputError, match="transformer"):
        conv_stats_layer(vit)
    with pytest.raises(InvalidInputError, match="TorchScript"):
        get_source("torchscript").feature_layer(_ScriptedClassifier(torch.jit.script(nn.Linear(2, 2))), None)
    from efficientnet_lite_pytorch import EfficientNet

    lite = _LiteClassifier(EfficientNet.from_name("efficientnet-lite0")).eval()
    layer = get_source("efficientnet-lite").feature_layer(lite, None)
    assert layer is lite.feature_map  # the head convolution after BN and ReLU6 (1280 channels), GradCAM's layer too
    x = torch.rand(1, 3, 64, 64)
    with torch.no_grad():
        assert torch.allclose(ConvStatsNetwork(lite, layer)(x)[2], conv_map_statistics(lite.net.extract_features(x)))


def conv_stats_layer(network: nn.Module, size: int = 224) -> nn.Module:
    return pooled_map_layer(network, size)


def test_the_statistics_of_a_half_precision_map_are_those_of_its_float32_copy():
    half = (torch.randn(3, 16, 5, 7) * 40).half()  # a CUDA autocast map
    stats = conv_map_statistics(half)
    assert stats.dtype == torch.float32
    assert torch.equal(stats, conv_map_statistics(half.float()))
