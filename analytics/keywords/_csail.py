"""Network definitions of the published CSAIL ADE20K segmentation model and the Places365 ResNet-18.

Written to load the published checkpoints as they are, so module names and parameter shapes follow
them exactly:

* **Encoder** ``resnet18dilated`` (CSAILVision/semantic-segmentation-pytorch,
  ``encoder_epoch_20.pth``): a ResNet-18 with a deep stem of three 3x3 convolutions
  (``conv1``/``bn1`` 3→64 stride 2, ``conv2``/``bn2`` 64→64, ``conv3``/``bn3`` 64→128), a 3x3
  max-pool, and four stages of basic blocks (64, 128, 256, 512 channels). Stages 3 and 4 keep
  stride 8 instead of downsampling (``dilate_scale=8``): their strided convolutions lose the stride
  and every 3x3 convolution after that point is dilated by 2 (stage 3) or 4 (stage 4), the former
  strided one by half that (1 and 2).
* **Decoder** ``ppm_deepsup`` (``decoder_epoch_20.pth``, ``fc_dim=512``): pyramid pooling over the
  encoder's last map at bins 1, 2, 3 and 6 (``ppm.<i>``: pool → 1x1 conv to 512 → BN → ReLU, each
  upsampled back), concatenated with the map and classified by ``conv_last`` (3x3 conv to 512 → BN →
  ReLU → dropout → 1x1 conv to the classes). The deep-supervision head (``cbr_deepsup``,
  ``conv_last_deepsup``) only helped training; it is built so the checkpoint loads, and not run.
* **Places365** ResNet-18 (CSAILVision/places365, ``resnet18_places365.pth.tar``): torchvision's
  ``resnet18`` with 365 outputs.

Blocks reuse torchvision's :class:`~torchvision.models.resnet.BasicBlock`, whose parameter names
(``conv1``, ``bn1``, ``conv2``, ``bn2``, ``downsample.0``/``.1``) are those of the CSAIL
checkpoints; torchvision has no deep-stem or dilated ResNet-18, hence the encoder class here.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

ADE20K_CLASSES = 150
PLACES365_CLASSES = 365
ENCODER_CHANNELS = 512  # the decoder's fc_dim for resnet18dilated
POOL_SCALES = (1, 2, 3, 6)
PPM_CHANNELS = 512


class ResNet18Dilated(nn.Module):
    """The ``resnet18dilated`` encoder: output stride 8.

    ``forward(x)`` maps a normalised batch of shape (n, 3, h, w), float32, to the last feature map of
    shape (n, 512, ceil(h/8), ceil(w/8)), float32.
    """

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.bn1 = _conv3x3(3, 64, stride=2), nn.BatchNorm2d(64)
        self.conv2, self.bn2 = _conv3x3(64, 64), nn.BatchNorm2d(64)
        self.conv3, self.bn3 = _conv3x3(64, 128), nn.BatchNorm2d(128)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = _stage(128, 64, stride=1)
        self.layer2 = _stage(64, 128, stride=2)
        self.layer3 = _dilated(_stage(128, 256, stride=2), dilation=2)
        self.layer4 = _dilated(_stage(256, 512, stride=2), dilation=4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv, bn in ((self.conv1, self.bn1), (self.conv2, self.bn2), (self.conv3, self.bn3)):
            x = F.relu(bn(conv(x)))
        x = self.maxpool(x)
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))


class PPMDeepSup(nn.Module):
    """The ``ppm_deepsup`` decoder (pyramid pooling module; deep-supervision head kept for loading).

    ``forward(features)`` maps the encoder's map of shape (n, 512, h', w'), float32, to class logits
    of shape (n, n_classes, h', w'), float32.
    """

    def __init__(self, n_classes: int = ADE20K_CLASSES, in_channels: int = ENCODER_CHANNELS) -> None:
        super().__init__()
        self.ppm = nn.ModuleList(
            nn.Sequential(
                nn.AdaptiveAvgPool2d(scale),
                nn.Conv2d(in_channels, PPM_CHANNELS, kernel_size=1, bias=False),
                nn.BatchNorm2d(PPM_CHANNELS),
                nn.ReLU(inplace=True),
            )
            for scale in POOL_SCALES
        )
        self.cbr_deepsup = nn.Sequential(
            _conv3x3(in_channels // 2, in_channels // 4), nn.BatchNorm2d(in_channels // 4), nn.ReLU(inplace=True)
        )
        self.conv_last = nn.Sequential(
            nn.Conv2d(in_channels + len(POOL_SCALES) * PPM_CHANNELS, 512, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(512),
            nn.ReLU(inplace=True),
            nn.Dropout2d(0.1),
            nn.Conv2d(512, n_classes, kernel_size=1),
        )
        self.conv_last_deepsup = nn.Conv2d(in_channels // 4, n_classes, kernel_size=1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        size = features.shape[2:]
        pooled = [F.interpolate(branch(features), size, mode="bilinear", align_corners=False) for branch in self.ppm]
        return self.conv_last(torch.cat([features, *pooled], dim=1))


def build_places_resnet18(n_classes: int = PLACES365_CLASSES) -> nn.Module:
    """torchvision's ResNet-18 with ``n_classes`` outputs (random weights): (n, 3, 224, 224) → (n, n_classes)."""
    import torchvision  # heavy (about a second): imported only when a scene model is built

    return torchvision.models.resnet18(weights=None, num_classes=n_classes)


def _conv3x3(in_channels: int, out_channels: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1, bias=False)


def _stage(in_channels: int, channels: int, *, stride: int, n_blocks: int = 2) -> nn.Sequential:
    """``n_blocks`` basic blocks; the first one projects the shortcut when shape or stride change."""
    from torchvision.models.resnet import BasicBlock  # heavy (about a second): imported only when a scene model is built

    shortcut = None
    if stride != 1 or in_channels != channels:
        shortcut = nn.Sequential(
            nn.Conv2d(in_channels, channels, kernel_size=1, stride=stride, bias=False), nn.BatchNorm2d(channels)
        )
    blocks = [BasicBlock(in_channels, channels, stride, shortcut)]
    blocks += [BasicBlock(channels, channels) for _ in range(n_blocks - 1)]
    return nn.Sequential(*blocks)


def _dilated(stage: nn.Sequential, *, dilation: int) -> nn.Sequential:
    """Trade the stage's stride for dilation (the CSAIL ``dilate_scale=8`` rule): strided
    convolutions get stride 1, and a 3x3 one dilation ``dilation // 2`` (it sat before the
    downsampling); every other 3x3 convolution gets ``dilation``. Padding follows dilation so the
    map keeps its size."""
    for module in stage.modules():
        if not isinstance(module, nn.Conv2d):
            continue
        rate = dilation
        if module.stride == (2, 2):
            module.stride = (1, 1)
            rate = dilation // 2
        if module.kernel_size == (3, 3):
            module.dilation = module.padding = (rate, rate)
    return stage
