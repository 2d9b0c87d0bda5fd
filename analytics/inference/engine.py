"""The streaming batch engine: composites -> model -> per-image signals in the workspace.

The images of a suite (:mod:`~analytics.inference.suite_images`) are composited batch by batch
(:func:`~analytics.inference.iter_composites`) and never stored; when many models run over one
suite, a :class:`~analytics.inference.CompositeCache` keeps the composites on disk so each is made once.

:func:`run_models` writes one ``runs`` row per model and one ``run_images`` row per image with the
signals of Liao & Chen (docs/method.md, 'Signals'):

- from the prediction: ``predicted`` (output name), ``true_prob`` (probability of the target's
  class: the sum over the outputs that count as that class), ``max_prob``, ``correct``;
- from the embedding (the layer before the classifier head; for a head with a hidden layer, that
  hidden layer, so heads sharing a backbone pass still have their own): ``emb_topk_mean`` (mean of the k
  neurons that are largest on the target's foreground-only image m ⊗ x), ``emb_max``, ``emb_mean``;
- ``distance``: the semantic distance of the suite item (0 for the original);
- the authors' reading (not the paper's): ``conv_max`` and ``conv_max_mean``, statistics of the last
  convolutional map (:mod:`analytics.models.conv_map`; a head's are its backbone's), NULL for models without one.
  Rows stored before these columns lack them; ``fill_conv=True`` computes them for such rows of
  finished runs, leaving every other stored value as it was.

:func:`run_models` is three steps that other engines (:mod:`analytics.repository.ray_backend`) combine
differently: :func:`plan_runs` validates and writes the ``runs`` rows, :func:`group_rows` computes
the rows of one group of models sharing a backbone pass (reads only: it can run in a worker
process), and :func:`write_rows` / :func:`finish_runs` store them from a single writer. On CUDA
the model's share of a batch halves on out-of-memory until it fits (:class:`~analytics.inference.backoff.DeviceMemoryError`
when one image does not).

Rows are stored by one long-lived writer (:class:`RowWriter`) a commit per ~:data:`COMMIT_EVERY` images
at ``synchronous = NORMAL`` (``Workspace.connect(bulk=True)``): a killed process
or a power loss loses at most the rows since the last commit, which a resumed run computes again.
A run's id depends only on the model's content key
(:func:`analytics.workspace.model_keys`: a re-registered model with other weights gets new runs), the
suite, ``top_k`` and the key of the suite's class mappings; the run records both keys
(``runs.model_key``, ``runs.classes_key``). Running again resumes an interrupted run (rows already
there are skipped); a finished run is reused untouched (its ``finished`` time changes only when the
call did work on it).
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Self

import torch

from analytics._progress import Progress
from analytics._threads import prefetched
from analytics._validation import check_positive_int
from analytics.exceptions import InvalidInputError
from analytics.models import ModelSpec, conv_map_problem, get_model_spec, load_head, load_model, resolve_device
from analytics.workspace import ModelKeys, Workspace, content_id, model_keys, now, suite_classes_key

from .backoff import BackOff
from .composite_cache import CompositeCache
from .device import cpu_threads, default_batch_size
from .signals import BatchSignals, Member
from .stream import compositing_threads, iter_composites, prefetch_for
from .suite_images import SuiteImage, stored_suite_images, target_classes, used_classes, with_foreground

#: Images whose rows one commit stores (a commit writes the WAL; a resumed run redoes at most these).
COMMIT_EVERY = 1000
#: On an accelerator, batches the forward thread may run ahead of the thread that builds and stores their rows.
ROWS_BEHIND = 2
ROW_COLUMNS = (
    "run_id", "target_id", "position", "predicted", "true_prob", "max_prob", "correct", "emb_topk_mean", "emb_max", "emb_mean", "distance",
    "conv_max", "conv_max_mean",
)  # fmt: skip


@dataclass(frozen=True)
class GroupPlan:
    """Models that share one backbone pass: zoo heads on their backbone, or one model alone.

    Attributes
    ----------
    backbone : str
        The registered model whose forward pass the group runs.
    models : tuple of str
        The requested models of the group (heads, or the backbone itself).
    todo : tuple of SuiteImage
        The suite's jobs (grouped by target) that some member's run still lacks.
    """

    backbone: str
    models: tuple[str, ...]
    todo: tuple[SuiteImage, ...]


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
    conv_problems : dict of str to str
        Model name -> why it has no last convolutional map (:func:`analytics.models.conv_map_problem`);
        models with one are absent.
    fill_conv : bool
        Rows stored without the conv-map statistics count as missing (for models that have a map).
    distances : dict of (str, int) to float or None
        (target id, position) -> the suite's distance of that image (:func:`stored_suite_images`),
        read once with the jobs: at paper scale each read of the suite took ~0.3 s a model.
    """

    suite_id: str
    top_k: int
    device: str
    run_ids: dict[str, str]
    groups: tuple[GroupPlan, ...]
    worked: frozenset[str]
    conv_problems: dict[str, str] = field(default_factory=dict)
    fill_conv: bool = False
    distances: dict[tuple[str, int], float | None] = field(default_factory=dict, repr=False)

    @property
    def total(self) -> int:
        """Images the plan's groups still have to run."""
        return sum(len(group.todo) for group in self.groups)


