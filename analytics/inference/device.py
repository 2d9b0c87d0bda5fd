"""CPU threads for model work (the cores this process may use, and torch using them for a block),
and host memory for batches bound for an accelerator."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from analytics._threads import cpu_count

#: Images per batch of a run when the caller names none, on an accelerator: the size every GPU
#: figure in ``benchmarks/gpu.py`` was measured at (Lite0 on an H100: 17,900 images/s). A model that
#: does not fit halves its share of each batch until it does (the engine's out-of-memory back-off).
ACCELERATOR_BATCH = 256
#: The same on a CPU, where a model runs micro-batches of 4 whatever the batch (``LoadedModel``):
#: a larger batch only holds more composites in memory.
CPU_BATCH = 32


def default_batch_size(device: torch.device) -> int:
    """Images per batch of a run on ``device`` when the caller names none."""
    return CPU_BATCH if device.type == "cpu" else ACCELERATOR_BATCH


def empty_batch(shape: tuple[int, ...], *, page_locked: bool = False) -> np.ndarray:
    """An uninitialised uint8 array of ``shape``; with ``page_locked``, in page-locked (pinned) memory.

    A batch in page-locked memory goes to a CUDA device by DMA, asynchronously (``non_blocking``
    copies return at once), where a large pageable upload is staged by the CPU and returns only
    after the work queued on the device (on an H100, a 38 MB batch waited 441 ms behind a 549 ms
    queue; from page-locked memory the call took 0.2 ms). The memory comes from
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


@dataclass
class HostCopy:
    """Tensors on their way to the host: :func:`to_host`. :meth:`arrays` waits for them.

    Attributes
    ----------
    tensors : list of Tensor
        On the CPU (page-locked, still being written until ``done`` when it is set).
    done : torch.cuda.Event or None
        Marks the end of the copies (None: already on the host).
    keep : object
        Kept alive until the copies are done: a batch whose upload is queued before them.
    """

    tensors: list[torch.Tensor]
    done: torch.cuda.Event | None = None
    keep: object = None

    def arrays(self) -> list[np.ndarray]:
        """The tensors as arrays, once copied."""
        if self.done is not None:
            self.done.synchronize()
        self.keep = None
        return [tensor.numpy() for tensor in self.tensors]


def to_host(tensors: Sequence[torch.Tensor], *, keep: object = None) -> HostCopy:
    """Start copying ``tensors`` to the host, without waiting for the device.

    A CUDA tensor's ``.cpu()`` waits for everything queued on the device; reading each batch's
    results that way left the GPU idle while the host handled them. Here the copies go into
    page-locked memory behind the queued work, so a caller can queue the next batch first and read
    these (:meth:`HostCopy.arrays`) while it runs. Tensors on the CPU are returned as they are.
    """
    if not tensors or tensors[0].device.type != "cuda":
        return HostCopy([tensor.cpu() for tensor in tensors], None, keep)
    host = [torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True) for tensor in tensors]
    for target, tensor in zip(host, tensors):
        target.copy_(tensor, non_blocking=True)
    done = torch.cuda.Event()
    done.record()
    return HostCopy(host, done, keep)
