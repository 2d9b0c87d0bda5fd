"""Reference implementations straight from the formulas: slow, obviously right, for comparing the
library's fast paths against (the benchmarks time them; the tests check the library against them)."""

from __future__ import annotations

import numpy as np


def naive_variance_matrix(
    points: np.ndarray, values: np.ndarray, *, grid: int, window: int, sigma: float, k: int, d_max: float, window_shape: str = "circle"
) -> np.ndarray:
    """Reference RBF straight from the formula: a Python loop over cells, brute-force distances from
    each cell centre to every point (inside the circle of radius window / 2, or the square of side
    window), brute-force K nearest (argpartition, O(n) per cell)."""
    cells = points / (d_max / grid)
    half = window / 2
    k = min(k, values.size)
    matrix = np.empty((grid, grid))
    for row in range(grid):
        for col in range(grid):
            dx = cells[:, 0] - (col + 0.5)
            dy = cells[:, 1] - (row + 0.5)
            r2 = dx**2 + dy**2
            inside = r2 <= half**2 if window_shape == "circle" else (np.abs(dx) <= half) & (np.abs(dy) <= half)
            phi = np.exp(-r2[inside] / (2 * sigma**2))
            nearest = np.argpartition(r2, k - 1)[:k]
            u = values[nearest].mean()
            matrix[row, col] = (1.0 * u + np.sum(phi * values[inside])) / (1.0 + np.sum(phi))
    return matrix
