"""Checks shared by every public function: they raise :class:`InvalidInputError` with a message
that names the parameter, the rule and the value found. Also the one place a typed path's ``~`` is
expanded (:func:`user_path`) and a user's JSON file is parsed (:func:`read_json`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np

from .exceptions import InvalidInputError


def check_fraction(value: float, name: str, *, low_open: bool = True) -> float:
    """Return ``value`` as float if it lies in (0, 1] (or [0, 1] with ``low_open=False``)."""
    if not isinstance(value, Real) or np.isnan(value):
        raise InvalidInputError(f"{name} must be a number in (0, 1]; got {value!r}")
    ok = (0 < value <= 1) if low_open else (0 <= value <= 1)
    if not ok:
        interval = "(0, 1]" if low_open else "[0, 1]"
        raise InvalidInputError(f"{name} must be in {interval}; got {value}")
    return float(value)


def check_positive_int(value: int, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` if it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise InvalidInputError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def check_choice(value: str, name: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``; the message lists them."""
    allowed = list(choices)
    if value not in allowed:
        raise InvalidInputError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def check_image_batch(images: np.ndarray, name: str = "images") -> np.ndarray:
    """Check an RGB batch of shape (n, height, width, 3), dtype uint8."""
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[-1] != 3:
        raise InvalidInputError(f"{name} must have shape (n, height, width, 3); got {images.shape}")
    if images.dtype != np.uint8:
        raise InvalidInputError(f"{name} must be uint8; got {images.dtype}")
    return images


def check_mask_batch(masks: np.ndarray, shape: tuple[int, int, int], name: str = "masks") -> np.ndarray:
    """Check foreground masks of shape (n, height, width) matching ``shape``; return them as float32
    in [0, 1]."""
    masks = np.asarray(masks)
    if masks.shape != shape:
        raise InvalidInputError(f"{name} must have shape {shape} to match the images; got {masks.shape}")
    if masks.dtype == np.bool_:
        return masks.astype(np.float32)
    masks = masks.astype(np.float32)
    if masks.size and (masks.min() < 0 or masks.max() > 1):
        raise InvalidInputError(f"{name} must hold values in [0, 1]; got range [{masks.min()}, {masks.max()}]")
    return masks


def check_finite(array: np.ndarray, name: str) -> np.ndarray:
    """Raise if ``array`` holds NaN or infinity."""
    array = np.asarray(array)
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        bad = int((~np.isfinite(array)).sum())
        raise InvalidInputError(f"{name} holds {bad} NaN or infinite values; clean or drop those rows")
    return array


def user_path(text: str | os.PathLike, name: str = "path") -> Path:
    """``Path(text).expanduser()``: a path a user typed, ``~`` and ``~user`` expanded.

    Raises
    ------
    InvalidInputError
        ``~user`` names no account on this machine (or ``~`` has no home folder): pathlib's
        RuntimeError as one line naming ``name``, the value and the fix.
    """
    try:
        return Path(text).expanduser()
    except RuntimeError as err:  # "Could not determine home directory."
        head = str(text).split("/", 1)[0].split(os.sep, 1)[0]
        raise InvalidInputError(
            f"{name} {str(text)!r}: {head!r} names no home folder on this machine (no such user); type the full path without '~'"
        ) from err


def parse_json(text: str, shown: object, what: str, fix: str) -> Any:
    """``json.loads(text)`` of a user's file; a failure is one line naming ``shown``, ``what`` it should be and ``fix``.

    Raises
    ------
    InvalidInputError
        Not JSON; nested too deeply for Python's parser (its RecursionError, e.g. ``[[[...]]]``
        100 000 deep, would otherwise end in a traceback).
    """
    try:
        return json.loads(text)
    except RecursionError:  # a RuntimeError: no traceback for a file a user gave
        raise InvalidInputError(f"{shown}: {what} nested too deeply to read (arrays or objects inside each other past Python's limit); {fix}") from None
    except ValueError as err:
        raise InvalidInputError(f"{shown}: not a readable {what} ({err}); {fix}") from err


def read_json(path: Path, what: str, fix: str, *, shown: object = None) -> Any:
    """The parsed content of a user's JSON file (UTF-8) by :func:`parse_json`; a missing or unreadable file is one line too."""
    shown = path if shown is None else shown
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInputError(f"{shown}: not found; {fix}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidInputError(f"{shown}: not a readable {what} ({err}); {fix}") from err
    return parse_json(text, shown, what, fix)
