"""Drill-down: from a cell of a run's variance matrix to the image pairs behind it
(:func:`cell_pairs`), and those images made again (:func:`compose_images`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analytics._validation import check_choice, check_positive_int
from analytics.data import Cutout, load_backgrounds, load_targets
from analytics.variance import PointCloud, VarianceMatrix
from analytics.workspace import Workspace

from .matrices import run_point_clouds
from .read import MATRIX_SIGNALS, RunData, load_run


def cell_pairs(
    workspace: Workspace,
    run_id: str,
    signal: str,
    matrix: VarianceMatrix,
    row: int,
    col: int,
    *,
    limit: int = 12,
    data: RunData | None = None,
    cloud: PointCloud | None = None,
    nearest: bool = False,
) -> pd.DataFrame:
    """The image pairs whose points fall into one cell of a variance matrix, largest change first.

    A pair (j, k) and its mirror (k, j) are the same two images; only one of them is listed.

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    signal : str
        Key of :data:`MATRIX_SIGNALS`.
    matrix : VarianceMatrix
        A matrix of this run (its grid decides the cell's borders).
    row, col : int
        The cell: ``row`` along d_ik (y), ``col`` along d_ij (x).
    limit : int, default=12
        Pairs returned at most.
    data : RunData, optional
        The run, when already loaded.
    cloud : PointCloud, optional
        The run's cloud of ``signal``, when already built (:func:`run_point_clouds`).
    nearest : bool, default=False
        When no point falls into the cell, list the pairs of the points nearest to its centre
        instead (where the cell's value u(e) comes from) and set ``attrs["nearest"]``.

    Returns
    -------
    DataFrame
        One row per pair: target_id, j, k, background_j, background_k ('' = the original),
        distance_j, distance_k, signal_j, signal_k, value (= |signal_j - signal_k|), predicted_j,
        predicted_k, correct_j, correct_k. ``attrs["n_points"]`` holds the number of points in
        the cell (mirrors included), ``attrs["raw_mean"]`` (float) the plain mean of their values
        (NaN without a point), ``attrs["nearest"]`` whether the rows are nearest points.

    Notes
    -----
    The cell's value in ``matrix`` is not ``raw_mean``: the RBF interpolation
    (:func:`analytics.variance.variance_matrix`) weighs every point within its window by a Gaussian of
    its distance from the cell centre, plus the mean of the ``k`` nearest points, so neighbouring cells'
    points pull it (issue 47.3: a cell value of 0.38 over a single pair that changes by 0.09).
    ``raw_mean`` is the plain mean of the values of the points in the cell, each point counted once, as
    ``n_points`` counts them.
    """
    check_choice(signal, "signal", MATRIX_SIGNALS)
    limit = check_positive_int(limit, "limit")
    data = load_run(workspace, run_id) if data is None else data
    cloud = run_point_clouds(workspace, run_id, data=data, signals=(signal,))[signal] if cloud is None else cloud
    found = matrix.points_in_cell(cloud.points, row, col)
    n_points = int(found.size)
    raw_mean = float(cloud.values[found].mean()) if n_points else float("nan")
    use_nearest = nearest and n_points == 0
    if use_nearest:  # twice the limit: mirrors are dropped below
        offsets = cloud.points - matrix.centres[[col, row]]
        squared = np.einsum("ij,ij->i", offsets, offsets)
        found = np.argsort(squared, kind="stable")[: 2 * limit]
    pairs = cloud.pairs[found]
    unique = found[(pairs[:, 0] < pairs[:, 1]) | ~_has_mirror(cloud, found)]
    order = unique[np.argsort(-cloud.values[unique], kind="stable")][:limit]
    t, j, k = cloud.targets[order], cloud.pairs[order, 0], cloud.pairs[order, 1]
    values = data.signals[signal]
    table = pd.DataFrame({
        "target_id": np.asarray(data.target_ids, dtype=object)[t], "j": j, "k": k,
        "background_j": data.background_ids[t, j], "background_k": data.background_ids[t, k],
        "distance_j": data.distances[t, j], "distance_k": data.distances[t, k],
        "signal_j": values[t, j], "signal_k": values[t, k], "value": cloud.values[order],
        "predicted_j": data.predicted[t, j], "predicted_k": data.predicted[t, k],
        "correct_j": data.correct[t, j], "correct_k": data.correct[t, k],
    })  # fmt: skip
    table.attrs["n_points"] = n_points
    table.attrs["raw_mean"] = raw_mean
    table.attrs["nearest"] = use_nearest
    return table


def _has_mirror(cloud: PointCloud, found: np.ndarray) -> np.ndarray:
    """For each point in ``found``: is its mirror (k, j) of the same target in ``found`` too?"""
    n_images = int(cloud.pairs.max()) + 1
    code = (cloud.targets[found].astype(np.int64) * n_images + cloud.pairs[found, 0]) * n_images + cloud.pairs[found, 1]
    mirror = (cloud.targets[found].astype(np.int64) * n_images + cloud.pairs[found, 1]) * n_images + cloud.pairs[found, 0]
    return np.isin(mirror, code)


def compose_images(workspace: Workspace, target_id: str, background_ids: Sequence[str]) -> np.ndarray:
    """A target's images as a run saw them: '' = the original, else the blended composite.

    Parameters
    ----------
    workspace : Workspace
    target_id : str
    background_ids : sequence of str
        One image per entry: '' for the original, else a background id (``RunData.background_ids``).

    Returns
    -------
    ndarray of shape (len(background_ids), size, size, 3), uint8
    """
    images, masks = load_targets(workspace, [target_id])
    out = np.repeat(images, len(background_ids), axis=0)
    swap = [i for i, background in enumerate(background_ids) if background]
    if swap:
        out[swap] = Cutout(images[0], masks[0]).paste(load_backgrounds(workspace, [background_ids[i] for i in swap]))
    return out
