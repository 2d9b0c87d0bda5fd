"""The streaming batch engine: composites -> model -> per-image signals in the workspace.

A suite holds, per target, n background ids; the images themselves (n + 1 per target: the original
and its composites) are never stored. :func:`iter_composites` generates them batch by batch from a
bounded LRU of prepared targets and decoded backgrounds, so memory does not grow with the suite:
for a GPU model on a worker thread ahead of the model (a bounded prefetch queue), for a CPU model
over every core between the model's batches (see :func:`prefetch_for`). Targets, masks and
backgrounds are resized to the model's input size once, when decoded, and the composites made at
that size. When many models run over one suite, a
:class:`~analytics.composite_cache.CompositeCache` keeps the composites on disk so each is made once.

:func:`run_models` writes one ``runs`` row per model and one ``run_images`` row per image with the
signals of Liao & Chen (§1.6 of DESIGN):

- from the prediction: ``predicted`` (output name), ``true_prob`` (probability of the target's
  class: the sum over the outputs that count as that class), ``max_prob``, ``correct``;
- from the embedding (the layer before the classifier head; for a head with a hidden layer, that
  hidden layer, so heads sharing a backbone pass still have their own): ``emb_topk_mean`` (mean of the k
  neurons that are largest on the target's foreground-only image m ⊗ x), ``emb_max``, ``emb_mean``;
- ``distance``: the semantic distance of the suite item (0 for the original).

:func:`run_models` is three steps that other engines (:mod:`analytics.distributed`) combine
differently: :func:`plan_runs` validates and writes the ``runs`` rows, :func:`group_rows` computes
the rows of one group of models sharing a backbone pass (reads only: it can run in a worker
process), and :func:`write_rows` / :func:`finish_runs` store them from a single writer. On CUDA
the model's share of a batch halves on out-of-memory until it fits (:class:`DeviceMemoryError`
when one image does not).

Rows are committed batch by batch, and a run's id depends only on the model's content key
(:func:`analytics.runs.model_keys`: a re-registered model with other weights gets new runs), the
suite, ``top_k`` and the key of the suite's class mappings; the run records both keys
(``runs.model_key``, ``runs.classes_key``). Running again resumes an interrupted run (rows already
there are skipped); a finished run is reused untouched (its ``finished`` time changes only when the
call did work on it).
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import cv2
import numpy as np
import pandas as pd
import torch

from ._validation import check_positive_int
from .classes import ClassMapping, list_class_mappings
from .compose import Cutout, foreground_only
from .exceptions import BackdropError, InvalidInputError, NotFoundError
from .models import HeadLayers, LoadedModel, ModelSpec, get_model_spec, load_head, load_model, resize_images, resolve_device
from .runs import ModelKeys, model_keys, suite_classes_key
from .workspace import Workspace, content_id, now

if TYPE_CHECKING:  # the cache module imports this one
    from .composite_cache import CompositeCache

PREFETCH_BATCHES = 2
CACHE_ITEMS = 64
ROW_COLUMNS = ("run_id", "target_id", "position", "predicted", "true_prob", "max_prob", "correct", "emb_topk_mean", "emb_max", "emb_mean", "distance")


@dataclass(frozen=True)
class ImageJob:
    """One image of a suite: position 0 (``background_id`` None) is the original target image.

    ``foreground=True`` asks for the target's foreground-only image m ⊗ x instead (the background
    is ignored); the engine uses it to pick the top-k embedding neurons.
    """

    target_id: str
    position: int
    background_id: str | None
    foreground: bool = False


@dataclass(frozen=True)
class Evaluation:
    """A model's accuracy on the original (unmodified) targets.

    Attributes
    ----------
    model : str
    n : int
        Number of targets.
    accuracy : float
    per_class : dict of str to float
        Accuracy per workspace class.
    per_class_n : dict of str to int
        Targets per class.
    table : DataFrame
        One row per target: target_id, class_name, predicted, true_prob, max_prob, correct.
    """

    model: str
    n: int
    accuracy: float
    per_class: dict[str, float]
    per_class_n: dict[str, int]
    table: pd.DataFrame = field(repr=False)

    def to_dict(self) -> dict:
        return {"model": self.model, "n": self.n, "accuracy": self.accuracy, "per_class": self.per_class}


# -- composites ----------------------------------------------------------------------------------
class _ImageCache:
    """Decoded target images/masks and backgrounds, least recently used evicted beyond ``capacity``.

    With a ``size``, each target (image and mask) and background is resized once, when it is
    decoded, so composites are made directly at the model's input size: cheaper than compositing
    at the workspace size and resizing every composite, and the same up to the seam's pixels.

    The hashes are looked up on the caller's thread (SQLite connections must not cross threads);
    the worker then only reads array files.
    """

    def __init__(self, workspace: Workspace, jobs: Sequence[ImageJob], capacity: int, size: int | None = None) -> None:
        self.workspace, self.capacity, self.size = workspace, capacity, size
        self.target_hashes = _hashes(workspace, "targets", "image_hash, mask_hash", {j.target_id for j in jobs})
        self.background_hashes = _hashes(workspace, "backgrounds", "image_hash", {j.background_id for j in jobs if j.background_id})
        self._items: OrderedDict[tuple[str, str], tuple] = OrderedDict()
        self._lock = threading.Lock()  # compositing threads share the cache

    def target(self, target_id: str) -> Cutout:
        """The target prepared for pasting (its ``image`` and ``mask`` attributes are the arrays)."""
        return self._get(("t", target_id), lambda: (self._cutout(*self.target_hashes[target_id]),))[0]

    def background(self, background_id: str) -> np.ndarray:
        (image_hash,) = self.background_hashes[background_id]
        return self._get(("b", background_id), lambda: (self._sized(self.workspace.get_array(image_hash)),))[0]

    def _cutout(self, image_hash: str, mask_hash: str) -> Cutout:
        image, mask = self.workspace.get_array(image_hash), self.workspace.get_array(mask_hash)
        if self.size is None or image.shape[:2] == (self.size, self.size):
            return Cutout(image, mask)
        soft = cv2.resize(mask.astype(np.float32), (self.size, self.size), interpolation=_interpolation(mask.shape, self.size))
        binary = mask.dtype == bool or bool(((mask == 0) | (mask == 1)).all())
        return Cutout(self._sized(image), soft > 0.5 if binary else np.clip(soft, 0.0, 1.0))  # a hard mask stays hard

    def _sized(self, image: np.ndarray) -> np.ndarray:
        return image if self.size is None else resize_images(image[None], self.size)[0]

    def _get(self, key: tuple[str, str], load: Callable[[], tuple]) -> tuple:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            value = load()
            self._items[key] = value
            if len(self._items) > self.capacity:
                self._items.popitem(last=False)
            return value


def _interpolation(shape: tuple[int, ...], size: int) -> int:
    """Area averaging when shrinking (antialiased), bilinear when enlarging, as :func:`resize_images`."""
    return cv2.INTER_AREA if shape[0] > size or shape[1] > size else cv2.INTER_LINEAR


def _hashes(workspace: Workspace, table: str, columns: str, ids: set[str]) -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    unique = sorted(ids)
    for start in range(0, len(unique), 500):  # SQLite caps the number of ? placeholders
        chunk = unique[start : start + 500]
        rows = workspace.query(f"SELECT id, {columns} FROM {table} WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        found.update({row["id"]: tuple(row)[1:] for row in rows})
    missing = [i for i in unique if i not in found]
    if missing:
        raise NotFoundError(f"{len(missing)} {table} of the jobs are not in workspace {workspace.root}: {', '.join(missing[:5])}")
    return found


def _compose_batch(cache: _ImageCache, jobs: Sequence[ImageJob], blend: bool) -> np.ndarray:
    """The images of ``jobs`` at the cache's size: (len(jobs), height, width, 3) uint8."""
    height, width = cache.target(jobs[0].target_id).image.shape[:2]
    out = np.empty((len(jobs), height, width, 3), np.uint8)
    for start, stop in _runs_of_targets(jobs):
        cutout = cache.target(jobs[start].target_id)
        out[start:stop] = cutout.image
        swap = [i for i in range(start, stop) if jobs[i].background_id is not None and not jobs[i].foreground]
        if swap:
            backgrounds = np.stack([cache.background(jobs[i].background_id) for i in swap])
            out[swap] = cutout.paste(backgrounds, blend=blend)
        alone = [i for i in range(start, stop) if jobs[i].foreground]
        if alone:
            out[alone] = foreground_only(cutout.image[None], cutout.mask[None])
    return out


