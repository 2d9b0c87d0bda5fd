"""Point clouds of a run (docs/method.md, 'Point cloud'): p = (d_ij, d_ik), v = |S_ij - S_ik| over every ordered pair
(j, k), j != k, of each target's n + 1 images (the original at column 0, then its n composites).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from analytics._validation import check_finite
from analytics.exceptions import InvalidInputError


@dataclass(frozen=True, eq=False)
class PointCloud:
    """The points of every ordered image pair of every target, with their drill-down keys.

    Point ``t * n(n+1) + p`` belongs to target ``t`` and to the ``p``-th ordered pair (j, k) in
    row-major order of the (n+1) x (n+1) grid without its diagonal.

    Memory: 36 bytes a point (2 coordinates and the value as float64; target, j and k as int32),
    so the paper's 1712 targets x 32 backgrounds (1,807,872 points) take about 65 MB (the two
    source tables add 16 bytes an image, under 1 MB).

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
    distances, signals : ndarray of shape (n_targets, n + 1), float64
        The tables the cloud was built from (:func:`point_cloud`'s arguments): the variance matrices
        compute their kernel sums per target from them (``analytics.variance.cloud_matrices``).
    """

    points: np.ndarray
    values: np.ndarray
    targets: np.ndarray
    pairs: np.ndarray
    distances: np.ndarray = field(repr=False)
    signals: np.ndarray = field(repr=False)

    def __len__(self) -> int:
        return int(self.values.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        arrays = (self.points, self.values, self.targets, self.pairs, self.distances, self.signals)
        return int(sum(array.nbytes for array in arrays))


def point_cloud(distances: np.ndarray, signals: np.ndarray) -> PointCloud:
    """Build the point cloud of a run for one signal (docs/method.md, 'Point cloud').

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
    distances = _check_distances(distances)
    return _point_clouds(distances, {"": _check_signals(signals, distances.shape, "signals")})[""]


def signal_point_clouds(distances: np.ndarray, signals: Mapping[str, np.ndarray]) -> dict[str, PointCloud]:
    """:func:`point_cloud` of several signals over the same distances (a run's signals).

    The clouds share one read-only array each of points, targets and pairs (they depend on the
    distances alone), so a further signal costs its values only: 5 signals of a paper-scale run
    (1,807,872 points) hold 123 MB instead of 325 MB, and are built in a third of the time.

    Parameters
    ----------
    distances : array-like of shape (n_targets, n + 1), float
        As :func:`point_cloud`.
    signals : mapping of str to array-like of shape (n_targets, n + 1), float
        Keyed by signal name.

    Returns
    -------
    dict of str to PointCloud
        Same keys; each equal to ``point_cloud(distances, signals[key])``.
    """
    distances = _check_distances(distances)
    return _point_clouds(distances, {name: _check_signals(table, distances.shape, f"signals[{name!r}]") for name, table in signals.items()})


def _check_distances(distances: np.ndarray) -> np.ndarray:
    distances = _check_table(distances, "distances")
    if (distances < 0).any():
        raise InvalidInputError(
            f"distances must be >= 0; found {int((distances < 0).sum())} negative values "
            f"(smallest {distances.min()}); pass distances, not similarities"
        )
    return distances


def _check_signals(signals: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
    signals = _check_table(signals, name)
    if signals.shape != shape:
        raise InvalidInputError(
            f"distances and {name} must have the same shape (n_targets, n + 1); got {shape} and "
            f"{signals.shape}; pass one signal column per image of each target"
        )
    return signals


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


def _point_clouds(distances: np.ndarray, tables: Mapping[str, np.ndarray]) -> dict[str, PointCloud]:
    n_targets, n_images = distances.shape
    j, k = np.nonzero(~np.eye(n_images, dtype=bool))  # ordered pairs j != k, row-major
    n_pairs = j.size
    points = np.empty((n_targets, n_pairs, 2))
    points[..., 0] = distances[:, j]
    points[..., 1] = distances[:, k]
    points = points.reshape(-1, 2)
    targets = np.repeat(np.arange(n_targets, dtype=np.int32), n_pairs)
    pairs = np.tile(np.stack([j, k], axis=1).astype(np.int32), (n_targets, 1))
    for array in (points, targets, pairs, distances):
        array.setflags(write=False)
    clouds = {}
    for name, signals in tables.items():
        values = np.abs(signals[:, j] - signals[:, k]).reshape(-1)
        values.setflags(write=False)
        signals.setflags(write=False)
        clouds[name] = PointCloud(points=points, values=values, targets=targets, pairs=pairs, distances=distances, signals=signals)
    return clouds
