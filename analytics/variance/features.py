"""Features of a variance matrix for the automated assessor (docs/method.md, 'Automated assessor'; ML4ML [25]):
:func:`matrix_features` and one function per feature.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy import ndimage

from analytics._validation import check_choice, check_finite
from analytics.exceptions import InvalidInputError

#: Error-rate threshold: ML4ML [25] (the paper's source of the feature) counts cells above 0.15.
DEFAULT_ERROR_THRESHOLD = 0.15
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


def error_rate(matrix: np.ndarray, *, threshold: float = DEFAULT_ERROR_THRESHOLD) -> float:
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
    interior = ndimage.laplace(m)[1:-1, 1:-1]  # border cells would need values from outside the matrix
    return _relative(float(np.abs(interior).mean()), float(np.abs(m).mean()))


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


def matrix_features(matrix: np.ndarray, *, threshold: float = DEFAULT_ERROR_THRESHOLD) -> dict[str, float]:
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