def _runs_of_targets(jobs: Sequence[ImageJob]) -> Iterator[tuple[int, int]]:
    """(start, stop) of each run of consecutive jobs with the same target."""
    start = 0
    for i in range(1, len(jobs) + 1):
        if i == len(jobs) or jobs[i].target_id != jobs[start].target_id:
            yield start, i
            start = i


def iter_composites(
    workspace: Workspace,
    jobs: Sequence[ImageJob],
    *,
    batch_size: int = 32,
    blend: bool = True,
    size: int | None = None,
    prefetch: int = PREFETCH_BATCHES,
    cache_items: int = CACHE_ITEMS,
    composites: CompositeCache | None = None,
    suite_id: str | None = None,
) -> Iterator[tuple[list[ImageJob], np.ndarray]]:
    """Generate the images of ``jobs`` batch by batch (ahead on a worker thread, or on demand).

    Parameters
    ----------
    workspace : Workspace
    jobs : sequence of ImageJob
        Order is kept; group jobs by target for the best cache use.
    batch_size : int, default=32
    blend : bool, default=True
        Laplacian-pyramid blending on the seam (see :func:`analytics.compose.composite`).
    size : int or None, default=None
        Make the images at ``size`` x ``size`` (a model's ``input_size``): each target, mask and
        background is resized once when decoded and the composites are pasted at that size, so
        the caller's thread only runs the model. None keeps the workspace size.
    prefetch : int, default=2
        Batches generated ahead of the caller on a worker thread. 0: each batch is generated when
        the caller asks for it, split over every CPU core; use it when the caller's work needs the
        CPU too (see :func:`prefetch_for`).
    cache_items : int, default=64
        Decoded targets + backgrounds kept in memory.
    composites : CompositeCache or None, default=None
        Read the images from this cache, compositing (and storing) only those it lacks.
    suite_id : str or None, default=None
        The suite the jobs come from; needed with ``composites``.

    Yields
    ------
    jobs : list of ImageJob
    images : ndarray of shape (len(jobs), size, size, 3), uint8

    Examples
    --------
    >>> for batch_jobs, images in iter_composites(ws, jobs, batch_size=16):  # doctest: +SKIP
    ...     prediction = model.predict(images)
    """
    check_positive_int(batch_size, "batch_size")
    check_positive_int(prefetch, "prefetch", minimum=0)
    check_positive_int(cache_items, "cache_items", minimum=2)
    if composites is not None and suite_id is None:
        raise InvalidInputError("iter_composites needs the suite_id of the jobs to read them from a CompositeCache")
    jobs = list(jobs)
    cache = _ImageCache(workspace, jobs, cache_items, size)
    chunks = (jobs[start : start + batch_size] for start in range(0, len(jobs), batch_size))
    source = _Source(cache, blend, composites, suite_id)
    if prefetch == 0:
        return _composed_on_every_core(source, chunks)
    return _prefetched(((chunk, source.images(chunk, None)) for chunk in chunks), prefetch)


