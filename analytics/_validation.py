"""Checks shared by every public function: they raise :class:`InvalidInputError` with a message
that names the parameter, the rule and the value found. Also the one place a typed path's ``~`` is
expanded (:func:`user_path`), a user's JSON file is parsed (:func:`read_json`), and messages name
parameters as Python keywords or, for the command line, as its options (:class:`ParameterNames`)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .exceptions import InvalidInputError


@dataclass(frozen=True)
class ParameterNames:
    """How a library message names a parameter: as the Python keyword (the default, ``layout='coco'``)
    or, through ``flags`` (parameter -> option), as a command line's option (``--layout coco``).
    Library functions whose messages a command line shows take ``names: ParameterNames | None``; the
    command passes its flags, every other caller none, so a notebook's message names what it typed.
    :meth:`translate` rewrites a message written with the parameters' names (a model source's, which
    the command line catches) the same way."""

    flags: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, parameter: str) -> str:
        return self.flags.get(parameter, parameter)

    def setting(self, parameter: str, *values: object) -> str:
        """``layout='coco' or 'voc'`` (with flags: ``--layout coco or voc``)."""
        if parameter in self.flags:
            return f"{self.flags[parameter]} {' or '.join(map(str, values))}"
        return f"{parameter}={' or '.join(map(repr, values))}"

    def translate(self, message: str) -> str:
        """``message`` with each parameter of :attr:`flags` that it marks as code (```crop_pct```,
        as the model sources' messages name their parameters) written as its option (``--crop-pct``);
        other words, ``mean`` in "did you mean" included, stay as they are."""
        return re.sub(r"`([A-Za-z_]\w*)`", lambda found: self.flags.get(found.group(1), found.group(0)), message)


def positive_limit(variable: str, default: int, unit: str) -> int:
    """A limit from the environment variable ``variable`` (a positive whole number of ``unit``), else ``default``.

    Raises
    ------
    InvalidInputError
        The variable is set to something else: one line naming it, the value and the default.
    """
    raw = os.environ.get(variable, "").strip()
    limit = int(raw) if raw.isdigit() else 0 if raw else default
    if limit <= 0:
        raise InvalidInputError(f"{variable} must be a positive whole number of {unit}; got {raw!r}; unset it for the default {default}")
    return limit


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


#: The largest JSON or text file a reader takes whole unless it gives its own limit (16 MiB): a
#: config.json, a class list, an ImageNet or IN-9 map, a VOC split or label map is kilobytes (an
#: ImageNet-21k class list under 1 MB), and a file named or uploaded may be any size (a sparse file
#: of gigabytes, ``/dev/zero``): read whole, it would take the server's memory.
MAX_SMALL_FILE_BYTES = 16 << 20


def read_json(path: Path, what: str, fix: str, *, shown: object = None, max_bytes: int = MAX_SMALL_FILE_BYTES, too_large: str = "") -> Any:
    """The parsed content of a user's JSON file (UTF-8) by :func:`parse_json`; a missing or unreadable file is one line too.

    At most ``max_bytes`` (default :data:`MAX_SMALL_FILE_BYTES`) and one more are read: a larger
    file is refused before it is parsed (parsed JSON takes several times its size in memory), in one
    line naming the file, its size, the limit and ``too_large`` (how to raise the limit or split the
    file; default ``fix``).
    """
    shown = path if shown is None else shown
    try:
        text = read_at_most(path, what, too_large or fix, shown=shown, max_bytes=max_bytes).decode("utf-8")
    except FileNotFoundError:
        raise InvalidInputError(f"{shown}: not found; {fix}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidInputError(f"{shown}: not a readable {what} ({err}); {fix}") from err
    return parse_json(text, shown, what, fix)


def read_at_most(path: Path, what: str, fix: str, *, shown: object = None, max_bytes: int = MAX_SMALL_FILE_BYTES) -> bytearray:
    """The bytes of a user's file, read a MiB at a time and at most ``max_bytes`` and one more: a
    larger file (also a pipe or a device that never ends) is refused in one line naming ``shown``
    (default ``path``), ``what`` it is, its size, the limit and ``fix``.

    Raises
    ------
    InvalidInputError
        The file is larger than ``max_bytes``.
    OSError
        It cannot be opened or read (the caller says what to do).
    """
    with path.open("rb") as file:
        data = _read_at_most(file, max_bytes)
    if data is None:
        size = path.stat().st_size if path.is_file() else max_bytes + 1  # a pipe or device: more than the limit
        raise InvalidInputError(
            f"{path if shown is None else shown}: the {what} is {_mib(size)} ({size} bytes), past the limit of {_mib(max_bytes)} ({max_bytes} bytes); {fix}"
        )
    return data


def _read_at_most(file: BinaryIO, max_bytes: int) -> bytearray | None:
    """The whole of ``file``, read a MiB at a time (``read(n)`` would hold ``n`` bytes at once); None
    as soon as it holds more than ``max_bytes``."""
    if os.fstat(file.fileno()).st_size > max_bytes:  # a regular file: refused unread
        return None
    data = bytearray()
    while chunk := file.read(1 << 20):
        data += chunk
        if len(data) > max_bytes:  # a file that grew, or a pipe
            return None
    return data


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"
