"""The point clouds and RBF variance matrices of a run, one per signal of :data:`SIGNALS`
(DESIGN §1.8, §1.9); matrices are cached in the workspace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from analytics.exceptions import InvalidInputError
from analytics.variance import (
    DEFAULT_SETTINGS,
    MatrixSettings,
    PointCloud,
    VarianceMatrix,
    point_cloud,
    variance_matrix,
)
from analytics.workspace import Workspace, content_id

from .read import SIGNALS, RunData, load_run, run_row

__all__ = ["cached_matrices", "matrices_from_clouds", "matrix_difference", "run_matrices", "run_point_clouds"]

_CACHE_PREFIX = "runs/matrices/"


def run_point_clouds(workspace: Workspace, run_id: str, *, data: RunData | None = None) -> dict[str, PointCloud]:
    """The point cloud of every signal of a run (DESIGN §1.8), keyed by :data:`SIGNALS`.

    Point ``t * n(n+1) + p`` is the p-th ordered pair (j, k) of target ``data.target_ids[t]``
    (see :class:`analytics.variance.PointCloud`).

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    data : RunData, optional
        The run, when already loaded.

    Returns
    -------
    dict of str to PointCloud
        Keyed by :data:`SIGNALS`; each of ``n_targets * n * (n + 1)`` points: ``points`` of shape
        (n_points, 2), float64, ``values`` (n_points,), float64.

    Raises
    ------
    InvalidInputError
        The suite has images without a semantic distance (built without a distance model).
    """
    data = load_run(workspace, run_id) if data is None else data
    missing = int(np.isnan(data.distances).sum())
    if missing:
        raise InvalidInputError(
            f"suite {data.suite_id!r} of run {run_id!r} has no semantic distance for {missing} of {data.distances.size} images, "
            "so there is no point cloud; register a model (EfficientNet-Lite works offline) and build the suite again"
        )
    return {signal: point_cloud(data.distances, data.signals[signal]) for signal in SIGNALS}


def matrices_from_clouds(clouds: Mapping[str, PointCloud], *, settings: MatrixSettings) -> dict[str, VarianceMatrix]:
    """One RBF variance matrix per cloud on a shared axis range (the largest distance of all clouds).

    Parameters
    ----------
    clouds : mapping of str to PointCloud
        Keyed by signal (:func:`run_point_clouds`).
    settings : MatrixSettings

    Returns
    -------
    dict of str to VarianceMatrix
        Same keys; every ``matrix`` of shape (grid, grid), float64, on the axes ``[0, d_max]``.
    """
    settings = MatrixSettings.check(settings)
    d_max = max(float(cloud.points.max()) for cloud in clouds.values())
    if d_max <= 0:
        raise InvalidInputError("every semantic distance of the run is 0, so the matrix axes have no range; check the suite's distances")
    return {
        signal: variance_matrix(cloud.points, cloud.values, **settings.key(), d_max=d_max)
        for signal, cloud in clouds.items()
    }


def run_matrices(
    workspace: Workspace,
    run_id: str,
    *,
    settings: MatrixSettings = DEFAULT_SETTINGS,
    clouds: Mapping[str, PointCloud] | None = None,
) -> dict[str, VarianceMatrix]:
    """The four RBF variance matrices of a run (DESIGN §1.9), cached in the workspace.

    The cache key names the run (id and finishing time) and the settings, so a resumed or redone
    run is computed afresh.

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    settings : MatrixSettings, default=DEFAULT_SETTINGS
        Preset, grid, window, sigma and k (default the smooth preset on 128 cells);
        e.g. ``MatrixSettings.of("fine", grid=64)``.
    clouds : mapping of str to PointCloud, optional
        The run's clouds when already built (:func:`run_point_clouds`), to skip rebuilding them.

    Returns
    -------
    dict of str to VarianceMatrix
        Keyed by :data:`SIGNALS`, every ``matrix`` of shape (grid, grid), float64, all on the same
        axes ``[0, d_max]``.
    """
    settings = MatrixSettings.check(settings)
    key = _matrices_key(workspace, run_id, settings)
    cached = workspace.cache_get(key)
    if cached is not None:
        return _unpack(cached, settings)
    clouds = run_point_clouds(workspace, run_id) if clouds is None else clouds
    matrices = matrices_from_clouds(clouds, settings=settings)
    workspace.cache_put(key, _pack(matrices))
    return matrices


def cached_matrices(workspace: Workspace, run_id: str, *, settings: MatrixSettings = DEFAULT_SETTINGS) -> dict[str, VarianceMatrix] | None:
    """The matrices :func:`run_matrices` would return if they are in the workspace cache, else None
    (so a caller can build the point clouds only when they are needed).

    Returns
    -------
    dict of str to VarianceMatrix, or None
        As :func:`run_matrices`: every ``matrix`` of shape (grid, grid), float64.
    """
    settings = MatrixSettings.check(settings)
    cached = workspace.cache_get(_matrices_key(workspace, run_id, settings))
    return None if cached is None else _unpack(cached, settings)


def _matrices_key(workspace: Workspace, run_id: str, settings: MatrixSettings) -> str:
    row = run_row(workspace, run_id)
    return _CACHE_PREFIX + content_id(run_id, row["status"], row["finished"], settings.key())


def _pack(matrices: Mapping[str, VarianceMatrix]) -> np.ndarray:
    """Matrices in :data:`SIGNALS` order, flattened, then d_max: shape (4 * grid * grid + 1,), float64."""
    first = next(iter(matrices.values()))
    return np.concatenate([*(matrices[s].matrix.ravel() for s in SIGNALS), [first.d_max]])


def _unpack(packed: np.ndarray, settings: MatrixSettings) -> dict[str, VarianceMatrix]:
    grid = settings.grid
    stack = packed[:-1].reshape(len(SIGNALS), grid, grid)
    edges = np.linspace(0.0, float(packed[-1]), grid + 1)
    edges.setflags(write=False)
    out = {}
    for signal, matrix in zip(SIGNALS, stack):
        matrix = matrix.copy()
        matrix.setflags(write=False)
        out[signal] = VarianceMatrix(matrix=matrix, edges=edges, window=settings.window, sigma=settings.sigma, k=settings.k)
    return out


def matrix_difference(candidate: VarianceMatrix, baseline: VarianceMatrix) -> VarianceMatrix:
    """``candidate − baseline`` cell by cell: two models' matrices of one signal over one suite
    (the same distances, so the same grid) under the same settings; positive = the candidate varies more there.

    Raises
    ------
    InvalidInputError
        The matrices have different grids (other suites or other settings).
    """
    if candidate.matrix.shape != baseline.matrix.shape or not np.allclose(candidate.edges, baseline.edges):
        raise InvalidInputError(
            f"cannot subtract matrices on different grids ({candidate.grid} cells up to d = {candidate.d_max:.3f} vs "
            f"{baseline.grid} up to {baseline.d_max:.3f}); compare runs over the same suite with the same settings"
        )
    return dataclasses.replace(candidate, matrix=candidate.matrix - baseline.matrix)
