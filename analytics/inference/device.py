"""CPU threads for model work: the cores this process may use, and torch using them for a block."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from analytics._threads import cpu_count

__all__ = ["cpu_count", "cpu_threads", "model_threads"]


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
