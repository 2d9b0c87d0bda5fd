"""The ``transformers`` source: a local folder written by ``save_pretrained`` (config.json,
``model.safetensors``, preprocessor_config.json), built with ``AutoModelForImageClassification``.

Safety: weights are read from safetensors only (a folder holding pickled weights such as
``pytorch_model.bin`` is refused), ``trust_remote_code`` is never set, a folder with any ``.py``
file, a symlink or a config with ``auto_map`` (code to import) is refused, and nothing is
downloaded (``local_files_only=True``).

Labels: config.json's ``id2label`` in output order (or ``label_space``). Preprocessing: the image
processor ``AutoImageProcessor.from_pretrained(folder, local_files_only=True, trust_remote_code=False)``
loads, read through its attributes (``size``, ``crop_size``, ``do_center_crop``, ``crop_pct``,
``resample``, ``image_mean``, ``image_std``, ``do_resize``, ``do_rescale``, ``do_normalize``) and
its backend (transformers 5: torchvision resizing of uint8 tensors, or Pillow) into an
:class:`~.transforms.ImageTransform`; registration compares the two on a probe image (the parity
probe). A processor of any family is read the same way; what a transform cannot express, or what
the probe finds different, is refused saying that nothing in the model's folder needs to change:
``input_size``, ``mean`` and ``std`` given together replace the processor with Backdrop's resize,
as they give the preprocessing of a folder without preprocessor_config.json.

Embedding: the input of the classifier (a forward pre-hook on the final ``Linear`` with one output
per label): ViT's [CLS] token after the final layernorm, ConvNeXt's pooled features after its
layernorm, and so on for every family without code per architecture. GradCAM and the conv-map
signals read the last of a network's ``stages`` (else its last convolution); attention models
(ViT, Swin, …) have none.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from torch import nn

from analytics._optional import import_optional
from analytics._validation import read_json
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace

from .checkpoints import _checkpoint_path, check_safetensors
from .spec import ModelSpec
from .transforms import ImageTransform

#: PIL's resampling numbers (what preprocessor_config.json stores) by name.
_RESAMPLE = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}
#: Weight files that unpickle (code can run) rather than being read as plain tensors.
_PICKLED = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".msgpack", ".h5")


class _TransformersClassifier(nn.Module):
    """A transformers image classifier returning ``(logits, input of its classifier)``."""

    def __init__(self, model: nn.Module, head_name: str) -> None:
        super().__init__()
        self.model, self.head_name = model, head_name
        self._inputs: list[torch.Tensor] = []
        model.get_submodule(head_name).register_forward_pre_hook(lambda module, args: self._inputs.append(args[0]))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self._inputs.clear()
        logits = self.model(pixel_values=x).logits
        embedding = self._inputs[-1]
        self._inputs.clear()
        return logits, embedding.flatten(1)


def find_model_folder(root: Path, shown: object) -> Path:
    """The folder holding config.json: ``root`` itself, or down a chain of at most three folders that
    are each the only entry of their parent (a zip of ``vit/`` holds ``vit/config.json``)."""
    folder = root
    for _ in range(4):
        if (folder / "config.json").is_file():
            return folder
        entries = [p for p in folder.iterdir() if not p.name.startswith((".", "__MACOSX"))] if folder.is_dir() else []
        if len(entries) != 1 or not entries[0].is_dir():
            break
        folder = entries[0]
    raise InvalidInputError(f"{shown}: no config.json at its top or inside one enclosing folder; give the folder model.save_pretrained wrote (or a zip of it)")


def check_folder(folder: Path) -> dict:
    """Refuse what could run code or is not a safetensors classifier; return config.json's content."""
    if not folder.is_dir():
        raise InvalidInputError(f"{folder}: not a folder; give the folder model.save_pretrained(folder, safe_serialization=True) wrote")
    files = sorted(folder.rglob("*"))
    links = [p for p in files if p.is_symlink()]
    if links:
        raise InvalidInputError(f"{folder}: holds a symlink ({links[0].relative_to(folder)}); copy the real files into the folder")
    code = [p for p in files if p.suffix == ".py"]
    if code:
        raise InvalidInputError(f"{folder}: holds Python code ({code[0].relative_to(folder)}); Backdrop never runs a model's own code: remove the .py files")
    pickled = [p for p in files if p.suffix in _PICKLED]
    if pickled:
        raise InvalidInputError(
            f"{folder}: holds {pickled[0].name}, weights that are unpickled (code can run); save safetensors only: "
            "model.save_pretrained(folder, safe_serialization=True), then delete the pickled file"
        )
    if not any(p.suffix == ".safetensors" for p in files):
        raise InvalidInputError(f"{folder}: no model.safetensors; save the model with model.save_pretrained(folder, safe_serialization=True)")
    for weights in (p for p in files if p.suffix == ".safetensors"):  # headers checked here, not by transformers' own errors
        check_safetensors(weights)
    config = _read_json(folder / "config.json", "save the model with model.save_pretrained(folder)")
    if config.get("auto_map"):
        raise InvalidInputError(f"{folder / 'config.json'}: names custom code (auto_map); Backdrop never sets trust_remote_code: use a model transformers ships")
    return config


