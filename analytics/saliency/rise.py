"""RISE: Randomized Input Sampling for Explanation (Petsiuk, Das & Saenko 2018, BMVC,
arXiv:1806.07421).

Captum has no RISE, so it is written here from the paper (§3). N binary grids of ``cells`` × ``cells``
cells, each cell kept with probability p, are upsampled bilinearly to (cells + 1) × cell size and
cropped at a random shift of up to one cell, giving smooth masks M_i of the input's size. With f the
softmax probability of the target class:

    S(x) = 1 / (N · p) · Σ_i f(x ⊙ M_i + b ⊙ (1 − M_i)) · M_i

an importance map whose value at a pixel estimates E[f | the pixel is kept] (p = E[M]). Here b is
the baseline (the paper multiplies the normalised input by M, i.e. b = 0 in model-input space).
The masks come from a seeded generator on the CPU, so a seed gives the same masks on any device;
every image of a batch sees the same N masks.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._base import AttributionMethod, ForwardFunc, Setting


class RISE(AttributionMethod):
    """RISE importance maps (see the module docstring for the estimator).

    Parameters
    ----------
    forward_func, layer, reduce, normalize
        See :class:`~analytics.saliency.AttributionMethod`.
    n_masks : int, default=1000
        N, the number of random masks (the paper uses 4000 for ResNet-50; fewer is noisier).
    cells : int, default=7
        Side of the random grid (the paper's s = 7).
    p : float, default=0.5
        Probability that a cell is kept (the paper's p = 0.5).
    seed : int, default=0
        Seed of the mask generator.
    batch_size : int, default=64
        Masked images per forward pass (at least one mask for every image of the batch).
    baseline : float or Tensor broadcastable to (n, 3, H, W), float, default=0.0
        What masked-out pixels become, in model-input space.
    """

    name = "RISE"
    key = "rise"
    needs_gradients = False
    default_reduce = "sum"
    reference = "Petsiuk et al. 2018, BMVC, arXiv:1806.07421"
    settings = (
        Setting("n_masks", 1000, 1, 100_000, "random masks N (more: smoother, slower)"),
        Setting("cells", 7, 2, 64, "side of the random grid s"),
        Setting("p", 0.5, 0.05, 0.95, "probability that a grid cell is kept"),
        Setting("seed", 0, 0, 2**31 - 1, "seed of the mask generator"),
        Setting("batch_size", 64, 1, 4096, "masked images per forward pass (memory)"),
    )

    def __init__(
        self,
        forward_func: ForwardFunc,
        *,
        layer: nn.Module | None = None,
        reduce: str | None = None,
        normalize: str = "none",
        n_masks: int = 1000,
        cells: int = 7,
        p: float = 0.5,
        seed: int = 0,
        batch_size: int = 64,
        baseline: float | Tensor = 0.0,
    ) -> None:
        super().__init__(forward_func, layer=layer, reduce=reduce, normalize=normalize)
        self.n_masks = self._setting("n_masks", n_masks)
        self.cells = self._setting("cells", cells)
        self.p = self._setting("p", p)
        self.seed = self._setting("seed", seed)
        self.batch_size = self._setting("batch_size", batch_size)
        self.baseline = baseline

    def _attribute(self, inputs: Tensor, target: Tensor) -> Tensor:
        n, _, height, width = inputs.shape
        grids, shifts = self._random_grids((height, width))
        baseline = self.baseline.to(inputs) if isinstance(self.baseline, Tensor) else float(self.baseline)
        saliency = inputs.new_zeros((n, height * width))
        per_pass = max(1, self.batch_size // n)
        for start in range(0, self.n_masks, per_pass):
            masks = self._masks(grids[start : start + per_pass], shifts[start : start + per_pass], (height, width), inputs)
            kept = masks[None]  # (1, b, 1, H, W) against inputs (n, 1, 3, H, W)
            masked = inputs[:, None] * kept + baseline * (1 - kept)
            probs = F.softmax(self.forward_func(masked.flatten(0, 1)), dim=1).view(n, len(masks), -1)
            scores = probs.gather(2, target.view(n, 1, 1).expand(n, len(masks), 1)).squeeze(2)  # (n, b)
            saliency += scores @ masks.flatten(1)
        return (saliency / (self.n_masks * self.p)).view(n, 1, height, width)

    def _random_grids(self, size: tuple[int, int]) -> tuple[Tensor, Tensor]:
        """The N binary grids (N, 1, s, s) and their shifts (N, 2) in pixels, from the seed."""
        generator = torch.Generator().manual_seed(self.seed)
        grids = (torch.rand((self.n_masks, 1, self.cells, self.cells), generator=generator) < self.p).float()
        shifts = torch.stack([torch.randint(0, c, (self.n_masks,), generator=generator) for c in self._cell(size)], dim=1)
        return grids, shifts

    def _cell(self, size: tuple[int, int]) -> tuple[int, int]:
        """Pixels per grid cell (height, width) once upsampled."""
        return math.ceil(size[0] / self.cells), math.ceil(size[1] / self.cells)

    def _masks(self, grids: Tensor, shifts: Tensor, size: tuple[int, int], like: Tensor) -> Tensor:
        """Smooth masks (b, 1, H, W): each grid upsampled to (s + 1) cells and cropped at its shift."""
        height, width = size
        cell_h, cell_w = self._cell(size)
        up = F.interpolate(
            grids.to(like), size=((self.cells + 1) * cell_h, (self.cells + 1) * cell_w), mode="bilinear", align_corners=False
        )
        shifts = shifts.to(like.device)
        rows = shifts[:, :1] + torch.arange(height, device=like.device)  # (b, H)
        cols = shifts[:, 1:] + torch.arange(width, device=like.device)  # (b, W)
        index = torch.arange(len(grids), device=like.device)[:, None, None]
        return up[index, 0, rows[:, :, None], cols[:, None, :]][:, None]
