"""The assessor's matrix features as ML4ML's authors compute them (Liao et al., the public
``ML4ML-invariance-testing`` code: ``measurement.py`` and ``utils.py``), read afresh for Backdrop's
matrices: :func:`authors_features` and one function per feature.

Orientation. The authors flip each matrix upside down before measuring it (their ``flip_y``), so they
measure it as it is drawn, origin at the bottom left. A :class:`~analytics.variance.VarianceMatrix`
keeps row 0 at the smallest d_ik, so the functions here measure ``matrix[::-1]`` ("the drawn matrix",
row 0 at the top). Their matrices compare a transformation with itself along one diagonal (always 0);
their normaliser, the sum of the cells over ``n * n - n``, leaves those cells out of the count, and it
is kept as written.

Left out, on purpose: the authors first overwrite that zero diagonal with its neighbours' mean and
skip the two centre rows/columns of the gradients, because on 32 x 32 CIFAR images rotations of -1,
0 and +1 degrees coincide (``fillin_relation_diagonal`` says it is for CIFAR only). Backdrop's
diagonal holds pairs of different backgrounds at equal distance, real values, so it is measured as
is and no row is skipped. Their diagonal gradient's statistics read the vertical gradient (the
diagonal differences are computed, then the vertical ones are summarised); here they summarise the
diagonal differences. docs/ARCHITECTURE.md lists both.

Kept finite, on purpose: a ratio whose denominator is 0 is 0 here (``_relative``), where the authors'
code divides anyway. A fully background-invariant model draws a constant, often all-zero, matrix:
theirs gives NaN for discontinuity and asymmetry (all-zero: the level is 0) and for
``grad_overall`` (each gradient's mean over a spread of 0), and ±inf for a gradient whose spread
alone is 0. The assessor's learners need finite inputs (scikit-learn's AdaBoost refuses NaN, as its
random forest did before 1.4), and 0 reads as "no pattern" (docs/method.md, differences table).
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np

from analytics._validation import check_choice
from analytics.exceptions import InvalidInputError

from .features import DEFAULT_ERROR_THRESHOLD, GRADIENT_DIRECTIONS, _check_matrix, _relative

#: Statistics of each direction's gradient, as the authors' assessor reads them (the diagonal has no
#: weighted std there).
AUTHORS_GRADIENT_STATS: dict[str, tuple[str, ...]] = {
    "vertical": ("mean", "std", "wstd"),
    "horizontal": ("mean", "std", "wstd"),
    "diagonal": ("mean", "std"),
}
#: Keys of :func:`authors_features` on the whole matrix, in order (a nested crop adds ``_crop<margin>``).
AUTHORS_FEATURE_NAMES = (
    "mean",
    "s_mean",
    "std",
    "error_rate",
    "discontinuity",
    "asymmetry",
    "gradient_overall",
    *(f"gradient_{d}_{stat}" for d in GRADIENT_DIRECTIONS for stat in AUTHORS_GRADIENT_STATS[d]),
)


def _level(drawn: np.ndarray) -> float:
    """The authors' reference level: the sum of the cells over ``n * n - n``."""
    n = drawn.shape[0]
    return float(drawn.sum()) / (n * n - n)


def squared_mean(matrix: np.ndarray) -> float:
    """Mean of the squared cell values (the authors' ``s_mean``): weighs strong variance more than the mean does."""
    return float(np.mean(_check_matrix(matrix) ** 2))


def authors_error_rate(matrix: np.ndarray, *, threshold: float = DEFAULT_ERROR_THRESHOLD) -> float:
    """Share of cells strictly above ``threshold`` (the authors' ``robusterror``: ``> 0.15``).

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float
    threshold : float, default=0.15
    """
    if isinstance(threshold, bool) or not isinstance(threshold, Real) or not np.isfinite(threshold):
        raise InvalidInputError(f"threshold must be a finite number; got {threshold!r}")
    return float((_check_matrix(matrix) > threshold).mean())


def authors_discontinuity(matrix: np.ndarray) -> float:
    """How much the variance changes along lines of equal distance difference, relative to its level.

    On the drawn matrix, the line ``row + col = s`` (s = 1 .. n-1) holds the cells whose two
    backgrounds differ by the same amount in distance (one diagonal of the stored matrix, from the
    main diagonal into the half where d_ik >= d_ij). Each line's std is weighted by its length over
    n; their sum is divided by the reference level (sum of cells / (n*n - n)). 0 on a matrix constant
    along those lines, and for an all-zero matrix.

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float, grid >= 3

    Returns
    -------
    float
        >= 0.
    """
    m = _check_matrix(matrix)
    n = m.shape[0]
    # stored diagonal offset k (col - row) = s - (n - 1): s = 1 .. n-1 is k = -(n-2) .. 0
    total = sum(len(line) * float(np.std(line)) for line in (np.diagonal(m, offset=k) for k in range(-(n - 2), 1)))
    return _relative(total / n, _level(m))


def authors_asymmetry(matrix: np.ndarray) -> float:
    """Mean absolute difference between each cell and its mirror across the drawn matrix's main diagonal, relative to the level.

    The drawn matrix's main diagonal is the stored matrix's anti-diagonal: cell (d_ij, d_ik) is
    compared with (d_max - d_ik, d_max - d_ij), pairs of near backgrounds against pairs of far ones.
    Each of the n(n-1)/2 mirrored pairs counts once; the mean is divided by the reference level.

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float

    Returns
    -------
    float
        >= 0; 0 for a matrix symmetric about the anti-diagonal and for an all-zero matrix.
    """
    m = _check_matrix(matrix)
    n = m.shape[0]
    mirrored = m[::-1, ::-1].T  # mirrored[p, j] = m[n-1-j, n-1-p]
    below = np.add.outer(np.arange(n), np.arange(n)) < n - 1  # each pair once, the anti-diagonal left out
    return _relative(float(np.abs(m - mirrored)[below].mean()), _level(m))


