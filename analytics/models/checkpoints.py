"""Checkpoints: reading state dicts safely (``torch.load(weights_only=True)`` or safetensors), and
copying checkpoint files into ``<workspace>/checkpoints/`` (content addressed) so that a workspace
folder stays self-contained.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace

from .spec import ModelSpec

CHECKPOINT_DIR = "checkpoints"


def read_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Read a state dict safely (``torch.load(weights_only=True)`` or safetensors).

    Accepts a plain state dict or one nested under ``state_dict``/``model``/``model_state_dict``;
    strips ``module.`` (DataParallel) and ``model.`` prefixes.

    Returns
    -------
    state : dict of str to Tensor
        Parameter and buffer name -> tensor (shapes and dtypes as saved), on the CPU.

    Raises
    ------
    InvalidInputError
        Missing, truncated or corrupt file; a pickle that would run code; not a state dict.
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"{path}: checkpoint file not found")
    if path.suffix == ".safetensors":
        try:
            raw = load_file(path, device="cpu")
        except (SafetensorError, OSError, ValueError) as err:
            raise InvalidInputError(f"{path}: not a readable safetensors file ({err}); re-export it") from err
    else:
        raw = _torch_load(path)
    return _as_state_dict(raw, path)


def _torch_load(path: Path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        raise InvalidInputError(
            f"{path}: refused to load: the file holds Python objects that would run code when unpickled "
            "(torch.load with weights_only=True allows tensors and plain containers only); save a plain "
            "state dict with torch.save(model.state_dict(), path)"
        ) from err
    except (RuntimeError, EOFError, OSError, ValueError, zipfile.BadZipFile, KeyError, IndexError) as err:
        raise InvalidInputError(
            f"{path}: not a readable PyTorch checkpoint (truncated or corrupt: {str(err).splitlines()[0][:200]}); "
            "copy the file again or re-save it with torch.save"
        ) from err


def _as_state_dict(raw, path: Path) -> dict[str, torch.Tensor]:
    if isinstance(raw, Mapping):
        for key in ("state_dict", "model_state_dict", "model"):
            if isinstance(raw.get(key), Mapping):
                raw = raw[key]
                break
    if not isinstance(raw, Mapping) or not raw or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in raw.items()):
        found = type(raw).__name__ if not isinstance(raw, Mapping) else "a dict that does not map names to tensors"
        raise InvalidInputError(
            f"{path}: not a state dict (found {found}); save the weights with torch.save(model.state_dict(), path)"
        )
    state = {}
    for key, value in raw.items():
        while key.startswith(("module.", "model.")):
            key = key.split(".", 1)[1]
        state[key] = value
    return state


def _copy_checkpoint(workspace: Workspace, path: Path) -> str:
    """Copy a checkpoint into the workspace (content addressed); returns its relative path."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    relative = f"{CHECKPOINT_DIR}/{digest.hexdigest()[:16]}{path.suffix}"
    target = workspace.root / relative
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        os.close(fd)
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
    return relative


def _checkpoint_path(workspace: Workspace | None, spec: ModelSpec) -> Path:
    path = Path(spec.checkpoint)
    if not path.is_absolute() and workspace is not None:
        path = workspace.root / path
    return path


def _pin_checkpoint(workspace: Workspace, spec: ModelSpec) -> ModelSpec:
    """A spec whose checkpoint file lies outside the workspace, with the file copied in (content
    addressed): the spec, and so the model's content key, then names the weights' bytes."""
    path = Path(spec.checkpoint)
    if spec.source not in ("torchvision", "torchscript") or not path.is_absolute() or not path.is_file():
        return spec
    return dataclasses.replace(spec, checkpoint=_copy_checkpoint(workspace, path), origin=spec.origin or str(path))
