"""Results as strict JSON: what job results store and what the CLI prints with ``--json``."""

from __future__ import annotations

import json
import math


def to_json(result: object, *, indent: int | None = None) -> str:
    """``result`` as strict JSON: numpy scalars and arrays become plain values, NaN and ±inf ``null``."""
    return json.dumps(_plain(result), indent=indent, allow_nan=False)


def _plain(value):
    """A copy of ``value`` made of JSON types only (dict keys as strings, non-finite floats as None)."""
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        value = value.tolist()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (str, int)):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
