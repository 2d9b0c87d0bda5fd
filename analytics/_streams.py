"""CUDA work queued beside a model's: each thread's own stream (:func:`own_stream`), and uploads
that do not wait behind the forward passes already queued (:func:`upload`).

On one CUDA stream every operation waits for those queued before it. A batch's upload waited for
the previous batch's forward pass, so the GPU's compute idled while the copy ran (on an H100 a
256-image batch is ~38 MB against ~14 ms of Lite0's forward pass), and a thread that pasted the
next composites on the device and read them back waited for every forward pass queued ahead of
it. On a stream of its own such work runs beside the model's; the model's stream then waits only
for what it reads (``wait_stream``), and ``record_stream`` keeps the caching allocator from
handing the memory back to the other stream while the model still reads it (PyTorch's *CUDA
semantics* notes). Off CUDA there are no streams and nothing changes.
"""

from __future__ import annotations

import threading

import numpy as np
import torch

_local = threading.local()


def own_stream(device: torch.device) -> torch.cuda.Stream | None:
    """This thread's own CUDA stream on ``device``, made on first use; None off CUDA.

    Use it as ``with torch.cuda.stream(own_stream(device)):`` (a no-op for None). A stream per
    thread, not one shared: two threads queueing on one stream would wait for each other again.
    """
    if device.type != "cuda":
        return None
    index = torch.cuda.current_device() if device.index is None else device.index
    streams = _local.__dict__.setdefault("streams", {})
    if index not in streams:
        streams[index] = torch.cuda.Stream(index)
    return streams[index]


def upload(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """``array`` as a tensor on ``device``, ready for the work the caller queues next.

    On CUDA the copy runs on this thread's :func:`own_stream`, beside the work queued on the
    current stream, which waits for it before its next operation; from page-locked memory the call
    returns at once, so the caller keeps ``array`` until that work is done (as for any
    ``non_blocking`` copy). Elsewhere a plain copy (none on the CPU).
    """
    tensor = torch.from_numpy(array)
    stream = own_stream(device)
    if stream is None:
        return tensor.to(device)
    current = torch.cuda.current_stream(stream.device)
    with torch.cuda.stream(stream):
        out = tensor.to(stream.device, non_blocking=True)
    current.wait_stream(stream)
    out.record_stream(current)  # freed memory is not reused on the copy stream before the current stream is done with it
    return out
