"""Kernel sums over the paper's circular window: the one place that picks NumPy or Numba.

Small inputs go to :mod:`analytics.variance._circle_numpy` (plain NumPy), large ones to the compiled
:mod:`analytics.variance._circle`, imported only then: importing Numba and loading its cached
kernels costs a fresh process ~0.2 s (seconds when the kernels are compiled anew), more than the
NumPy path takes below :data:`NUMPY_MAX_WORK`. So a process that draws only small clouds (the
tests' tiny clouds, a page's small run) never imports Numba. Both paths apply the same criterion
with the same float operations; they agree to rounding (~1e-16). The choice depends only on the
sizes, never on what the process did before, so the same input always takes the same path.
"""

from __future__ import annotations

import numpy as np

from analytics._progress import Progress, with_message

from . import _circle_numpy
from ._circle_numpy import circle_cloud_work, circle_point_work

#: The steps :func:`circle_cloud_sums` names to its ``progress``: loading the compiled kernel, then summing the targets.
KERNEL_STEP = "loading the compiled interpolation kernel"
TARGETS_STEP = "targets"

#: Largest work (elements of the NumPy path's temporaries, ``circle_point_work`` / ``circle_cloud_work``)
#: done in NumPy. At ~7-16 ns an element on the 2-core reference machine, 8 M elements take at most
#: ~0.1 s, half of what importing Numba and loading its kernels costs a fresh process.
NUMPY_MAX_WORK = 8_000_000


def circle_point_sums(cells: np.ndarray, values: np.ndarray, grid: int, *, half: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """``sum_i phi_i v_i`` and ``sum_i phi_i`` for every cell of any point cloud, each of shape
    (grid, grid), [row=y, col=x] (``analytics.variance._circle.circle_point_sums``)."""
    if circle_point_work(len(cells), half) <= NUMPY_MAX_WORK:
        return _circle_numpy.circle_point_sums(cells, values, grid, half=half, sigma=sigma)
    from ._circle import circle_point_sums as compiled  # Numba: imported (and compiled) on first use

    return compiled(cells, values, grid, half=half, sigma=sigma)


def circle_cloud_sums(
    coords: np.ndarray, signals: list[np.ndarray], grid: int, *, half: float, sigma: float, progress: Progress | None = None
) -> np.ndarray:
    """``sum_i phi_i v_i`` of every signal table, then ``sum_i phi_i``, over the clouds of ``coords``,
    of shape (len(signals) + 1, grid, grid) (``analytics.variance._circle.circle_cloud_sums``).

    ``progress``: on the compiled path, ``progress(0, 0, KERNEL_STEP)`` while Numba is imported and the
    kernel loaded or compiled (a fresh process: ~0.6 s on the 2-core reference machine; its first
    compilation after an install: ~4 s), then
    ``progress(done, n_targets, TARGETS_STEP)`` as the targets are summed; the NumPy path (a fraction of a
    second) reports its targets once, when done."""
    n_targets, n_images = np.shape(coords)
    if circle_cloud_work(n_targets, n_images, len(signals), grid, half) <= NUMPY_MAX_WORK:
        sums = _circle_numpy.circle_cloud_sums(coords, signals, grid, half=half, sigma=sigma)
        if progress is not None:
            progress(n_targets, n_targets, TARGETS_STEP)
        return sums
    if progress is not None:
        progress(0, 0, KERNEL_STEP)
    from ._circle import circle_cloud_sums as compiled  # Numba: imported (and compiled) on first use
    from ._circle import load_kernels

    load_kernels()
    return compiled(coords, signals, grid, half=half, sigma=sigma, progress=with_message(progress, TARGETS_STEP))
