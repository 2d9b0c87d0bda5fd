"""Runs: one model over one suite, read back as arrays, summarised, and turned into variance matrices.

:func:`analytics.inference.run_models` writes the ``runs`` / ``run_images`` rows; this module reads
them (DESIGN §1.6–1.9, §1.14):

* :func:`load_run` gives a finished run as rectangular arrays (:class:`RunData`): one row per
  target, column 0 its original, columns 1..n its composites;
* :func:`summarize_run` computes accuracy and worst-case accuracy per target and their means and
  stores them in ``runs.summary``; :func:`list_runs` lists runs with them (and whether they are
  stale), :func:`current_runs` only the ones that are not;
* :func:`run_point_clouds`, :func:`run_matrices` and :func:`run_features` give the four point
  clouds, RBF variance matrices (cached in the workspace) and matrix features of a run, one per
  signal of :data:`SIGNALS`;
* :func:`cell_pairs` drills down from a matrix cell to the image pairs behind it, and
  :func:`compose_images` makes those images again;
* :func:`export_run` writes the matrices (.npy, .png) and the per-image table (.csv).

Stale runs. A run records the key of the weights it ran (``runs.model_key``, :func:`model_keys`)
and of the class mappings it was scored with (``runs.classes_key``,
:func:`analytics.classes.class_mapping_key` of its suite's target classes). It is *stale* when the
model has been re-registered with other weights since (its current key differs; a head's key
covers its backbone's) or a class of its suite was remapped. Stale runs stay listed, marked, but
never feed the assessor or the Judge queue. Runs from before these columns existed (empty keys):
such a run counts as current when the model (and a head's backbone) was registered no later than
the run was created (``models.added`` <= ``runs.created``; both have one-second resolution, so a
run in the second of a re-registration counts as current), and its class mappings count as the
current ones (no remapping was possible before the key was recorded). :func:`pin_legacy_keys`
writes those keys down before a model is replaced or a class remapped, so the rule is needed only
for workspaces changed by an older Backdrop.

Worst-case accuracy follows :func:`analytics.variance.worst_case_accuracy`: a target counts when it is
classified correctly under every one of its backgrounds (the original is reported separately as
``original_accuracy``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pandas as pd

from ._validation import check_choice, check_positive_int
from .classes import class_mapping_key
from .compose import Cutout
from .datasets import load_backgrounds, load_targets
from .exceptions import InvalidInputError, NotFoundError
from .team.roles import require_permission
from .variance import (
    DEFAULT_GRID,
    DEFAULT_K,
    DEFAULT_THRESHOLD,
    FEATURE_NAMES,
    PRESETS,
    PointCloud,
    VarianceMatrix,
    matrix_features,
    point_cloud,
    variance_matrix,
    worst_case_accuracy,
    worst_case_correct,
)
from .workspace import Workspace, content_id

__all__ = [
    "CUSTOM",
    "FEATURE_COLUMNS",
    "IMAGE_COLUMNS",
    "RUN_COLUMNS",
    "SIGNALS",
    "VARIANCE_COLOURS",
    "RunData",
    "cached_matrices",
    "ModelKeys",
    "cell_pairs",
    "compose_images",
    "current_runs",
    "export_run",
    "features_table",
    "image_table",
    "list_runs",
    "load_run",
    "matrices_from_clouds",
    "model_keys",
    "pin_legacy_keys",
    "render_matrix",
    "resolve_settings",
    "run_features",
    "run_matrices",
    "run_point_clouds",
    "start_runs",
    "suite_classes_key",
    "summarize_run",
    "target_table",
]

#: The four signals of a run (``run_images`` columns), in display order, with their labels.
SIGNALS: dict[str, str] = {
    "true_prob": "True-class probability",
    "emb_topk_mean": "Embedding: top-k (by foreground) mean",
    "emb_max": "Embedding: max",
    "emb_mean": "Embedding: mean",
}
#: Columns of :func:`list_runs`.
RUN_COLUMNS = [
    "id", "model", "suite_id", "status", "images", "expected_images", "accuracy", "original_accuracy",
    "worst_case_accuracy", "top_k", "created", "finished", "construction", "model_key", "classes_key", "stale",
]  # fmt: skip
#: Columns of :func:`image_table` (the per-image CSV of :func:`export_run`).
IMAGE_COLUMNS = [
    "target_id", "class_name", "position", "background_id", "distance", "predicted", "correct", "true_prob",
    "max_prob", "emb_topk_mean", "emb_max", "emb_mean",
]  # fmt: skip
#: Feature columns of :func:`run_features` besides the accuracies.
FEATURE_COLUMNS = [f"{signal}.{name}" for signal in SIGNALS for name in FEATURE_NAMES]
#: Setting name of free interpolation settings (no preset).
CUSTOM = "custom"
#: Colour stops of exported matrices: low variance green, high yellow (as ``ui.charts``), RGB.
VARIANCE_COLOURS = ((0.0, (0x1A, 0x98, 0x50)), (0.5, (0xA6, 0xD9, 0x6A)), (1.0, (0xFF, 0xFF, 0x33)))
#: Bumped when the stored summary changes shape (older summaries are recomputed).
_SUMMARY_VERSION = 1
_CACHE_PREFIX = "runs/matrices/"


@dataclass(frozen=True)
class RunData:
    """Everything of one finished run as arrays: row = target (sorted by id), column = position.

    Column 0 is the target's original image, columns 1..n its composites, so every array has
    shape (n_targets, n + 1).

    Attributes
    ----------
    run_id, model, suite_id : str
    target_ids : list of str
        Row order.
    distances : ndarray of shape (n_targets, n + 1), float64
        Semantic distance of each image to its original (column 0 is 0; NaN where the suite has
        no distance).
    signals : dict of str to ndarray of shape (n_targets, n + 1), float64
        One array per key of :data:`SIGNALS`.
    correct : ndarray of shape (n_targets, n + 1), bool
    predicted : ndarray of shape (n_targets, n + 1), str
        Output name the model predicted.
    background_ids : ndarray of shape (n_targets, n + 1), str
        '' for the original.
    class_names : list of str
        Class of each target (row order).
    excluded : tuple of str
        Targets left out because they have fewer composites than the others (a suite may be
        short for some targets); the arrays must be rectangular.
    """

    run_id: str
    model: str
    suite_id: str
    target_ids: list[str]
    distances: np.ndarray
    signals: dict[str, np.ndarray]
    correct: np.ndarray
    predicted: np.ndarray
    background_ids: np.ndarray
    class_names: list[str] | None = None
    excluded: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        """Composites per target."""
        return int(self.distances.shape[1]) - 1

    @property
    def n_points(self) -> int:
        """Points of each signal's cloud: n_targets * n * (n + 1)."""
        return len(self.target_ids) * self.n * (self.n + 1)


