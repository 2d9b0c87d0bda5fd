"""A model's forward pass that fits the accelerator's memory: :class:`BackOff`.

Runs, keyword extraction and pool screening send batches of the size the caller asked for (on a
GPU 256 by default, :func:`~analytics.inference.device.default_batch_size`); a model too large for
that on the device it runs on halves its share of each batch on CUDA out-of-memory until it fits,
and keeps the smaller size. :class:`DeviceMemoryError` when one image does not fit.
"""

from __future__ import annotations

import numpy as np
import torch

from analytics.exceptions import BackdropError
from analytics.models import LoadedModel


class DeviceMemoryError(BackdropError, MemoryError):
    """A model does not fit the accelerator's memory even one image at a time."""


class BackOff:
    """A model's forward pass that halves its batch on CUDA out-of-memory and keeps the smaller size.

    The images still arrive in batches of the caller's size; only the model sees smaller slices,
    so the outputs are the same. With ``conv``, the model's last-conv-map statistics come along.
    """

    def __init__(self, model: LoadedModel, batch_size: int, conv: bool = False) -> None:
        self.model, self.batch_size, self.conv = model, batch_size, conv

    def __call__(self, images: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Logits (n, n_outputs), embedding (n, d) and conv statistics (n, 2) (None without ``conv``) of
        ``images`` (n, size, size, 3) uint8."""
        while True:
            try:
                parts = [
                    self.model.run_batch(self.model.preprocess(images[i : i + self.batch_size]), conv_stats=self.conv)
                    for i in range(0, len(images), self.batch_size)
                ]
            except torch.cuda.OutOfMemoryError as err:
                self._shrink(err)
                continue
            outputs = tuple(parts[0]) if len(parts) == 1 else tuple(torch.cat(part) for part in zip(*parts))  # one part: no copy
            return outputs if self.conv else (*outputs, None)

    def _shrink(self, err: BaseException) -> None:
        if self.batch_size == 1:
            raise DeviceMemoryError(
                f"model {self.model.spec.name!r} ran out of {self.model.device} memory even at batch size 1; "
                "free the device (other processes) or run it on another device (device='cpu')"
            ) from err
        self.batch_size //= 2
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # the failed attempt's blocks would stay reserved
