"""The streaming batch engine: composites -> model -> per-image signals in the workspace.

A suite holds, per target, n background ids; the images themselves (n + 1 per target: the original
and its composites) are never stored. :func:`iter_composites` generates them batch by batch from a
bounded LRU of prepared targets and decoded backgrounds, so memory does not grow with the suite:
for a GPU model on a worker thread ahead of the model (a bounded prefetch queue), for a CPU model
over every core between the model's batches (see :func:`prefetch_for`).

:func:`run_models` writes one ``runs`` row per model and one ``run_images`` row per image with the
signals of Liao & Chen (§1.6 of DESIGN):

- from the prediction: ``predicted`` (output name), ``true_prob`` (probability of the target's
  class: the sum over the outputs that count as that class), ``max_prob``, ``correct``;
- from the embedding (the layer before the classifier head; for a head with a hidden layer, that
  hidden layer, so heads sharing a backbone pass still have their own): ``emb_topk_mean`` (mean of the k
  neurons that are largest on the target's foreground-only image m ⊗ x), ``emb_max``, ``emb_mean``;
- ``distance``: the semantic distance of the suite item (0 for the original).

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

import numpy as np
import pandas as pd
import torch

from ._validation import check_positive_int
from .classes import ClassMapping, list_class_mappings
from .compose import Cutout, foreground_only
from .exceptions import InvalidInputError, NotFoundError
from .models import HeadLayers, ModelSpec, get_model_spec, load_head, load_model, resize_images, resolve_device
from .runs import ModelKeys, model_keys, suite_classes_key
from .workspace import Workspace, content_id, now

PREFETCH_BATCHES = 2
CACHE_ITEMS = 64
_ROW_COLUMNS = ("run_id", "target_id", "position", "predicted", "true_prob", "max_prob", "correct", "emb_topk_mean", "emb_max", "emb_mean", "distance")


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

    The hashes are looked up on the caller's thread (SQLite connections must not cross threads);
    the worker then only reads array files.
    """

    def __init__(self, workspace: Workspace, jobs: Sequence[ImageJob], capacity: int) -> None:
        self.workspace, self.capacity = workspace, capacity
        self.target_hashes = _hashes(workspace, "targets", "image_hash, mask_hash", {j.target_id for j in jobs})
        self.background_hashes = _hashes(workspace, "backgrounds", "image_hash", {j.background_id for j in jobs if j.background_id})
        self._items: OrderedDict[tuple[str, str], tuple] = OrderedDict()
        self._lock = threading.Lock()  # compositing threads share the cache

    def target(self, target_id: str) -> Cutout:
        """The target prepared for pasting (its ``image`` and ``mask`` attributes are the arrays)."""
        image_hash, mask_hash = self.target_hashes[target_id]
        return self._get(("t", target_id), lambda: (Cutout(self.workspace.get_array(image_hash), self.workspace.get_array(mask_hash)),))[0]

    def background(self, background_id: str) -> np.ndarray:
        (image_hash,) = self.background_hashes[background_id]
        return self._get(("b", background_id), lambda: (self.workspace.get_array(image_hash),))[0]

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


