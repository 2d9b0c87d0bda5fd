"""Kernel sums over the paper's circular window in plain NumPy: the small-cloud twin of the compiled
:mod:`analytics.variance._circle` (no Numba import; :mod:`analytics.variance._circle_sums` picks the path).

Same criterion, same float operations, same order of the prefix sums as the compiled path, so the
same points fall inside and the sums agree to rounding: point (x, y) is in the window of cell
(r, c) when ``dy² <= R²`` with ``dy = y - (r + 0.5)`` and ``x - h - 0.5 <= c <= x + h - 0.5`` with
``h = sqrt(R² - dy²)``. Only the order of the additions into a cell differs (bincount over all
contributions instead of one loop), and ``np.exp`` may differ from the compiled ``exp`` in the last bit.

The work is vectorised over blocks of points (targets), so memory stays bounded: ``_BLOCK_ELEMENTS``
float64 values per temporary array.
"""

from __future__ import annotations

import numpy as np

# Elements of the largest temporary array of one block (8 MB of float64).
_BLOCK_ELEMENTS = 1 << 20


def _n_rows(half: float) -> int:
    """Cell rows a point may reach (the compiled ``_rows``'s span)."""
    return int(np.floor(2 * half)) + 2


def circle_point_work(n_points: int, half: float) -> int:
    """Elements of :func:`circle_point_sums`'s temporaries: points x rows x columns a point may reach."""
    n_rows = _n_rows(half)
    return n_points * n_rows * (n_rows + 1)


def circle_cloud_work(n_targets: int, n_images: int, n_tables: int, grid: int, half: float) -> int:
    """Elements of :func:`circle_cloud_sums`'s temporaries: per (target, image k), the rows of k x
    columns for every table and the sums, the prefix sums over the images of every signal table, and
    the runs' ends (rows x images)."""
    n_rows = _n_rows(half)
    return n_targets * n_images * (grid * (n_rows * (n_tables + 1) + (n_images + 1) * n_tables) + n_rows * n_images)


def _row_span(y: np.ndarray, half: float, n_rows: int, grid: int) -> tuple[np.ndarray, np.ndarray]:
    """``[first, stop)`` cell rows of every height ``y``, as the compiled ``_rows``."""
    first = np.maximum(np.floor(y - half - 0.5), 0.0)
    return first, np.minimum(first + n_rows, grid)


