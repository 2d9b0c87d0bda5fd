"""RBF variance matrices (docs/method.md, 'RBF variance matrix'): a point cloud resampled onto a grid with the paper's adjusted
Gaussian RBF (kernel sums inside a circular window, or a square one as an option, plus a
K-nearest-neighbour value at every cell).

Everything is NumPy/SciPy; nothing here draws or imports Streamlit (:mod:`analytics.figures` draws).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from numbers import Real
from typing import Any

import numpy as np
from scipy.spatial import cKDTree
from threadpoolctl import threadpool_limits

from analytics._choices import DEFAULT_K, DEFAULT_MATRIX_GRID, PRESETS, WINDOW_SHAPES
from analytics._progress import Progress
from analytics._validation import check_choice, check_finite, check_positive_int
from analytics.exceptions import InvalidInputError

from ._circle_sums import TARGETS_STEP, circle_cloud_sums, circle_point_sums
from .point_cloud import PointCloud

#: Preset name of free interpolation settings (a window / sigma of no preset).
CUSTOM = "custom"

# Points per block of the kernel sums: (cells reached x block) float64 weights stay in the CPU cache.
_BLOCK = 4096
# Cells per side of the square tiles that group points for the kernel sums.
_TILE = 8


def _check_positive_real(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value) or value <= 0:
        raise InvalidInputError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


@dataclass(frozen=True)
class MatrixSettings:
    """The interpolation settings of a run's variance matrices (frozen and hashable: a cache key).

    Build them with :meth:`of` (a preset of :data:`PRESETS` with overrides); the constructor checks
    every value too.

    Attributes
    ----------
    preset : str
        A key of :data:`PRESETS`, or :data:`CUSTOM` when window / sigma are no preset's.
    grid : int
        Cells per axis; window and sigma are in these cells.
    window : int
        Size of the kernel window in cells: the circle's diameter (the square's side).
    sigma : float
        Standard deviation of the Gaussian kernel, in cells.
    k : int
        Nearest points averaged into u(e).
    window_shape : str
        A value of :data:`WINDOW_SHAPES`: ``'circle'`` (the paper's, default) or ``'square'``.
    """

    preset: str = "smooth"
    grid: int = DEFAULT_MATRIX_GRID
    window: int = PRESETS["smooth"][0]
    sigma: float = PRESETS["smooth"][1]
    k: int = DEFAULT_K
    window_shape: str = WINDOW_SHAPES[0]

    def __post_init__(self) -> None:
        check_choice(self.preset, "preset", [*PRESETS, CUSTOM])
        check_choice(self.window_shape, "window_shape", WINDOW_SHAPES)
        for name in ("grid", "window", "k"):
            check_positive_int(getattr(self, name), name)
        object.__setattr__(self, "sigma", _check_positive_real(self.sigma, "sigma"))
        if self.preset != CUSTOM and (self.window, self.sigma) != PRESETS[self.preset]:
            raise InvalidInputError(
                f"preset {self.preset!r} is window {PRESETS[self.preset][0]}, sigma {PRESETS[self.preset][1]:g}; got window "
                f"{self.window}, sigma {self.sigma:g}: use MatrixSettings.of({self.preset!r}, window=..., sigma=...) or preset {CUSTOM!r}"
            )

    @classmethod
    def of(cls, preset: str = "smooth", **overrides: Any) -> MatrixSettings:
        """A preset with overrides: ``window`` / ``sigma`` replace the preset's (the name becomes
        :data:`CUSTOM` unless they equal it), ``grid`` / ``k`` / ``window_shape`` replace the defaults; None keeps them.

        Raises
        ------
        InvalidInputError
            An unknown setting (the message names it and the allowed ones), an unknown preset,
            :data:`CUSTOM` without both window and sigma, or a value out of range.
        """
        allowed = [f.name for f in fields(cls) if f.name != "preset"]
        unknown = sorted(set(overrides) - set(allowed))
        if unknown:
            raise InvalidInputError(f"unknown matrix setting(s) {', '.join(map(repr, unknown))}; settings are preset, {', '.join(allowed)}")
        check_choice(preset, "preset", [*PRESETS, CUSTOM])
        chosen = {name: value for name, value in overrides.items() if value is not None}
        if preset == CUSTOM and not {"window", "sigma"} <= set(chosen):
            raise InvalidInputError(
                f"preset {CUSTOM!r} needs both window and sigma; got window={overrides.get('window')!r}, sigma={overrides.get('sigma')!r}"
            )
        window, sigma = PRESETS.get(preset, (None, None))
        window, sigma = chosen.pop("window", window), chosen.pop("sigma", sigma)
        name = preset if (window, sigma) == PRESETS.get(preset) else CUSTOM
        return cls(preset=name, window=window, sigma=sigma, **chosen)

    @classmethod
    def check(cls, value: Any, name: str = "settings") -> MatrixSettings:
        """``value`` if it is a :class:`MatrixSettings`, else :class:`InvalidInputError` saying how to make one."""
        if not isinstance(value, cls):
            raise InvalidInputError(f"{name} must be a MatrixSettings (e.g. MatrixSettings.of('fine', grid=64)); got {value!r}")
        return value

    def as_dict(self) -> dict[str, Any]:
        """``{"preset", "grid", "window", "sigma", "k", "window_shape"}``, JSON-serialisable."""
        return asdict(self)

    def key(self) -> dict[str, Any]:
        """What the matrices depend on (``grid``, ``window``, ``sigma``, ``k``, ``window_shape``; not the
        preset's name), for cache keys; also the keyword arguments of :func:`variance_matrix` and
        :func:`cloud_matrices`. Matrices cached before ``window_shape`` existed (squares) match no key."""
        return {name: value for name, value in asdict(self).items() if name != "preset"}


#: The smooth preset on :data:`DEFAULT_MATRIX_GRID` cells: what every matrix view starts with.
DEFAULT_SETTINGS = MatrixSettings()


@dataclass(frozen=True, eq=False)
class VarianceMatrix:
    """An RBF variance matrix with the grid and the settings that produced it.

    Orientation: ``matrix[row, col]`` is the cell whose x range (``d_ij``, the first image of the pair)
    is ``edges[col]..edges[col + 1]`` and whose y range (``d_ik``) is ``edges[row]..edges[row + 1]``;
    row 0 is the smallest d_ik. ``plotly.graph_objects.Heatmap(z=matrix)`` therefore draws it with the
    origin at the bottom left, as in the paper.

    Attributes
    ----------
    matrix : ndarray of shape (grid, grid), float64
        value(e) of every cell.
    edges : ndarray of shape (grid + 1,), float64
        Cell borders on both axes, from 0 to ``d_max``.
    window : int
        Size of the kernel window in cells (the circle's diameter, the square's side).
    sigma : float
        Standard deviation of the Gaussian kernel, in cells.
    k : int
        Number of nearest points averaged into u(e) (as asked; fewer when the cloud is smaller).
    window_shape : str, default='circle'
        A value of :data:`WINDOW_SHAPES`.
    """

    matrix: np.ndarray
    edges: np.ndarray
    window: int
    sigma: float
    k: int
    window_shape: str = WINDOW_SHAPES[0]

    @property
    def grid(self) -> int:
        """Number of cells per axis."""
        return int(self.matrix.shape[0])

    @property
    def d_max(self) -> float:
        """Upper end of both axes."""
        return float(self.edges[-1])

    @property
    def centres(self) -> np.ndarray:
        """Cell centres on both axes, ndarray of shape (grid,), float64."""
        return (self.edges[:-1] + self.edges[1:]) / 2

    @property
    def settings(self) -> dict[str, float | int]:
        """The settings as a JSON-serialisable dict."""
        return {"grid": self.grid, "window": self.window, "sigma": self.sigma, "k": self.k, "window_shape": self.window_shape, "d_max": self.d_max}

    def cell_at(self, x: float, y: float) -> tuple[int, int]:
        """Return ``(row, col)`` of the cell holding the point ``(x, y) = (d_ij, d_ik)``.

        Raises
        ------
        InvalidInputError
            If the point lies outside ``[0, d_max]^2``.
        """
        rows, cols, inside = self._cells(np.array([[x, y]], dtype=np.float64))
        if not inside[0]:
            raise InvalidInputError(
                f"point ({x}, {y}) lies outside the matrix range [0, {self.d_max}]^2; pick a point on the heatmap"
            )
        return int(rows[0]), int(cols[0])

    def points_in_cell(self, points: np.ndarray, row: int, col: int) -> np.ndarray:
        """Indices of the points that fall into cell ``(row, col)`` (for drilling down to image pairs).

        A cell holds its lower borders; the last row and column also hold ``d_max``. Points outside
        ``[0, d_max]^2`` fall into no cell.

        Parameters
        ----------
        points : ndarray of shape (n_points, 2), float
            The cloud's points (``PointCloud.points``).
        row, col : int
            Cell position in ``matrix``.

        Returns
        -------
        ndarray of shape (n_found,), int64
            Indices into ``points`` (and into the cloud's ``values``, ``targets`` and ``pairs``).
        """
        for value, name in ((row, "row"), (col, "col")):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < self.grid:
                raise InvalidInputError(f"{name} must be an integer in [0, {self.grid - 1}]; got {value!r}")
        rows, cols, inside = self._cells(_check_points(points))
        return np.flatnonzero(inside & (rows == row) & (cols == col))

    def _cells(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row, column and inside-flag of every point, binned on ``edges``."""
        cols = np.searchsorted(self.edges, points[:, 0], side="right") - 1
        rows = np.searchsorted(self.edges, points[:, 1], side="right") - 1
        inside = (points >= 0).all(axis=1) & (points <= self.d_max).all(axis=1)
        last = self.grid - 1
        return np.minimum(rows, last), np.minimum(cols, last), inside


def variance_matrix(
    points: np.ndarray,
    values: np.ndarray,
    *,
    grid: int = DEFAULT_MATRIX_GRID,
    window: int = 32,
    sigma: float = 10.0,
    k: int = DEFAULT_K,
    d_max: float | None = None,
    window_shape: str = WINDOW_SHAPES[0],
) -> VarianceMatrix:
    """Resample a point cloud onto a grid with the paper's adjusted Gaussian RBF (docs/method.md, 'RBF variance matrix').

    For each cell e of a ``grid x grid`` grid over ``[0, d_max]^2``::

        value(e) = (phi(0) * u(e) + sum_i phi(|e - p_i|) * v_i) / (phi(0) + sum_i phi(|e - p_i|))

    with ``phi(r) = exp(-r^2 / (2 sigma^2))`` and r measured in cells from the cell centre. u(e) is the
    mean value of the ``k`` points nearest to the cell centre, so a cell keeps a value where no point
    falls near it (``value(e) = u(e)`` there).

    The window is the paper's circle (Appendix D: "an RBF defines a circular area in 2D, facilitating
    the identification of all data points in the circle"), centred on the cell centre, ``window`` cells
    across: point p_i contributes to e when ``(x_i - x_e)^2 + (y_i - y_e)^2 <= (window / 2)^2`` (in
    cells). The paper's "kernel size" is read as this full width, like an image-filter kernel size
    (the paper leaves the size open, not the shape). ``window_shape='square'`` takes the square of
    side ``window`` instead (``|x_i - x_e| <= window / 2`` and ``|y_i - y_e| <= window / 2``), whose
    corners add points at up to 1.41 times the radius (cells of random clouds moved by up to 0.14 on
    the medium and smooth presets at 128 cells); the fine preset's sigma leaves the corners weights
    of ~1e-14. Points outside ``[0, d_max]^2`` still contribute to cells whose window reaches them,
    and count as neighbours for u(e).

    Units: one cell is ``d_max / grid`` in semantic distance, so a window of ``w`` cells reaches
    ``w / 2 * d_max / grid`` each way and sigma ``s`` cells is ``s * d_max / grid``. On the default
    128 cells the presets are local: smooth (32, 10) reaches +-0.125 d_max with sigma 0.078 d_max,
    medium (16, 5) +-0.0625 with 0.039, fine (32, 2) +-0.125 with 0.016.

    The circle's sums visit, for every point, the run of columns of each row its circle crosses
    (``analytics.variance._circle_sums``: NumPy for small clouds, compiled with Numba for large
    ones, the same points and weights either way). Because a Gaussian over a square window factorises,
    ``phi = wx * wy`` with one-axis weights, the square's sums are exact matrix products
    ``Wy @ diag(v) @ Wx.T`` and ``Wy @ Wx.T`` (cells x points times points x cells); points are grouped
    into tiles of 8 x 8 cells and each tile's product covers only the rows and columns its windows
    reach. Either way the work per point follows the window, not the grid; u(e) comes from a k-d
    tree of the points queried at the cell centres, built in a second thread. Seconds for 1.8 M
    points on 128 x 128 cells; the clouds of a run go through :func:`cloud_matrices`, which sums per
    target instead (``benchmarks/variance.py``).

    Parameters
    ----------
    points : array-like of shape (n_points, 2), float
        ``(d_ij, d_ik)`` of every point (``PointCloud.points``).
    values : array-like of shape (n_points,), float
        Value of every point (``PointCloud.values``).
    grid : int, default=128
        Cells per axis (:data:`DEFAULT_MATRIX_GRID`); a cell is ``d_max / grid`` wide.
    window : int, default=32
        Diameter of the circular window (side of the square one), in cells (see above). Presets in :data:`PRESETS`.
    sigma : float, default=10.0
        Standard deviation of the Gaussian, in cells.
    k : int, default=32
        Nearest points averaged into u(e); with fewer points than ``k`` all points are used. Ties at
        the k-th distance are broken by the tree; in a full cloud they occur between a point and its
        mirror (j, k) / (k, j), whose values are equal.
    d_max : float, optional
        Upper end of both axes; default the largest coordinate in ``points``.
    window_shape : {'circle', 'square'}, default='circle'
        :data:`WINDOW_SHAPES`: the paper's circle, or the square (see above).

    Returns
    -------
    VarianceMatrix

    Raises
    ------
    InvalidInputError
        On malformed arrays, NaN/infinite values, non-positive settings, an unknown window shape, or ``d_max`` not > 0.

    Examples
    --------
    >>> vm = variance_matrix([[0.0, 1.0], [1.0, 0.0]], [0.5, 0.5], grid=4, window=4, sigma=1.0, k=1)
    >>> vm.matrix.shape, bool(np.allclose(vm.matrix, 0.5))
    ((4, 4), True)
    """
    points = _check_points(points)
    values = np.asarray(values)
    if values.dtype.kind not in "biuf" or values.shape != (points.shape[0],):
        raise InvalidInputError(
            f"values must be numeric of shape (n_points,) = ({points.shape[0]},) to match points; got shape "
            f"{values.shape}, dtype {values.dtype}"
        )
    values = check_finite(values.astype(np.float64, copy=False), "values")
    grid, window, sigma, k, d_max = _check_settings(grid, window, sigma, k, d_max, points)
    check_choice(window_shape, "window_shape", WINDOW_SHAPES)
    cells = points / (d_max / grid)  # coordinates in cell units: cell c spans [c, c + 1)
    # The k-d tree build releases the GIL (so do the compiled circle sums and most NumPy operations): overlap it with the kernel sums to use a second core.
    with ThreadPoolExecutor(max_workers=1) as pool:
        nearest_job = pool.submit(_nearest_indices, cells, grid, k)
        if window_shape == "square":
            weighted, total = _kernel_sums(cells, values, grid, half=window / 2, sigma=sigma)
        else:
            weighted, total = circle_point_sums(cells, values, grid, half=window / 2, sigma=sigma)
        nearest = nearest_job.result()
    nearest_mean = values[nearest].mean(axis=1).reshape(grid, grid)
    return _assemble(nearest_mean, weighted, total, d_max=d_max, window=window, sigma=sigma, k=k, window_shape=window_shape)


def cloud_matrices(
    clouds: Mapping[str, PointCloud],
    *,
    grid: int = DEFAULT_MATRIX_GRID,
    window: int = 32,
    sigma: float = 10.0,
    k: int = DEFAULT_K,
    d_max: float | None = None,
    window_shape: str = WINDOW_SHAPES[0],
    progress: Progress | None = None,
) -> dict[str, VarianceMatrix]:
    """The variance matrix of every cloud of one run: one cloud per signal, all built by
    :func:`~analytics.variance.point_cloud` from the same distances (``analytics.runs.run_point_clouds``).

    Each matrix is :func:`variance_matrix` of the cloud's points and values, equal to float rounding
    (sums taken in another order: ~1e-15 relative), in a fraction of the time, by two exact shortcuts:

    - **Kernel sums per target.** A point (j, k) of target t sits at x = d_tj, y = d_tk with value
      ``V_t[j, k] = |S_tj - S_tk|``. Square window: with ``A_t[j, c] = phi_x(d_tj, c)``, the one-axis
      weight (window cut included) of image j at cell column c, the target adds ``A_t^T V_t^T A_t``
      to ``sum_i phi_i v_i`` and ``A_t^T (1 - I) A_t`` to ``sum_i phi_i``: the work grows with the
      images, (n + 1) x grid per target, not with the points, (n + 1)² x window². Circle: in the row
      of image k at cell row r, the images j inside the circle at column c are a run of the target's
      images sorted by distance, so two prefix sums per (k, c) give the row's share
      (``analytics.variance._circle_sums``, as in :func:`variance_matrix`); the work grows with (n + 1) x rows x columns reached.
    - **One k-d tree over half the points.** The clouds share their points, so the K nearest points
      of every cell centre are found once for all signals. A cloud is symmetric: point (j, k) at
      (a, b) has its mirror (k, j) at (b, a) with the same value, so the K nearest of centre (x, y)
      are the K nearest of the K nearest pairs j < k of (x, y) and the mirrors of the K nearest
      pairs j < k of (y, x), which is also a centre. Only ties at the K-th distance can pick other
      points than :func:`variance_matrix`'s tree, and between a point and its mirror they do not
      change u(e).

    Parameters
    ----------
    clouds : mapping of str to PointCloud
        Keyed by signal; every cloud's ``distances`` must be the same.
    grid, window, sigma, k, d_max, window_shape
        As :func:`variance_matrix`; ``d_max`` defaults to the largest distance.
    progress : Progress, optional
        ``progress(done, n_targets, "targets")`` as the kernel sums go through the targets; before them, on
        a large cloud with the circle, ``progress(0, 0, "loading the compiled interpolation kernel")``
        (the first large matrices of a process; seconds on the first use after an install).

    Returns
    -------
    dict of str to VarianceMatrix
        Same keys, on the same axes.

    Raises
    ------
    InvalidInputError
        No cloud, clouds of different distances, or settings :func:`variance_matrix` refuses.
    """
    if not clouds:
        raise InvalidInputError("clouds is empty; pass the run's point clouds (analytics.runs.run_point_clouds)")
    (first_name, first), *rest = clouds.items()
    for name, cloud in rest:
        if cloud.distances is not first.distances and not np.array_equal(cloud.distances, first.distances):  # shared by signal_point_clouds
            raise InvalidInputError(
                f"cloud {name!r} has other distances than cloud {first_name!r}; cloud_matrices takes the clouds of one run "
                "(one per signal): call it once per run, or variance_matrix on each cloud"
            )
    grid, window, sigma, k, d_max = _check_settings(grid, window, sigma, k, d_max, first.points)
    check_choice(window_shape, "window_shape", WINDOW_SHAPES)
    scale = d_max / grid
    table_sums = _table_kernel_sums if window_shape == "square" else circle_cloud_sums
    with ThreadPoolExecutor(max_workers=1) as pool:  # the tree overlaps the sums, as in variance_matrix
        nearest_job = pool.submit(_cloud_nearest, first, scale, grid, k)
        *weighted, total = table_sums(
            first.distances / scale, [c.signals for c in clouds.values()], grid, half=window / 2, sigma=sigma, progress=progress
        )
        nearest = nearest_job.result()
    return {
        name: _assemble(
            cloud.values[nearest].mean(axis=1).reshape(grid, grid), sums, total, d_max=d_max, window=window, sigma=sigma, k=k, window_shape=window_shape
        )
        for (name, cloud), sums in zip(clouds.items(), weighted)
    }


def _check_settings(grid: int, window: int, sigma: float, k: int, d_max: float | None, points: np.ndarray) -> tuple[int, int, float, int, float]:
    """The checked settings, ``d_max`` defaulting to the largest coordinate of ``points``."""
    grid = check_positive_int(grid, "grid")
    window = check_positive_int(window, "window")
    sigma = _check_positive_real(sigma, "sigma")
    k = check_positive_int(k, "k")
    if d_max is None:
        d_max = float(points.max())
        if d_max <= 0:
            raise InvalidInputError(
                f"d_max defaults to the largest distance in points, which is {d_max}; pass d_max > 0 explicitly"
            )
    return grid, window, sigma, k, _check_positive_real(d_max, "d_max")


def _check_points(points: np.ndarray) -> np.ndarray:
    array = np.asarray(points)
    if array.dtype.kind not in "biuf" or array.ndim != 2 or array.shape[1] != 2 or array.shape[0] < 1:
        raise InvalidInputError(
            f"points must be a numeric array of shape (n_points, 2) with at least one point; got shape "
            f"{array.shape}, dtype {array.dtype}"
        )
    return check_finite(array.astype(np.float64, copy=False), "points")


def _assemble(
    nearest: np.ndarray, weighted: np.ndarray, total: np.ndarray, *, d_max: float, window: int, sigma: float, k: int, window_shape: str
) -> VarianceMatrix:
    """value(e) = (u(e) + sum phi v) / (1 + sum phi) as a read-only VarianceMatrix (phi(0) = 1)."""
    matrix = (nearest + weighted) / (1.0 + total)
    matrix.setflags(write=False)
    edges = np.linspace(0.0, d_max, nearest.shape[0] + 1)
    edges.setflags(write=False)
    return VarianceMatrix(matrix=matrix, edges=edges, window=window, sigma=sigma, k=k, window_shape=window_shape)


def _axis_weights(coords: np.ndarray, centres: np.ndarray, half: float, sigma: float, out: np.ndarray) -> None:
    """Write one-axis Gaussian weights inside the window into ``out``, shape (n_centres, n_block), float64."""
    np.subtract(coords[np.newaxis, :], centres[:, np.newaxis], out=out)
    np.square(out, out=out)
    # offset^2 > half^2 exactly when |offset| > half: half^2 is exact and squaring is monotone.
    outside = out > half**2
    out *= -0.5 / sigma / sigma  # stays finite where sigma**2 would overflow
    np.exp(out, out=out)
    np.copyto(out, 0.0, where=outside)


def _kernel_sums(cells: np.ndarray, values: np.ndarray, grid: int, *, half: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """``sum_i phi_i v_i`` and ``sum_i phi_i`` over the square window for every cell, each of shape (grid, grid), [row=y, col=x].

    Points are grouped into tiles of ``_TILE`` x ``_TILE`` cells. A tile's points reach only the
    cells whose centres lie within ``half`` of them, so each tile adds one dense product over that
    band of rows and columns: the work per point follows the window, not the grid.
    """
    order, bounds = _tile_order(cells, grid)
    cells, values = cells[order], values[order]
    sums = np.zeros((2, grid, grid))
    # These products are small; on a busy machine BLAS threads wait on each other (5x slower here).
    with threadpool_limits(limits=1, user_api="blas"):
        for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            if start == stop:
                continue
            rows = _reach(cells[start:stop, 1], grid, half)
            cols = _reach(cells[start:stop, 0], grid, half)
            for block in range(start, stop, _BLOCK):
                end = min(stop, block + _BLOCK)
                _add_block(sums, cells[block:end], values[block:end], rows, cols, half=half, sigma=sigma)
    return sums[0], sums[1]


def _tile_order(cells: np.ndarray, grid: int) -> tuple[np.ndarray, np.ndarray]:
    """Order of the points by tile (row-major) and the start of every tile in it, shape (n_tiles + 1,)."""
    per_axis = -(-grid // _TILE)
    tiles = np.clip(cells // _TILE, 0, per_axis - 1).astype(np.int32)  # points off the grid join a border tile
    ids = tiles[:, 1] * per_axis + tiles[:, 0]
    if per_axis**2 < 2**15:
        ids = ids.astype(np.int16)  # a stable sort of 16-bit keys is a radix sort: ~4x faster
    order = np.argsort(ids, kind="stable")
    return order, np.searchsorted(ids[order], np.arange(per_axis**2 + 1))


def _reach(coords: np.ndarray, grid: int, half: float) -> tuple[int, int]:
    """Cells ``[first, stop)`` on one axis whose centre may lie within ``half`` of a coordinate.

    One cell of slack on each side absorbs rounding; :func:`_axis_weights` decides exactly.
    """
    first = int(np.floor(coords.min() - half - 0.5))
    stop = int(np.ceil(coords.max() + half - 0.5)) + 1
    return max(first, 0), max(min(stop, grid), 0)


def _add_block(
    sums: np.ndarray, cells: np.ndarray, values: np.ndarray, rows: tuple[int, int], cols: tuple[int, int], *, half: float, sigma: float
) -> None:
    """Add one block of points to ``sums`` (shape (2, grid, grid)) over the cells ``rows`` x ``cols``."""
    (r0, r1), (c0, c1) = rows, cols
    if r0 >= r1 or c0 >= c1:
        return
    ny, n = r1 - r0, values.size
    wx = np.empty((c1 - c0, n))
    stacked = np.empty((2 * ny, n))  # rows [0, ny) hold wy * v, rows [ny, 2 ny) wy: one product gives both sums
    _axis_weights(cells[:, 0], np.arange(c0, c1) + 0.5, half, sigma, wx)
    _axis_weights(cells[:, 1], np.arange(r0, r1) + 0.5, half, sigma, stacked[ny:])
    np.multiply(stacked[ny:], values, out=stacked[:ny])
    sums[:, r0:r1, c0:c1] += (stacked @ wx.T).reshape(2, ny, c1 - c0)


def _table_kernel_sums(
    coords: np.ndarray, signals: list[np.ndarray], grid: int, *, half: float, sigma: float, progress: Progress | None = None
) -> np.ndarray:
    """``sum_i phi_i v_i`` of every signal table, then ``sum_i phi_i``, over the clouds of ``coords`` (square window).

    ``coords`` (n_targets, n + 1) are the distances in cell units; the result has shape
    (len(signals) + 1, grid, grid), [row=y, col=x]. Targets go in chunks of about ``_BLOCK``
    images so the weights stay small (see :func:`cloud_matrices` for the products), each chunk
    reported to ``progress`` as ``progress(done, n_targets, TARGETS_STEP)``.
    """
    n_targets, n_images = coords.shape
    centres = np.arange(grid) + 0.5
    sums = np.zeros((len(signals) + 1, grid, grid))
    chunk = max(1, _BLOCK // n_images)
    with threadpool_limits(limits=1, user_api="blas"):  # as in _kernel_sums
        for start in range(0, n_targets, chunk):
            stop = min(start + chunk, n_targets)
            weights = np.empty((grid, (stop - start) * n_images))  # weights[c, t (n + 1) + j] = A_t[j, c]
            _axis_weights(coords[start:stop].ravel(), centres, half, sigma, weights)
            per_image = weights.T.reshape(stop - start, n_images, grid)
            # (1 - I) A_t: each image's partners are all the target's other images.
            others = per_image.sum(axis=1, keepdims=True) - per_image
            sums[-1] += weights @ others.reshape(-1, grid)
            for s, table in enumerate(signals):
                block = table[start:stop]
                values = np.abs(block[:, :, np.newaxis] - block[:, np.newaxis, :])  # values[t, j, k]: point (j, k), as point_cloud
                sums[s] += weights @ (values.transpose(0, 2, 1) @ per_image).reshape(-1, grid)
            if progress is not None:
                progress(stop, n_targets, TARGETS_STEP)
    return sums


def _cloud_nearest(cloud: PointCloud, scale: float, grid: int, k: int) -> np.ndarray:
    """The k points of ``cloud`` nearest to every cell centre, from a tree of its pairs j < k (see :func:`cloud_matrices`)."""
    k, n_images = min(k, len(cloud)), cloud.distances.shape[1]
    lower = np.flatnonzero(cloud.pairs[:, 0] < cloud.pairs[:, 1])
    found, distance = _nearest_indices(cloud.points[lower] / scale, grid, k, distances=True)
    found = lower[found]
    # Point t n(n+1) + r n + (c or c - 1) is the pair (r, c) of target t (row-major without the diagonal).
    j, other = cloud.pairs[found, 0], cloud.pairs[found, 1]
    mirror = cloud.targets[found].astype(np.int64) * (n_images * (n_images - 1)) + other * (n_images - 1) + j
    transposed = np.arange(grid * grid).reshape(grid, grid).T.ravel()  # centre (x, y) -> centre (y, x)
    closest = np.argpartition(np.concatenate([distance, distance[transposed]], axis=1), k - 1, axis=1)[:, :k]
    return np.take_along_axis(np.concatenate([found, mirror[transposed]], axis=1), closest, axis=1)


def _nearest_indices(cells: np.ndarray, grid: int, k: int, *, distances: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """The k points nearest to every cell centre: indices of shape (grid * grid, k), row-major [row=y, col=x]."""
    k = min(k, cells.shape[0])
    centres = np.arange(grid) + 0.5
    cx, cy = np.meshgrid(centres, centres)  # cx[row, col] = centres[col]
    # Sliding-midpoint splits, no node shrinking and big leaves build ~3x faster than the defaults
    # (1.8 M points); 1024 queries barely notice, and the answer stays exact.
    tree = cKDTree(cells, leafsize=128, balanced_tree=False, compact_nodes=False)
    distance, nearest = tree.query(np.column_stack([cx.ravel(), cy.ravel()]), k=k)
    nearest = nearest.reshape(cx.size, k)
    return (nearest, distance.reshape(cx.size, k)) if distances else nearest
