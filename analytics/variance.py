"""Point clouds, RBF variance matrices and their features.

The numerical core of the analyst's view (Liao & Chen, "Background Invariance Testing According to
Semantic Proximity", §4.4 and Appendix D; DESIGN §1.8, §1.9, §1.13, §1.14):

* :func:`point_cloud` turns per-image distances and signals of a run into the point cloud
  p = (d_ij, d_ik), v = |S_ij - S_ik| over every ordered pair (j, k), j != k, of each target's
  n + 1 images (the original at column 0, then its n composites).
* :func:`variance_matrix` resamples a cloud onto a grid with the paper's adjusted Gaussian RBF
  (kernel sums inside a square window plus a K-nearest-neighbour value at every cell).
* :func:`worst_case_accuracy` is the statistic the paper argues is not enough on its own.
* :func:`matrix_features` (and one function per feature) describe a matrix for the automated assessor.

Everything is NumPy/SciPy; nothing here draws or imports Streamlit (``ui/charts.py`` draws).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from numbers import Real

import numpy as np
from scipy.spatial import cKDTree
from threadpoolctl import threadpool_limits

from ._validation import check_choice, check_finite, check_positive_int
from .exceptions import InvalidInputError

__all__ = [
    "DEFAULT_GRID",
    "DEFAULT_K",
    "DEFAULT_THRESHOLD",
    "FEATURE_NAMES",
    "GRADIENT_DIRECTIONS",
    "PRESETS",
    "PointCloud",
    "VarianceMatrix",
    "asymmetry",
    "discontinuity",
    "error_rate",
    "gradient_max",
    "gradient_mean",
    "matrix_features",
    "matrix_mean",
    "matrix_std",
    "point_cloud",
    "variance_matrix",
    "worst_case_accuracy",
    "worst_case_correct",
]

#: The paper's three interpolants (Appendix B2, Table 3) as ``name: (window, sigma)`` in cells; all use K = 32.
PRESETS: dict[str, tuple[int, float]] = {"fine": (32, 2.0), "medium": (16, 5.0), "smooth": (32, 10.0)}
#: Cells per axis. The paper gives its kernel sizes in pixels of the matrix image; on 128 cells the
#: widest window (32) spans a quarter of each axis (+-0.125 d_max) and sigma 10 is 0.078 d_max, so
#: every preset is local (on 32 cells the window covered the whole matrix and blurred failure bands).
DEFAULT_GRID = 128
#: Number of nearest points averaged into u(e).
DEFAULT_K = 32
#: Error-rate threshold: ML4ML [25] (the paper's source of the feature) counts cells above 0.15.
DEFAULT_THRESHOLD = 0.15
#: Directions of :func:`gradient_mean` / :func:`gradient_max`.
GRADIENT_DIRECTIONS = ("vertical", "horizontal", "diagonal")
#: Keys of :func:`matrix_features`, in order (the assessor's feature columns).
FEATURE_NAMES = (
    "mean",
    "std",
    "error_rate",
    "discontinuity",
    "asymmetry",
    "asymmetry_anti_diagonal",
    *(f"gradient_{d}_{stat}" for d in GRADIENT_DIRECTIONS for stat in ("mean", "max")),
)

# Points per block of the kernel sums: (cells reached x block) float64 weights stay in the CPU cache.
_BLOCK = 4096
# Cells per side of the square tiles that group points for the kernel sums.
_TILE = 8


# --------------------------------------------------------------------------------------------------
# Point clouds
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PointCloud:
    """The points of every ordered image pair of every target, with their drill-down keys.

    Point ``t * n(n+1) + p`` belongs to target ``t`` and to the ``p``-th ordered pair (j, k) in
    row-major order of the (n+1) x (n+1) grid without its diagonal.

    Memory: 36 bytes a point (2 coordinates and the value as float64; target, j and k as int32),
    so the paper's 1712 targets x 32 backgrounds (1,807,872 points) take about 65 MB.

    Attributes
    ----------
    points : ndarray of shape (n_points, 2), float64
        ``(d_ij, d_ik)``: distances of image j and image k of the target to its original
        (x axis = d_ij, y axis = d_ik).
    values : ndarray of shape (n_points,), float64
        ``|S_ij - S_ik|``, the change of the signal between the two images.
    targets : ndarray of shape (n_points,), int32
        Row of the target in the arrays given to :func:`point_cloud`.
    pairs : ndarray of shape (n_points, 2), int32
        ``(j, k)``: columns of the two images (0 = the original, 1..n = the composites).
    """

    points: np.ndarray
    values: np.ndarray
    targets: np.ndarray
    pairs: np.ndarray

    def __len__(self) -> int:
        return int(self.values.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes held by the four arrays."""
        return int(self.points.nbytes + self.values.nbytes + self.targets.nbytes + self.pairs.nbytes)