# -- which weights and class mappings a result was made with ---------------------------------------
@dataclass(frozen=True)
class ModelKeys:
    """The current key and registration time of every registered model (see the module notes).

    Attributes
    ----------
    keys : dict of str to str
        Model -> content key of its stored spec (:meth:`analytics.models.ModelSpec.content_key`);
        a head's key also covers its backbone's.
    registered : dict of str to str
        Model -> when it (or a head's backbone, whichever is later) was registered (ISO text).
    """

    keys: dict[str, str]
    registered: dict[str, str]

    def is_current(self, model: str, key: str, created: str) -> bool:
        """Whether a result of ``model`` made at ``created`` with the recorded ``key`` ('' when
        not recorded: the registration-time rule of the module notes) used its current weights."""
        if model not in self.keys:
            return False
        return key == self.keys[model] if key else created >= self.registered[model]


def model_keys(workspace: Workspace) -> ModelKeys:
    """The current content key of every registered model (what runs and judgments record).

    Returns
    -------
    ModelKeys
    """
    rows = workspace.query("SELECT name, spec, added FROM models")
    own = {row["name"]: _spec_key(row["spec"]) for row in rows}
    added = {row["name"]: row["added"] for row in rows}
    keys, registered = {}, {}
    for row in rows:
        name, backbone = row["name"], json.loads(row["spec"]).get("backbone")
        keys[name] = content_id(own[name], own.get(backbone)) if backbone else own[name]
        registered[name] = max(added[name], added.get(backbone, "")) if backbone else added[name]
    return ModelKeys(keys, registered)


def _spec_key(text: str) -> str:
    """The content key of a stored spec: equal to ``ModelSpec.content_key`` of the spec stored."""
    return hashlib.sha256(json.dumps(json.loads(text), sort_keys=True).encode()).hexdigest()[:16]


