"""CPU threads for model work: the cores this process may use, and torch using all of them for a block."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch


def cpu_count() -> int:
    """CPU cores this process may run on."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


@contextmanager
def cpu_threads(device: torch.device) -> Iterator[None]:
    """On CPU, let torch use every core this process may run on (restored afterwards)."""
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(cpu_count())
    try:
        yield
    finally:
        torch.set_num_threads(before)
