"""Attributes of the library replaced for the length of a ``with`` block (benchmarks that time or
stand in for part of an engine)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def patched(patches: dict[tuple[object, str], object]) -> Iterator[None]:
    """Set each ``(owner, name)`` to its value for the block; the originals come back after it,
    as stored (a class's classmethod or staticmethod stays one)."""
    originals = {key: vars(key[0])[key[1]] for key in patches}
    try:
        for (owner, name), value in patches.items():
            setattr(owner, name, value)
        yield
    finally:
        for (owner, name), original in originals.items():
            setattr(owner, name, original)