def suite_classes_key(workspace: Workspace, suite_id: str) -> str:
    """:func:`analytics.classes.class_mapping_key` of the classes of a suite's targets."""
    rows = workspace.query(
        "SELECT DISTINCT t.class_name FROM suite_items s JOIN targets t ON t.id = s.target_id WHERE s.suite_id = ?", (suite_id,)
    )
    return class_mapping_key(workspace, [row["class_name"] for row in rows])


def pin_legacy_keys(workspace: Workspace) -> int:
    """Record the keys of runs and judgments stored before they were recorded (empty keys).

    Runs and judgments that count as current by the registration-time rule get their model's
    current key; runs get their suite's current class-mapping key. Call it before a model is
    replaced or a class remapped: afterwards the rule could no longer tell.

    Returns
    -------
    int
        Rows updated.
    """
    keys = model_keys(workspace)
    suite_keys: dict[str, str] = {}
    runs = []
    for row in workspace.query("SELECT id, model, suite_id, created, model_key, classes_key FROM runs WHERE model_key = '' OR classes_key = ''"):
        model_key = row["model_key"] or (keys.keys[row["model"]] if keys.is_current(row["model"], "", row["created"]) else "")
        classes_key = row["classes_key"] or _suite_key(workspace, row["suite_id"], suite_keys)
        runs.append((model_key, classes_key, row["id"]))
    judgments = [
        (keys.keys[row["model"]], row["id"])
        for row in workspace.query("SELECT id, model, created FROM judgments WHERE model_key = ''")
        if keys.is_current(row["model"], "", row["created"])
    ]
    with workspace.transaction() as conn:
        conn.executemany("UPDATE runs SET model_key = ?, classes_key = ? WHERE id = ?", runs)
        conn.executemany("UPDATE judgments SET model_key = ? WHERE id = ? AND model_key = ''", judgments)
    return len(runs) + len(judgments)


def _suite_key(workspace: Workspace, suite_id: str, known: dict[str, str]) -> str:
    """:func:`suite_classes_key`, computed once per suite into ``known``."""
    if suite_id not in known:
        known[suite_id] = suite_classes_key(workspace, suite_id)
    return known[suite_id]


# -- reading runs ----------------------------------------------------------------------------------
def _run_row(workspace: Workspace, run_id: str):
    row = workspace.query_one("SELECT * FROM runs WHERE id = ?", (run_id,))
    if row is None:
        recent = [r["id"] for r in workspace.query("SELECT id FROM runs ORDER BY created DESC LIMIT 5")]
        raise NotFoundError(f"no run {run_id!r} in workspace {workspace.root}; recent runs: {', '.join(recent) or 'none'}")
    return row


def load_run(workspace: Workspace, run_id: str) -> RunData:
    """A finished run as arrays (see :class:`RunData`).

    Parameters
    ----------
    workspace : Workspace
    run_id : str

    Returns
    -------
    RunData

    Raises
    ------
    NotFoundError
        No such run.
    InvalidInputError
        The run has not finished (status ``running`` or ``failed``): resume it first.
    """
    row = _run_row(workspace, run_id)
    if row["status"] != "done":
        stored = workspace.query_one("SELECT COUNT(*) FROM run_images WHERE run_id = ?", (run_id,))[0]
        raise InvalidInputError(
            f"run {run_id!r} ({row['model']} over suite {row['suite_id']}) is {row['status']!r} with {stored} images stored; "
            f"resume it on the Run page or with `python -m analytics run --model {row['model']} --suite {row['suite_id']}`"
        )
    table = image_table(workspace, run_id)
    if table.empty:
        raise InvalidInputError(f"run {run_id!r} has no images; its suite {row['suite_id']!r} is empty")
    sizes = table.groupby("target_id", sort=True)["position"].agg(["size", "max"])
    width = int(sizes["size"].max())
    full = sizes.index[(sizes["size"] == width) & (sizes["max"] == width - 1)]  # positions exactly 0..n
    excluded = tuple(sorted(set(sizes.index) - set(full)))
    table = table[table["target_id"].isin(full)]  # sorted by target_id, position already
    shape = (len(full), width)

    def grid(column: str, dtype) -> np.ndarray:
        return table[column].to_numpy(dtype, copy=True).reshape(shape)

    distances = grid("distance", np.float64)
    distances[:, 0] = 0.0
    return RunData(
        run_id=run_id,
        model=row["model"],
        suite_id=row["suite_id"],
        target_ids=list(full),
        distances=distances,
        signals={signal: grid(signal, np.float64) for signal in SIGNALS},
        correct=grid("correct", bool),
        predicted=grid("predicted", str),
        background_ids=grid("background_id", str),
        class_names=table["class_name"].to_numpy()[::width].tolist(),
        excluded=excluded,
    )


