"""Runs: one model over one suite, read back as arrays and summarised.

:func:`analytics.inference.run_models` writes the ``runs`` / ``run_images`` rows; this module reads
them (docs/method.md, 'Signals', 'Semantic distance' and 'Worst-case accuracy'):

* :func:`load_run` gives a finished run as rectangular arrays (:class:`RunData`): one row per
  target, column 0 its original, columns 1..n its composites;
* :func:`summarize_run` computes accuracy and worst-case accuracy per target and their means and
  stores them in ``runs.summary``; :func:`list_runs` lists runs with them (and whether they are
  stale), :func:`current_runs` only the ones that are not.

Stale runs. A run records the key of the weights it ran (``runs.model_key``, :func:`analytics.workspace.model_keys`)
and of what its suite's classes were scored as (``runs.classes_key``: ``LabelSpace.outputs_key``, each
class's outputs; older runs recorded ``class_mapping_key``). It is *stale* when the model has been
re-registered with other weights since (its current key differs; a head's key covers its backbone's)
or a class of its suite was remapped so that the model scores it differently (issue 47.7). Stale runs stay listed, marked, but
never feed the assessor or the Judge queue. Runs from before these columns existed (empty keys):
such a run counts as current when the model (and a head's backbone) was registered no later than
the run was created (``models.added`` <= ``runs.created``; both have one-second resolution, so a
run in the second of a re-registration counts as current), and its class mappings count as the
current ones (no remapping was possible before the key was recorded). :func:`analytics.workspace.pin_legacy_keys`
writes those keys down before a model is replaced or a class remapped, so the rule is needed only
for workspaces changed by an older Backdrop.

Worst-case accuracy follows :func:`analytics.variance.worst_case_accuracy`: a target counts when it is
classified correctly under every one of its backgrounds (the original is reported separately as
``original_accuracy``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from analytics._choices import CONV_SIGNALS, MATRIX_SIGNALS
from analytics.data import ClassMapping, LabelSpace, list_class_mappings
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.suites import suite_labels_of
from analytics.variance import accuracy_summary, worst_case_correct
from analytics.workspace import Workspace, model_keys, suite_classes_key

from .naming import run_labels

#: Columns of :func:`list_runs`.
RUN_COLUMNS = [
    "id", "label", "model", "suite_id", "suite", "status", "images", "expected_images", "accuracy", "original_accuracy",
    "worst_case_accuracy", "top_k", "created", "finished", "construction", "model_key", "classes_key", "stale",
]  # fmt: skip
#: Columns of :func:`image_table` (the per-image CSV of :func:`export_run`).
IMAGE_COLUMNS = [
    "target_id", "class_name", "position", "background_id", "distance", "predicted", "correct", "true_prob",
    "max_prob", "emb_topk_mean", "emb_max", "emb_mean", "conv_max", "conv_max_mean",
]  # fmt: skip
#: Bumped when the stored summary changes shape (older summaries are recomputed).
_SUMMARY_VERSION = 2  # 2: row counts in, per-target results out (run_details)


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
        One array per key of :data:`SIGNALS`, and per key of :data:`CONV_SIGNALS` when every image has it.
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
    absent : dict of str to str
        Signal of :data:`CONV_SIGNALS` the run lacks -> why, in a sentence that says what to do.
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
    absent: dict[str, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Composites per target."""
        return int(self.distances.shape[1]) - 1

    @property
    def n_points(self) -> int:
        """Points of each signal's cloud: n_targets * n * (n + 1)."""
        return len(self.target_ids) * self.n * (self.n + 1)


