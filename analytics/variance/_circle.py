"""Kernel sums over the paper's circular window (Appendix D: "an RBF defines a circular area in 2D"),
compiled with Numba: imported only for large clouds (``analytics.variance._circle_sums``; small ones
go to the NumPy twin ``analytics.variance._circle_numpy``, which applies the same criterion).

A Gaussian over a circle does not factorise into one-axis weights the way the square does, so the
square's matrix products do not apply. Both paths here are exact (every point within the radius of a
cell centre counts, no other); Numba compiles them on first use (cached on disk afterwards).

Criterion, shared by both paths: point (x, y) is in the window of cell (r, c) (centre
(c + 0.5, r + 0.5), in cells) when ``dy² <= R²`` with ``dy = y - (r + 0.5)`` and
``x - h - 0.5 <= c <= x + h - 0.5`` with ``h = sqrt(R² - dy²)``, i.e. ``dx² + dy² <= R²`` up to the
last bit of rounding (a point within one ulp of the rim may fall either way).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from analytics._progress import Progress

#: Blocks of targets :func:`circle_cloud_sums` reports its progress after (a count that moves, at a negligible cost per block).
PROGRESS_STEPS = 20


def load_kernels() -> None:
    """Compile the kernel of :func:`circle_cloud_sums` (or read it from Numba's disk cache) now, on no
    targets: the seconds a first compilation takes (after an install or an upgrade) are then a step
    of their own, before the first target's count."""
    empty = np.zeros((0, 1))
    _cloud_lower(empty, np.zeros((1, 0, 1)), np.int64(1), np.float64(1.0), np.float64(1.0), np.zeros((2, 1, 1)))


def circle_cloud_sums(
    coords: np.ndarray, signals: list[np.ndarray], grid: int, *, half: float, sigma: float, progress: Progress | None = None
) -> np.ndarray:
    """``sum_i phi_i v_i`` of every signal table, then ``sum_i phi_i``, over the clouds of ``coords``
    (the circle's counterpart of ``matrix._table_kernel_sums``).

    Per target t the points (j, k), j != k, sit at ``(x_j, x_k)``; a cell (r, c) sums, over the rows
    k whose ``dy`` is inside the radius, the images j with ``|x_j - x_c| <= h(k, r)``: a contiguous
    run of the target's images sorted by distance. So each target keeps, per column c and image k,
    prefix sums over its sorted images of ``phi_x(j, c) |S_j - S_k|`` and reads every (k, r, c) as a
    difference of two of them: the work grows with images x rows x columns reached, not with
    points x window area. The cloud is symmetric (point (j, k) mirrors (k, j) with the same value), so
    only the cells r >= c are summed and the others mirrored.

    Parameters
    ----------
    coords : ndarray of shape (n_targets, n + 1), float
        Distances in cell units.
    signals : list of ndarray of shape (n_targets, n + 1), float
    grid : int
    half, sigma : float
        Radius and Gaussian sigma, in cells.
    progress : Progress, optional
        ``progress(done, n_targets)`` after each of about :data:`PROGRESS_STEPS` blocks of targets.

    Returns
    -------
    ndarray of shape (len(signals) + 1, grid, grid), float64, [row=y, col=x]
    """
    coords = np.ascontiguousarray(coords, dtype=np.float64)
    tables = np.ascontiguousarray(np.stack(signals) if signals else np.empty((0, *coords.shape)), dtype=np.float64)
    lower = np.zeros((len(signals) + 1, grid, grid))
    n_targets = len(coords)
    settings = (np.int64(grid), np.float64(half), np.float64(sigma))
    # Targets go in blocks, each adding into the same ``lower`` in target order: the very sums of one call
    # over all targets, bit for bit, with a count between blocks. The blocks' tables are copied contiguous:
    # a strided slice would be another Numba type, compiled a second time.
    block = max(1, -(-n_targets // PROGRESS_STEPS))
    for start in range(0, n_targets, block):
        _cloud_lower(coords[start : start + block], np.ascontiguousarray(tables[:, start : start + block]), *settings, lower)
        if progress is not None:
            progress(min(start + block, n_targets), n_targets)
    # mirror the strict lower triangle onto the upper one
    strict = np.tril(lower, -1)
    return np.tril(lower) + strict.transpose(0, 2, 1)


def circle_point_sums(cells: np.ndarray, values: np.ndarray, grid: int, *, half: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """``sum_i phi_i v_i`` and ``sum_i phi_i`` for every cell of any point cloud, each of shape (grid, grid), [row=y, col=x].

    Each point adds its Gaussian to the run of columns of every row its circle crosses (about
    ``pi R²`` cells a point).
    """
    sums = np.zeros((2, grid, grid))
    _point_sums(
        np.ascontiguousarray(cells, dtype=np.float64), np.ascontiguousarray(values, dtype=np.float64),
        np.int64(grid), np.float64(half), np.float64(sigma), sums,
    )  # fmt: skip
    return sums[0], sums[1]


@njit(cache=True, nogil=True, inline="always")
def _rows(y, half, n_rows, grid):  # pragma: no cover - compiled
    """Cell rows ``[first, stop)`` that may hold a centre within ``half`` of height ``y`` (:func:`_chord` decides)."""
    first = max(int(np.floor(y - half - 0.5)), 0)
    return first, min(first + n_rows, grid)


@njit(cache=True, nogil=True, inline="always")
def _chord(y, r, radius2, scale):  # pragma: no cover - compiled
    """Half-width of the circle's chord at cell row ``r`` for a point at height ``y``, and the row's
    Gaussian factor; ``(-1, 0)`` when the row's centre is beyond the radius."""
    dy = y - (r + 0.5)
    b = dy * dy
    if b > radius2:
        return -1.0, 0.0
    return np.sqrt(radius2 - b), np.exp(-b * scale)


@njit(cache=True, nogil=True, boundscheck=False)
def _cloud_lower(coords, tables, grid, half, sigma, out):  # pragma: no cover - compiled
    """The cells r >= c of :func:`circle_cloud_sums` into ``out`` (n_tables + 1, grid, grid)."""
    n_targets, n_images = coords.shape
    n_tables = tables.shape[0]
    radius2 = half * half
    scale = 0.5 / sigma / sigma
    n_rows = int(np.floor(2 * half)) + 2
    ordered = np.empty(n_images)
    rank = np.empty(n_images, np.int64)
    starts = np.zeros(grid + 1, np.int64)  # images whose run of columns starts at each column
    stops = np.zeros(grid + 1, np.int64)  # images whose run ends just before each column
    weights = np.empty((n_images, grid))  # [i, c]: phi_x of the i-th nearest-sorted image at column c
    cumulative = np.empty((n_images + 1, grid))  # [m, c]: sum of weights[:m, c]
    prefix = np.empty((max(n_tables, 1), n_images, n_images + 1, grid))  # [table, k, m, c]
    for t in range(n_targets):
        x = coords[t]
        order = np.argsort(x)
        for i in range(n_images):
            ordered[i] = x[order[i]]
            rank[order[i]] = i
        c_start = max(0, int(np.floor(ordered[0] - half - 0.5)))
        c_stop = min(grid, int(np.ceil(ordered[n_images - 1] + half - 0.5)) + 1)
        if c_start >= c_stop:
            continue
        n_cols = c_stop - c_start
        for i in range(n_images):
            for c in range(n_cols):
                d = ordered[i] - (c + c_start + 0.5)
                weights[i, c] = np.exp(-d * d * scale)
        cumulative[0, :n_cols] = 0.0
        for i in range(n_images):
            for c in range(n_cols):
                cumulative[i + 1, c] = cumulative[i, c] + weights[i, c]
        for s in range(n_tables):
            for k in range(n_images):
                # image k's rows reach up to x_k + half (one column of slack for rounding); the cells summed have c <= r
                reach = min(int(np.floor(x[k] + half - 0.5)) + 2, c_stop) - c_start
                if reach <= 0:
                    continue
                p = prefix[s, k]
                own = tables[s, t, k]
                p[0, :reach] = 0.0
                for i in range(n_images):
                    value = abs(tables[s, t, order[i]] - own)
                    w = weights[i]
                    before = p[i]
                    after = p[i + 1]
                    for c in range(reach):
                        after[c] = before[c] + w[c] * value
        for k in range(n_images):
            y = x[k]
            own_rank = rank[k]
            r_first, r_stop = _rows(y, half, n_rows, grid)
            for r in range(r_first, r_stop):
                h, wy = _chord(y, r, radius2, scale)
                if h < 0.0:
                    continue
                width = min(r + 1, c_stop) - c_start
                if width <= 0:
                    continue
                starts[: width + 1] = 0
                stops[: width + 1] = 0
                for i in range(n_images):
                    first = int(np.ceil(ordered[i] - h - 0.5)) - c_start
                    end = int(np.floor(ordered[i] + h - 0.5)) + 1 - c_start
                    starts[min(max(first, 0), width)] += 1
                    stops[min(max(end, 0), width)] += 1
                # images [lo, hi) of the sorted order are inside the circle at column c
                hi = 0
                lo = 0
                row = out[n_tables, r, c_start:]
                for c in range(width):
                    hi += starts[c]
                    lo += stops[c]
                    total = cumulative[hi, c] - cumulative[lo, c]
                    if lo <= own_rank and own_rank < hi:  # (k, k) is no point
                        total -= weights[own_rank, c]
                    row[c] += wy * total
                for s in range(n_tables):  # one pass a table: faster than all tables in one pass
                    p = prefix[s, k]
                    row = out[s, r, c_start:]
                    hi = 0
                    lo = 0
                    for c in range(width):
                        hi += starts[c]
                        lo += stops[c]
                        row[c] += wy * (p[hi, c] - p[lo, c])


@njit(cache=True, nogil=True, boundscheck=False)
def _point_sums(cells, values, grid, half, sigma, out):  # pragma: no cover - compiled
    """:func:`circle_point_sums` into ``out`` (2, grid, grid)."""
    radius2 = half * half
    scale = 0.5 / sigma / sigma
    n_rows = int(np.floor(2 * half)) + 2
    n_cols = n_rows + 1
    wx = np.empty(n_cols)
    for p in range(cells.shape[0]):
        x = cells[p, 0]
        y = cells[p, 1]
        v = values[p]
        c_first = int(np.floor(x - half - 0.5))
        for i in range(n_cols):
            d = x - (c_first + i + 0.5)
            wx[i] = np.exp(-d * d * scale)
        r_first, r_stop = _rows(y, half, n_rows, grid)
        for r in range(r_first, r_stop):
            h, wy = _chord(y, r, radius2, scale)
            if h < 0.0:
                continue
            first = max(int(np.ceil(x - h - 0.5)), 0)
            stop = min(int(np.floor(x + h - 0.5)) + 1, grid)
            weighted = out[0, r]
            total = out[1, r]
            for c in range(first, stop):
                w = wy * wx[c - c_first]
                weighted[c] += w * v
                total[c] += w