def image_table(workspace: Workspace, run_id: str) -> pd.DataFrame:
    """One row per image of a run (any status), sorted by target and position.

    Returns
    -------
    DataFrame
        Columns :data:`IMAGE_COLUMNS`; ``background_id`` is '' for originals, ``distance`` NaN
        where the suite has none, ``correct`` bool.
    """
    row = _run_row(workspace, run_id)
    rows = workspace.query(
        "SELECT r.target_id, t.class_name, r.position, IFNULL(s.background_id, '') AS background_id, r.distance, r.predicted, "
        "r.correct, r.true_prob, r.max_prob, r.emb_topk_mean, r.emb_max, r.emb_mean FROM run_images r "
        "LEFT JOIN targets t ON t.id = r.target_id "
        "LEFT JOIN suite_items s ON s.suite_id = ? AND s.target_id = r.target_id AND s.position = r.position "
        "WHERE r.run_id = ? ORDER BY r.target_id, r.position",
        (row["suite_id"], run_id),
    )
    table = pd.DataFrame([tuple(r) for r in rows], columns=IMAGE_COLUMNS)
    return table.astype({"position": int, "distance": float, "correct": bool})


# -- summaries -------------------------------------------------------------------------------------
def target_table(data: RunData) -> pd.DataFrame:
    """Per target: accuracy over its n + 1 images, original correct, worst case correct.

    Returns
    -------
    DataFrame
        Columns target_id, class_name, accuracy (float), original_correct (bool),
        worst_case_correct (bool: correct under every background), lowest_true_prob (float).
    """
    return pd.DataFrame(
        {
            "target_id": data.target_ids,
            "class_name": data.class_names or [""] * len(data.target_ids),
            "accuracy": data.correct.mean(axis=1),
            "original_correct": data.correct[:, 0],
            "worst_case_correct": worst_case_correct(data.correct),
            "lowest_true_prob": data.signals["true_prob"].min(axis=1),
        }
    )


def summarize_run(workspace: Workspace, run_id: str) -> dict[str, Any]:
    """Compute and store the accuracies of a finished run in ``runs.summary``.

    The stored summary keeps what :func:`analytics.inference.run_models` wrote (``top_k``) and
    holds: ``images``, ``targets``, ``n``, ``accuracy`` (over all images), ``original_accuracy``,
    ``worst_case_accuracy`` (:func:`analytics.variance.worst_case_accuracy`), ``excluded_targets``
    and ``per_target`` (``{target_id: {"accuracy": float, "worst_case": bool}}``).

    Returns
    -------
    dict
        The stored summary.
    """
    data = load_run(workspace, run_id)
    per_target = target_table(data)
    summary = json.loads(_run_row(workspace, run_id)["summary"] or "{}")
    summary.update(
        version=_SUMMARY_VERSION,
        images=int(data.correct.size),
        targets=len(data.target_ids),
        n=data.n,
        accuracy=float(data.correct.mean()),
        original_accuracy=float(data.correct[:, 0].mean()),
        worst_case_accuracy=worst_case_accuracy(data.correct),
        excluded_targets=list(data.excluded),
        per_target={
            r.target_id: {"accuracy": float(r.accuracy), "worst_case": bool(r.worst_case_correct)} for r in per_target.itertuples(index=False)
        },
    )
    with workspace.transaction() as conn:
        conn.execute("UPDATE runs SET summary = ? WHERE id = ?", (json.dumps(summary), run_id))
    return summary