def point_cloud(distances: np.ndarray, signals: np.ndarray) -> PointCloud:
    """Build the point cloud of a run for one signal (DESIGN §1.8).

    For every target i and every ordered pair (j, k), j != k, of its n + 1 images the cloud holds the
    point ``(d_ij, d_ik)`` with value ``|S_ij - S_ik|``: ``n_targets * n * (n + 1)`` points, computed
    with array indexing only (no Python loop over pairs or targets).

    Parameters
    ----------
    distances : array-like of shape (n_targets, n + 1), float
        Semantic distance of each image to its target's original; column 0 is the original itself
        (distance 0). Every target must have the same number n of composites (a run stores exactly n
        per target); pad or drop targets beforehand if they differ.
    signals : array-like of shape (n_targets, n + 1), float
        The signal S of each image (e.g. the probability of the true class), same layout.

    Returns
    -------
    PointCloud
        Read-only arrays of ``n_targets * n * (n + 1)`` points.

    Raises
    ------
    InvalidInputError
        If an array is not 2-D numeric, the shapes differ, there are fewer than two images per target,
        a value is NaN or infinite, or a distance is negative.

    Examples
    --------
    >>> cloud = point_cloud([[0.0, 0.5]], [[0.9, 0.2]])
    >>> cloud.points.tolist(), cloud.values.round(6).tolist(), cloud.pairs.tolist()
    ([[0.0, 0.5], [0.5, 0.0]], [0.7, 0.7], [[0, 1], [1, 0]])
    """
    distances = _check_table(distances, "distances")
    signals = _check_table(signals, "signals")
    if distances.shape != signals.shape:
        raise InvalidInputError(
            f"distances and signals must have the same shape (n_targets, n + 1); got {distances.shape} and "
            f"{signals.shape}; pass one signal column per image of each target"
        )
    if (distances < 0).any():
        raise InvalidInputError(
            f"distances must be >= 0; found {int((distances < 0).sum())} negative values "
            f"(smallest {distances.min()}); pass distances, not similarities"
        )
    return _point_cloud(distances, signals)


def _check_table(table: np.ndarray, name: str) -> np.ndarray:
    """Return a (n_targets, n + 1) float64 copy of ``table`` or raise."""
    array = np.asarray(table)
    if array.dtype.kind not in "biuf":
        raise InvalidInputError(f"{name} must hold numbers; got dtype {array.dtype}")
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 2:
        raise InvalidInputError(
            f"{name} must have shape (n_targets, n + 1) with at least one target and the original plus one "
            f"composite per target; got shape {array.shape}"
        )
    return check_finite(array.astype(np.float64), name)


