"""The point clouds and RBF variance matrices of a run, one per signal of :data:`SIGNALS`
(docs/method.md, 'Point cloud' and 'RBF variance matrix'), or of the signals asked for (the authors' :data:`CONV_SIGNALS` among them);
matrices are cached in the workspace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from analytics._choices import MATRIX_SIGNALS, SIGNALS
from analytics._progress import Progress
from analytics._validation import check_choice
from analytics.exceptions import InvalidInputError
from analytics.variance import (
    DEFAULT_SETTINGS,
    MatrixSettings,
    PointCloud,
    VarianceMatrix,
    cloud_matrices,
    signal_point_clouds,
)
from analytics.workspace import Workspace, content_id

from .read import RunData, load_run, run_of_classes, run_row, run_rows

_CACHE_PREFIX = "runs/matrices/"
_SUBSAMPLE_PREFIX = "runs/subsample-matrices/"
#: Share of a run's targets the authors' sensitivity feature rebuilds the matrices from, and the seed of that draw (theirs: 0.9, 2).
SUBSAMPLE_SHARE = 0.9
SUBSAMPLE_SEED = 2
# Part of the subsample's cache key: the draw (issue 41: the authors' legacy-NumPy draw replaced a default_rng one).
_SUBSAMPLE_DRAW = "RandomState.choice"
#: The step :func:`run_matrices` names to its ``progress`` while it reads the run and builds its point clouds.
READ_STEP = "reading the run"
#: Which targets a run's matrices are built from: every one, or those whose original image the model
#: classifies correctly (ML4ML's correct split, which their assessor reads; :func:`correct_rows`).
MATRIX_TARGETS = ("all", "correct")


def run_point_clouds(
    workspace: Workspace, run_id: str, *, data: RunData | None = None, signals: Sequence[str] = tuple(SIGNALS)
) -> dict[str, PointCloud]:
    """The point cloud of each signal of a run (docs/method.md, 'Point cloud'), keyed by ``signals`` (default :data:`SIGNALS`).

    Point ``t * n(n+1) + p`` is the p-th ordered pair (j, k) of target ``data.target_ids[t]``
    (see :class:`analytics.variance.PointCloud`).

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    data : RunData, optional
        The run, when already loaded.
    signals : sequence of str, default=tuple(SIGNALS)
        Keys of :data:`MATRIX_SIGNALS`, e.g. ``tuple(CONV_SIGNALS)`` for the authors' conv-map signals.

    Returns
    -------
    dict of str to PointCloud
        Keyed by ``signals``; each of ``n_targets * n * (n + 1)`` points: ``points`` of shape
        (n_points, 2), float64, ``values`` (n_points,), float64.

    Raises
    ------
    InvalidInputError
        The suite has images without a semantic distance (built without a distance model), an
        unknown signal, or a conv-map signal the run lacks (the message says how to add it).
    """
    signals = _check_signals(signals)
    data = load_run(workspace, run_id) if data is None else data
    lacking = [data.absent.get(signal, signal) for signal in signals if signal not in data.signals]
    if lacking:
        raise InvalidInputError(lacking[0])
    missing = int(np.isnan(data.distances).sum())
    if missing:
        raise InvalidInputError(
            f"suite {data.suite_id!r} of run {run_id!r} has no semantic distance for {missing} of {data.distances.size} images, "
            "so there is no point cloud; register a model (EfficientNet-Lite works offline) and build the suite again"
        )
    return signal_point_clouds(data.distances, {signal: data.signals[signal] for signal in signals})


def _check_signals(signals: Sequence[str]) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(signals))
    unknown = [signal for signal in chosen if signal not in MATRIX_SIGNALS]
    if not chosen or unknown:
        raise InvalidInputError(f"signals: {', '.join(map(repr, unknown)) or 'none given'}; choose among {', '.join(MATRIX_SIGNALS)}")
    return chosen


def matrices_from_clouds(
    clouds: Mapping[str, PointCloud], *, settings: MatrixSettings, d_max: float | None = None, progress: Progress | None = None
) -> dict[str, VarianceMatrix]:
    """One RBF variance matrix per cloud on a shared axis range (the largest distance of all clouds).

    Parameters
    ----------
    clouds : mapping of str to PointCloud
        Keyed by signal (:func:`run_point_clouds`).
    settings : MatrixSettings
    d_max : float, optional
        Upper end of the axes instead of the clouds' largest distance (the whole run's, for a share of its targets).
    progress : Progress, optional
        As :func:`analytics.variance.cloud_matrices`: the kernel's loading, then the targets summed.

    Returns
    -------
    dict of str to VarianceMatrix
        Same keys; every ``matrix`` of shape (grid, grid), float64, on the axes ``[0, d_max]``.
    """
    settings = MatrixSettings.check(settings)
    d_max = max(float(cloud.points.max()) for cloud in clouds.values()) if d_max is None else d_max
    if d_max <= 0:
        raise InvalidInputError("every semantic distance of the run is 0, so the matrix axes have no range; check the suite's distances")
    return cloud_matrices(clouds, **settings.key(), d_max=d_max, progress=progress)


def run_matrices(
    workspace: Workspace,
    run_id: str,
    *,
    settings: MatrixSettings = DEFAULT_SETTINGS,
    clouds: Mapping[str, PointCloud] | None = None,
    classes: Sequence[str] | None = None,
    signals: Sequence[str] = tuple(SIGNALS),
    data: RunData | None = None,
    targets: str = MATRIX_TARGETS[0],
    progress: Progress | None = None,
) -> dict[str, VarianceMatrix]:
    """The RBF variance matrices of a run (docs/method.md, 'RBF variance matrix'), one per signal, or of its targets of ``classes``, cached in the workspace.

    The cache key names the run (id and finishing time) and the settings, so a resumed or redone
    run is computed afresh.

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    settings : MatrixSettings, default=DEFAULT_SETTINGS
        Preset, grid, window, sigma, k and window shape (default the smooth preset on 128 cells, the
        paper's circle); e.g. ``MatrixSettings.of("fine", grid=64)``, ``MatrixSettings.of(window_shape="square")``.
    clouds : mapping of str to PointCloud, optional
        The run's clouds when already built (:func:`run_point_clouds`; of ``classes`` when given, holding ``signals``), to skip
        rebuilding them (with ``targets='all'``).
    classes : sequence of str, optional
        Only the targets of these classes (:func:`analytics.runs.run_of_classes`); None = every target.
    signals : sequence of str, default=tuple(SIGNALS)
        Keys of :data:`MATRIX_SIGNALS` (:data:`CONV_SIGNALS`: the authors' conv-map reading).
    data : RunData, optional
        The run, when already loaded (read only on a cache miss without ``clouds``).
    targets : {'all', 'correct'}, default='all'
        :data:`MATRIX_TARGETS`: every target, or only those whose original image the model classifies
        correctly (:func:`correct_rows`; the assessor's ``authors`` features read these, as ML4ML's
        assessor does), on the axes of every target.
    progress : Progress, optional
        Called only when the matrices are computed (not found in the cache), naming each step:
        ``progress(0, 0, READ_STEP)`` while the run is read and its clouds built (not with ``clouds``),
        then as :func:`analytics.variance.cloud_matrices` (the compiled kernel's loading, then
        ``progress(done, n_targets, "targets")``).

    Returns
    -------
    dict of str to VarianceMatrix
        Keyed by ``signals``, every ``matrix`` of shape (grid, grid), float64, all on the same
        axes ``[0, d_max]`` (the largest distance of the run, or of its targets of ``classes``, whichever
        signals and targets are asked for).

    Raises
    ------
    InvalidInputError
        An unknown signal, or a conv-map signal the run lacks (see :func:`run_point_clouds`).
    """
    settings, signals = MatrixSettings.check(settings), _check_signals(signals)
    check_choice(targets, "targets", MATRIX_TARGETS)
    key = _matrices_key(workspace, run_id, settings, classes, signals, targets)
    cached = workspace.cache_get(key)
    if cached is not None:
        return _unpack(cached, settings, signals)
    d_max = None
    if clouds is None or targets != "all":
        if progress is not None:
            progress(0, 0, READ_STEP)
        data = load_run(workspace, run_id) if data is None else data
        data = data if classes is None else run_of_classes(data, classes)
        rows = correct_rows(data) if targets == "correct" else None
        if rows is not None:
            d_max = float(data.distances.max())  # the axes of every target
            data = run_rows(data, rows)
        clouds = run_point_clouds(workspace, run_id, data=data, signals=signals)
    matrices = matrices_from_clouds({signal: clouds[signal] for signal in signals}, settings=settings, d_max=d_max, progress=progress)
    workspace.cache_put(key, _pack(matrices, signals))
    return matrices


def cached_matrices(
    workspace: Workspace,
    run_id: str,
    *,
    settings: MatrixSettings = DEFAULT_SETTINGS,
    classes: Sequence[str] | None = None,
    signals: Sequence[str] = tuple(SIGNALS),
    targets: str = MATRIX_TARGETS[0],
) -> dict[str, VarianceMatrix] | None:
    """The matrices :func:`run_matrices` would return if they are in the workspace cache, else None
    (so a caller can build the point clouds, or show a progress bar, only when they are needed).

    Returns
    -------
    dict of str to VarianceMatrix, or None
        As :func:`run_matrices`: every ``matrix`` of shape (grid, grid), float64.
    """
    settings, signals = MatrixSettings.check(settings), _check_signals(signals)
    cached = workspace.cache_get(_matrices_key(workspace, run_id, settings, classes, signals, check_choice(targets, "targets", MATRIX_TARGETS)))
    return None if cached is None else _unpack(cached, settings, signals)


def _matrices_key(
    workspace: Workspace,
    run_id: str,
    settings: MatrixSettings,
    classes: Sequence[str] | None = None,
    signals: Sequence[str] = tuple(SIGNALS),
    targets: str = MATRIX_TARGETS[0],
) -> str:
    row = run_row(workspace, run_id)
    parts = [run_id, row["status"], row["finished"], settings.key(), list(signals)]
    if classes is not None:  # only then: the whole run keeps its cached matrices
        parts.append(sorted(set(classes)))
    if targets != MATRIX_TARGETS[0]:  # likewise
        parts.append(targets)
    return _CACHE_PREFIX + content_id(*parts)


def _pack(matrices: Mapping[str, VarianceMatrix], signals: Sequence[str] = tuple(SIGNALS)) -> np.ndarray:
    """Matrices in ``signals`` order, flattened, then d_max: shape (len(signals) * grid * grid + 1,), float64."""
    first = next(iter(matrices.values()))
    return np.concatenate([*(matrices[s].matrix.ravel() for s in signals), [first.d_max]])


def _unpack(packed: np.ndarray, settings: MatrixSettings, signals: Sequence[str] = tuple(SIGNALS)) -> dict[str, VarianceMatrix]:
    grid = settings.grid
    stack = packed[:-1].reshape(len(signals), grid, grid)
    edges = np.linspace(0.0, float(packed[-1]), grid + 1)
    edges.setflags(write=False)
    out = {}
    for signal, matrix in zip(signals, stack):
        matrix = matrix.copy()
        matrix.setflags(write=False)
        out[signal] = VarianceMatrix(
            matrix=matrix, edges=edges, window=settings.window, sigma=settings.sigma, k=settings.k, window_shape=settings.window_shape
        )
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


def subsample_matrices(
    workspace: Workspace,
    run_id: str,
    *,
    settings: MatrixSettings = DEFAULT_SETTINGS,
    share: float = SUBSAMPLE_SHARE,
    seed: int = SUBSAMPLE_SEED,
    data: RunData | None = None,
    targets: str = MATRIX_TARGETS[0],
) -> dict[str, VarianceMatrix]:
    """The run's matrices rebuilt from a seeded random share of its targets, on the full run's axes
    (for the authors' sensitivity feature, :func:`analytics.variance.sensitivity`); cached like
    :func:`run_matrices`.

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    settings : MatrixSettings, default=DEFAULT_SETTINGS
    share : float, default=0.9
        Share of the targets kept (at least one), drawn without replacement by :func:`subsample_targets`.
    seed : int, default=2
    data : RunData, optional
        The run, when already loaded (read only on a cache miss).
    targets : {'all', 'correct'}, default='all'
        As :func:`run_matrices`. ``'correct'``: the correctly classified targets among the share drawn
        from every target, as ML4ML draws first and splits after (:func:`correct_rows`).

    Returns
    -------
    dict of str to VarianceMatrix
        Keyed by :data:`SIGNALS`, on the axes ``[0, d_max]`` of :func:`run_matrices`.

    Raises
    ------
    InvalidInputError
        ``share`` is no fraction in (0, 1], or, with ``targets='correct'`` and another share or seed
        than the defaults, the draw holds none of the run's correctly classified targets.
    """
    settings = MatrixSettings.check(settings)
    check_choice(targets, "targets", MATRIX_TARGETS)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
        raise InvalidInputError(f"share must be a fraction in (0, 1]; got {share!r}")
    row = run_row(workspace, run_id)
    parts = [run_id, row["status"], row["finished"], settings.key(), list(SIGNALS), float(share), int(seed), _SUBSAMPLE_DRAW]
    key = _SUBSAMPLE_PREFIX + content_id(*parts, *([targets] if targets != MATRIX_TARGETS[0] else []))
    cached = workspace.cache_get(key)
    if cached is not None:
        return _unpack(cached, settings)
    data = load_run(workspace, run_id) if data is None else data
    d_max = next(iter(run_matrices(workspace, run_id, settings=settings, data=data).values())).d_max
    kept = subsample_targets(len(data.target_ids), share=share, seed=seed)
    if targets == "correct" and correct_rows(data) is not None:
        kept = kept[data.correct[kept, 0]]
        if not kept.size:
            raise InvalidInputError(
                f"the draw of {share:g} of run {run_id!r}'s targets (seed {seed}) holds none it classifies correctly; "
                "draw with the default share and seed, or use targets='all'"
            )
    clouds = signal_point_clouds(data.distances[kept], {signal: data.signals[signal][kept] for signal in SIGNALS})
    matrices = cloud_matrices(clouds, **settings.key(), d_max=d_max)
    workspace.cache_put(key, _pack(matrices))
    return matrices


def subsample_targets(n_targets: int, *, share: float = SUBSAMPLE_SHARE, seed: int = SUBSAMPLE_SEED) -> np.ndarray:
    """The targets the authors' sensitivity feature keeps, drawn as they draw them.

    ML4ML's ``datamat.py`` calls ``np.random.seed(seed)`` then
    ``np.random.choice(range(n), int(n * share), replace=False)`` over the run's examples (the rows
    in target order here); a ``RandomState(seed)`` of its own makes the same draw without touching
    NumPy's global state.

    Parameters
    ----------
    n_targets : int
        Targets of the run (rows of :class:`analytics.runs.RunData`).
    share : float, default=0.9
    seed : int, default=2

    Returns
    -------
    ndarray of shape (max(1, int(n_targets * share)),), int
        Row indices, sorted (the matrices sum over the targets, so their order does not matter).
    """
    return np.sort(np.random.RandomState(seed).choice(range(n_targets), max(1, int(n_targets * share)), replace=False))


def correct_rows(data: RunData) -> np.ndarray | None:
    """Rows of the targets whose original image the model classifies correctly: the targets of a
    run's correct-only matrices (ML4ML's ``correct_split``: their assessor reads the matrices of
    the correctly classified test examples only, judged on the untransformed image).

    None when the run has no such target, or none among the sensitivity feature's default draw
    (:func:`subsample_targets`): the correct-only reading then has nothing to measure (theirs would
    be empty), and every target is read instead, for the matrices and the subsample alike.

    Returns
    -------
    ndarray of shape (n_correct,), int64, or None
    """
    correct = np.asarray(data.correct[:, 0], dtype=bool)
    if not correct.any() or not correct[subsample_targets(correct.size)].any():
        return None
    return np.flatnonzero(correct)
