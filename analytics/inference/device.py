"""CPU threads for model work (the cores this process may use, and torch using them for a block),
and host memory for batches bound for an accelerator."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from analytics._threads import cpu_count

__all__ = ["cpu_count", "cpu_threads", "empty_batch", "model_threads"]


def empty_batch(shape: tuple[int, ...], *, page_locked: bool = False) -> np.ndarray:
    """An uninitialised uint8 array of ``shape``; with ``page_locked``, in page-locked (pinned) memory.

    A batch in page-locked memory goes to a CUDA device by DMA, asynchronously (``non_blocking``
    copies return at once), where pageable memory is first copied by the CPU into a staging buffer:
    on an H100 that upload took a third as long as Lite0's forward pass. The memory comes from
    torch's caching host allocator (no system call per batch once warm) and returns to it when the
    array is collected, so a caller keeps the array until the copy from it is done.
    """
    if not page_locked:
        return np.empty(shape, np.uint8)
    return torch.empty(shape, dtype=torch.uint8, pin_memory=True).numpy()


def model_threads() -> int:
    """Threads a CPU model runs on: ``OMP_NUM_THREADS`` when it is set to a positive integer (whoever
    shares the machine with other work said so), else every core this process may run on."""
    try:
        wanted = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        return cpu_count()
    return min(wanted, cpu_count()) if wanted > 0 else cpu_count()


@contextmanager
def cpu_threads(device: torch.device) -> Iterator[None]:
    """On CPU, let torch use :func:`model_threads` threads (restored afterwards)."""
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(model_threads())
    try:
        yield
    finally:
        torch.set_num_threads(before)