def _point_cloud(distances: np.ndarray, signals: np.ndarray) -> PointCloud:
    n_targets, n_images = distances.shape
    j, k = np.nonzero(~np.eye(n_images, dtype=bool))  # ordered pairs j != k, row-major
    n_pairs = j.size
    points = np.empty((n_targets, n_pairs, 2))
    points[..., 0] = distances[:, j]
    points[..., 1] = distances[:, k]
    values = np.abs(signals[:, j] - signals[:, k]).reshape(-1)
    targets = np.repeat(np.arange(n_targets, dtype=np.int32), n_pairs)
    pairs = np.tile(np.stack([j, k], axis=1).astype(np.int32), (n_targets, 1))
    cloud = PointCloud(points=points.reshape(-1, 2), values=values, targets=targets, pairs=pairs)
    for array in (cloud.points, cloud.values, cloud.targets, cloud.pairs):
        array.setflags(write=False)
    return cloud


# --------------------------------------------------------------------------------------------------
# RBF variance matrices
# --------------------------------------------------------------------------------------------------


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
        Full side of the square kernel window, in cells.
    sigma : float
        Standard deviation of the Gaussian kernel, in cells.
    k : int
        Number of nearest points averaged into u(e) (as asked; fewer when the cloud is smaller).
    """

    matrix: np.ndarray
    edges: np.ndarray
    window: int
    sigma: float
    k: int

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
        return {"grid": self.grid, "window": self.window, "sigma": self.sigma, "k": self.k, "d_max": self.d_max}

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
    grid: int = DEFAULT_GRID,
    window: int = 32,
    sigma: float = 10.0,
    k: int = DEFAULT_K,
    d_max: float | None = None,
) -> VarianceMatrix:
    """Resample a point cloud onto a grid with the paper's adjusted Gaussian RBF (DESIGN §1.9).

    For each cell e of a ``grid x grid`` grid over ``[0, d_max]^2``::

        value(e) = (phi(0) * u(e) + sum_i phi(|e - p_i|) * v_i) / (phi(0) + sum_i phi(|e - p_i|))

    with ``phi(r) = exp(-r^2 / (2 sigma^2))`` and r measured in cells from the cell centre. u(e) is the
    mean value of the ``k`` points nearest to the cell centre, so a cell keeps a value where no point
    falls near it (``value(e) = u(e)`` there).

    Reading of "window" (the paper draws a circle and leaves its size open): a *square* window of
    ``window`` cells per side centred on the cell centre. Point p_i contributes to e when
    ``|x_i - x_e| <= window / 2`` and ``|y_i - y_e| <= window / 2`` (in cells). The paper's "kernel size"
    is read as this full side, like an image-filter kernel size. Points outside ``[0, d_max]^2`` still
    contribute to cells whose window reaches them, and count as neighbours for u(e).

    Units: one cell is ``d_max / grid`` in semantic distance, so a window of ``w`` cells reaches
    ``w / 2 * d_max / grid`` each way and sigma ``s`` cells is ``s * d_max / grid``. On the default
    128 cells the presets are local: smooth (32, 10) reaches +-0.125 d_max with sigma 0.078 d_max,
    medium (16, 5) +-0.0625 with 0.039, fine (32, 2) +-0.125 with 0.016.

    Because a Gaussian over a square window factorises, ``phi = wx * wy`` with one-axis weights, both
    sums are exact matrix products ``Wy @ diag(v) @ Wx.T`` and ``Wy @ Wx.T`` (cells x points times
    points x cells). Points are grouped into tiles of 8 x 8 cells and each tile's product covers
    only the rows and columns its windows reach, so the work per point follows the window, not the
    grid; u(e) comes from a k-d tree of the points queried at the cell centres, built in a second
    thread. About 2 s for 1.8 M points on 128 x 128 cells on a busy 2-core machine (``benchmarks/variance.py``).

    Parameters
    ----------
    points : array-like of shape (n_points, 2), float
        ``(d_ij, d_ik)`` of every point (``PointCloud.points``).
    values : array-like of shape (n_points,), float
        Value of every point (``PointCloud.values``).
    grid : int, default=128
        Cells per axis (:data:`DEFAULT_GRID`); a cell is ``d_max / grid`` wide.
    window : int, default=32
        Full side of the square kernel window, in cells (see above). Presets in :data:`PRESETS`.
    sigma : float, default=10.0
        Standard deviation of the Gaussian, in cells.
    k : int, default=32
        Nearest points averaged into u(e); with fewer points than ``k`` all points are used. Ties at
        the k-th distance are broken by the tree; in a full cloud they occur between a point and its
        mirror (j, k) / (k, j), whose values are equal.
    d_max : float, optional
        Upper end of both axes; default the largest coordinate in ``points``.

    Returns
    -------
    VarianceMatrix

    Raises
    ------
    InvalidInputError
        On malformed arrays, NaN/infinite values, non-positive settings, or ``d_max`` not > 0.

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
    d_max = _check_positive_real(d_max, "d_max")
    return _variance_matrix(points, values, grid=grid, window=window, sigma=sigma, k=k, d_max=d_max)