def _chords(y: np.ndarray, rows: np.ndarray, stop: np.ndarray, radius2: float, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Half-width ``h`` of the chord and Gaussian factor ``wy`` of every (height, row), as the compiled
    ``_chord``, and the mask of the rows inside the span and the radius (``h``, ``wy`` are 0 elsewhere)."""
    dy = y - (rows + 0.5)
    b = dy * dy
    inside = (rows < stop) & (b <= radius2)
    h = np.sqrt(np.where(inside, radius2 - b, 0.0))
    wy = np.where(inside, np.exp(-b * scale), 0.0)
    return h, wy, inside


def circle_point_sums(cells: np.ndarray, values: np.ndarray, grid: int, *, half: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """``sum_i phi_i v_i`` and ``sum_i phi_i`` for every cell of any point cloud, each of shape (grid, grid), [row=y, col=x].

    As the compiled ``circle_point_sums``: every point adds ``wy * wx`` to the columns of every row its circle crosses.
    """
    cells = np.ascontiguousarray(cells, dtype=np.float64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    radius2 = half * half
    scale = 0.5 / sigma / sigma
    n_rows = _n_rows(half)
    n_cols = n_rows + 1
    offsets = np.arange(max(n_rows, n_cols), dtype=np.float64)
    weighted = np.zeros(grid * grid)
    total = np.zeros(grid * grid)
    block = max(1, _BLOCK_ELEMENTS // (n_rows * n_cols))
    for start in range(0, cells.shape[0], block):
        x = cells[start : start + block, 0, np.newaxis]  # (points, 1)
        y = cells[start : start + block, 1, np.newaxis]
        v = values[start : start + block, np.newaxis, np.newaxis]
        cols = np.floor(x - half - 0.5) + offsets[:n_cols]  # (points, n_cols)
        d = x - (cols + 0.5)
        wx = np.exp(-d * d * scale)
        r_first, r_stop = _row_span(y, half, n_rows, grid)
        rows = r_first + offsets[:n_rows]  # (points, n_rows)
        h, wy, inside = _chords(y, rows, r_stop, radius2, scale)
        first = np.maximum(np.ceil(x - h - 0.5), 0.0)  # (points, n_rows)
        stop = np.minimum(np.floor(x + h - 0.5) + 1, grid)
        cols3 = cols[:, np.newaxis, :]  # (points, 1, n_cols)
        keep = inside[:, :, np.newaxis] & (cols3 >= first[:, :, np.newaxis]) & (cols3 < stop[:, :, np.newaxis])
        w = (wy[:, :, np.newaxis] * wx[:, np.newaxis, :])[keep]
        index = (rows[:, :, np.newaxis] * grid + cols3)[keep].astype(np.intp)
        weighted += np.bincount(index, weights=w * np.broadcast_to(v, keep.shape)[keep], minlength=grid * grid)
        total += np.bincount(index, weights=w, minlength=grid * grid)
    return weighted.reshape(grid, grid), total.reshape(grid, grid)


def circle_cloud_sums(coords: np.ndarray, signals: list[np.ndarray], grid: int, *, half: float, sigma: float) -> np.ndarray:
    """``sum_i phi_i v_i`` of every signal table, then ``sum_i phi_i``, over the clouds of ``coords``,
    of shape (len(signals) + 1, grid, grid), float64, [row=y, col=x].

    As the compiled ``circle_cloud_sums`` (parameters there): per target, prefix sums over the
    distance-sorted images of ``phi_x(j, c)`` and ``phi_x(j, c) |S_j - S_k|``; the images inside the
    circle at (row, column) are a run ``[lo, hi)`` of the sorted order, read as two prefix sums. Only
    the cells r >= c are summed, then mirrored. Columns span the whole grid (the compiled path
    skips those no image reaches, where the run is empty and adds exactly 0).
    """
    coords = np.ascontiguousarray(coords, dtype=np.float64)
    n_targets, n_images = coords.shape
    tables = np.ascontiguousarray(np.stack(signals) if signals else np.empty((0, *coords.shape)), dtype=np.float64)
    n_tables = tables.shape[0]
    radius2 = half * half
    scale = 0.5 / sigma / sigma
    n_rows = _n_rows(half)
    columns = np.arange(grid, dtype=np.float64)
    lower = np.zeros((n_tables + 1, grid * grid))
    # the largest temporaries: (block, images, rows, grid), (tables, block, images, images + 1, grid), (block, images, rows, images)
    per_target = n_images * max(grid * n_rows, grid * max(n_tables, 1) * (n_images + 1), n_rows * n_images)
    block = max(1, _BLOCK_ELEMENTS // per_target)
    for start in range(0, n_targets, block):
        x = coords[start : start + block]  # (T, n)
        s = tables[:, start : start + block]  # (S, T, n)
        n_block = x.shape[0]
        order = np.argsort(x, axis=1, kind="stable")
        ordered = np.take_along_axis(x, order, axis=1)
        rank = np.argsort(order, axis=1)
        d = ordered[:, :, np.newaxis] - (columns + 0.5)  # (T, n, grid)
        weights = np.exp(-d * d * scale)
        cumulative = np.zeros((n_block, n_images + 1, grid))
        np.cumsum(weights, axis=1, out=cumulative[:, 1:])
        # prefix[s, t, k, m, c]: sum over the m nearest-sorted images i of weights[t, i, c] * |S_i - S_k|
        sorted_tables = np.take_along_axis(s, np.broadcast_to(order, s.shape), axis=2)
        value = np.abs(sorted_tables[:, :, np.newaxis, :] - s[:, :, :, np.newaxis])  # (S, T, k, i)
        prefix = np.zeros((n_tables, n_block, n_images, n_images + 1, grid))
        np.cumsum(weights[np.newaxis, :, np.newaxis, :, :] * value[..., np.newaxis], axis=3, out=prefix[:, :, :, 1:])
        # rows of every image k: (T, k, rows)
        y = x[:, :, np.newaxis]
        r_first, r_stop = _row_span(y, half, n_rows, grid)
        rows = r_first + np.arange(n_rows, dtype=np.float64)
        h, wy, inside = _chords(y, rows, r_stop, radius2, scale)
        # image i is inside at column c when first_i <= c < end_i; hi / lo count the images with first / end <= c
        h5 = h[..., np.newaxis]  # (T, k, rows, 1)
        o5 = ordered[:, np.newaxis, np.newaxis, :]  # (T, 1, 1, i)
        first = np.where(inside[..., np.newaxis], np.clip(np.ceil(o5 - h5 - 0.5), 0, grid), grid).astype(np.intp)
        end = np.where(inside[..., np.newaxis], np.clip(np.floor(o5 + h5 - 0.5) + 1, 0, grid), grid).astype(np.intp)
        hi = _counts_up_to(first, grid)  # (T, k, rows, grid)
        lo = _counts_up_to(end, grid)
        t_index = np.arange(n_block)[:, np.newaxis, np.newaxis, np.newaxis]
        c_index = np.arange(grid)
        total = cumulative[t_index, hi, c_index] - cumulative[t_index, lo, c_index]
        own = rank[:, :, np.newaxis, np.newaxis]
        own_inside = (lo <= own) & (own < hi)
        total = np.where(own_inside, total - weights[t_index, own, c_index], total)
        keep = inside[..., np.newaxis] & (c_index <= rows[..., np.newaxis])  # only the cells r >= c
        index = (rows[..., np.newaxis] * grid + c_index)[keep].astype(np.intp)
        wy4 = np.broadcast_to(wy[..., np.newaxis], keep.shape)[keep]
        lower[n_tables] += np.bincount(index, weights=wy4 * total[keep], minlength=grid * grid)
        k_index = np.arange(n_images)[np.newaxis, :, np.newaxis, np.newaxis]
        for table in range(n_tables):
            p = prefix[table]
            part = p[t_index, k_index, hi, c_index] - p[t_index, k_index, lo, c_index]
            lower[table] += np.bincount(index, weights=wy4 * part[keep], minlength=grid * grid)
    lower = lower.reshape(n_tables + 1, grid, grid)
    strict = np.tril(lower, -1)
    return np.tril(lower) + strict.transpose(0, 2, 1)


def _counts_up_to(starts: np.ndarray, grid: int) -> np.ndarray:
    """``out[..., c]`` = how many of ``starts[..., :]`` (integers in [0, grid]) are <= c, for c < grid."""
    lead = starts.shape[:-1]
    n_lead = int(np.prod(lead))
    flat = (np.arange(n_lead)[:, np.newaxis] * (grid + 1) + starts.reshape(n_lead, -1)).ravel()
    counts = np.bincount(flat, minlength=n_lead * (grid + 1)).reshape(*lead, grid + 1)
    return np.cumsum(counts[..., :grid], axis=-1)