def start_runs(
    workspace: Workspace,
    model_names: Sequence[str],
    suite_id: str,
    *,
    device: str | None = None,
    batch_size: int = 32,
    top_k: int = 3,
    progress: Callable[[int, int], None] | None = None,
) -> list[str]:
    """Run models over a suite (resuming earlier attempts) and summarise the runs that changed.

    :func:`analytics.inference.run_models` followed by :func:`summarize_run` per run that did work
    (a finished run that is reused keeps its summary and its ``finished`` time, so caches keyed on
    them stay valid); arguments as there.

    Returns
    -------
    list of str
        Run ids in the order of ``model_names``.
    """
    require_permission(workspace, "run_models")
    from .inference import run_models  # torch: only callers that run models pay for the import

    run_ids = run_models(workspace, model_names, suite_id, device=device, batch_size=batch_size, top_k=top_k, progress=progress)
    for run_id in dict.fromkeys(run_ids):
        if json.loads(_run_row(workspace, run_id)["summary"] or "{}").get("version") != _SUMMARY_VERSION:  # new or redone
            summarize_run(workspace, run_id)
    return run_ids


def list_runs(workspace: Workspace, *, model: str | None = None, suite_id: str | None = None) -> pd.DataFrame:
    """Runs of the workspace, newest first, with their accuracies and whether they are stale.

    Finished runs whose summary predates :func:`summarize_run` (a run made by
    :func:`analytics.inference.run_models` alone) are summarised and stored on the way.

    Parameters
    ----------
    workspace : Workspace
    model, suite_id : str, optional
        Only runs of this model / suite.

    Returns
    -------
    DataFrame
        Columns :data:`RUN_COLUMNS`: ``images`` stored so far and ``expected_images`` (targets +
        suite items) show how far an unfinished run got; accuracies are NaN until it is done;
        ``top_k`` is the run's embedding top-k (what resuming needs); ``construction`` the
        model's construction record (zoo models) or None; ``model_key`` / ``classes_key`` the
        recorded keys ('' for runs older than them); ``stale`` (bool) whether the model's weights
        or a class mapping changed since (module notes).
    """
    rows = workspace.query(
        "SELECT r.id, r.model, r.suite_id, r.status, r.summary, r.created, r.finished, r.model_key, r.classes_key, m.spec, "
        "(SELECT COUNT(*) FROM run_images i WHERE i.run_id = r.id) AS images, "
        "(SELECT COUNT(*) + COUNT(DISTINCT target_id) FROM suite_items s WHERE s.suite_id = r.suite_id) AS expected "
        "FROM runs r LEFT JOIN models m ON m.name = r.model "
        "WHERE (? IS NULL OR r.model = ?) AND (? IS NULL OR r.suite_id = ?) ORDER BY r.created DESC, r.id",
        (model, model, suite_id, suite_id),
    )
    keys, suite_keys = model_keys(workspace), {}
    records = []
    for row in rows:
        summary = json.loads(row["summary"] or "{}")
        if row["status"] == "done" and summary.get("version") != _SUMMARY_VERSION:
            summary = summarize_run(workspace, row["id"])
        spec = json.loads(row["spec"]) if row["spec"] else {}
        classes_current = not row["classes_key"] or row["classes_key"] == _suite_key(workspace, row["suite_id"], suite_keys)
        records.append({
            "id": row["id"], "model": row["model"], "suite_id": row["suite_id"], "status": row["status"],
            "images": int(row["images"]), "expected_images": int(row["expected"]),
            "accuracy": summary.get("accuracy", np.nan), "original_accuracy": summary.get("original_accuracy", np.nan),
            "worst_case_accuracy": summary.get("worst_case_accuracy", np.nan), "top_k": summary.get("top_k"),
            "created": row["created"], "finished": row["finished"], "construction": spec.get("construction"),
            "model_key": row["model_key"], "classes_key": row["classes_key"],
            "stale": not (classes_current and keys.is_current(row["model"], row["model_key"], row["created"])),
        })  # fmt: skip
    table = pd.DataFrame(records, columns=RUN_COLUMNS)
    return table.astype({"accuracy": float, "original_accuracy": float, "worst_case_accuracy": float, "stale": bool})


def current_runs(workspace: Workspace, *, model: str | None = None, suite_id: str | None = None) -> pd.DataFrame:
    """:func:`list_runs` without the stale runs: the runs that may feed the assessor, the Judge
    queue and comparisons (same columns, ``stale`` all False)."""
    runs = list_runs(workspace, model=model, suite_id=suite_id)
    return runs[~runs["stale"]].reset_index(drop=True)


