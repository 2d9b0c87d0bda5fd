"""The ``timm`` source: any architecture ``timm.create_model(arch, pretrained=False, num_classes=n)``
builds, with the team's checkpoint (a state dict read with ``torch.load(weights_only=True)``, or
``.safetensors``); nothing is downloaded (``pretrained=False``).

Preprocessing: timm's own, read at registration with ``timm.data.resolve_data_config(model=...)``
from the architecture's ``pretrained_cfg`` (mean, std, input size, ``crop_pct``, ``crop_mode``,
interpolation; a parameter overrides a value) and stored as an :class:`~.transforms.ImageTransform`
whose resize and crop are those of the transform timm builds of that config,
``timm.data.create_transform(**config)`` (its ``Resize`` and ``CenterCrop`` steps, read rather than
recomputed): Pillow resize, centre crop (torchvision ``CenterCrop``'s offset), ``ToTensor`` and
``Normalize``; registration checks the two agree on a probe image.

Embedding: the pre-logits features, ``forward_head(forward_features(x), pre_logits=True)``.
GradCAM and the authors' conv-map signals read the last stage of timm's ``feature_info`` when it
holds a convolution (``layer4`` of a ResNet, ``stages.3`` of a ConvNeXt); a transformer's last
stage (``blocks.11`` of a ViT) has none.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from torch import nn

from analytics._choices import RESIZE_FILTERS
from analytics._optional import import_optional
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace

from .checkpoints import _check_classes, _checkpoint_path, _short_mismatch, read_state_dict
from .spec import ModelSpec
from .transforms import ImageTransform


class _TimmClassifier(nn.Module):
    """A timm model returning ``(logits, pre-logits features)``."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.net.forward_features(x)
        return self.net.forward_head(features), self.net.forward_head(features, pre_logits=True).flatten(1)