# -- reading runs ----------------------------------------------------------------------------------
def run_row(workspace: Workspace, run_id: str):
    """The ``runs`` row of ``run_id`` (sqlite3.Row).

    Raises
    ------
    NotFoundError
        No such run (the message lists the newest ones).
    """
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
    row = _finished_row(workspace, run_id)
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
    signals = {signal: grid(signal, np.float64) for signal in MATRIX_SIGNALS}
    absent = _absent_conv_signals(row, signals)
    return RunData(
        run_id=run_id,
        model=row["model"],
        suite_id=row["suite_id"],
        target_ids=list(full),
        distances=distances,
        signals={signal: values for signal, values in signals.items() if signal not in absent},
        correct=grid("correct", bool),
        predicted=grid("predicted", str),
        background_ids=grid("background_id", str),
        class_names=table["class_name"].to_numpy()[::width].tolist(),
        excluded=excluded,
        absent=absent,
    )


def _finished_row(workspace: Workspace, run_id: str):
    """The ``runs`` row of a finished run; an unfinished one raises InvalidInputError (how to resume it)."""
    row = run_row(workspace, run_id)
    if row["status"] != "done":
        stored = workspace.query_one("SELECT COUNT(*) FROM run_images WHERE run_id = ?", (run_id,))[0]
        raise InvalidInputError(
            f"run {run_id!r} ({row['model']} over suite {row['suite_id']}) is {row['status']!r} with {stored} images stored; "
            f"resume it on the Run page, with `analytics.api.run(workspace, models={row['model']!r}, suite={row['suite_id']!r})` or `python -m analytics run`"
        )
    return row


def signal_peaks(workspace: Workspace, run_id: str, signals: Sequence[str]) -> dict[str, float]:
    """The largest absolute value of each signal over a finished run's images, as :func:`load_run`
    holds them (the targets it excludes left out), by one SQL aggregate instead of reading every row.

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    signals : sequence of str
        Keys of :data:`MATRIX_SIGNALS`.

    Returns
    -------
    dict of str to float
        Keyed by ``signals``; NaN for a signal some image lacks (as numpy's max over the arrays).
    """
    unknown = [signal for signal in signals if signal not in MATRIX_SIGNALS]
    if unknown:
        raise InvalidInputError(f"signals: {', '.join(map(repr, unknown))}; choose among {', '.join(MATRIX_SIGNALS)}")
    _finished_row(workspace, run_id)
    columns = ", ".join(f"MAX(ABS({signal})), SUM({signal} IS NULL)" for signal in signals)  # names checked above
    found = workspace.query_one(  # load_run's targets: those with the most images, at positions 0 .. n
        "WITH sizes AS (SELECT target_id, COUNT(*) AS size, MAX(position) AS last FROM run_images WHERE run_id = ? GROUP BY target_id), "
        "full AS (SELECT target_id FROM sizes WHERE size = (SELECT MAX(size) FROM sizes) AND last = size - 1) "
        f"SELECT {columns} FROM run_images WHERE run_id = ? AND target_id IN full",
        (run_id, run_id),
    )
    return {signal: float("nan") if found[2 * i + 1] or found[2 * i] is None else float(found[2 * i]) for i, signal in enumerate(signals)}


def _absent_conv_signals(row, signals: dict[str, np.ndarray]) -> dict[str, str]:
    """The conv-map signals a run lacks (NaN on some image) and why (see :attr:`RunData.absent`)."""
    missing = {signal: int(np.isnan(signals[signal]).sum()) for signal in CONV_SIGNALS}
    if not any(missing.values()):
        return {}
    problem = json.loads(row["summary"] or "{}").get("conv_map")
    if problem:
        why = f"model {row['model']!r} has no last convolutional map ({problem}), so run {row['id']!r} has no authors' conv-map signals"
    else:
        why = (
            f"run {row['id']!r} lacks the authors' conv-map statistics on {max(missing.values())} of {signals['conv_max'].size} images "
            "(it was made before Backdrop stored them); compute them with "
            f"`analytics.api.run(workspace, models={row['model']!r}, suite={row['suite_id']!r}, fill_conv=True)` or `python -m analytics run` (its other signals stay)"
        )
    return {signal: f"{MATRIX_SIGNALS[signal]}: {why}" for signal, count in missing.items() if count}