# -- point clouds and matrices ---------------------------------------------------------------------
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


def resolve_settings(
    *, preset: str = "smooth", grid: int = DEFAULT_GRID, window: int | None = None, sigma: float | None = None, k: int = DEFAULT_K
) -> dict[str, Any]:
    """The interpolation settings in effect: a preset of :data:`analytics.variance.PRESETS`, with
    ``window`` / ``sigma`` overriding it when given (the name becomes :data:`CUSTOM` then).

    Returns
    -------
    dict
        Keys preset, grid, window, sigma, k.
    """
    check_choice(preset, "preset", [*PRESETS, CUSTOM])
    if preset == CUSTOM and (window is None or sigma is None):
        raise InvalidInputError(f"preset {CUSTOM!r} needs both window and sigma; got window={window!r}, sigma={sigma!r}")
    base_window, base_sigma = PRESETS.get(preset, (window, sigma))
    chosen = (base_window if window is None else window, base_sigma if sigma is None else sigma)
    name = preset if chosen == PRESETS.get(preset) else CUSTOM
    return {"preset": name, "grid": check_positive_int(grid, "grid"), "window": chosen[0], "sigma": float(chosen[1]), "k": check_positive_int(k, "k")}


def matrices_from_clouds(clouds: Mapping[str, PointCloud], *, grid: int, window: int, sigma: float, k: int) -> dict[str, VarianceMatrix]:
    """One RBF variance matrix per cloud on a shared axis range (the largest distance of all clouds)."""
    d_max = max(float(cloud.points.max()) for cloud in clouds.values())
    if d_max <= 0:
        raise InvalidInputError("every semantic distance of the run is 0, so the matrix axes have no range; check the suite's distances")
    return {
        signal: variance_matrix(cloud.points, cloud.values, grid=grid, window=window, sigma=sigma, k=k, d_max=d_max)
        for signal, cloud in clouds.items()
    }


def run_matrices(
    workspace: Workspace,
    run_id: str,
    *,
    preset: str = "smooth",
    grid: int = DEFAULT_GRID,
    window: int | None = None,
    sigma: float | None = None,
    k: int = DEFAULT_K,
    clouds: Mapping[str, PointCloud] | None = None,
) -> dict[str, VarianceMatrix]:
    """The four RBF variance matrices of a run (DESIGN §1.9), cached in the workspace.

    The cache key names the run (id and finishing time) and the settings, so a resumed or redone
    run is computed afresh.

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    preset : {'fine', 'medium', 'smooth', 'custom'}, default='smooth'
        The paper's (window, sigma): fine (32, 2), medium (16, 5), smooth (32, 10).
    grid : int, default=128
        Cells per axis (:data:`analytics.variance.DEFAULT_GRID`); window and sigma are in these cells.
    window : int, optional
        Full side of the kernel window in cells; overrides the preset.
    sigma : float, optional
        Gaussian standard deviation in cells; overrides the preset.
    k : int, default=32
        Nearest points averaged into u(e).
    clouds : mapping of str to PointCloud, optional
        The run's clouds when already built (:func:`run_point_clouds`), to skip rebuilding them.

    Returns
    -------
    dict of str to VarianceMatrix
        Keyed by :data:`SIGNALS`, all on the same axes ``[0, d_max]``.
    """
    settings = resolve_settings(preset=preset, grid=grid, window=window, sigma=sigma, k=k)
    key = _matrices_key(workspace, run_id, settings)
    cached = workspace.cache_get(key)
    if cached is not None:
        return _unpack(cached, settings)
    clouds = run_point_clouds(workspace, run_id) if clouds is None else clouds
    matrices = matrices_from_clouds(clouds, grid=settings["grid"], window=settings["window"], sigma=settings["sigma"], k=settings["k"])
    workspace.cache_put(key, _pack(matrices))
    return matrices


def cached_matrices(workspace: Workspace, run_id: str, **settings: Any) -> dict[str, VarianceMatrix] | None:
    """The matrices :func:`run_matrices` would return if they are in the workspace cache, else None
    (so a caller can build the point clouds only when they are needed)."""
    resolved = resolve_settings(**settings)
    cached = workspace.cache_get(_matrices_key(workspace, run_id, resolved))
    return None if cached is None else _unpack(cached, resolved)