def _compose_batch(cache: _ImageCache, jobs: Sequence[ImageJob], blend: bool, size: int | None) -> np.ndarray:
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
    return out if size is None else resize_images(out, size)


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
        Resize the images to ``size`` x ``size`` while compositing (a model's ``input_size``), so
        the caller's thread only runs the model. None keeps the workspace size.
    prefetch : int, default=2
        Batches generated ahead of the caller on a worker thread. 0: each batch is generated when
        the caller asks for it, split over every CPU core; use it when the caller's work needs the
        CPU too (see :func:`prefetch_for`).
    cache_items : int, default=64
        Decoded targets + backgrounds kept in memory.

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
    jobs = list(jobs)
    cache = _ImageCache(workspace, jobs, cache_items)
    chunks = (jobs[start : start + batch_size] for start in range(0, len(jobs), batch_size))
    if prefetch == 0:
        return _composed_on_every_core(cache, chunks, blend, size)
    return _prefetched(((chunk, _compose_batch(cache, chunk, blend, size)) for chunk in chunks), prefetch)


def prefetch_for(device: torch.device) -> int:
    """How far ahead :func:`iter_composites` should work for a model on ``device``.

    On an accelerator, :data:`PREFETCH_BATCHES` (compositing on the CPU overlaps the model). On a
    CPU, 0: the model already keeps every core busy, and a compositing thread running beside it
    stalls the model's threads at each of its synchronisation points. On the 2-core reference
    machine, compositing each batch over both cores and then running the model gave 5-10 % more
    images per second than overlapping the two (``benchmarks/inference.py``).
    """
    return 0 if device.type == "cpu" else PREFETCH_BATCHES


def _composed_on_every_core(cache: _ImageCache, chunks: Iterator[list[ImageJob]], blend: bool, size: int | None) -> Iterator:
    workers = _cpu_count()
    with ThreadPoolExecutor(workers, thread_name_prefix="backdrop-composites") as pool:
        for chunk in chunks:
            bounds = np.linspace(0, len(chunk), min(workers, len(chunk)) + 1).astype(int)
            parts = [chunk[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
            yield chunk, np.concatenate(list(pool.map(lambda part: _compose_batch(cache, part, blend, size), parts)))


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


def run_models(
    workspace: Workspace,
    model_names: Sequence[str],
    suite_id: str,
    *,
    device: str | torch.device | None = None,
    batch_size: int = 32,
    top_k: int = 3,
    progress: Callable[[int, int], None] | None = None,
) -> list[str]:
    """Run models over every image of a suite and store the signals (one run per model).

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
    top_k : int, default=3
        Neurons picked on the foreground-only image for ``emb_topk_mean``.
    progress : callable (done, total) or None
        Called after every batch with image counts.

    Returns
    -------
    run_ids : list of str
        In the order of ``model_names``. Ids depend on (model key, suite, top_k, class-mapping
        key), so a second call resumes or reuses earlier runs, and re-registered weights or a
        remapped class get new runs.
    """
    names = list(dict.fromkeys(model_names))
    if not names:
        raise InvalidInputError("model_names must name at least one registered model; got none")
    check_positive_int(batch_size, "batch_size")
    check_positive_int(top_k, "top_k")
    torch_device = resolve_device(device)
    jobs, distances = suite_jobs(workspace, suite_id)
    target_classes = _target_classes(workspace, {job.target_id for job in jobs})
    classes = _used_classes(workspace, target_classes.values())
    specs = [get_model_spec(workspace, name) for name in names]
    outputs = {spec.name: spec.label_space.class_outputs(classes) for spec in specs}  # label errors before any write
    keys = RunKeys(model_keys(workspace), suite_classes_key(workspace, suite_id))
    run_ids = {spec.name: _start_run(workspace, spec, suite_id, top_k, torch_device, keys) for spec in specs}
    groups: dict[str, list[ModelSpec]] = defaultdict(list)
    for spec in specs:
        groups[spec.backbone if spec.source == "head" else spec.name].append(spec)
    plans = []
    for backbone, members in groups.items():
        member_state = [_Member(spec, run_ids[spec.name], outputs[spec.name], _done_rows(workspace, run_ids[spec.name]), None) for spec in members]
        todo = [job for job in jobs if any((job.target_id, job.position) not in m.done for m in member_state)]
        plans.append((backbone, member_state, todo))
    worked = {m.run_id for _, members, todo in plans for m in members if any((job.target_id, job.position) not in m.done for job in todo)}
    total, finished = sum(len(todo) for _, _, todo in plans), 0
    with _cpu_threads(torch_device):
        for backbone, members, todo in plans:
            if not todo:
                continue
            try:
                finished = _run_group(workspace, backbone, members, todo, distances, target_classes, torch_device, batch_size, top_k, progress, finished, total)
            except BaseException:
                _set_status(workspace, [m.run_id for m in members], "failed")
                raise
    for spec in specs:
        _finish_run(workspace, run_ids[spec.name], top_k, worked=run_ids[spec.name] in worked)
    return [run_ids[name] for name in names]


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


def _set_status(workspace: Workspace, run_ids: Sequence[str], status: str) -> None:
    with workspace.transaction() as conn:
        conn.executemany("UPDATE runs SET status = ? WHERE id = ?", [(status, run_id) for run_id in run_ids])


def _finish_run(workspace: Workspace, run_id: str, top_k: int, *, worked: bool) -> None:
    """Mark a run done; a run that was done already and got no new rows keeps its summary and time."""
    if not worked and workspace.query_one("SELECT status FROM runs WHERE id = ?", (run_id,))["status"] == "done":
        return
    summary = run_summary(workspace, run_id)
    summary["top_k"] = top_k
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


def _run_group(
    workspace: Workspace,
    backbone: str,
    members: list[_Member],
    todo: list[ImageJob],
    distances: dict,
    target_classes: dict[str, str],
    device: torch.device,
    batch_size: int,
    top_k: int,
    progress: Callable[[int, int], None] | None,
    finished: int,
    total: int,
) -> int:
    model = load_model(workspace, backbone, device=device)
    for member in members:
        if member.spec.source == "head":
            member.head = load_head(workspace, member.spec).to(device)
    stream = iter_composites(workspace, _with_foreground(todo), batch_size=batch_size, size=model.spec.input_size, prefetch=prefetch_for(device))
    for batch_jobs, images in stream:
        logits, embedding = model.run_batch(model.preprocess(images))
        alone = [i for i, job in enumerate(batch_jobs) if job.foreground]
        keep = [i for i, job in enumerate(batch_jobs) if not job.foreground]
        jobs, rows = [batch_jobs[i] for i in keep], []
        for member in members:  # each head reads the one backbone pass and has its own embedding
            member_logits, member_embedding = _member_outputs(member, logits, embedding)
            if alone:  # each target's foreground-only image comes before its other images
                indices = torch.topk(member_embedding[alone], min(top_k, member_embedding.shape[1]), dim=1).indices.cpu().numpy()
                member.topk.update({batch_jobs[i].target_id: row for i, row in zip(alone, indices)})
            if keep:
                emb_signals = _embedding_signals(member_embedding[keep], np.stack([member.topk[job.target_id] for job in jobs]))
                rows += _rows(member, jobs, torch.softmax(member_logits[keep], dim=1).cpu().numpy(), emb_signals, distances, target_classes)
        if not keep:
            continue
        with workspace.transaction() as conn:
            conn.executemany(f"INSERT OR IGNORE INTO run_images({', '.join(_ROW_COLUMNS)}) VALUES ({', '.join('?' * len(_ROW_COLUMNS))})", rows)
        finished += len(jobs)
        if progress is not None:
            progress(finished, total)
    return finished


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


def _cpu_count() -> int:
    """CPU cores this process may run on."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


@contextmanager
def _cpu_threads(device: torch.device):
    """On CPU, let torch use every core this process may run on (restored afterwards)."""
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(_cpu_count())
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