def _check_points(points: np.ndarray) -> np.ndarray:
    array = np.asarray(points)
    if array.dtype.kind not in "biuf" or array.ndim != 2 or array.shape[1] != 2 or array.shape[0] < 1:
        raise InvalidInputError(
            f"points must be a numeric array of shape (n_points, 2) with at least one point; got shape "
            f"{array.shape}, dtype {array.dtype}"
        )
    return check_finite(array.astype(np.float64, copy=False), "points")


def _check_positive_real(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value) or value <= 0:
        raise InvalidInputError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


def _variance_matrix(
    points: np.ndarray, values: np.ndarray, *, grid: int, window: int, sigma: float, k: int, d_max: float
) -> VarianceMatrix:
    cells = points / (d_max / grid)  # coordinates in cell units: cell c spans [c, c + 1)
    centres = np.arange(grid) + 0.5
    # The k-d tree build releases the GIL: overlap it with the kernel sums to use a second core.
    with ThreadPoolExecutor(max_workers=1) as pool:
        nearest_job = pool.submit(_nearest_means, cells, values, centres, k)
        weighted, total = _kernel_sums(cells, values, grid, half=window / 2, sigma=sigma)
        nearest = nearest_job.result()
    matrix = (nearest + weighted) / (1.0 + total)  # phi(0) = 1
    matrix.setflags(write=False)
    edges = np.linspace(0.0, d_max, grid + 1)
    edges.setflags(write=False)
    return VarianceMatrix(matrix=matrix, edges=edges, window=window, sigma=sigma, k=k)


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
    """``sum_i phi_i v_i`` and ``sum_i phi_i`` for every cell, each of shape (grid, grid), [row=y, col=x].

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


def _nearest_means(cells: np.ndarray, values: np.ndarray, centres: np.ndarray, k: int) -> np.ndarray:
    """u(e): mean value of the k points nearest to every cell centre, shape (grid, grid), [row=y, col=x]."""
    k = min(k, values.size)
    cx, cy = np.meshgrid(centres, centres)  # cx[row, col] = centres[col]
    # Sliding-midpoint splits, no node shrinking and big leaves build ~3x faster than the defaults
    # (1.8 M points); 1024 queries barely notice, and the answer stays exact.
    tree = cKDTree(cells, leafsize=128, balanced_tree=False, compact_nodes=False)
    _, nearest = tree.query(np.column_stack([cx.ravel(), cy.ravel()]), k=k)
    return values[nearest.reshape(cx.size, k)].mean(axis=1).reshape(cx.shape)


# --------------------------------------------------------------------------------------------------
# Worst-case accuracy (DESIGN §1.14)
# --------------------------------------------------------------------------------------------------


def worst_case_correct(correct: np.ndarray, *, include_original: bool = False) -> np.ndarray:
    """Per target: is it still classified correctly under the worst of its backgrounds?

    The worst background is the one where the target is misclassified, so a target counts as correct
    when all of its composites are. The original (column 0) is left out by default: it has no new
    background, and its accuracy is reported separately as the plain accuracy.

    Parameters
    ----------
    correct : array-like of shape (n_targets, n + 1), bool
        Correctness of each image; column 0 is the original, columns 1..n the composites.
    include_original : bool, default=False
        Also require the original to be correct.

    Returns
    -------
    ndarray of shape (n_targets,), bool
    """
    correct = np.asarray(correct)
    if correct.dtype != np.bool_ or correct.ndim != 2 or correct.shape[0] < 1 or correct.shape[1] < 2:
        raise InvalidInputError(
            "correct must be a bool array of shape (n_targets, n + 1) (original, then n composites) with at "
            f"least one target and one composite; got shape {correct.shape}, dtype {correct.dtype}"
        )
    return correct[:, 0 if include_original else 1 :].all(axis=1)


def worst_case_accuracy(correct: np.ndarray, *, include_original: bool = False) -> float:
    """Mean over targets of the accuracy under each target's worst background (DESIGN §1.14).

    Parameters
    ----------
    correct : array-like of shape (n_targets, n + 1), bool
        Correctness of each image; column 0 is the original.
    include_original : bool, default=False
        See :func:`worst_case_correct`.

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> worst_case_accuracy([[True, True, True], [True, False, True]])
    0.5
    """
    return float(worst_case_correct(correct, include_original=include_original).mean())


# --------------------------------------------------------------------------------------------------
# Matrix features for the assessor (DESIGN §1.13; ML4ML [25])
# --------------------------------------------------------------------------------------------------


def _check_matrix(matrix: np.ndarray) -> np.ndarray:
    array = np.asarray(matrix)
    if array.dtype.kind not in "biuf" or array.ndim != 2 or array.shape[0] != array.shape[1] or array.shape[0] < 3:
        raise InvalidInputError(
            "matrix must be a square numeric array of at least 3 x 3 cells (VarianceMatrix.matrix); got shape "
            f"{array.shape}, dtype {array.dtype}"
        )
    return check_finite(array.astype(np.float64, copy=False), "matrix")


def matrix_mean(matrix: np.ndarray) -> float:
    """Mean cell value: the overall level of variance (the assessor's strongest feature in the paper).

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float
    """
    return float(_check_matrix(matrix).mean())


def matrix_std(matrix: np.ndarray) -> float:
    """Standard deviation of the cell values (population, ddof=0).

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float
    """
    return float(_check_matrix(matrix).std())


def error_rate(matrix: np.ndarray, *, threshold: float = DEFAULT_THRESHOLD) -> float:
    """Share of cells whose value is >= ``threshold`` (the paper's "percentage of pixels >= thres").

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float
    threshold : float, default=0.15
        ML4ML [25] counts cells above 0.15; for signals on another scale (embedding means) pick a
        threshold on that scale.

    Returns
    -------
    float
        In [0, 1].
    """
    if isinstance(threshold, bool) or not isinstance(threshold, Real) or not np.isfinite(threshold):
        raise InvalidInputError(f"threshold must be a finite number; got {threshold!r}")
    return float((_check_matrix(matrix) >= threshold).mean())


def discontinuity(matrix: np.ndarray) -> float:
    """Abruptness of the pattern: mean absolute 5-point Laplacian over interior cells / mean absolute cell value.

    A second difference is 0 on constant and linearly sloping regions and large at steps, spikes and
    checkerboards, so this separates abrupt patches (the paper's "abrupt green pattern") from smooth
    slopes, which the gradient features already describe. Dividing by the mean level makes it
    scale-free, as ML4ML's discontinuity score is. 0 for an all-zero matrix.

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float, grid >= 3

    Returns
    -------
    float
        >= 0.
    """
    m = _check_matrix(matrix)
    laplacian = m[:-2, 1:-1] + m[2:, 1:-1] + m[1:-1, :-2] + m[1:-1, 2:] - 4 * m[1:-1, 1:-1]
    return _relative(float(np.abs(laplacian).mean()), float(np.abs(m).mean()))


def asymmetry(matrix: np.ndarray, *, about: str = "diagonal") -> float:
    """Relative asymmetry ``||M - R(M)||_F / (2 ||M||_F)`` of the matrix under a reflection R.

    ``about="diagonal"`` reflects across the main diagonal (R(M) = M^T): swapping the roles of the two
    images of a pair. A matrix built from a full :func:`point_cloud` is symmetric by construction (it
    holds (j, k) and (k, j) with equal values), so this is ~0 there and flags clouds built otherwise.
    ``about="anti-diagonal"`` reflects across the other diagonal (cell (d_ij, d_ik) against
    (d_max - d_ik, d_max - d_ij)): it contrasts pairs of near backgrounds with pairs of far ones.

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float
    about : {"diagonal", "anti-diagonal"}, default="diagonal"

    Returns
    -------
    float
        In [0, 1]: 0 symmetric, 1 antisymmetric; 0 for an all-zero matrix.
    """
    m = _check_matrix(matrix)
    about = check_choice(about, "about", ("diagonal", "anti-diagonal"))
    reflected = m.T if about == "diagonal" else m[::-1, ::-1].T
    return _relative(float(np.linalg.norm(m - reflected)), 2 * float(np.linalg.norm(m)))


def _relative(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else 0.0


def _differences(matrix: np.ndarray, direction: str) -> np.ndarray:
    """Absolute finite differences between neighbouring cells along ``direction``."""
    m = _check_matrix(matrix)
    direction = check_choice(direction, "direction", GRADIENT_DIRECTIONS)
    if direction == "vertical":  # along y = d_ik (rows)
        return np.abs(np.diff(m, axis=0))
    if direction == "horizontal":  # along x = d_ij (columns)
        return np.abs(np.diff(m, axis=1))
    return np.abs(m[1:, 1:] - m[:-1, :-1])  # along the main diagonal: both distances grow


def gradient_mean(matrix: np.ndarray, *, direction: str) -> float:
    """Mean absolute difference between neighbouring cells along one direction (per cell step).

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float
    direction : {"vertical", "horizontal", "diagonal"}
        ``vertical``: row r+1 minus row r (along d_ik); ``horizontal``: column c+1 minus c (along
        d_ij); ``diagonal``: cell (r+1, c+1) minus (r, c).
    """
    return float(_differences(matrix, direction).mean())


def gradient_max(matrix: np.ndarray, *, direction: str) -> float:
    """Largest absolute difference between neighbouring cells along one direction.

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float
    direction : {"vertical", "horizontal", "diagonal"}
        As in :func:`gradient_mean`.
    """
    return float(_differences(matrix, direction).max())


def matrix_features(matrix: np.ndarray, *, threshold: float = DEFAULT_THRESHOLD) -> dict[str, float]:
    """All features of one variance matrix, keyed by :data:`FEATURE_NAMES` (in that order).

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float, grid >= 3
        Usually ``VarianceMatrix.matrix``.
    threshold : float, default=0.15
        For :func:`error_rate`.

    Returns
    -------
    dict of str to float

    Examples
    --------
    >>> features = matrix_features(np.full((4, 4), 0.25))
    >>> features["mean"], features["error_rate"], features["gradient_diagonal_max"]
    (0.25, 1.0, 0.0)
    """
    m = _check_matrix(matrix)
    features = {
        "mean": matrix_mean(m),
        "std": matrix_std(m),
        "error_rate": error_rate(m, threshold=threshold),
        "discontinuity": discontinuity(m),
        "asymmetry": asymmetry(m),
        "asymmetry_anti_diagonal": asymmetry(m, about="anti-diagonal"),
    }
    for direction in GRADIENT_DIRECTIONS:
        features[f"gradient_{direction}_mean"] = gradient_mean(m, direction=direction)
        features[f"gradient_{direction}_max"] = gradient_max(m, direction=direction)
    return features