def _matrices_key(workspace: Workspace, run_id: str, settings: Mapping[str, Any]) -> str:
    row = _run_row(workspace, run_id)
    return _CACHE_PREFIX + content_id(run_id, row["status"], row["finished"], {s: settings[s] for s in ("grid", "window", "sigma", "k")})


def _pack(matrices: Mapping[str, VarianceMatrix]) -> np.ndarray:
    """Matrices in :data:`SIGNALS` order, flattened, then d_max: shape (4 * grid * grid + 1,), float64."""
    first = next(iter(matrices.values()))
    return np.concatenate([*(matrices[s].matrix.ravel() for s in SIGNALS), [first.d_max]])


def _unpack(packed: np.ndarray, settings: Mapping[str, Any]) -> dict[str, VarianceMatrix]:
    grid = settings["grid"]
    stack = packed[:-1].reshape(len(SIGNALS), grid, grid)
    edges = np.linspace(0.0, float(packed[-1]), grid + 1)
    edges.setflags(write=False)
    out = {}
    for signal, matrix in zip(SIGNALS, stack):
        matrix = matrix.copy()
        matrix.setflags(write=False)
        out[signal] = VarianceMatrix(matrix=matrix, edges=edges, window=settings["window"], sigma=settings["sigma"], k=settings["k"])
    return out


# -- features --------------------------------------------------------------------------------------
def run_features(
    workspace: Workspace, run_id: str, *, preset: str = "smooth", threshold: float | None = None, **settings: Any
) -> dict[str, float]:
    """Features of the four matrices of a run, for the assessor (DESIGN §1.13).

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    preset : str, default='smooth'
        Interpolation preset; further keyword arguments (grid, window, sigma, k) as in
        :func:`run_matrices`.
    threshold : float, optional
        Error-rate threshold for every signal. None: 0.15 for the true-class probability and, for
        the embedding signals (whose scale depends on the model), 0.15 times the largest absolute
        value of that signal in the run, so the error rate counts cells above the same share of
        the signal's own range.

    Returns
    -------
    dict of str to float
        ``'<signal>.<feature>'`` for :data:`SIGNALS` x :data:`analytics.variance.FEATURE_NAMES`
        (:data:`FEATURE_COLUMNS`, in that order), then ``accuracy``, ``original_accuracy`` and
        ``worst_case_accuracy``.
    """
    data = load_run(workspace, run_id)
    matrices = run_matrices(workspace, run_id, preset=preset, **settings)
    features: dict[str, float] = {}
    for signal, matrix in matrices.items():
        if threshold is not None:
            cut = float(threshold)
        elif signal == "true_prob":
            cut = DEFAULT_THRESHOLD
        else:
            cut = DEFAULT_THRESHOLD * float(np.abs(data.signals[signal]).max())
        features.update({f"{signal}.{name}": value for name, value in matrix_features(matrix.matrix, threshold=cut).items()})
    features["accuracy"] = float(data.correct.mean())
    features["original_accuracy"] = float(data.correct[:, 0].mean())
    features["worst_case_accuracy"] = worst_case_accuracy(data.correct)
    return features


def features_table(workspace: Workspace, run_ids: Sequence[str], **kwargs: Any) -> pd.DataFrame:
    """:func:`run_features` of several runs: one row per model (index = model name).

    Parameters
    ----------
    workspace : Workspace
    run_ids : sequence of str
        At most one run per model.
    **kwargs
        Passed to :func:`run_features` (preset, threshold, grid, window, sigma, k).

    Returns
    -------
    DataFrame
        Index ``model``; columns :data:`FEATURE_COLUMNS` + accuracy, original_accuracy,
        worst_case_accuracy; also an empty, well-formed frame for no runs.
    """
    models = [_run_row(workspace, run_id)["model"] for run_id in run_ids]
    repeated = sorted({m for m in models if models.count(m) > 1})
    if repeated:
        raise InvalidInputError(f"run_ids must hold one run per model; models {', '.join(repeated)} appear more than once")
    columns = [*FEATURE_COLUMNS, "accuracy", "original_accuracy", "worst_case_accuracy"]
    rows = [run_features(workspace, run_id, **kwargs) for run_id in run_ids]
    return pd.DataFrame(rows, index=pd.Index(models, name="model"), columns=columns)


