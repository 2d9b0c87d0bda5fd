"""Composites pasted on the model's accelerator: :class:`DeviceCutout`, :func:`paste_on_device`.

Why: on the H100 box (16 cores) the seam's Laplacian-pyramid blend on CPU threads fed EfficientNet-
Lite0 at 0.07 of its forward rate (1,300-1,900 composites/s whatever the threads), so a new suite's
first model waited on the CPU. There the CPU now only stacks the decoded backgrounds into the batch
and the paste and blend run on the device, in passes over a batch's rows whatever their targets
(a pass per target would multiply the few hundred small kernel launches by the batch's targets).

The operations are :class:`~analytics.data.Cutout`'s, from the arrays it prepared once per target:
Eq. 1 (the weighted mean a·x + (1 − a)·b rounded, a the mask inside the hard mask: for a binary
mask exactly the CPU's masked copy), then in the seam band the blend b + collapse(G(m) * L(x - b)). OpenCV's ``pyrDown`` / ``pyrUp`` are the 5-tap binomial
filter (reflect-101 borders; ``pyrUp`` repeats the last pixel on the right), subsampled or
upsampled; written here as shifted sums in OpenCV's order, with no convolution (cuDNN may run
those in TF32), they are within a unit in the last place of OpenCV's float32 results, and the
composites made with them on the CPU equal :meth:`Cutout.paste <analytics.data.Cutout.paste>`'s
(tests). A composite can still differ from the CPU's by one grey level where a value lands next to
.5 before rounding. Torch ships no pyramid of this kind (``torchvision`` resizes, it does not build
Burt-Adelson pyramids), hence these few lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from analytics.data import Cutout
from analytics.exceptions import InvalidInputError

#: Backgrounds blended in one pass: bounds the device memory the blend takes beside the model
#: (about ten float32 copies of the pass's images at once: ~0.4 GB at 224 px).
CHUNK = 64


def _down_rows(x: torch.Tensor) -> torch.Tensor:
    """OpenCV's ``pyrDown`` taps along the last axis (at least 4 long), every second output, not yet
    divided by 16."""
    n = x.shape[-1]
    p = torch.cat([x[..., 1:3].flip(-1), x, x[..., n - 3 : n - 1].flip(-1)], -1)  # reflect-101: x[-1] = x[1], x[n] = x[n - 2]
    out = (n + 1) // 2

    def tap(k: int) -> torch.Tensor:
        return p[..., k : k + 2 * out - 1 : 2]

    return tap(0) + tap(4) + (tap(1) + tap(3)) * 4 + tap(2) * 6


def _up_rows(x: torch.Tensor, size: int) -> torch.Tensor:
    """OpenCV's ``pyrUp`` taps along the last axis to ``size`` outputs, not yet divided by 8."""
    p = torch.cat([x[..., 1:2], x, x[..., -1:]], -1)  # OpenCV reflects on the left, repeats the last on the right
    even = p[..., :-2] + p[..., 1:-1] * 6 + p[..., 2:]
    odd = (p[..., 1:-1] + p[..., 2:]) * 4
    return torch.stack([even, odd], -1).flatten(-2)[..., :size]


def pyr_down(x: torch.Tensor) -> torch.Tensor:
    """OpenCV's ``pyrDown`` of each (h, w) plane: (..., h, w) -> (..., ceil(h / 2), ceil(w / 2)).

    Rows, then columns, then one scale, the order OpenCV sums in: float32 results within a unit in
    the last place of OpenCV's (tests)."""
    return _down_rows(_down_rows(x).transpose(-1, -2)).transpose(-1, -2) * (1 / 256)