def _gradient_lines(drawn: np.ndarray, direction: str) -> list[np.ndarray]:
    """Signed differences on the drawn matrix, one array per line, over the half where d_ik >= d_ij.

    vertical: row r-1 minus row r, columns 0 .. n-1-r (r = 1 .. n-1); horizontal: column c-1 minus
    column c, rows 0 .. n-1-c (c = 1 .. n-1); diagonal: cell (r-1, c-1) minus (r, c), columns
    1 .. n-1-r (r = 1 .. n-2).
    """
    n = drawn.shape[0]
    if direction == "vertical":
        return [drawn[r - 1, : n - r] - drawn[r, : n - r] for r in range(1, n)]
    if direction == "horizontal":
        return [drawn[: n - c, c - 1] - drawn[: n - c, c] for c in range(1, n)]
    return [drawn[r - 1, : n - 1 - r] - drawn[r, 1 : n - r] for r in range(1, n - 1)]


def authors_gradient(matrix: np.ndarray, *, direction: str) -> dict[str, float]:
    """The authors' signed gradient along one direction: its mean, std, weighted std and overall estimate.

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float
    direction : {"vertical", "horizontal", "diagonal"}
        On the drawn matrix (:func:`_gradient_lines`): the cell above minus the cell, the cell to the
        left minus the cell, the cell up-left minus the cell; over the cells where d_ik >= d_ij.

    Returns
    -------
    dict of str to float
        ``mean`` and ``std`` of every difference; ``wstd`` the mean of the per-line stds (vertical,
        horizontal: the last line, a single difference, left out); ``overall`` = mean / wstd (vertical, horizontal) or
        mean / std (diagonal), 0 where the denominator is 0.
    """
    drawn = _check_matrix(matrix)[::-1]
    direction = check_choice(direction, "direction", GRADIENT_DIRECTIONS)
    lines = _gradient_lines(drawn, direction)
    values = np.concatenate(lines)
    mean, std = float(values.mean()), float(values.std())
    kept = lines if direction == "diagonal" else lines[:-1]  # as the authors: their diagonal's last line is the empty one
    wstd = float(np.mean([np.std(line) for line in kept]))
    overall = _relative(mean, std if direction == "diagonal" else wstd)
    return {"mean": mean, "std": std, "wstd": wstd, "overall": overall}


def gradient_overall(gradients: dict[str, dict[str, float]]) -> float:
    """The authors' ``grad_overall``: the mean of the three directions' overall estimates (:func:`authors_gradient`)."""
    return float(np.mean([gradients[d]["overall"] for d in GRADIENT_DIRECTIONS]))


def sensitivity(matrix: np.ndarray, subsample: np.ndarray) -> float:
    """The authors' ``sstv``: the summed absolute cell difference between a matrix and the same matrix from a subsample.

    The authors rebuild the matrix from a random 90 % of the test examples; the sum grows with the
    number of cells, so compare it only between matrices of one grid size.

    Parameters
    ----------
    matrix, subsample : array-like of shape (grid, grid), float
    """
    full, part = _check_matrix(matrix), _check_matrix(subsample)
    if full.shape != part.shape:
        raise InvalidInputError(f"subsample must have the matrix's shape {full.shape}; got {part.shape}")
    return float(np.abs(full - part).sum())


def _whole(m: np.ndarray, threshold: float) -> dict[str, float]:
    gradients = {d: authors_gradient(m, direction=d) for d in GRADIENT_DIRECTIONS}
    features = {
        "mean": float(m.mean()),
        "s_mean": squared_mean(m),
        "std": float(m.std()),
        "error_rate": authors_error_rate(m, threshold=threshold),
        "discontinuity": authors_discontinuity(m),
        "asymmetry": authors_asymmetry(m),
        "gradient_overall": gradient_overall(gradients),
    }
    for direction in GRADIENT_DIRECTIONS:
        features.update({f"gradient_{direction}_{stat}": gradients[direction][stat] for stat in AUTHORS_GRADIENT_STATS[direction]})
    return features


def authors_features(matrix: np.ndarray, *, threshold: float = DEFAULT_ERROR_THRESHOLD, crops: Sequence[int] = ()) -> dict[str, float]:
    """The authors' features of one matrix (:data:`AUTHORS_FEATURE_NAMES`), optionally on nested centre crops too.

    Parameters
    ----------
    matrix : array-like of shape (grid, grid), float, grid >= 3
    threshold : float, default=0.15
        For :func:`authors_error_rate`.
    crops : sequence of int, default=()
        Margins in cells: each adds every feature of ``matrix[a:-a, a:-a]`` as ``<name>_crop<a>``
        (the authors measure crops 1 .. 10 of their 31 x 31 matrices; their assessor reads only the
        whole matrix, hence none by default).

    Returns
    -------
    dict of str to float

    Examples
    --------
    >>> f = authors_features(np.full((4, 4), 0.25))
    >>> f["mean"], f["s_mean"], f["error_rate"], f["discontinuity"]
    (0.25, 0.0625, 1.0, 0.0)
    """
    m = _check_matrix(matrix)
    n = m.shape[0]
    features = _whole(m, threshold)
    for margin in crops:
        if isinstance(margin, bool) or not isinstance(margin, Integral) or margin < 1 or n - 2 * margin < 3:
            raise InvalidInputError(f"crop margins must be whole numbers from 1 to {(n - 3) // 2} on a {n} x {n} matrix; got {margin!r}")
        crop = _whole(m[margin:-margin, margin:-margin], threshold)
        features.update({f"{name}_crop{int(margin)}": value for name, value in crop.items()})
    return features