def _read_json(path: Path, fix: str) -> dict:
    data = read_json(path, "JSON file", fix)
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path}: not a JSON object; {fix}")
    return data


def config_labels(config: Mapping, folder: Path) -> tuple[str, ...]:
    """config.json's ``id2label`` in output order."""
    raw = config.get("id2label") or {}
    try:
        labels = {int(k): str(v) for k, v in raw.items()}
    except (TypeError, ValueError, AttributeError):
        labels = {}
    if not labels or sorted(labels) != list(range(len(labels))):
        raise InvalidInputError(f"{folder / 'config.json'}: no id2label for outputs 0..n-1; give the class names as `label_space` (a class-list file)")
    names = [labels[i] for i in range(len(labels))]
    seen: set[str] = set()
    for i, name in enumerate(names):  # ImageNet's id2label names two outputs 'crane' (134, 517): the later one gets its index
        names[i] = name if name not in seen else f"{name} ({i})"
        seen.add(names[i])
    return tuple(names)


def load_transformers(folder: Path) -> nn.Module:
    """``AutoModelForImageClassification`` from a checked folder: float32, eval mode, no download, no remote code."""
    transformers = import_optional("transformers", extra="transformers")  # heavy: only for transformers models
    hf_logging = import_optional("transformers.utils.logging", extra="transformers")

    check_folder(folder)
    shown, verbosity = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()  # "Loading weights" bars and config notices would fill a terminal or a job log
    hf_logging.set_verbosity_error()
    try:
        model = transformers.AutoModelForImageClassification.from_pretrained(
            folder, local_files_only=True, use_safetensors=True, trust_remote_code=False, dtype=torch.float32
        )
    except (ValueError, OSError, KeyError, RuntimeError, SafetensorError) as err:
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        raise InvalidInputError(f"{folder}: transformers cannot build an image classifier from it ({reason})") from err
    finally:
        hf_logging.set_verbosity(verbosity)
        if shown:
            hf_logging.enable_progress_bar()
    # Backdrop never trains, so no loss is ever computed: without one set, reading ``loss_function``
    # (TorchScript freezing reads every attribute) makes transformers warn "Using the default loss:
    # `ForCausalLMLoss`" for a class its loss table lacks (the base model inside the classifier, e.g.
    # ConvNextModel), in the gate's output too (issue 47.10c)
    for module in model.modules():
        if isinstance(getattr(type(module), "loss_function", None), property):
            module.loss_function = None
    return model.eval()


def classifier_name(model: nn.Module, n_labels: int, where: object) -> str:
    """The final Linear with one output per label (``classifier`` for most families)."""
    heads = [name for name, module in model.named_modules() if isinstance(module, nn.Linear) and module.out_features == n_labels]
    if not heads:
        raise InvalidInputError(f"{where}: no Linear layer with {n_labels} outputs (one per label), so the embedding cannot be read")
    return heads[-1]