def pyr_up(x: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """OpenCV's ``pyrUp`` of each plane to ``size`` (height, width), each at most twice ``x``'s."""
    return _up_rows(_up_rows(x, size[1]).transpose(-1, -2), size[0]).transpose(-1, -2) * (1 / 64)


@dataclass(frozen=True)
class DeviceCutout:
    """A :class:`~analytics.data.Cutout`'s prepared arrays on a device, channels first (build it
    with :meth:`of`; :func:`paste_on_device` pastes it)."""

    image: torch.Tensor  # (3, h, w) float32
    hard: torch.Tensor  # (1, h, w) bool
    seam: torch.Tensor  # (1, h, w) bool
    alpha: torch.Tensor  # (1, h, w) float32: the mask inside ``hard``, 0 outside
    object: torch.Tensor  # (3, h, w) float32, 0 outside ``hard``
    weights: tuple[torch.Tensor, ...]  # the mask's Gaussian pyramid, (1, h_l, w_l) float32 each

    @classmethod
    def of(cls, cutout: Cutout, device: torch.device) -> DeviceCutout:
        def planes(array) -> torch.Tensor:
            tensor = torch.from_numpy(array)
            return (tensor.permute(2, 0, 1) if tensor.ndim == 3 else tensor[None]).contiguous().to(device)

        return cls(
            image=planes(cutout.image).float(),
            hard=planes(cutout.hard) > 0,
            seam=planes(cutout.seam) > 0,
            alpha=planes(cutout.alpha),
            object=planes(cutout.object),
            weights=tuple(planes(weight[..., 0]) for weight in cutout.weights),  # its three channels are equal
        )


def paste_on_device(cutouts: Sequence[DeviceCutout], which: Sequence[int], backgrounds: torch.Tensor, *, blend: bool = True) -> torch.Tensor:
    """``cutouts[which[i]]`` pasted on ``backgrounds[i]``, as :meth:`Cutout.paste <analytics.data.Cutout.paste>` does.

    Parameters
    ----------
    cutouts : sequence of DeviceCutout
        The batch's targets, all of the backgrounds' size and with as many pyramid levels, on
        their device.
    which : sequence of int, length n
        The cutout each background gets.
    backgrounds : Tensor of shape (n, height, width, 3), uint8
        On that device.
    blend : bool, default=True
        Laplacian-pyramid blending in the seam band; False gives the paste of Eq. 1.

    Returns
    -------
    composites : Tensor of shape (n, height, width, 3), uint8
    """
    if len(which) != len(backgrounds):
        raise InvalidInputError(f"paste_on_device needs one cutout per background; got {len(which)} and {len(backgrounds)}")
    if not len(backgrounds):
        return backgrounds.clone()
    stacked = DeviceCutout(*(torch.stack(parts) for parts in zip(*((c.image, c.hard, c.seam, c.alpha, c.object) for c in cutouts))),
                           weights=tuple(torch.stack(level) for level in zip(*(c.weights for c in cutouts))))  # fmt: skip
    rows = torch.tensor(which).to(backgrounds.device, non_blocking=True)
    return torch.cat([_paste(stacked, rows[a : a + CHUNK], backgrounds[a : a + CHUNK], blend) for a in range(0, len(backgrounds), CHUNK)])


def _paste(cutouts: DeviceCutout, which: torch.Tensor, backgrounds: torch.Tensor, blend: bool) -> torch.Tensor:
    """``backgrounds`` (m, h, w, 3) with the stacked ``cutouts`` rows ``which`` pasted on."""
    base = backgrounds.permute(0, 3, 1, 2).float()
    image, alpha = cutouts.image[which], cutouts.alpha[which]
    out = (alpha * image + (1 - alpha) * base).round()  # the CPU's float32 operations in its order
    if blend:
        hard, weights = cutouts.hard[which], [weight[which] for weight in cutouts.weights]
        diff = [torch.where(hard, cutouts.object[which] - base, 0.0)]
        for _ in range(len(weights) - 1):
            diff.append(pyr_down(diff[-1]))
        acc = weights[-1] * diff[-1]
        for level in range(len(diff) - 2, -1, -1):
            size = tuple(diff[level].shape[-2:])
            acc = pyr_up(acc, size) + weights[level] * (diff[level] - pyr_up(diff[level + 1], size))
        # b + collapse(G(m) * L(x - b)) in the seam, rounded half to even and saturated as cv2.add to uint8 does
        out = torch.where(cutouts.seam[which], (base + acc).round().clamp(0, 255), out)
    return out.to(torch.uint8).permute(0, 2, 3, 1).contiguous()