# -- drill-down ------------------------------------------------------------------------------------
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
        Key of :data:`SIGNALS`.
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
        the cell (mirrors included), ``attrs["nearest"]`` whether the rows are nearest points.
    """
    check_choice(signal, "signal", SIGNALS)
    limit = check_positive_int(limit, "limit")
    data = load_run(workspace, run_id) if data is None else data
    cloud = run_point_clouds(workspace, run_id, data=data)[signal] if cloud is None else cloud
    found = matrix.points_in_cell(cloud.points, row, col)
    n_points = int(found.size)
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


# -- export ----------------------------------------------------------------------------------------
def render_matrix(matrix: np.ndarray, *, zmin: float | None = None, zmax: float | None = None, scale: int = 8) -> np.ndarray:
    """A matrix as an RGB image, green = low, yellow = high, origin at the bottom left.

    Parameters
    ----------
    matrix : ndarray of shape (grid, grid), float
        Row 0 = smallest d_ik (``VarianceMatrix.matrix``).
    zmin, zmax : float, optional
        Colour range; default the matrix's own.
    scale : int, default=8
        Pixels per cell.

    Returns
    -------
    ndarray of shape (grid * scale, grid * scale, 3), uint8
    """
    scale = check_positive_int(scale, "scale")
    m = np.asarray(matrix, dtype=np.float64)
    low = float(m.min()) if zmin is None else float(zmin)
    high = float(m.max()) if zmax is None else float(zmax)
    t = np.clip((m - low) / (high - low), 0, 1) if high > low else np.zeros_like(m)
    stops = np.array([s for s, _ in VARIANCE_COLOURS])
    colours = np.array([c for _, c in VARIANCE_COLOURS], dtype=np.float64)
    rgb = np.stack([np.interp(t, stops, colours[:, c]) for c in range(3)], axis=-1)
    image = np.round(rgb[::-1]).astype(np.uint8)  # image row 0 is the top: the largest d_ik
    return cv2.resize(image, (m.shape[1] * scale, m.shape[0] * scale), interpolation=cv2.INTER_NEAREST)


def export_run(
    workspace: Workspace, run_id: str, out_dir: str | Path, *, preset: str = "smooth", tops: Mapping[str, float] | None = None, **settings: Any
) -> dict[str, Any]:
    """Write a run's four matrices (``<signal>.npy``, ``<signal>.png``) and per-image table
    (``images.csv``) into ``out_dir`` (created when missing).

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    out_dir : path-like
    preset : str, default='smooth'
        Further keyword arguments (grid, window, sigma, k) as in :func:`run_matrices`.
    tops : mapping of str to float, optional
        Top of each signal's colour range in the PNGs (bottom 0), e.g. the suite's
        :class:`analytics.colour_scale.ColourScale`; default each matrix's own range.

    Returns
    -------
    dict
        ``{"run", "settings", "matrices": {signal: {"path", "png", "shape", "mean"}}, "points",
        "table"}``; ``points`` per signal.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InvalidInputError(f"out_dir {out} is a file; pass a folder")
    out.mkdir(parents=True, exist_ok=True)
    data = load_run(workspace, run_id)
    matrices = run_matrices(workspace, run_id, preset=preset, **settings)
    written = {}
    for signal, vm in matrices.items():
        npy, png = out / f"{signal}.npy", out / f"{signal}.png"
        np.save(npy, vm.matrix)
        colours = {} if tops is None else {"zmin": 0.0, "zmax": float(tops[signal])}
        if not cv2.imwrite(str(png), render_matrix(vm.matrix, **colours)[..., ::-1]):  # OpenCV writes BGR
            raise InvalidInputError(f"cannot write {png}; check that the folder is writable")
        written[signal] = {"path": str(npy), "png": str(png), "shape": list(vm.matrix.shape), "mean": float(vm.matrix.mean())}
    table = out / "images.csv"
    image_table(workspace, run_id).to_csv(table, index=False)
    first = next(iter(matrices.values()))
    return {
        "run": run_id,
        "settings": {**resolve_settings(preset=preset, **settings), "d_max": first.d_max},
        "matrices": written,
        "points": data.n_points,
        "table": str(table),
    }
