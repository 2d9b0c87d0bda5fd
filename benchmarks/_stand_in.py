"""A stand-in accelerator: the host side of the GPU paths, timed on a machine without a GPU.

:class:`StandInModel` reports a CUDA device and sleeps ``len(batch) / rate`` seconds a batch,
returning outputs of the real model's shapes from memory; everything else (reading and
compositing images, cutting views, the signals, writing rows and arrays) is the library's own,
with its threads placed as for an accelerator. A path's rate over ``rate`` is the share of the
time the host keeps such a device busy. It is not a GPU figure: batches are made in ordinary
memory (page-locked memory needs CUDA), uploads are skipped, and a batch's signals (softmax,
top-k) run on the host instead of the device, so it errs low.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import torch

from analytics.inference import device as device_module
from analytics.inference import engine, stream
from analytics.keywords import classifier_patch
from analytics.models import ModelSpec
from benchmarks._patches import patched

__all__ = ["StandInModel", "stand_in"]


class StandInModel:
    """A model on a device of ``rate`` images per second (see the module notes).

    Parameters
    ----------
    spec : ModelSpec
        The real model's (input size, labels).
    rate : float
        Images (views) the stand-in device runs per second.
    embedding : int, default=1280
        Width of the embedding it returns (EfficientNet-Lite0's).
    """

    def __init__(self, spec: ModelSpec, rate: float, embedding: int = 1280) -> None:
        self.spec, self.rate, self.width = spec, rate, embedding
        self.device = torch.device("cuda")
        self.ran = 0  # images (views) run so far
        self._outputs = self._make(0)

    def _make(self, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(0)
        return (
            torch.randn(n, len(self.spec.label_space.names), generator=generator),
            torch.rand(n, self.width, generator=generator),
            torch.rand(n, 2, generator=generator),
        )

    def preprocess(self, images) -> torch.Tensor:
        """Only the batch's length matters here (the upload and normalisation are the device's work)."""
        return torch.empty(len(images))

    def run_batch(self, batch: torch.Tensor, *, conv_stats: bool = False) -> tuple[torch.Tensor, ...]:
        n = len(batch)
        time.sleep(n / self.rate)
        self.ran += n
        if len(self._outputs[0]) < n:
            self._outputs = self._make(n)
        logits, embedding, conv = (part[:n] for part in self._outputs)
        return (logits, embedding, conv) if conv_stats else (logits, embedding)


@contextlib.contextmanager
def stand_in(model: StandInModel) -> Iterator[StandInModel]:
    """The engine runs ``model`` for every model it loads, on its "device"; batches of the engine's
    stream and of the keyword views are made in ordinary memory."""

    def ordinary(shape, page_locked=False):
        return device_module.empty_batch(shape)

    patches = {
        (engine, "load_model"): lambda *args, **kwargs: model,
        (engine, "resolve_device"): lambda device=None: model.device,
        (stream, "empty_batch"): ordinary,
        (classifier_patch, "empty_batch"): ordinary,
    }
    with patched(patches):
        yield model
