"""Checkpoints: reading state dicts safely (``torch.load(weights_only=True)`` or safetensors), and
copying checkpoint files into ``<workspace>/checkpoints/`` (content addressed) so that a workspace
folder stays self-contained.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import pickle
import re
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file

from analytics.data import LabelSpace
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace

from .sources._base import get_source
from .spec import ModelSpec

CHECKPOINT_DIR = "checkpoints"
logger = logging.getLogger(__name__)


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
            raise _bad_safetensors(path, err) from err
    else:
        raw = _torch_load(path)
    return _as_state_dict(raw, path)


def check_safetensors(path: Path) -> None:
    """Read a safetensors file's header only (no tensor is loaded): a header length past the file or
    safetensors' own limit, a tensor whose shape overflows or whose bytes lie outside the file is
    refused before a library (transformers) loads it and raises its own error.

    Raises
    ------
    InvalidInputError
        The header cannot be read; the message names the file and the library's reason.
    """
    try:
        with safe_open(str(path), framework="pt", device="cpu") as handle:
            handle.keys()
    except (SafetensorError, OSError, ValueError) as err:
        raise _bad_safetensors(path, err) from err


def _bad_safetensors(path: Path, err: Exception) -> InvalidInputError:
    reason = " ".join(str(err).split())[:200] or type(err).__name__
    return InvalidInputError(f"{path}: not a readable safetensors file ({reason}); re-export it (safetensors.torch.save_file or save_pretrained)")


def _torch_load(path: Path):
    """``torch.load(weights_only=True)`` with every failure as one :class:`InvalidInputError` line: not a
    checkpoint at all, a TorchScript archive, Python objects that would run code, or a corrupt file.
    torch's warnings never reach the terminal: folded into the error, or logged after a good load."""
    with open(path, "rb") as handle:
        header = handle.read(len(_ZIP_MAGIC))
    if not header.startswith((_ZIP_MAGIC, _PICKLE_MAGIC)):
        raise InvalidInputError(
            f"{path}: not a PyTorch checkpoint (corrupt or another format: neither the zip archive nor the pickle "
            "that torch.save writes); give a state dict saved with torch.save(model.state_dict(), path) or a .safetensors file"
        )
    if header.startswith(_ZIP_MAGIC) and _is_torchscript(path):
        raise InvalidInputError(
            f"{path}: a TorchScript archive, not a state dict; register it as TorchScript (`source` 'torchscript') "
            "or save the weights with torch.save(model.state_dict(), path)"
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            raw = torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as err:
            reason = _unpickler_reason(err)
            if _RUNS_CODE.search(reason) is None:
                raise _corrupt(path, reason, caught) from err
            raise InvalidInputError(
                f"{path}: refused to load: the file holds Python objects that would run code when unpickled ({reason}; "
                "torch.load with weights_only=True allows tensors and plain containers only); save a plain "
                "state dict with torch.save(model.state_dict(), path)"
            ) from err
        except (RuntimeError, EOFError, OSError, ValueError, zipfile.BadZipFile, KeyError, IndexError, AttributeError) as err:
            raise _corrupt(path, _first_line(err), caught) from err
    for warning in caught:
        logger.warning("%s: %s", path, _first_line(warning.message))
    return raw


#: How the files of ``torch.save`` begin: a zip archive (the default since torch 1.6) or a pickle
#: (the legacy format; protocol 2 or later starts with the PROTO opcode).
_ZIP_MAGIC, _PICKLE_MAGIC = b"PK\x03\x04", b"\x80"
#: What the weights-only unpickler says when it refuses a global, a call or a class (rather than bytes it cannot parse).
_RUNS_CODE = re.compile(r"GLOBAL|unrecognized function|allowlisted")
#: The lines of torch's message around that reason.
_TORCH_ADVICE = ("Weights only load failed", "Please file an issue", "Check the documentation", "(1)", "(2)")


def _is_torchscript(path: Path) -> bool:
    """A zip made by ``torch.jit.save`` (its records include ``constants.pkl``), which ``torch.load``
    would hand to ``torch.jit.load`` with a warning."""
    try:
        with zipfile.ZipFile(path) as archive:
            return any(name.split("/", 1)[-1] == "constants.pkl" for name in archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return False  # a broken zip: torch.load says how


def _unpickler_reason(err: pickle.UnpicklingError) -> str:
    """The weights-only unpickler's own reason, without torch's paragraphs around it: the line naming
    a refused global, call or class if there is one, else the first line that is not torch's advice."""
    lines = [line.strip().removeprefix("WeightsUnpickler error:").strip() for line in str(err).splitlines()]
    reasons = [line for line in lines if line and not line.startswith(_TORCH_ADVICE)]
    refused = [line for line in reasons if _RUNS_CODE.search(line)]
    return _first_line((refused or reasons or [type(err).__name__])[0].split(". ", 1)[0])


def _first_line(value: object) -> str:
    lines = [line.strip() for line in str(value).splitlines() if line.strip()]
    return lines[0][:200] if lines else type(value).__name__


def _corrupt(path: Path, reason: str, caught: list[warnings.WarningMessage]) -> InvalidInputError:
    told = "".join(f"; torch warned: {_first_line(w.message)}" for w in caught[:1])
    return InvalidInputError(
        f"{path}: not a readable PyTorch checkpoint (truncated or corrupt: {reason}{told}); copy the file again or re-save it with torch.save"
    )


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


def _short_mismatch(err: RuntimeError) -> str:
    missing = re.findall(r'Missing key\(s\) in state_dict: (.*?)\.\s', str(err) + " ")
    unexpected = re.findall(r'Unexpected key\(s\) in state_dict: (.*?)\.\s', str(err) + " ")
    parts = []
    if missing:
        parts.append("missing " + missing[0][:150])
    if unexpected:
        parts.append("unexpected " + unexpected[0][:150])
    if not parts:
        parts.append(str(err).splitlines()[-1].strip()[:200])
    return "; ".join(parts)


def _check_classes(path: Path, layer: str, n_classes: int, label_space: LabelSpace) -> None:
    """A checkpoint's final layer ``layer`` must have one output per name of ``label_space``."""
    if n_classes != len(label_space.names):
        raise InvalidInputError(
            f"{path}: the checkpoint's final layer {layer!r} has {n_classes} classes but the {label_space.kind} label space "
            f"has {len(label_space.names)}; choose the label space the model was trained on (`label_space`)"
        )


def _copy_checkpoint(workspace: Workspace, path: Path) -> str:
    """Copy a checkpoint (a file, or a folder of files) into the workspace (content addressed); returns its relative path."""
    if path.is_dir():
        return _copy_folder(workspace, path)
    digest = hashlib.sha256()
    _hash_file(digest, path)
    relative = f"{CHECKPOINT_DIR}/{digest.hexdigest()[:16]}{path.suffix}"
    target = workspace.root / relative
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        os.close(fd)
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
    return relative


def _hash_file(digest, path: Path) -> None:
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)


def _copy_folder(workspace: Workspace, folder: Path) -> str:
    """Copy a model folder (``save_pretrained``'s files) into ``checkpoints/<digest>/``, the digest
    over every file's relative path and bytes; returns its relative path."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        _hash_file(digest, path)
    relative = f"{CHECKPOINT_DIR}/{digest.hexdigest()[:16]}"
    target = workspace.root / relative
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent, suffix=".tmp"))
        for path in files:
            copy = staging / path.relative_to(folder)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
        try:
            os.replace(staging, target)
        except OSError:  # another registration put the same folder there first
            shutil.rmtree(staging, ignore_errors=True)
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
    if not get_source(spec.source).copies_checkpoint or not path.is_absolute() or not path.exists():
        return spec
    return dataclasses.replace(spec, checkpoint=_copy_checkpoint(workspace, path), origin=spec.origin or str(path))