def transformers_network(spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
    """The registered transformers model, as ``(logits, embedding)`` module (eval mode)."""
    folder = _checkpoint_path(workspace, spec)
    model = load_transformers(folder)
    n_labels = int(model.config.num_labels)
    if n_labels != spec.n_outputs:
        raise InvalidInputError(
            f"{folder}: the model has {n_labels} labels but the {spec.label_space.kind} label space has {spec.n_outputs}; "
            "choose the label space the model was trained on (`label_space`)"
        )
    return _TransformersClassifier(model, classifier_name(model, n_labels, folder)).eval()


#: What a user can do when Backdrop cannot reproduce a model's own preprocessing: nothing about the
#: model's files needs to change.
_OVERRIDE = (
    "nothing in the model's folder needs to change: pass `input_size`, `mean` and `std` together to have Backdrop resize "
    "the image to that size and normalise it instead of the image processor"
)


def read_processor_transform(folder: Path, *, input_size: int | None, mean, std) -> tuple[int, ImageTransform]:
    """The network's preprocessing: ``(input_size, transform)``.

    Read from the image processor ``AutoImageProcessor.from_pretrained(folder)`` loads (its attributes,
    :func:`processor_transforms`) and checked against it on a probe image
    (:func:`check_processor_transform`); or, where the folder has no preprocessor_config.json or
    ``input_size``, ``mean`` and ``std`` are all given, Backdrop's resize to ``input_size`` and that
    normalisation.
    """
    path = folder / "preprocessor_config.json"
    given = {"input_size": input_size, "mean": mean, "std": std}
    if all(value is not None for value in given.values()):
        origin = "input_size, mean, std" + (" given (the image processor not used)" if path.is_file() else "")
        return int(input_size), ImageTransform(mean, std, int(input_size), 0, "area", "opencv", origin)  # type: ignore[arg-type]
    if not path.is_file():
        missing = [key for key, value in given.items() if value is None]
        raise InvalidInputError(
            f"{folder}: no preprocessor_config.json, so the input size and normalisation are unknown; save the image processor "
            f"beside the model (processor.save_pretrained(folder)) or give {', '.join(f'`{key}`' for key in missing)}"
        )
    partial = [key for key, value in given.items() if value is not None]
    if partial:
        raise InvalidInputError(
            f"{', '.join(f'`{key}`' for key in partial)}: the image processor ({path.name}) gives the preprocessing; leave "
            f"{'it' if len(partial) == 1 else 'them'} out to use it, or give `input_size`, `mean` and `std` together to replace it"
        )
    processor = load_image_processor(folder)
    return check_processor_transform(processor, processor_transforms(processor, folder), folder)


def load_image_processor(folder: Path):
    """``AutoImageProcessor.from_pretrained(folder)``: no download, no remote code. preprocessor_config.json
    is read first, so that a file made to break a reader is refused naming it."""
    config = _read_json(folder / "preprocessor_config.json", "save it with processor.save_pretrained(folder)")
    if config.get("auto_map"):
        raise InvalidInputError(f"{folder / 'preprocessor_config.json'}: names custom code (auto_map); Backdrop never sets trust_remote_code: {_OVERRIDE}")
    AutoImageProcessor = import_optional("transformers", extra="transformers").AutoImageProcessor
    try:
        return AutoImageProcessor.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
    except (ValueError, OSError, KeyError, TypeError, AttributeError, ImportError) as err:
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        raise InvalidInputError(f"{folder}: transformers cannot load its image processor ({reason}); {_OVERRIDE}") from err


def processor_transforms(processor, where: object) -> list[tuple[int, ImageTransform]]:
    """The readings of a loaded image processor's attributes, each ``(input_size, transform)``: its
    ``do_resize``, ``size`` (``height``/``width`` or ``shortest_edge``), ``resample``,
    ``do_center_crop`` and ``crop_size``, ``do_rescale`` and ``rescale_factor``, ``do_normalize``,
    ``image_mean`` and ``image_std``, and its backend (``torchvision`` or ``pil``) as the resampler.

    A processor with a ``crop_pct`` (ConvNeXt, PoolFormer, …) reads two ways: the resize scaled to
    ``int(side / crop_pct)`` and then cropped (to ``crop_size``, else to the side), first, and
    unscaled (ConvNeXt ignores crop_pct from 384 px up); :func:`check_processor_transform` keeps the
    one whose pixels equal the processor's own. No rule of a processor class is copied here.

    Raises
    ------
    InvalidInputError
        Preprocessing an :class:`ImageTransform` cannot express (no resize, a non-square size or
        crop, a rescale other than 1/255, padding, another backend); the message names it and says
        that nothing in the model's folder needs to change.
    """
    name = type(processor).__name__

    def refuse(what: str) -> InvalidInputError:
        return InvalidInputError(f"{where}: Backdrop cannot reproduce {name}'s {what}; {_OVERRIDE}")

    backend = getattr(processor, "backend", None)
    if backend not in ("torchvision", "pil"):
        raise refuse(f"{backend!r} backend (it reproduces the torchvision and pil ones)")
    if not getattr(processor, "do_resize", False):
        raise refuse("do_resize False (images of any size go to the network as they are; Backdrop's go at one size)")
    if getattr(processor, "do_pad", False):
        raise refuse("do_pad (padding)")
    rescale = getattr(processor, "rescale_factor", None)
    if not getattr(processor, "do_rescale", False) or rescale is None or not np.isclose(float(rescale), 1 / 255, rtol=1e-9, atol=0):
        raise refuse(f"do_rescale {getattr(processor, 'do_rescale', None)}, rescale_factor {rescale} (it reproduces the 1/255 scaling of 0..255 pixels)")
    if getattr(processor, "do_normalize", False):
        mean, std = _per_channel(processor.image_mean), _per_channel(processor.image_std)
    else:
        mean, std = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    size = getattr(processor, "size", None) or {}
    height, width, edge = (size.get(key) for key in ("height", "width", "shortest_edge"))
    if height and width and not edge:
        if height != width:
            raise refuse(f"size {height}x{width} (not square; Backdrop feeds square images)")
        side = int(height)
    elif edge and not (height or width) and (size.get("longest_edge") or edge) >= edge:
        side = int(edge)
    else:
        raise refuse(f"size {dict(size)} (it reproduces height = width, or shortest_edge)")
    crop = getattr(processor, "crop_size", None) or {}
    cropped = None
    if getattr(processor, "do_center_crop", False):
        if not crop.get("height") or crop.get("height") != crop.get("width"):
            raise refuse(f"crop_size {dict(crop)} (not a square; Backdrop feeds square images)")
        cropped = int(crop["height"])
    resample = getattr(processor, "resample", None)
    interpolation = _interpolation(resample)
    if interpolation is None:
        raise refuse(f"resample {resample!r} (it reproduces PIL's filters 0-5)")
    crop_pct = getattr(processor, "crop_pct", None)
    resizes = [int(side / float(crop_pct)), side] if crop_pct else [side]
    readings = []
    for resize in dict.fromkeys(resizes):
        input_size = cropped or side
        if input_size > resize:
            continue  # a crop larger than the image pads it: not this reading
        scaled = f", crop_pct {crop_pct:g}" if resize != side else ""
        origin = f"{name} ({backend}) image processor{scaled}"
        transform = ImageTransform(mean, std, resize, int((resize - input_size) / 2.0), interpolation, backend, origin)
        readings.append((input_size, transform))
    if not readings:
        raise refuse(f"crop_size {cropped} px, larger than the resized image (it pads)")
    return readings


def _per_channel(values) -> tuple[float, float, float]:
    """A processor's ``image_mean`` / ``image_std``: three numbers, or one for every channel
    (:class:`ImageTransform` refuses any other count)."""
    return (float(values),) * 3 if isinstance(values, (int, float)) else tuple(float(v) for v in values)  # type: ignore[return-value]


def _interpolation(resample) -> str | None:
    """A processor's ``resample`` (a PIL filter number, or torchvision's ``InterpolationMode``) by name."""
    if resample is None:
        return "bilinear"  # both backends' default
    value = getattr(resample, "value", resample)
    if isinstance(value, str):
        return {"nearest-exact": "nearest"}.get(value, value) if value in (*_RESAMPLE.values(), "nearest-exact") else None
    try:
        return _RESAMPLE.get(int(value))
    except (TypeError, ValueError):
        return None


def check_processor_transform(processor, readings: list[tuple[int, ImageTransform]], where: object) -> tuple[int, ImageTransform]:
    """Registration's parity probe: the first reading whose pixels on a probe image equal the image
    processor's own output (``processor(images=...)``) to 1e-4.

    Raises
    ------
    InvalidInputError
        No reading does: the message names the processor and says that nothing in the model's
        folder needs to change.
    """
    from PIL import Image

    image = np.random.default_rng(0).integers(0, 256, (1, 256, 256, 3), dtype=np.uint8)
    name = type(processor).__name__
    try:
        expected = processor(images=Image.fromarray(image[0]), return_tensors="pt")["pixel_values"].float()
    except (ValueError, TypeError, KeyError, RuntimeError) as err:
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        raise InvalidInputError(f"{where}: {name} fails on a probe image ({reason}); {_OVERRIDE}") from err
    for input_size, transform in readings:
        try:
            ours = transform.normalise(torch.from_numpy(transform.resize_and_crop(image, input_size)).permute(0, 3, 1, 2))
        except (ValueError, RuntimeError, NotImplementedError):  # a filter this torchvision lacks: not this reading
            continue
        if expected.shape == ours.shape and torch.allclose(expected, ours, atol=1e-4, rtol=0):
            return input_size, transform
    read = "; ".join(transform.describe(input_size) for input_size, transform in readings)
    raise InvalidInputError(
        f"{where}: Backdrop cannot reproduce {name}: on a probe image its output {tuple(expected.shape)} differs from what its attributes "
        f"read as ({read}); {_OVERRIDE}"
    )


def transformers_feature_layer(network: _TransformersClassifier) -> nn.Module:
    """The last of the network's ``stages`` (else its last convolution): GradCAM's layer and the conv map.

    Raises
    ------
    InvalidInputError
        An attention model (ViT, Swin, …) or a network without a convolution.
    """
    model = network.model
    attention = next((type(m).__name__ for m in model.modules() if "Attention" in type(m).__name__), None)
    if attention is not None:
        raise InvalidInputError(f"{type(model).__name__} is built of transformer blocks ({attention}), not convolutions, so it has no feature map")
    stages = [m for name, m in model.named_modules() if name.rsplit(".", 1)[-1] == "stages" and isinstance(m, nn.ModuleList) and len(m)]
    if stages:
        return stages[-1][-1]
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    if not convs:
        raise InvalidInputError(f"{type(model).__name__} has no convolution layer, so it has no feature map")
    return convs[-1]


def feature_map_problem(folder: Path) -> str | None:
    """Why a registered transformers model has no last convolutional map (None when it has one),
    read from its config alone (the network is built on the meta device: no memory, no weights)."""
    transformers = import_optional("transformers", extra="transformers")

    try:
        config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
        with torch.device("meta"):
            model = transformers.AutoModelForImageClassification.from_config(config)
        transformers_feature_layer(_TransformersClassifier(model, classifier_name(model, int(config.num_labels), folder)))
    except InvalidInputError as err:
        return str(err)
    except (ValueError, OSError) as err:
        return f"its folder {folder} cannot be read ({(str(err).splitlines() or [''])[0][:200]})"
    return None