def check_run_classes(classes: Sequence[str], present: Sequence[str], run_id: str) -> list[str]:
    """``classes`` without repeats, checked against the classes ``present`` in run ``run_id``.

    Raises
    ------
    InvalidInputError
        An empty selection, or a class not in ``present`` (the message lists the run's classes).
    """
    wanted, known = list(dict.fromkeys(classes)), sorted(set(present))
    unknown = [name for name in wanted if name not in known]
    if not wanted or unknown:
        raise InvalidInputError(
            f"classes: {'none given' if not wanted else ', '.join(unknown[:5]) + ' not among the classes'} of run {run_id}; "
            f"its classes are {', '.join(known) or 'none'}"
        )
    return wanted


def run_of_classes(data: RunData, classes: Sequence[str]) -> RunData:
    """``data`` narrowed to the targets of ``classes`` (rows kept in order).

    Raises
    ------
    InvalidInputError
        An empty selection, or a class the run has no target of (the message lists its classes).
    """
    names = data.class_names or []
    wanted = check_run_classes(classes, names, data.run_id)
    return run_rows(data, np.flatnonzero([name in wanted for name in names]))


def run_rows(data: RunData, rows: np.ndarray) -> RunData:
    """``data`` narrowed to the targets at ``rows`` (increasing row indices), in order."""
    rows = np.asarray(rows, dtype=np.int64)
    return replace(
        data,
        target_ids=[data.target_ids[row] for row in rows],
        distances=data.distances[rows],
        signals={signal: values[rows] for signal, values in data.signals.items()},
        correct=data.correct[rows],
        predicted=data.predicted[rows],
        background_ids=data.background_ids[rows],
        class_names=None if data.class_names is None else [data.class_names[row] for row in rows],
    )


def run_accuracies(data: RunData, *, classes: Sequence[str] | None = None) -> dict[str, float]:
    """The run's ``accuracy``, ``original_accuracy`` and ``worst_case_accuracy`` (floats in [0, 1],
    :func:`analytics.variance.accuracy_summary`, as :func:`summarize_run` stores them), over the targets
    of ``classes`` (None: every target of ``data``; :func:`run_of_classes` checks the classes)."""
    return accuracy_summary((data if classes is None else run_of_classes(data, classes)).correct)


def image_table(workspace: Workspace, run_id: str) -> pd.DataFrame:
    """One row per image of a run (any status), sorted by target and position.

    Returns
    -------
    DataFrame
        Columns :data:`IMAGE_COLUMNS`; ``background_id`` is '' for originals, ``distance`` NaN
        where the suite has none, ``correct`` bool.
    """
    row = run_row(workspace, run_id)
    rows = workspace.query(
        "SELECT r.target_id, t.class_name, r.position, IFNULL(s.background_id, '') AS background_id, r.distance, r.predicted, "
        "r.correct, r.true_prob, r.max_prob, r.emb_topk_mean, r.emb_max, r.emb_mean, r.conv_max, r.conv_max_mean FROM run_images r "
        "LEFT JOIN targets t ON t.id = r.target_id "
        "LEFT JOIN suite_items s ON s.suite_id = ? AND s.target_id = r.target_id AND s.position = r.position "
        "WHERE r.run_id = ? ORDER BY r.target_id, r.position",
        (row["suite_id"], run_id),
    )
    table = pd.DataFrame([tuple(r) for r in rows], columns=IMAGE_COLUMNS)
    return table.astype({"position": int, "distance": float, "correct": bool, "conv_max": float, "conv_max_mean": float})


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


