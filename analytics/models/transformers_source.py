"""The ``transformers`` source: a local folder written by ``save_pretrained`` (config.json,
``model.safetensors``, preprocessor_config.json), built with ``AutoModelForImageClassification``.

Safety: weights are read from safetensors only (a folder holding pickled weights such as
``pytorch_model.bin`` is refused), ``trust_remote_code`` is never set, a folder with any ``.py``
file, a symlink or a config with ``auto_map`` (code to import) is refused, and nothing is
downloaded (``local_files_only=True``).

Labels: config.json's ``id2label`` in output order (or ``--labels``). Preprocessing: read from
preprocessor_config.json (``image_mean``, ``image_std``, ``size``, ``crop_size``, ``resample``,
``crop_pct``, ``rescale_factor``) into an :class:`~.transforms.ImageTransform` that reproduces the
image processor ``AutoImageProcessor.from_pretrained`` gives (transformers 5: torchvision resizing
of uint8 tensors, or Pillow for a ``…Pil`` processor); registration compares the two on a probe
image. A folder without preprocessor_config.json needs ``--input-size``, ``--mean`` and ``--std``.

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
        raise InvalidInputError(f"{folder / 'config.json'}: no id2label for outputs 0..n-1; give the class names with --labels FILE")
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
            "choose the label space the model was trained on (--labels)"
        )
    return _TransformersClassifier(model, classifier_name(model, n_labels, folder)).eval()


def read_processor_transform(folder: Path, *, input_size: int | None, mean, std) -> tuple[int, ImageTransform, bool]:
    """The preprocessing of preprocessor_config.json, or of the flags where there is none:
    ``(input_size, transform, read_from_the_processor)``."""
    path = folder / "preprocessor_config.json"
    if not path.is_file():
        missing = [flag for flag, value in (("--input-size", input_size), ("--mean", mean), ("--std", std)) if value is None]
        if missing:
            raise InvalidInputError(
                f"{folder}: no preprocessor_config.json, so the input size, mean and std are unknown; save the image processor "
                f"beside the model (processor.save_pretrained(folder)) or give {', '.join(missing)}"
            )
        return input_size, ImageTransform(mean, std, input_size, 0, "area", "opencv", "--input-size, --mean, --std"), False
    given = [flag for flag, value in (("--input-size", input_size), ("--mean", mean), ("--std", std)) if value is not None]
    if given:
        raise InvalidInputError(f"{', '.join(given)}: {path} gives the preprocessing; edit that file to change it, or leave the flags out")
    config = _read_json(path, "save it with processor.save_pretrained(folder)")
    return (*_processor_geometry(config, path), True)


def _processor_geometry(config: Mapping, path: Path) -> tuple[int, ImageTransform]:
    kind = str(config.get("image_processor_type", ""))
    resampler = "pil" if kind.endswith("Pil") else "torchvision"
    if not config.get("do_rescale", True) or not np.isclose(float(config.get("rescale_factor", 1 / 255)), 1 / 255, rtol=1e-9, atol=0):
        raise InvalidInputError(
            f"{path}: do_rescale {config.get('do_rescale', True)}, rescale_factor {config.get('rescale_factor')}: Backdrop reproduces "
            "the 1/255 rescale of 0..255 pixels only; fix the file"
        )
    if config.get("do_normalize", True):
        if config.get("image_mean") is None or config.get("image_std") is None:
            raise InvalidInputError(f"{path}: no image_mean or image_std; add them to the file")
        mean, std = config["image_mean"], config["image_std"]
    else:
        mean, std = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    size = config.get("size") or {}
    if not config.get("do_resize", True) or not isinstance(size, Mapping):
        raise InvalidInputError(f"{path}: no resize (do_resize, size); Backdrop's images must be resized to the network's input: fix the file")
    crop_pct = config.get("crop_pct")
    if size.get("height") and size.get("width"):
        if size["height"] != size["width"]:
            raise InvalidInputError(f"{path}: size {size['height']}x{size['width']} is not square; Backdrop feeds square images")
        resize = input_size = int(size["height"])
    elif size.get("shortest_edge"):
        edge = int(size["shortest_edge"])
        resize = input_size = edge
        if crop_pct is not None and edge < 384 and "ConvNext" in kind:  # ConvNextImageProcessor.resize: edge / crop_pct, then crop
            resize = int(edge / float(crop_pct))
    else:
        raise InvalidInputError(f"{path}: size {dict(size)} has neither height/width nor shortest_edge; fix the file")
    crop = config.get("crop_size") or {}
    if config.get("do_center_crop") and isinstance(crop, Mapping) and crop.get("height"):
        if crop.get("height") != crop.get("width"):
            raise InvalidInputError(f"{path}: crop_size {crop.get('height')}x{crop.get('width')} is not square; Backdrop feeds square images")
        input_size = int(crop["height"])
    resample = _RESAMPLE.get(config.get("resample", 2))
    if resample is None:
        raise InvalidInputError(f"{path}: resample {config.get('resample')!r} is not a PIL resampling number 0-5; fix the file")
    transform = ImageTransform(
        mean, std, resize, int((resize - input_size) / 2.0), resample, resampler, f"preprocessor_config.json ({kind or 'no image_processor_type'})"
    )
    transform.check_input_size(input_size)
    return input_size, transform


def check_processor_transform(folder: Path, input_size: int, transform: ImageTransform) -> None:
    """Registration's check: Backdrop's preprocessing equals ``AutoImageProcessor.from_pretrained(folder)`` on a probe image."""
    from PIL import Image
    AutoImageProcessor = import_optional("transformers", extra="transformers").AutoImageProcessor

    try:
        processor = AutoImageProcessor.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
    except (ValueError, OSError, KeyError) as err:
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        raise InvalidInputError(f"{folder}: transformers cannot read its image processor ({reason})") from err
    image = np.random.default_rng(0).integers(0, 256, (1, 256, 256, 3), dtype=np.uint8)
    expected = processor(images=Image.fromarray(image[0]), return_tensors="pt")["pixel_values"]
    ours = transform.normalise(torch.from_numpy(transform.resize_and_crop(image, input_size)).permute(0, 3, 1, 2))
    if expected.shape != ours.shape or not torch.allclose(expected.float(), ours, atol=1e-4, rtol=0):
        raise InvalidInputError(
            f"{folder}: Backdrop cannot reproduce {type(processor).__name__} (its output {tuple(expected.shape)} differs from Backdrop's "
            f"{tuple(ours.shape)}); remove preprocessor_config.json and give --input-size, --mean and --std"
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