@dataclass(frozen=True)
class _Source:
    """Where a stream's images come from: composited from the image cache, or read from (and
    first written to) a :class:`~analytics.composite_cache.CompositeCache`."""

    cache: _ImageCache
    blend: bool
    composites: CompositeCache | None
    suite_id: str | None

    def images(self, jobs: list[ImageJob], pool: ThreadPoolExecutor | None) -> np.ndarray:
        """(len(jobs), size, size, 3) uint8; ``pool`` splits the compositing over its threads."""
        def make(todo: list[ImageJob]) -> np.ndarray:
            return self._compose(todo, pool)

        if self.composites is None:
            return make(jobs)
        return self.composites.images(self.suite_id, jobs, size=self.cache.size, blend=self.blend, make=make)

    def _compose(self, jobs: list[ImageJob], pool: ThreadPoolExecutor | None) -> np.ndarray:
        if pool is None:
            return _compose_batch(self.cache, jobs, self.blend)
        bounds = np.linspace(0, len(jobs), min(cpu_count(), len(jobs)) + 1).astype(int)
        parts = [jobs[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        return np.concatenate(list(pool.map(lambda part: _compose_batch(self.cache, part, self.blend), parts)))


def prefetch_for(device: torch.device) -> int:
    """How far ahead :func:`iter_composites` should work for a model on ``device``.

    On an accelerator, :data:`PREFETCH_BATCHES` (compositing on the CPU overlaps the model). On a
    CPU, 0: the model already keeps every core busy, and a compositing thread running beside it
    stalls the model's threads at each of its synchronisation points. On the 2-core reference
    machine, compositing each batch over both cores and then running the model gave 5-10 % more
    images per second than overlapping the two (``benchmarks/inference.py``).
    """
    return 0 if device.type == "cpu" else PREFETCH_BATCHES


def _composed_on_every_core(source: _Source, chunks: Iterator[list[ImageJob]]) -> Iterator:
    with ThreadPoolExecutor(cpu_count(), thread_name_prefix="backdrop-composites") as pool:
        for chunk in chunks:
            yield chunk, source.images(chunk, pool)


_DONE = object()


def _prefetched(items: Iterator, depth: int) -> Iterator:
    """Run ``items`` on a worker thread, ``depth`` ahead of the consumer.

    Worker errors are raised in the consumer; closing the consumer's iterator stops the worker.
    """
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                slots.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(_DONE)
        except BaseException as err:  # handed to the consumer, which re-raises it
            put(err)

    worker = threading.Thread(target=produce, name="backdrop-composites", daemon=True)

    def consume() -> Iterator:
        worker.start()
        try:
            while True:
                item = slots.get()
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            worker.join(timeout=5)

    return consume()


# -- running models --------------------------------------------------------------------------------
@dataclass
class _Member:
    """One requested model inside a group that shares a backbone pass."""

    spec: ModelSpec
    run_id: str
    outputs: dict[str, list[int]]
    done: set[tuple[str, int]]
    head: HeadLayers | None  # None: the backbone's own logits and embedding
    topk: dict[str, np.ndarray] = field(default_factory=dict)  # target id -> its top-k neurons in this member's embedding


@dataclass(frozen=True)
class GroupPlan:
    """Models that share one backbone pass: zoo heads on their backbone, or one model alone.

    Attributes
    ----------
    backbone : str
        The registered model whose forward pass the group runs.
    models : tuple of str
        The requested models of the group (heads, or the backbone itself).
    todo : tuple of ImageJob
        The suite's jobs (grouped by target) that some member's run still lacks.
    """

    backbone: str
    models: tuple[str, ...]
    todo: tuple[ImageJob, ...]


@dataclass(frozen=True)
class RunPlan:
    """What :func:`run_models` does, decided up front so workers can compute while one writer stores.

    Everything is plain data (the device as text), so a plan pickles to another process.

    Attributes
    ----------
    suite_id : str
    top_k : int
    device : str
        Resolved device, e.g. ``"cpu"`` or ``"cuda"``.
    run_ids : dict of str to str
        Model name -> run id, in the order the models were asked for.
    groups : tuple of GroupPlan
    worked : frozenset of str
        Run ids that get new rows (the others were finished already).
    """

    suite_id: str
    top_k: int
    device: str
    run_ids: dict[str, str]
    groups: tuple[GroupPlan, ...]
    worked: frozenset[str]

    @property
    def total(self) -> int:
        """Images the plan's groups still have to run."""
        return sum(len(group.todo) for group in self.groups)


class DeviceMemoryError(BackdropError, MemoryError):
    """A model does not fit the accelerator's memory even one image at a time."""


def run_models(
    workspace: Workspace,
    model_names: Sequence[str],
    suite_id: str,
    *,
    device: str | torch.device | None = None,
    batch_size: int = 32,
    top_k: int = 3,
    progress: Callable[[int, int], None] | None = None,
    composites: CompositeCache | None = None,
) -> list[str]:
    """Run models over every image of a suite and store the signals (one run per model).

    :func:`plan_runs`, then per group :func:`group_rows` with :func:`write_rows` after every
    batch, then :func:`finish_runs`.

    Parameters
    ----------
    workspace : Workspace
    model_names : sequence of str
        Registered models (a repeated name runs once). Heads sharing a backbone run together: the
        backbone once per image, every head on its embedding.
    suite_id : str
    device : str or None, default=None
        None: CUDA when available (autocast float16, channels-last), else CPU.
    batch_size : int, default=32
        Images per batch; on CUDA the model's share backs off by halving on out-of-memory.
    top_k : int, default=3
        Neurons picked on the foreground-only image for ``emb_topk_mean``.
    progress : callable (done, total) or None
        Called after every batch with image counts.
    composites : CompositeCache or None, default=None
        Read the suite's composites from this cache (filling it on first use) instead of
        compositing them again: pass one cache to the runs of many models over one suite.

    Returns
    -------
    run_ids : list of str
        In the order of ``model_names``. Ids depend on (model key, suite, top_k, class-mapping
        key), so a second call resumes or reuses earlier runs, and re-registered weights or a
        remapped class get new runs.

    Raises
    ------
    DeviceMemoryError
        A model runs out of CUDA memory even at batch size 1 (its group's runs are marked failed).
    """
    check_positive_int(batch_size, "batch_size")
    plan = plan_runs(workspace, model_names, suite_id, device=device, top_k=top_k)
    total, finished = plan.total, 0
    for group in plan.groups:
        if not group.todo:
            continue
        try:
            for n_jobs, rows in _group_batches(workspace, plan, group, list(group.todo), batch_size, composites):
                write_rows(workspace, rows)
                finished += n_jobs
                if progress is not None:
                    progress(finished, total)
        except BaseException:
            set_run_status(workspace, [plan.run_ids[name] for name in group.models], "failed")
            raise
    finish_runs(workspace, plan)
    return list(plan.run_ids.values())


def plan_runs(
    workspace: Workspace,
    model_names: Sequence[str],
    suite_id: str,
    *,
    device: str | torch.device | None = None,
    top_k: int = 3,
) -> RunPlan:
    """Validate the models and the suite, start (or resume) one run per model, and group them.

    Writes the ``runs`` rows (status ``running``; finished runs stay ``done``); computes nothing.

    Parameters
    ----------
    workspace : Workspace
    model_names : sequence of str
        Registered models (a repeated name counts once).
    suite_id : str
    device : str or None, default=None
        None: CUDA when available, else CPU.
    top_k : int, default=3

    Returns
    -------
    RunPlan

    Raises
    ------
    InvalidInputError
        No model names, a bad ``top_k`` or device, or a class with no output in a model's labels.
    NotFoundError
        An unknown model or suite.
    """
    names = list(dict.fromkeys(model_names))
    if not names:
        raise InvalidInputError("model_names must name at least one registered model; got none")
    check_positive_int(top_k, "top_k")
    torch_device = resolve_device(device)
    jobs, _ = suite_jobs(workspace, suite_id)
    classes = _used_classes(workspace, _target_classes(workspace, {job.target_id for job in jobs}).values())
    specs = [get_model_spec(workspace, name) for name in names]
    for spec in specs:
        spec.label_space.class_outputs(classes)  # label errors before any write
    keys = RunKeys(model_keys(workspace), suite_classes_key(workspace, suite_id))
    run_ids = {spec.name: _start_run(workspace, spec, suite_id, top_k, torch_device, keys) for spec in specs}
    members: dict[str, list[str]] = defaultdict(list)
    for spec in specs:
        members[spec.backbone if spec.source == "head" else spec.name].append(spec.name)
    groups, worked = [], set()
    for backbone, group_names in members.items():
        done = {name: _done_rows(workspace, run_ids[name]) for name in group_names}
        lacking = [name for name in group_names if any((job.target_id, job.position) not in done[name] for job in jobs)]
        todo = tuple(job for job in jobs if any((job.target_id, job.position) not in done[name] for name in lacking))
        worked.update(run_ids[name] for name in lacking)
        groups.append(GroupPlan(backbone, tuple(group_names), todo))
    return RunPlan(suite_id, top_k, str(torch_device), run_ids, tuple(groups), frozenset(worked))
def suite_jobs(workspace: Workspace, suite_id: str) -> tuple[list[ImageJob], dict[tuple[str, int], float | None]]:
    """The jobs of a suite (per target: the original, then positions 1..n) and their distances."""
    if workspace.query_one("SELECT id FROM suites WHERE id = ?", (suite_id,)) is None:
        known = [row["id"] for row in workspace.query("SELECT id FROM suites ORDER BY created DESC LIMIT 5")]
        raise NotFoundError(f"no suite {suite_id!r} in workspace {workspace.root}; recent suites: {', '.join(known) or 'none'}")
    rows = workspace.query(
        "SELECT target_id, position, background_id, distance FROM suite_items WHERE suite_id = ? ORDER BY target_id, position", (suite_id,)
    )
    jobs, distances, previous = [], {}, None
    for row in rows:
        if row["target_id"] != previous:
            previous = row["target_id"]
            jobs.append(ImageJob(previous, 0, None))
            distances[(previous, 0)] = 0.0
        jobs.append(ImageJob(row["target_id"], row["position"], row["background_id"]))
        distances[(row["target_id"], row["position"])] = row["distance"]
    return jobs, distances


def _target_classes(workspace: Workspace, target_ids: Iterable[str]) -> dict[str, str]:
    ids = sorted(set(target_ids))
    classes = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        rows = workspace.query(f"SELECT id, class_name FROM targets WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        classes.update({row["id"]: row["class_name"] for row in rows})
    return classes


def _used_classes(workspace: Workspace, names: Iterable[str]) -> dict[str, ClassMapping]:
    """The workspace classes (with their mappings) that some of the targets have."""
    used = set(names)
    return {name: mapping for name, mapping in list_class_mappings(workspace).items() if name in used}


@dataclass(frozen=True)
class RunKeys:
    """What a run records about its inputs: the models' current keys and the suite's class-mapping key."""

    models: ModelKeys
    classes: str


def _start_run(workspace: Workspace, spec: ModelSpec, suite_id: str, top_k: int, device: torch.device, keys: RunKeys) -> str:
    model_key = keys.models.keys[spec.name]
    legacy = _legacy_run(workspace, spec, suite_id, top_k, keys.models)
    run_id = legacy or content_id("run", model_key, suite_id, top_k, keys.classes)
    with workspace.transaction() as conn:
        conn.execute(
            "INSERT OR IGNORE INTO runs(id, model, suite_id, status, device, summary, created, model_key, classes_key) "
            "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
            (run_id, spec.name, suite_id, str(device), json.dumps({"top_k": top_k}), now(), model_key, keys.classes),
        )
        conn.execute("UPDATE runs SET model_key = ?, classes_key = ? WHERE id = ? AND model_key = ''", (model_key, keys.classes, run_id))
        conn.execute("UPDATE runs SET status = 'running', device = ? WHERE id = ? AND status != 'done'", (str(device), run_id))
    return run_id


def _legacy_run(workspace: Workspace, spec: ModelSpec, suite_id: str, top_k: int, keys: ModelKeys) -> str | None:
    """The id of a run stored before runs recorded their keys (id without them) that is still
    current (see :mod:`analytics.runs`), so an upgraded workspace resumes and reuses its runs."""
    run_id = content_id("run", spec.content_key(), suite_id, top_k)
    row = workspace.query_one("SELECT model_key, created FROM runs WHERE id = ?", (run_id,))
    return run_id if row is not None and not row["model_key"] and keys.is_current(spec.name, "", row["created"]) else None


def _done_rows(workspace: Workspace, run_id: str) -> set[tuple[str, int]]:
    return {(row["target_id"], row["position"]) for row in workspace.query("SELECT target_id, position FROM run_images WHERE run_id = ?", (run_id,))}


def set_run_status(workspace: Workspace, run_ids: Sequence[str], status: str) -> None:
    """Set the ``status`` column of the runs ``run_ids`` (one transaction)."""
    with workspace.transaction() as conn:
        conn.executemany("UPDATE runs SET status = ? WHERE id = ?", [(status, run_id) for run_id in run_ids])


def write_rows(workspace: Workspace, rows: Sequence[tuple]) -> None:
    """Store rows from :func:`group_rows` in one transaction (rows already stored are kept).

    Parameters
    ----------
    workspace : Workspace
    rows : sequence of tuple
        ``run_images`` rows in :data:`ROW_COLUMNS` order.
    """
    with workspace.transaction() as conn:
        conn.executemany(f"INSERT OR IGNORE INTO run_images({', '.join(ROW_COLUMNS)}) VALUES ({', '.join('?' * len(ROW_COLUMNS))})", rows)


def finish_runs(workspace: Workspace, plan: RunPlan) -> None:
    """Mark the plan's runs done with their summaries.

    A run that was done already and got no new rows (not in ``plan.worked``) keeps its summary and
    ``finished`` time.
    """
    for run_id in plan.run_ids.values():
        worked = run_id in plan.worked
        if not worked and workspace.query_one("SELECT status FROM runs WHERE id = ?", (run_id,))["status"] == "done":
            continue
        summary = run_summary(workspace, run_id)
        summary["top_k"] = plan.top_k
        with workspace.transaction() as conn:
            conn.execute("UPDATE runs SET status = 'done', summary = ?, finished = ? WHERE id = ?", (json.dumps(summary), now(), run_id))


def run_summary(workspace: Workspace, run_id: str) -> dict:
    """Images, accuracy over all images, and worst-case accuracy (mean over targets of the minimum
    correctness over that target's composites; the original is not a background change, as in
    :func:`analytics.variance.worst_case_accuracy`) of a run."""
    row = workspace.query_one(
        "SELECT COUNT(*) AS images, AVG(correct) AS accuracy, "
        "(SELECT AVG(worst) FROM (SELECT MIN(correct) AS worst FROM run_images WHERE run_id = ? AND position > 0 GROUP BY target_id)) AS worst "
        "FROM run_images WHERE run_id = ?",
        (run_id, run_id),
    )
    return {"images": int(row["images"]), "accuracy": row["accuracy"], "worst_case_accuracy": row["worst"]}


def group_rows(
    workspace: Workspace,
    plan: RunPlan,
    group: GroupPlan,
    *,
    jobs: Sequence[ImageJob] | None = None,
    batch_size: int = 32,
    composites: CompositeCache | None = None,
) -> Iterator[list[tuple]]:
    """Compute the ``run_images`` rows of one group, batch by batch; writes nothing.

    Loads the group's backbone (and heads) itself and reads the workspace, so it can run in a
    worker process while the driver stores the rows (:func:`write_rows`).

    Parameters
    ----------
    workspace : Workspace
    plan : RunPlan
        From :func:`plan_runs`.
    group : GroupPlan
        One of ``plan.groups``.
    jobs : sequence of ImageJob or None, default=None
        The jobs to compute (grouped by target); None: ``group.todo``. Any subset of the suite
        works; whole targets avoid running a target's foreground-only image twice.
    batch_size : int, default=32
    composites : CompositeCache or None, default=None
        Read (and fill) the suite's composites here instead of compositing them.

    Yields
    ------
    rows : list of tuple
        One list per batch, in :data:`ROW_COLUMNS` order, one row per (member, image) that the
        member's run lacks (rows stored when the generator started are skipped).
    """
    for _, rows in _group_batches(workspace, plan, group, None if jobs is None else list(jobs), batch_size, composites):
        yield rows


def _group_batches(
    workspace: Workspace, plan: RunPlan, group: GroupPlan, jobs: list[ImageJob] | None, batch_size: int, composites: CompositeCache | None
) -> Iterator[tuple[int, list[tuple]]]:
    """(images of the batch, its rows) per batch; see :func:`group_rows`."""
    check_positive_int(batch_size, "batch_size")
    jobs = list(group.todo) if jobs is None else jobs
    device = resolve_device(plan.device)
    _, distances = suite_jobs(workspace, plan.suite_id)
    target_classes = _target_classes(workspace, {job.target_id for job in jobs})
    classes = _used_classes(workspace, target_classes.values())
    members = []
    for name in group.models:
        spec = get_model_spec(workspace, name)
        run_id = plan.run_ids[name]
        members.append(_Member(spec, run_id, spec.label_space.class_outputs(classes), _done_rows(workspace, run_id), None))
    jobs = [job for job in jobs if any((job.target_id, job.position) not in member.done for member in members)]
    if not jobs:
        return
    with _cpu_threads(device):
        model = load_model(workspace, group.backbone, device=device)
        for member in members:
            if member.spec.source == "head":
                member.head = load_head(workspace, member.spec).to(device)
        forward = _BackOff(model, batch_size)
        stream = iter_composites(
            workspace, _with_foreground(jobs), batch_size=batch_size, size=model.spec.input_size, prefetch=prefetch_for(device),
            composites=composites, suite_id=plan.suite_id,
        )
        for batch_jobs, images in stream:
            logits, embedding = forward(images)
            alone = [i for i, job in enumerate(batch_jobs) if job.foreground]
            keep = [i for i, job in enumerate(batch_jobs) if not job.foreground]
            kept, rows = [batch_jobs[i] for i in keep], []
            for member in members:  # each head reads the one backbone pass and has its own embedding
                member_logits, member_embedding = _member_outputs(member, logits, embedding)
                if alone:  # each target's foreground-only image comes before its other images
                    indices = torch.topk(member_embedding[alone], min(plan.top_k, member_embedding.shape[1]), dim=1).indices.cpu().numpy()
                    member.topk.update({batch_jobs[i].target_id: row for i, row in zip(alone, indices)})
                if keep:
                    emb_signals = _embedding_signals(member_embedding[keep], np.stack([member.topk[job.target_id] for job in kept]))
                    rows += _rows(member, kept, torch.softmax(member_logits[keep], dim=1).cpu().numpy(), emb_signals, distances, target_classes)
            if keep:
                yield len(kept), rows


class _BackOff:
    """A model's forward pass that halves its batch on CUDA out-of-memory and keeps the smaller size.

    The images still arrive in batches of the caller's size; only the model sees smaller slices,
    so the rows are the same.
    """

    def __init__(self, model: LoadedModel, batch_size: int) -> None:
        self.model, self.batch_size = model, batch_size

    def __call__(self, images: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (n, n_outputs) and embedding (n, d) of ``images`` (n, size, size, 3) uint8."""
        while True:
            try:
                parts = [self.model.run_batch(self.model.preprocess(images[i : i + self.batch_size])) for i in range(0, len(images), self.batch_size)]
            except torch.cuda.OutOfMemoryError as err:
                self._shrink(err)
                continue
            if len(parts) == 1:
                return parts[0]
            return torch.cat([logits for logits, _ in parts]), torch.cat([embedding for _, embedding in parts])

    def _shrink(self, err: BaseException) -> None:
        if self.batch_size == 1:
            raise DeviceMemoryError(
                f"model {self.model.spec.name!r} ran out of {self.model.device} memory even at batch size 1; "
                "free the device (other processes) or run it on another device (device='cpu')"
            ) from err
        self.batch_size //= 2
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # the failed attempt's blocks would stay reserved


def _member_outputs(member: _Member, logits: torch.Tensor, embedding: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A member's logits (n, n_outputs) and embedding (n, d), float32, from the backbone's outputs."""
    if member.head is None:
        return logits.float(), embedding.float()
    with torch.inference_mode():
        return member.head(embedding.float())


def _with_foreground(jobs: Sequence[ImageJob]) -> list[ImageJob]:
    """``jobs`` (grouped by target) with each target's foreground-only job put before its first job."""
    out, seen = [], set()
    for job in jobs:
        if job.target_id not in seen:
            seen.add(job.target_id)
            out.append(ImageJob(job.target_id, 0, None, foreground=True))
        out.append(job)
    return out


def _embedding_signals(embedding: torch.Tensor, topk: np.ndarray) -> np.ndarray:
    """Per image: mean of the chosen neurons, max and mean over all neurons -> (n, 3) float64."""
    picked = torch.gather(embedding, 1, torch.from_numpy(topk).to(embedding.device))
    return torch.stack([picked.mean(1), embedding.max(1).values, embedding.mean(1)], dim=1).cpu().double().numpy()


def _rows(member: _Member, jobs: Sequence[ImageJob], probabilities: np.ndarray, emb: np.ndarray, distances: dict, target_classes: dict[str, str]) -> list[tuple]:
    names = member.spec.label_space.names
    predicted = probabilities.argmax(1)
    rows = []
    for i, job in enumerate(jobs):
        key = (job.target_id, job.position)
        if key in member.done:
            continue
        outputs = member.outputs[target_classes[job.target_id]]
        rows.append((
            member.run_id, job.target_id, job.position, names[predicted[i]], float(probabilities[i, outputs].sum()),
            float(probabilities[i].max()), int(predicted[i] in outputs), float(emb[i, 0]), float(emb[i, 1]), float(emb[i, 2]),
            distances.get(key),
        ))
    return rows


def cpu_count() -> int:
    """CPU cores this process may run on."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


@contextmanager
def _cpu_threads(device: torch.device):
    """On CPU, let torch use every core this process may run on (restored afterwards)."""
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(cpu_count())
    try:
        yield
    finally:
        torch.set_num_threads(before)


# -- evaluation on the original targets ------------------------------------------------------------
def evaluate(workspace: Workspace, model_name: str, *, device: str | torch.device | None = None, batch_size: int = 32) -> Evaluation:
    """Accuracy of a model on the workspace's original (unmodified) target images.

    Cached in the workspace, keyed by the model's content key (a head's covers its backbone) and the
    targets (ids, images, classes).

    Returns
    -------
    Evaluation

    Raises
    ------
    InvalidInputError
        The workspace has no targets, or a class has no output in the model's label space.
    """
    check_positive_int(batch_size, "batch_size")
    spec = get_model_spec(workspace, model_name)
    rows = workspace.query("SELECT id, class_name, image_hash FROM targets ORDER BY id")
    if not rows:
        raise InvalidInputError(f"workspace {workspace.root} has no targets to evaluate {model_name!r} on; add targets on the Data page")
    outputs = spec.label_space.class_outputs(_used_classes(workspace, (row["class_name"] for row in rows)))
    key = "evaluate/" + content_id(model_keys(workspace).keys[spec.name], [tuple(row) for row in rows], outputs)
    values = workspace.cache_get(key)
    if values is None:
        values = _evaluate(workspace, spec, [row["id"] for row in rows], [outputs[row["class_name"]] for row in rows], device, batch_size)
        workspace.cache_put(key, values)
    table = pd.DataFrame({
        "target_id": [row["id"] for row in rows],
        "class_name": [row["class_name"] for row in rows],
        "predicted": [spec.label_space.names[int(i)] for i in values[:, 3]],
        "true_prob": values[:, 1],
        "max_prob": values[:, 2],
        "correct": values[:, 0].astype(bool),
    })
    by_class = table.groupby("class_name")["correct"]
    return Evaluation(
        model=model_name,
        n=len(table),
        accuracy=float(table["correct"].mean()),
        per_class={name: float(value) for name, value in by_class.mean().items()},
        per_class_n={name: int(value) for name, value in by_class.size().items()},
        table=table,
    )


def _evaluate(workspace: Workspace, spec: ModelSpec, target_ids: list[str], outputs: list[list[int]], device, batch_size: int) -> np.ndarray:
    """(n, 4) float64: correct, true_prob, max_prob, predicted output index per target."""
    model = load_model(workspace, spec.name, device=device)
    values = np.empty((len(target_ids), 4))
    jobs = [ImageJob(target, 0, None) for target in target_ids]
    start = 0
    with _cpu_threads(model.device):
        for batch_jobs, images in iter_composites(workspace, jobs, batch_size=batch_size, size=spec.input_size, prefetch=prefetch_for(model.device)):
            logits, _ = model.run_batch(model.preprocess(images))
            probabilities = torch.softmax(logits.float(), dim=1).cpu().numpy()
            for i, probs in enumerate(probabilities):
                wanted = outputs[start + i]
                values[start + i] = (int(probs.argmax()) in wanted, probs[wanted].sum(), probs.max(), probs.argmax())
            start += len(batch_jobs)
    return values