def summarize_run(workspace: Workspace, run_id: str, *, data: RunData | None = None) -> dict[str, Any]:
    """Compute and store the accuracies of a finished run in ``runs.summary``.

    The stored summary keeps what :func:`analytics.inference.run_models` wrote (``top_k``) and
    holds: ``images``, ``targets``, ``n``, ``accuracy`` (over all images), ``original_accuracy``,
    ``worst_case_accuracy`` (:func:`analytics.variance.worst_case_accuracy`), ``excluded_targets``,
    ``stored_images`` (its ``run_images`` rows) and ``expected_images`` (the suite's targets and
    items), so :func:`list_runs` never counts rows of a finished run. Per-target results are
    :func:`run_details`' (they would make every listing parse them).

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    data : RunData, optional
        The run, when already loaded (:func:`load_run`).

    Returns
    -------
    dict
        The stored summary.
    """
    data = load_run(workspace, run_id) if data is None else data
    summary = json.loads(run_row(workspace, run_id)["summary"] or "{}")
    summary.update(
        images=int(data.correct.size),
        targets=len(data.target_ids),
        n=data.n,
        **run_accuracies(data),
        excluded_targets=list(data.excluded),
    )
    return _store_summary(workspace, run_id, summary)


def _store_summary(workspace: Workspace, run_id: str, summary: dict[str, Any]) -> dict[str, Any]:
    """Store ``summary`` at :data:`_SUMMARY_VERSION` with the run's row counts; drop what older versions kept."""
    summary.pop("per_target", None)  # version 1 stored it here, ~120 KB a run at 1,712 targets
    (images, expected), = _progress(workspace, [run_id]).values()
    summary.update(version=_SUMMARY_VERSION, stored_images=images, expected_images=expected)
    with workspace.transaction() as conn:
        conn.execute("UPDATE runs SET summary = ? WHERE id = ?", (json.dumps(summary), run_id))
    return summary


def run_summary(workspace: Workspace, run_id: str) -> dict[str, Any]:
    """A finished run's stored summary (:func:`summarize_run`), computed first when missing or old.

    Raises
    ------
    InvalidInputError
        The run has not finished (the message says how to resume it).
    """
    summary = json.loads(_finished_row(workspace, run_id)["summary"] or "{}")
    return summary if summary.get("version") == _SUMMARY_VERSION else summarize_run(workspace, run_id)


def run_details(workspace: Workspace, run_id: str) -> dict[str, Any]:
    """One finished run's summary (:func:`summarize_run`) with its per-target results.

    Returns
    -------
    dict
        The stored summary plus ``per_target``: ``{target_id: {"accuracy": float, "worst_case": bool}}``.
    """
    summary = run_summary(workspace, run_id)
    per_target = target_table(load_run(workspace, run_id))
    summary["per_target"] = {
        r.target_id: {"accuracy": float(r.accuracy), "worst_case": bool(r.worst_case_correct)} for r in per_target.itertuples(index=False)
    }
    return summary


