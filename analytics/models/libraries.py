"""Registering models that other libraries build and preprocess for: timm (:mod:`.timm_source`),
transformers (:mod:`.transformers_source`) and ONNX Runtime (:mod:`.onnx_source`).

Each source reads its own preprocessing (an :class:`~.transforms.ImageTransform` stored in the
spec); a value the model's files do not give comes from a parameter (``input_size``, ``mean``,
``std``, ``crop_pct``, ``interpolation``), and a model whose preprocessing cannot be read is
refused with one line naming what is missing and the parameter that supplies it (the command line
names its flags instead). As for every source,
the checkpoint is copied into the workspace and a forward pass on a dummy batch must succeed before
anything is stored.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from analytics.data import LabelSpace, extracted
from analytics.exceptions import InvalidInputError
from analytics.team import require_permission
from analytics.workspace import Workspace

from .checkpoints import _check_classes, read_state_dict
from .onnx_source import _OnnxClassifier, onnx_transform, read_onnx_graph
from .registry import _check_spec, _register_copied
from .spec import ModelSpec
from .timm_source import _TimmClassifier, build_timm, check_timm_arch, check_timm_transform, read_timm_transform
from .transformers_source import (
    _TransformersClassifier,
    check_folder,
    classifier_name,
    config_labels,
    find_model_folder,
    load_transformers,
    read_processor_transform,
)
from .transforms import ImageTransform


def register_timm(
    workspace: Workspace,
    name: str,
    *,
    arch: str,
    checkpoint: str | os.PathLike,
    label_space: LabelSpace,
    input_size: int | None = None,
    mean: tuple[float, float, float] | None = None,
    std: tuple[float, float, float] | None = None,
    crop_pct: float | None = None,
    interpolation: str | None = None,
    replace: bool = False,
) -> ModelSpec:
    """Register a timm architecture with a user checkpoint (copied into the workspace).

    Parameters
    ----------
    arch : str
        A name ``timm.create_model`` knows (``resnet18``, ``vit_tiny_patch16_224``,
        ``convnext_atto.d2_in1k``, …); built with ``pretrained=False`` (nothing is downloaded).
    checkpoint : path-like
        A state dict (``.pt``/``.pth`` via ``torch.load(weights_only=True)``, or ``.safetensors``);
        the number of classes is read from the classifier named by timm's ``pretrained_cfg``.
    label_space : LabelSpace
        As many names as the checkpoint has classes.
    input_size, mean, std, crop_pct, interpolation : optional
        Override timm's ``pretrained_cfg`` (None: read from it). ``input_size`` other than the
        architecture's goes to ``timm.create_model(img_size=...)`` where the model takes one.
    replace : bool, default=False

    Returns
    -------
    ModelSpec
        Source ``timm``, preprocessing ``transform`` (timm's eval transform), embedding the
        pre-logits features.

    Raises
    ------
    InvalidInputError
        Unknown architecture, a checkpoint that does not fit it, wrong number of classes, a
        preprocessing value missing, or a forward pass that fails.
    """
    require_permission(workspace, "register_models")
    path = Path(checkpoint).resolve()
    check_timm_arch(arch, path)
    state = read_state_dict(path)
    net, classifier = build_timm(arch, state, path, input_size)
    _check_classes(path, classifier, state[f"{classifier}.weight"].shape[0], label_space)
    size, transform, config = read_timm_transform(net, input_size=input_size, mean=mean, std=std, crop_pct=crop_pct, interpolation=interpolation)
    check_timm_transform(size, transform, config, path)
    network = _TimmClassifier(net).eval()
    with torch.inference_mode():
        _, embedding = network(torch.zeros(1, 3, size, size))
    embedding_layer = f"pre-logits features (forward_head(pre_logits=True), {embedding.shape[1]}-d, before the {classifier!r} classifier)"
    spec = _transformed_spec(name, "timm", arch, path, label_space, size, transform, embedding_layer)
    return _register_copied(workspace, spec, network, path, replace)


def register_transformers(
    workspace: Workspace,
    name: str,
    *,
    folder: str | os.PathLike,
    label_space: LabelSpace | None = None,
    input_size: int | None = None,
    mean: tuple[float, float, float] | None = None,
    std: tuple[float, float, float] | None = None,
    replace: bool = False,
) -> ModelSpec:
    """Register a transformers image classifier from a ``save_pretrained`` folder (copied into the workspace).

    Parameters
    ----------
    folder : path-like
        config.json, safetensors weights and (for its preprocessing) preprocessor_config.json; or a
        zip of that folder (at its top or inside one enclosing folder), as the Models page uploads.
        Refused: pickled weights (``pytorch_model.bin``), ``.py`` files, symlinks, ``auto_map``.
    label_space : LabelSpace or None
        None: config.json's ``id2label`` as a custom label space.
    input_size, mean, std : optional
        For a folder without preprocessor_config.json, or to replace its image processor (all three
        needed then): Backdrop's resize to ``input_size``, then this normalisation. Otherwise the
        image processor ``AutoImageProcessor`` loads gives the preprocessing, read from its
        attributes and checked against it on a probe image.
    replace : bool, default=False

    Returns
    -------
    ModelSpec
        Source ``transformers``, arch the model class, preprocessing ``transform``, embedding the
        classifier's input.

    Raises
    ------
    InvalidInputError
        A refused folder, a model transformers cannot build, preprocessing that cannot be read or
        reproduced, a label space of the wrong size, or a forward pass that fails.
    """
    require_permission(workspace, "register_models")
    with extracted(Path(folder).resolve()) as (root, shown):  # a zip: extracted to a temporary folder, removed after
        path = find_model_folder(root, shown)
        return _register_transformers(workspace, name, path, shown, label_space, input_size, mean, std, replace)


def _register_transformers(
    workspace: Workspace, name: str, path: Path, shown: Path, label_space: LabelSpace | None, input_size: int | None, mean, std, replace: bool
) -> ModelSpec:
    config = check_folder(path)
    if label_space is None:
        label_space = LabelSpace("custom", config_labels(config, path), origin=f"{shown} config.json id2label")
    size, transform = read_processor_transform(path, input_size=input_size, mean=mean, std=std)  # the parity probe included
    model = load_transformers(path)
    n_labels = int(model.config.num_labels)
    if n_labels != len(label_space.names):
        raise InvalidInputError(
            f"{path}: the model has {n_labels} labels but the {label_space.kind} label space has {len(label_space.names)}; "
            "choose the label space the model was trained on (`label_space`), or leave it out to use config.json's id2label"
        )
    head = classifier_name(model, n_labels, path)
    network = _TransformersClassifier(model, head).eval()
    with torch.inference_mode():
        _, embedding = network(torch.zeros(1, 3, size, size))
    embedding_layer = f"input of the classifier {head!r} ({embedding.shape[1]}-d, the pooled representation it classifies)"
    spec = _transformed_spec(name, "transformers", type(model).__name__, path, label_space, size, transform, embedding_layer, origin=shown)
    return _register_copied(workspace, spec, network, path, replace)


def register_onnx(
    workspace: Workspace,
    name: str,
    *,
    checkpoint: str | os.PathLike,
    label_space: LabelSpace,
    input_size: int | None = None,
    mean: tuple[float, float, float] | None = None,
    std: tuple[float, float, float] | None = None,
    crop_pct: float | None = None,
    interpolation: str | None = None,
    replace: bool = False,
) -> ModelSpec:
    """Register an ONNX classifier (copied into the workspace), run by ONNX Runtime.

    Parameters
    ----------
    checkpoint : path-like
        One self-contained ``.onnx`` file: one float image input (n, 3, s, s) or (n, s, s, 3), the
        logits as first output, optionally the embedding as a second 2-D output.
    label_space : LabelSpace
        One name per logit (a labels file, or imagenet / in9).
    input_size : int or None
        Needed when the graph's side is dynamic; must match a fixed one.
    mean, std : three floats
        Required: the graph does not record its normalisation.
    crop_pct, interpolation : optional
        A centre crop and resize as torchvision's ``Resize`` + ``CenterCrop`` on PIL images; without
        them Backdrop's own resize (area averaging) to the input side.
    replace : bool, default=False

    Raises
    ------
    InvalidInputError
        An unreadable or refused graph (external weights, custom operators), a missing preprocessing
        value (naming its parameter), a label space of the wrong size, or a forward pass that fails.
    """
    require_permission(workspace, "register_models")
    path = Path(checkpoint).resolve()
    graph = read_onnx_graph(path, input_size)  # refuses a tensor over MAX_ONNX_TENSOR_BYTES, before any session runs
    size, transform = onnx_transform(graph, path, input_size=input_size, mean=mean, std=std, crop_pct=crop_pct, interpolation=interpolation)
    network = _OnnxClassifier(path, graph, f"{path} (model {name!r})")
    logits, embedding = network(torch.zeros(max(graph.batch or 1, 1), 3, size, size))
    if logits.shape[1] != len(label_space.names):
        raise InvalidInputError(
            f"{path}: the graph has {logits.shape[1]} outputs but the {label_space.kind} label space has {len(label_space.names)}; "
            "choose the label space the model was trained on (`label_space`)"
        )
    embedding_layer = f"second output of the graph ({embedding.shape[1]}-d)" if graph.embedding else "logits (the graph has no second output)"
    spec = _transformed_spec(name, "onnx", "onnx", path, label_space, size, transform, embedding_layer)
    return _register_copied(workspace, spec, network, path, replace)


def _transformed_spec(
    name: str, source: str, arch: str, path: Path, label_space: LabelSpace, input_size: int, transform: ImageTransform, embedding_layer: str,
    *, origin: Path | None = None,
) -> ModelSpec:
    """The checked spec of a model that reads its own preprocessing (``preprocessing='transform'``)."""
    spec = ModelSpec(
        name=name, source=source, arch=arch, checkpoint=str(path), label_space=label_space, input_size=input_size,
        preprocessing="transform", embedding_layer=embedding_layer, n_params=0, origin=str(origin or path), transform=transform,
    )  # fmt: skip
    _check_spec(spec)
    return spec