def timm_network(spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
    """The registered timm model with its checkpoint, as ``(logits, embedding)`` module (eval mode)."""
    path = _checkpoint_path(workspace, spec)
    state = read_state_dict(path)
    net, classifier = build_timm(spec.arch, state, path, spec.input_size)
    _check_classes(path, classifier, state[f"{classifier}.weight"].shape[0], spec.label_space)
    return _TimmClassifier(net).eval()


def build_timm(arch: str, state: Mapping[str, torch.Tensor], path: Path, input_size: int | None) -> tuple[nn.Module, str]:
    """``timm.create_model(arch, pretrained=False)`` sized for the checkpoint, its weights loaded:
    (network in eval mode, classifier name). ``input_size`` other than the architecture's is passed
    as ``img_size`` to models that take one (ViT's position embedding)."""
    timm = import_optional("timm", extra="timm")  # heavy and optional: imported only when a timm model is built

    check_timm_arch(arch, path)
    with torch.device("meta"):  # names and configuration only: no memory, no initialisation
        probe = timm.create_model(arch, pretrained=False)
    classifier = probe.pretrained_cfg.get("classifier") or ""
    classifier = classifier[0] if isinstance(classifier, (tuple, list)) else classifier
    weight = state.get(f"{classifier}.weight")
    if not classifier or weight is None or weight.ndim != 2:
        raise InvalidInputError(
            f"{path}: no 2-D weight {classifier + '.weight'!r} for the classifier of timm {arch}; is it a {arch} checkpoint "
            "(torch.save(model.state_dict(), path) of timm.create_model({arch!r}, num_classes=...))?"
        )
    config: dict = {"num_classes": int(weight.shape[0])}
    default_size = tuple(probe.pretrained_cfg.get("input_size") or (3, 0, 0))[-1]
    if input_size and input_size != default_size:
        config["img_size"] = input_size
    try:
        net = timm.create_model(arch, pretrained=False, **config)
    except TypeError:  # a model that takes any input size (a CNN) has no img_size
        config.pop("img_size", None)
        net = timm.create_model(arch, pretrained=False, **config)
    try:
        net.load_state_dict(state)
    except RuntimeError as err:
        raise InvalidInputError(f"{path}: the checkpoint does not fit timm {arch}: {_short_mismatch(err)}; is it a {arch} checkpoint?") from err
    return net.eval(), classifier


def check_timm_arch(arch: str, where: object) -> None:
    """Raise :class:`InvalidInputError` unless timm knows ``arch`` (``resnet18``, ``vit_tiny_patch16_224``, …)."""
    timm = import_optional("timm", extra="timm")

    if not isinstance(arch, str) or not timm.is_model(arch):
        close = difflib.get_close_matches(str(arch), timm.list_models(), n=3)
        hint = f"did you mean {', '.join(close)}?" if close else "see timm.list_models()"
        raise InvalidInputError(f"unknown timm architecture {arch!r} for {where}; {hint}")


def read_timm_transform(
    net: nn.Module,
    *,
    input_size: int | None = None,
    mean: tuple[float, float, float] | None = None,
    std: tuple[float, float, float] | None = None,
    crop_pct: float | None = None,
    interpolation: str | None = None,
) -> tuple[int, ImageTransform, dict]:
    """timm's eval preprocessing of ``net``: ``(input_size, transform, timm's data config)``.

    The data config is ``resolve_data_config(model=net)`` (the ``pretrained_cfg``; a given value
    overrides it): its ``input_size``, ``crop_pct``, ``crop_mode``, ``interpolation``, ``mean`` and
    ``std``. The resize and crop are read from the transform timm builds of it,
    ``timm.data.create_transform(**config)`` (``transforms_imagenet_eval``): its ``Resize`` and
    ``CenterCrop`` steps, so that the geometry is timm's own rather than recomputed.

    Raises
    ------
    InvalidInputError
        The config lacks a value and no parameter gives it; a non-square input; a transform other
        than resize, centre crop, to-tensor and normalise (``crop_mode`` 'border', a crop larger than
        the resized image); an interpolation Backdrop does not reproduce.
    """
    timm_data = import_optional("timm.data", extra="timm")

    cfg = getattr(net, "pretrained_cfg", None) or {}
    given = {"input_size": input_size, "mean": mean, "std": std}
    missing = [key for key, value in given.items() if value is None and not cfg.get(key)]
    if missing:
        raise InvalidInputError(f"timm's pretrained_cfg of {type(net).__name__} has no {', '.join(f'`{key}`' for key in missing)}; give {'it' if len(missing) == 1 else 'them'}")
    args = {key: value for key, value in {"mean": mean, "std": std, "crop_pct": crop_pct, "interpolation": interpolation}.items() if value is not None}
    if input_size is not None:
        args["input_size"] = (3, input_size, input_size)
    config = timm_data.resolve_data_config(args=args, model=net)
    _, height, width = config["input_size"]
    if height != width:
        raise InvalidInputError(f"timm's input size is {height}x{width}; Backdrop feeds square images: give `input_size`")
    crop = float(config["crop_pct"])
    if not 0 < crop <= 1:
        raise InvalidInputError(f"`crop_pct` must be in (0, 1]; got {crop}")
    resize, interpolation = _eval_geometry(timm_data.create_transform(**config), config, int(height))
    transform = ImageTransform(
        mean=config["mean"], std=config["std"], resize=resize, crop_offset=int(round((resize - height) / 2.0)),  # torchvision CenterCrop's offset
        interpolation=interpolation, resampler="pil", origin=f"timm pretrained_cfg{' and parameters' if args else ''} (crop_pct {crop:g})",
    )  # fmt: skip
    return int(height), transform, config


def _eval_geometry(pipeline, config: Mapping, input_size: int) -> tuple[int, str]:
    """The side and interpolation of the ``Resize`` in timm's eval transform, checked to be the steps
    an :class:`ImageTransform` reproduces: ``Resize``, ``CenterCrop(input_size)``, to-tensor, ``Normalize``
    (timm's 'center' crop mode, and 'squash', which is the same on the square images Backdrop feeds)."""
    steps = list(getattr(pipeline, "transforms", [pipeline]))
    kinds = [type(step).__name__ for step in steps]
    if len(kinds) != 4 or kinds[:2] != ["Resize", "CenterCrop"] or kinds[2] not in ("MaybeToTensor", "ToTensor") or kinds[3] != "Normalize":
        raise InvalidInputError(
            f"timm's eval transform for this configuration is {', '.join(kinds)} (crop_mode {config.get('crop_mode')!r}); Backdrop reproduces "
            "Resize, CenterCrop, ToTensor, Normalize (crop_mode 'center' or 'squash') only. Nothing about the checkpoint needs to change: "
            "give `crop_pct`, `interpolation`, `input_size`, `mean` and `std` to set the preprocessing"
        )
    resize_step, crop_step = steps[:2]
    sides = [resize_step.size] if isinstance(resize_step.size, int) else list(resize_step.size)
    crop = list(crop_step.size) if not isinstance(crop_step.size, int) else [crop_step.size] * 2
    if len(set(sides)) != 1 or crop != [input_size, input_size] or sides[0] < input_size:
        raise InvalidInputError(f"timm's eval transform resizes to {resize_step.size} and crops {crop_step.size}; Backdrop reproduces a square crop inside the resized image")
    mode = getattr(resize_step.interpolation, "value", resize_step.interpolation)
    if mode not in RESIZE_FILTERS:
        raise InvalidInputError(f"timm's resize filter {mode!r} is not one Backdrop reproduces; give `interpolation` ({'|'.join(RESIZE_FILTERS)})")
    return int(sides[0]), str(mode)


def check_timm_transform(input_size: int, transform: ImageTransform, config: Mapping, where: object) -> None:
    """Registration's check: Backdrop's preprocessing equals ``timm.data.create_transform(**config)`` on a probe image."""
    from PIL import Image
    create_transform = import_optional("timm.data", extra="timm").create_transform

    image = np.random.default_rng(0).integers(0, 256, (1, 256, 256, 3), dtype=np.uint8)
    expected = create_transform(**config)(Image.fromarray(image[0]))
    ours = transform.normalise(torch.from_numpy(transform.resize_and_crop(image, input_size)).permute(0, 3, 1, 2))[0]
    if expected.shape != ours.shape or not torch.allclose(expected, ours, atol=1e-5, rtol=0):
        raise InvalidInputError(
            f"{where}: Backdrop cannot reproduce timm's eval transform for this configuration ({dict(config)}) on a probe image; "
            "nothing about the checkpoint needs to change: give `input_size`, `crop_pct` and `interpolation` to set the preprocessing"
        )


def timm_feature_layer(classifier: _TimmClassifier) -> nn.Module:
    """The last stage of timm's ``feature_info`` when it holds a convolution (GradCAM's layer and
    the authors' conv map).

    Raises
    ------
    InvalidInputError
        No ``feature_info``, or a last stage without a convolution (a transformer).
    """
    net = classifier.net
    info = getattr(net, "feature_info", None)
    if not info:
        raise InvalidInputError(f"timm {type(net).__name__} has no feature_info, so its last convolutional stage is unknown")
    name = info[-1]["module"]
    layer = net.get_submodule(name)
    if not any(isinstance(module, nn.Conv2d) for module in layer.modules()):
        raise InvalidInputError(f"the last stage of timm {type(net).__name__} ({name}) has no convolution (a transformer), so it has no feature map")
    return layer


def feature_map_problem(arch: str) -> str | None:
    """Why a timm architecture has no last convolutional map (None when it has one), read from the
    architecture alone (built on the meta device: no memory, no weights)."""
    timm = import_optional("timm", extra="timm")

    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        network = _TimmClassifier(timm.create_model(arch, pretrained=False))
    try:
        timm_feature_layer(network)
    except InvalidInputError as err:
        return str(err)
    return None