def _progress(workspace: Workspace, run_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Run id -> (``run_images`` rows stored, images its suite expects), for a few runs (unfinished ones)."""
    if not run_ids:
        return {}
    marks = ", ".join("?" * len(run_ids))
    suites = {row["id"]: row["suite_id"] for row in workspace.query(f"SELECT id, suite_id FROM runs WHERE id IN ({marks})", run_ids)}
    stored = dict(workspace.query(f"SELECT run_id, COUNT(*) FROM run_images WHERE run_id IN ({marks}) GROUP BY run_id", run_ids))
    wanted = sorted(set(suites.values()))
    expected = dict(workspace.query(
        f"SELECT suite_id, COUNT(*) + COUNT(DISTINCT target_id) FROM suite_items WHERE suite_id IN ({', '.join('?' * len(wanted))}) "
        "GROUP BY suite_id", wanted,
    ))  # fmt: skip
    return {run_id: (int(stored.get(run_id, 0)), int(expected.get(suite, 0))) for run_id, suite in suites.items()}


_SNAPSHOT: ContextVar[dict[str, pd.DataFrame] | None] = ContextVar("runs_snapshot", default=None)


@contextmanager
def runs_snapshot() -> Iterator[None]:
    """Inside the block, :func:`list_runs` (and :func:`current_runs`) lists each workspace's runs
    once and answers every later call, with any filter, from that listing.

    A page wraps one rerun in it: the Judge page alone asks for the runs four times a click
    (suites, the queue, the progress, the assignments), each a read of every run's row. Runs that
    finish meanwhile show on the next rerun. Each call gets its own copy.
    """
    token = _SNAPSHOT.set({})
    try:
        yield
    finally:
        _SNAPSHOT.reset(token)


def list_runs(workspace: Workspace, *, model: str | None = None, suite_id: str | None = None) -> pd.DataFrame:
    """Runs of the workspace, newest first, with their accuracies and whether they are stale.

    Finished runs whose summary predates :func:`summarize_run` (a run made by
    :func:`analytics.inference.run_models` alone) are summarised and stored on the way. The
    listing reads each run's row and stored summary only: finished runs' image counts come from
    their summary (``run_images`` is counted for unfinished runs alone) and per-target results are
    :func:`run_details`'.

    Parameters
    ----------
    workspace : Workspace
    model, suite_id : str, optional
        Only runs of this model / suite.

    Returns
    -------
    DataFrame
        Columns :data:`RUN_COLUMNS`: ``label`` what a person reads for the run and ``suite`` for
        its suite (:func:`analytics.runs.run_labels`, unique over the workspace's runs, also in a
        filtered listing); ``images`` stored so far and ``expected_images`` (targets +
        suite items) show how far an unfinished run got; accuracies are NaN until it is done;
        ``top_k`` is the run's embedding top-k (what resuming needs); ``construction`` the
        model's construction record (zoo models) or None; ``model_key`` / ``classes_key`` the
        recorded keys ('' for runs older than them); ``stale`` (bool) whether the model's weights
        or a class mapping changed since (module notes).
    """
    snapshot = _SNAPSHOT.get()
    if snapshot is None:
        return _list_runs(workspace, model, suite_id)
    key = str(workspace.root)
    if key not in snapshot:
        snapshot[key] = _list_runs(workspace, None, None)
    table = snapshot[key]
    if model is not None:
        table = table[table["model"] == model]
    if suite_id is not None:
        table = table[table["suite_id"] == suite_id]
    return table.reset_index(drop=True).copy()


def _list_runs(workspace: Workspace, model: str | None, suite_id: str | None) -> pd.DataFrame:
    rows = workspace.query(
        "SELECT r.id, r.model, r.suite_id, r.status, r.summary, r.created, r.finished, r.model_key, r.classes_key, m.spec "
        "FROM runs r LEFT JOIN models m ON m.name = r.model "
        "WHERE (? IS NULL OR r.model = ?) AND (? IS NULL OR r.suite_id = ?) ORDER BY r.created DESC, r.id",
        (model, model, suite_id, suite_id),
    )
    keys = model_keys(workspace)
    # labels over every run and suite, so a run reads the same in a filtered listing as in the whole
    suites = suite_labels_of(workspace)
    every = workspace.query("SELECT id, model, suite_id, created FROM runs")
    labels = run_labels(pd.DataFrame([dict(r) for r in every], columns=["id", "model", "suite_id", "created"]), suites)
    suite_keys = {suite: suite_classes_key(workspace, suite) for suite in {row["suite_id"] for row in rows if row["classes_key"]}}
    scoring_keys = _scoring_keys(workspace, [row for row in rows if row["classes_key"] and row["spec"]], suite_keys)
    summaries = {}
    for row in rows:
        summary = json.loads(row["summary"] or "{}")
        if row["status"] == "done" and summary.get("version") != _SUMMARY_VERSION:
            summary = summarize_run(workspace, row["id"]) if summary.get("version") is None else _store_summary(workspace, row["id"], summary)
        summaries[row["id"]] = summary
    progress = _progress(workspace, [row["id"] for row in rows if row["status"] != "done"])  # counted only while unfinished
    records = []
    for row in rows:
        summary = summaries[row["id"]]
        spec = json.loads(row["spec"]) if row["spec"] else {}
        classes_current = not row["classes_key"] or row["classes_key"] in (suite_keys[row["suite_id"]], scoring_keys.get(row["id"]))
        images, expected = progress.get(row["id"]) or (summary["stored_images"], summary["expected_images"])
        records.append({
            "id": row["id"], "label": labels[row["id"]], "model": row["model"], "suite_id": row["suite_id"],
            "suite": suites.get(row["suite_id"], row["suite_id"]), "status": row["status"],
            "images": int(images), "expected_images": int(expected),
            "accuracy": summary.get("accuracy", np.nan), "original_accuracy": summary.get("original_accuracy", np.nan),
            "worst_case_accuracy": summary.get("worst_case_accuracy", np.nan), "top_k": summary.get("top_k"),
            "created": row["created"], "finished": row["finished"], "construction": spec.get("construction"),
            "model_key": row["model_key"], "classes_key": row["classes_key"],
            "stale": not (classes_current and keys.is_current(row["model"], row["model_key"], row["created"])),
        })  # fmt: skip
    table = pd.DataFrame(records, columns=RUN_COLUMNS)
    return table.astype({"accuracy": float, "original_accuracy": float, "worst_case_accuracy": float, "stale": bool})


def _scoring_keys(workspace: Workspace, rows: Sequence[Any], suites: Iterable[str], changed: tuple[str, ClassMapping] | None = None) -> dict[str, str]:
    """Run -> ``LabelSpace.outputs_key`` of its suite's classes under its model's current label space:
    the class-mapping part of what makes a run stale (module notes), computed once per (suite, model).
    ``changed`` is a class and a mapping to read in place of the stored one (what saving it would do)."""
    if not rows:
        return {}
    mappings = list_class_mappings(workspace)
    if changed is not None:
        mappings[changed[0]] = changed[1]
    query = "SELECT DISTINCT t.class_name FROM suite_items s JOIN targets t ON t.id = s.target_id WHERE s.suite_id = ?"
    names = {suite: {r["class_name"] for r in workspace.query(query, (suite,))} for suite in set(suites)}
    known: dict[tuple[str, str], str] = {}
    keys = {}
    for row in rows:
        cache_key = (row["suite_id"], row["model"])
        if cache_key not in known:
            space = LabelSpace.from_json(json.loads(row["spec"])["label_space"])
            known[cache_key] = space.outputs_key(mappings, names[row["suite_id"]])
        keys[row["id"]] = known[cache_key]
    return keys


def current_runs(workspace: Workspace, *, model: str | None = None, suite_id: str | None = None) -> pd.DataFrame:
    """:func:`list_runs` without the stale runs: the runs that may feed the assessor, the Judge
    queue and comparisons (same columns, ``stale`` all False)."""
    runs = list_runs(workspace, model=model, suite_id=suite_id)
    return runs[~runs["stale"]].reset_index(drop=True)


def runs_of_class(workspace: Workspace, class_name: str, mapping: ClassMapping | None = None) -> pd.DataFrame:
    """:func:`current_runs` whose suite holds a target of class ``class_name``: the runs that may turn
    stale when the class is remapped (the Data page asks before it does so). With ``mapping``, only
    those that saving it would make stale: the runs whose model scores the class differently under
    it (a mapping a model's label space does not read leaves its runs current, issue 47.7)."""
    rows = workspace.query(
        "SELECT DISTINCT i.suite_id FROM suite_items i JOIN targets t ON t.id = i.target_id WHERE t.class_name = ?", (class_name,)
    )
    runs = current_runs(workspace)
    runs = runs[runs["suite_id"].isin({row["suite_id"] for row in rows})].reset_index(drop=True)
    if mapping is None or runs.empty:
        return runs
    specs = {row["name"]: row["spec"] for row in workspace.query("SELECT name, spec FROM models")}
    run_rows = [{"id": i, "model": m, "suite_id": s, "spec": specs[m]} for i, m, s in zip(runs["id"], runs["model"], runs["suite_id"], strict=True)]
    before = _scoring_keys(workspace, run_rows, set(runs["suite_id"]))
    after = _scoring_keys(workspace, run_rows, set(runs["suite_id"]), (class_name, mapping))
    return runs[[before[run_id] != after[run_id] for run_id in runs["id"]]].reset_index(drop=True)