def run_models(
    workspace: Workspace,
    model_names: Sequence[str],
    suite_id: str,
    *,
    device: str | torch.device | None = None,
    batch_size: int | None = None,
    top_k: int = 3,
    progress: Progress | None = None,
    composites: CompositeCache | None = None,
    fill_conv: bool = False,
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
    batch_size : int or None, default=None
        Images per batch; on CUDA the model's share backs off by halving on out-of-memory. None:
        :func:`~analytics.inference.device.default_batch_size` of the device (256 on a GPU, 32 on a CPU).
    top_k : int, default=3
        Neurons picked on the foreground-only image for ``emb_topk_mean``.
    progress : callable (done, total) or None
        Called after every batch with image counts.
    composites : CompositeCache or None, default=None
        Read the suite's composites from this cache (filling it on first use) instead of
        compositing them again: pass one cache to the runs of many models over one suite.
    fill_conv : bool, default=False
        Also compute the last-conv-map statistics of stored rows that lack them (runs made before
        Backdrop stored them); the rows' other values are kept.

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
    if batch_size is not None:
        check_positive_int(batch_size, "batch_size")
    plan = plan_runs(workspace, model_names, suite_id, device=device, top_k=top_k, fill_conv=fill_conv)
    total, finished = plan.total, 0
    with RowWriter(workspace) as writer:
        for group in plan.groups:
            if not group.todo:
                continue
            try:
                batches = _group_batches(workspace, plan, group, list(group.todo), batch_size, composites)
                if resolve_device(plan.device).type != "cpu":
                    # The forward passes go on a thread of their own, so building and storing a
                    # batch's rows here no longer leaves the device idle (its forward call blocks);
                    # on a CPU the model's threads take every core, so all stays in line.
                    batches = prefetched(batches, ROWS_BEHIND, name="backdrop-forward")
                with contextlib.closing(batches):
                    for n_jobs, rows in batches:
                        writer.add(rows())
                        finished += n_jobs
                        if progress is not None:
                            progress(finished, total)
                writer.commit()  # a group's rows are stored before its runs can be marked done
            except BaseException:
                writer.commit()  # the rows computed so far are right: a resumed run starts after them
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
    fill_conv: bool = False,
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
    fill_conv : bool, default=False
        See :func:`run_models`.

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
    jobs, distances = stored_suite_images(workspace, suite_id)
    class_names = set(target_classes(workspace, {job.target_id for job in jobs}).values())
    classes = used_classes(workspace, class_names)
    specs = [get_model_spec(workspace, name) for name in names]
    for spec in specs:
        spec.label_space.class_outputs(classes)  # label errors before any write
    scoring = {spec.name: spec.label_space.outputs_key(classes, class_names) for spec in specs}
    keys = RunKeys(model_keys(workspace), suite_classes_key(workspace, suite_id), scoring)
    run_ids = {spec.name: _start_run(workspace, spec, suite_id, top_k, torch_device, keys) for spec in specs}
    members: dict[str, list[str]] = defaultdict(list)
    for spec in specs:
        members[spec.backbone if spec.source == "head" else spec.name].append(spec.name)
    problems = {}  # asked once per backbone: its heads read its map
    for backbone, group_names in members.items():
        problem = conv_map_problem(workspace, get_model_spec(workspace, backbone))
        problems.update({name: problem for name in group_names if problem is not None})
    groups, worked = [], set()
    for backbone, group_names in members.items():
        done = {name: _done_rows(workspace, run_ids[name], fill_conv and name not in problems) for name in group_names}
        lacking = [name for name in group_names if any((job.target_id, job.position) not in done[name] for job in jobs)]
        todo = tuple(job for job in jobs if any((job.target_id, job.position) not in done[name] for name in lacking))
        worked.update(run_ids[name] for name in lacking)
        groups.append(GroupPlan(backbone, tuple(group_names), todo))
    return RunPlan(suite_id, top_k, str(torch_device), run_ids, tuple(groups), frozenset(worked), problems, fill_conv, distances)


@dataclass(frozen=True)
class RunKeys:
    """What a run records about its inputs: the models' current keys and, per model, the key of the
    outputs its label space scores the suite's classes as (``LabelSpace.outputs_key``: a remapping
    that does not change them leaves the run current, issue 47.7). ``classes`` is the suite's
    class-mapping key that runs recorded before (a run stored under it is reused while it is current)."""

    models: ModelKeys
    classes: str
    scoring: dict[str, str] = field(default_factory=dict)


def _start_run(workspace: Workspace, spec: ModelSpec, suite_id: str, top_k: int, device: torch.device, keys: RunKeys) -> str:
    model_key = keys.models.keys[spec.name]
    classes_key = keys.scoring.get(spec.name, keys.classes)
    # a run recorded under the suite's class-mapping key (before runs recorded their scoring key) and
    # still current is reused, and records its scoring key from now on
    mapping_run = content_id("run", model_key, suite_id, top_k, keys.classes)
    row = workspace.query_one("SELECT classes_key FROM runs WHERE id = ?", (mapping_run,))
    reused = mapping_run if row is not None and row["classes_key"] == keys.classes else None
    legacy = _legacy_run(workspace, spec, suite_id, top_k, keys.models)
    run_id = legacy or reused or content_id("run", model_key, suite_id, top_k, classes_key)
    with workspace.transaction() as conn:
        conn.execute(
            "INSERT OR IGNORE INTO runs(id, model, suite_id, status, device, summary, created, model_key, classes_key) "
            "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
            (run_id, spec.name, suite_id, str(device), json.dumps({"top_k": top_k}), now(), model_key, classes_key),
        )
        conn.execute("UPDATE runs SET model_key = ?, classes_key = ? WHERE id = ? AND model_key = ''", (model_key, classes_key, run_id))
        if reused:
            conn.execute("UPDATE runs SET classes_key = ? WHERE id = ?", (classes_key, run_id))
        conn.execute("UPDATE runs SET status = 'running', device = ? WHERE id = ? AND status != 'done'", (str(device), run_id))
    return run_id


def _legacy_run(workspace: Workspace, spec: ModelSpec, suite_id: str, top_k: int, keys: ModelKeys) -> str | None:
    """The id of a run stored before runs recorded their keys (id without them) that is still
    current (see :mod:`analytics.runs`), so an upgraded workspace resumes and reuses its runs."""
    run_id = content_id("run", spec.content_key(), suite_id, top_k)
    row = workspace.query_one("SELECT model_key, created FROM runs WHERE id = ?", (run_id,))
    return run_id if row is not None and not row["model_key"] and keys.is_current(spec.name, "", row["created"]) else None


def _done_rows(workspace: Workspace, run_id: str, with_conv: bool = False) -> set[tuple[str, int]]:
    """The run's stored (target, position) pairs; with ``with_conv`` only those holding the conv-map statistics."""
    rows = workspace.query(f"SELECT target_id, position FROM run_images WHERE run_id = ?{' AND conv_max IS NOT NULL' * with_conv}", (run_id,))
    return {(row["target_id"], row["position"]) for row in rows}


def set_run_status(workspace: Workspace, run_ids: Sequence[str], status: str) -> None:
    """Set the ``status`` column of the runs ``run_ids`` (one transaction)."""
    with workspace.transaction() as conn:
        conn.executemany("UPDATE runs SET status = ? WHERE id = ?", [(status, run_id) for run_id in run_ids])


class RowWriter:
    """The one writer of a call's ``run_images`` rows: a long-lived bulk connection, a commit per
    ``commit_every`` images.

    Rows wait in memory between commits, so the write lock is held only while a commit runs
    (annotators' judgments and job progress are never kept waiting by a run). Leaving the ``with``
    block commits the rows still waiting, also when the block raises.

    Parameters
    ----------
    workspace : Workspace
    commit_every : int or None, default=None
        Rows per commit; None: :data:`COMMIT_EVERY`.
    """

    def __init__(self, workspace: Workspace, *, commit_every: int | None = None) -> None:
        self.workspace = workspace
        self.commit_every = COMMIT_EVERY if commit_every is None else check_positive_int(commit_every, "commit_every")
        self._pending: list[tuple] = []
        self._conn: sqlite3.Connection | None = None

    def __enter__(self) -> Self:
        self._conn = self.workspace.connect(bulk=True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.commit()
        finally:
            self._conn.close()

    def add(self, rows: Sequence[tuple]) -> None:
        """Queue ``run_images`` rows (:data:`ROW_COLUMNS` order); commits once ``commit_every`` are waiting."""
        self._pending.extend(rows)
        if len(self._pending) >= self.commit_every:
            self.commit()

    def commit(self) -> None:
        """Store the waiting rows in one transaction (rows already stored are kept)."""
        if not self._pending:
            return
        with self.workspace.transaction(conn=self._conn) as conn:
            conn.executemany(_INSERT_ROW, self._pending)
        self._pending = []


# A stored row keeps its values; only conv-map statistics it lacks are filled in (``fill_conv``).
_INSERT_ROW = (
    f"INSERT INTO run_images({', '.join(ROW_COLUMNS)}) VALUES ({', '.join('?' * len(ROW_COLUMNS))}) "
    "ON CONFLICT(run_id, target_id, position) DO UPDATE SET conv_max = excluded.conv_max, conv_max_mean = excluded.conv_max_mean "
    "WHERE run_images.conv_max IS NULL"
)


def write_rows(workspace: Workspace, rows: Sequence[tuple]) -> None:
    """Store rows from :func:`group_rows` in one transaction (rows already stored are kept), on a
    bulk connection like :class:`RowWriter`'s.

    Parameters
    ----------
    workspace : Workspace
    rows : sequence of tuple
        ``run_images`` rows in :data:`ROW_COLUMNS` order.
    """
    with RowWriter(workspace, commit_every=max(len(rows), 1)) as writer:
        writer.add(rows)


def finish_runs(workspace: Workspace, plan: RunPlan) -> None:
    """Mark the plan's runs done; their summary holds ``top_k`` (and ``conv_map``, why a model has no
    last convolutional map, when it has none), its accuracies are :func:`analytics.runs.summarize_run`'s
    (``list_runs`` computes them on first read).

    A run that was done already and got no new rows (not in ``plan.worked``) keeps its summary and
    ``finished`` time.
    """
    for name, run_id in plan.run_ids.items():
        worked = run_id in plan.worked
        if not worked and workspace.query_one("SELECT status FROM runs WHERE id = ?", (run_id,))["status"] == "done":
            continue
        problem = plan.conv_problems.get(name)
        summary = json.dumps({"top_k": plan.top_k, **({"conv_map": problem} if problem else {})})
        with workspace.transaction() as conn:
            conn.execute("UPDATE runs SET status = 'done', summary = ?, finished = ? WHERE id = ?", (summary, now(), run_id))


def group_rows(
    workspace: Workspace,
    plan: RunPlan,
    group: GroupPlan,
    *,
    jobs: Sequence[SuiteImage] | None = None,
    batch_size: int | None = None,
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
    jobs : sequence of SuiteImage or None, default=None
        The jobs to compute (grouped by target); None: ``group.todo``. Any subset of the suite
        works; whole targets avoid running a target's foreground-only image twice.
    batch_size : int or None, default=None
        As :func:`run_models` (None: the default of ``plan.device``).
    composites : CompositeCache or None, default=None
        Read (and fill) the suite's composites here instead of compositing them.

    Yields
    ------
    rows : list of tuple
        One list per batch, in :data:`ROW_COLUMNS` order, one row per (member, image) that the
        member's run lacks (rows stored when the generator started are skipped).
    """
    for _, rows in _group_batches(workspace, plan, group, None if jobs is None else list(jobs), batch_size, composites):
        yield rows()


def _group_batches(
    workspace: Workspace, plan: RunPlan, group: GroupPlan, jobs: list[SuiteImage] | None, batch_size: int | None, composites: CompositeCache | None
) -> Iterator[tuple[int, Callable[[], list[tuple]]]]:
    """(images of the batch, a call that returns its rows) per batch; see :func:`group_rows`. The
    call waits for the batch's signals to reach the host, so it may run on another thread."""
    device = resolve_device(plan.device)
    batch_size = default_batch_size(device) if batch_size is None else check_positive_int(batch_size, "batch_size")
    jobs = list(group.todo) if jobs is None else jobs
    class_of = target_classes(workspace, {job.target_id for job in jobs})
    classes = used_classes(workspace, class_of.values())
    members = []
    conv = group.models[0] not in plan.conv_problems  # the group's members share the backbone and its map
    for name in group.models:
        spec = get_model_spec(workspace, name)
        run_id = plan.run_ids[name]
        members.append(Member(spec, run_id, spec.label_space.class_outputs(classes), _done_rows(workspace, run_id, plan.fill_conv and conv), None))
    jobs = [job for job in jobs if any((job.target_id, job.position) not in member.done for member in members)]
    if not jobs:
        return
    with cpu_threads(device):
        model = load_model(workspace, group.backbone, device=device)
        for member in members:
            if member.spec.source == "head":
                member.head = load_head(workspace, member.spec).to(device)
        forward = BackOff(model, batch_size, conv)
        prefetch = prefetch_for(device)
        stream = iter_composites(
            workspace, with_foreground(jobs), batch_size=batch_size, size=model.spec.composite_size, prefetch=prefetch,
            threads=compositing_threads(device, prefetch), composites=composites, suite_id=plan.suite_id, page_locked=device.type == "cuda",
            blend_on=None if device.type == "cpu" else device,
        )  # fmt: skip
        pending = None  # the last batch's signals, on their way to the host while the next batch runs
        for batch_jobs, images in stream:
            signals = BatchSignals.compute(members, batch_jobs, images, forward(images), plan.top_k)
            if pending is not None and pending.jobs:
                yield len(pending.jobs), functools.partial(pending.rows, members, plan.distances, class_of)
            pending = signals
        if pending is not None and pending.jobs:
            yield len(pending.jobs), functools.partial(pending.rows, members, plan.distances, class_of)
