"""The Ray backend of a repository run (issue 15): groups of models as Ray tasks, one writer.

:func:`run_on_ray` is what :func:`analytics.repository.run_repository` calls with a
``ray_address``. The driver (this process) plans every group with
:func:`analytics.inference.plan_runs` (which starts or resumes the ``runs`` rows), then submits one
Ray task per group and chunk of whole targets (:data:`TARGETS_PER_TASK`). A task opens the
workspace by its path, only reads it, and returns the chunk's ``run_images`` rows computed by
:func:`analytics.inference.group_rows`; the driver stores the rows of each task as it ends
(``ray.wait``, :func:`analytics.inference.write_rows`) and marks a group's runs done
(:func:`analytics.inference.finish_runs`) once its last chunk is stored. So the workspace never
has two writers, and an interrupted Ray run resumes, locally or on Ray, from the chunks it stored.

A CPU task asks for every CPU of the smallest node (it uses all the node's cores, as the local
engine does), so a node runs one CPU task at a time; a GPU task asks for one CPU and
``num_gpus_per_model`` GPUs.

A task that raises fails its group: the group's other tasks are cancelled, its runs are marked
failed, and the repository's rule decides what runs next (:meth:`analytics.repository.RunLedger.failed`:
its models one by one, or a recorded failure). A cancel (``progress`` raising) or any other exception
in the driver cancels every task still running and marks their runs failed, to be resumed.

Cluster requirements: every node runs this project with the same packages (``ray`` pinned in
``requirements.txt``) and reads the workspace at the same path (a shared filesystem). ``"local"``
starts a cluster on this machine for the call (one CPU per core, no dashboard, worker logs not
copied to the driver) and stops it afterwards; a cluster this process is already connected to is
used as it is.

``ray`` is imported only when a Ray run starts: importing :mod:`analytics` never imports it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from analytics._optional import import_optional
from analytics.exceptions import InvalidInputError
from analytics.inference import GroupPlan, RunPlan, SuiteImage, cpu_count, finish_runs, group_rows, plan_runs, set_run_status, write_rows
from analytics.workspace import Workspace

from .ledger import RunLedger, group_label

#: Whole targets per Ray task: what an interrupted run loses at most per running task, and how
#: many model loads a group costs (one per task).
TARGETS_PER_TASK = 32
#: Seconds the driver waits for a task before it reports progress again (a job's cancel comes through it).
WAIT_S = 2.0


def run_on_ray(
    workspace: Workspace,
    suite_id: str,
    groups: Sequence[Sequence[str]],
    ledger: RunLedger,
    *,
    address: str,
    device: str | None = None,
    batch_size: int | None = None,
    top_k: int = 3,
    num_gpus_per_model: float = 0,
) -> None:
    """Run groups of models (each sharing one backbone pass) as Ray tasks; only this process writes.

    Parameters
    ----------
    workspace : Workspace
        On a filesystem every node of the cluster reads at the same path.
    suite_id : str
    groups : sequence of sequence of str
        From :func:`analytics.repository.backbone_groups`.
    ledger : RunLedger
        Told of every group that ends (done, or failed with its reason) and of progress.
    address : str
        ``"local"`` (a cluster on this machine for this call), ``"auto"``, ``"ray://host:10001"`` or
        ``"host:6379"``.
    device : str or None, default=None
        The tasks' device: None means ``"cuda"`` when ``num_gpus_per_model`` > 0, else ``"cpu"``.
    batch_size, top_k : int
        As :func:`analytics.inference.run_models`.
    num_gpus_per_model : float, default=0
        GPUs each task asks for (fractions share a GPU).

    Raises
    ------
    InvalidInputError
        ``ray`` is not installed, the cluster cannot be reached, or a CUDA device without GPUs per task.
    JobCancelled
        ``ledger``'s progress asked to stop (running tasks are cancelled).
    """
    task_device = _task_device(device, num_gpus_per_model)
    with connect(address) as ray:
        _Driver(ray, workspace, suite_id, ledger, device=task_device, batch_size=batch_size, top_k=top_k, num_gpus=num_gpus_per_model).run(groups)


def _task_device(device: str | None, num_gpus: float) -> str:
    """The device the tasks run on; checked here because the driver may have no GPU itself."""
    if device is None:
        return "cuda" if num_gpus > 0 else "cpu"
    if str(device).startswith("cuda") and num_gpus <= 0:
        raise InvalidInputError(f"device {device!r} on Ray needs GPUs per task; give num_gpus_per_model > 0 (e.g. 1)")
    if str(device) == "cpu" and num_gpus > 0:
        raise InvalidInputError("num_gpus_per_model > 0 reserves GPUs the tasks would not use with device='cpu'; drop one of them")
    return str(device)


@contextmanager
def connect(address: str) -> Iterator[ModuleType]:
    """The ``ray`` module, connected to ``address`` for the block.

    A connection this process already has is used as it is (and kept); otherwise ``"local"`` starts
    a cluster on this machine (one CPU per core, no dashboard, worker logs kept out of the driver's
    output) and any other address joins that cluster; either is shut down when the block ends.

    Raises
    ------
    MissingDependencyError
        ``ray`` is not installed (the ``[ray]`` extra).
    InvalidInputError
        The address cannot be reached.
    """
    ray = import_optional("ray", extra="ray")  # heavy and optional: imported only when a Ray run starts
    if ray.is_initialized():
        yield ray
        return
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    try:
        if address == "local":
            ray.init(num_cpus=cpu_count(), **options)
        else:
            ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as err:
        raise InvalidInputError(
            f"cannot reach a Ray cluster at {address!r} ({str(err).splitlines()[0] if str(err) else type(err).__name__}); "
            "start one with `ray start --head` and pass its address, or pass 'local'"
        ) from None
    try:
        yield ray
    finally:
        ray.shutdown()


def _chunk_rows(root: str, plan: RunPlan, group: GroupPlan, jobs: Sequence[SuiteImage], batch_size: int | None) -> list[tuple]:
    """The Ray task: one group's ``run_images`` rows on a chunk of whole targets (reads only)."""
    workspace = Workspace(root, create=False)
    return [row for rows in group_rows(workspace, plan, group, jobs=jobs, batch_size=batch_size) for row in rows]


def target_chunks(jobs: Sequence[SuiteImage], per_chunk: int) -> list[tuple[SuiteImage, ...]]:
    """Split jobs (grouped by target) into chunks of at most ``per_chunk`` whole targets, about equal.

    Returns
    -------
    list of tuple of SuiteImage
        In order; a target's jobs never span two chunks.
    """
    starts = [i for i, job in enumerate(jobs) if i == 0 or job.target_id != jobs[i - 1].target_id]
    n_chunks = math.ceil(len(starts) / per_chunk)
    bounds = [starts[round(k * len(starts) / n_chunks)] for k in range(n_chunks)] + [len(jobs)]
    return [tuple(jobs[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


@dataclass
class _Attempt:
    """One planned group on the cluster: its plan, its tasks still out, and what they stored."""

    models: list[str]
    plan: RunPlan
    label: str
    images: int
    stored: int = 0
    tasks: set = field(default_factory=set)


class _Driver:
    """Submits the groups' tasks, stores their rows as they end, and settles each group."""

    def __init__(self, ray: ModuleType, workspace: Workspace, suite_id: str, ledger: RunLedger, *, device: str, batch_size: int | None, top_k: int, num_gpus: float):
        self.ray, self.workspace, self.suite_id, self.ledger = ray, workspace, suite_id, ledger
        self.device, self.batch_size, self.top_k = device, batch_size, top_k
        # A CPU task uses every core of its node (torch's threads, compositing threads), as the local engine does.
        self.task = ray.remote(_chunk_rows).options(num_cpus=1 if num_gpus > 0 else _smallest_node_cpus(ray), num_gpus=num_gpus)
        self.out: dict[Any, _Attempt] = {}  # task ref -> its group

    def run(self, groups: Sequence[Sequence[str]]) -> None:
        try:
            for group in groups:
                self._submit(list(group))
            while self.out:
                ready, _ = self.ray.wait(list(self.out), num_returns=1, timeout=WAIT_S)
                if ready:
                    self._collect(ready[0])
                else:
                    self.ledger.step(f"{len(self.out)} Ray tasks running")
        finally:  # cancelled or broken: stop the tasks, leave their runs to resume
            for attempt in {id(a): a for a in self.out.values()}.values():
                self._abandon(attempt)

    def _submit(self, models: list[str]) -> None:
        try:
            plan = plan_runs(self.workspace, models, self.suite_id, device="cpu", top_k=self.top_k)  # the driver may lack the tasks' GPU
        except Exception as err:  # a model that cannot be planned (labels, a removed model) fails alone
            for retry in self.ledger.failed(models, err):
                self._submit(retry)
            return
        plan = dataclasses.replace(plan, device=self.device)
        attempt = _Attempt(models, plan, group_label(self.workspace, models), plan.total)
        for group in plan.groups:
            for jobs in target_chunks(group.todo, TARGETS_PER_TASK) if group.todo else ():
                ref = self.task.remote(str(self.workspace.root), plan, group, jobs, self.batch_size)
                attempt.tasks.add(ref)
                self.out[ref] = attempt
        if not attempt.tasks:
            self._settle(attempt)

    def _collect(self, ref) -> None:
        attempt = self.out.pop(ref)
        attempt.tasks.discard(ref)
        try:
            rows = self.ray.get(ref)
        except Exception as err:  # the task raised (bad weights, out of memory) or its worker died
            self._abandon(attempt)
            for retry in self.ledger.failed(attempt.models, getattr(err, "cause", None) or err):
                self._submit(retry)
            return
        write_rows(self.workspace, rows)
        attempt.stored += len({(row[1], row[2]) for row in rows})
        if not attempt.tasks:
            self._settle(attempt)
        self.ledger.step(f"{attempt.label}: {attempt.stored} of {attempt.images} images")

    def _settle(self, attempt: _Attempt) -> None:
        finish_runs(self.workspace, attempt.plan)
        self.ledger.succeeded(attempt.plan.run_ids)

    def _abandon(self, attempt: _Attempt) -> None:
        """Cancel the group's tasks still out and mark its runs failed (they resume from their stored rows)."""
        for ref in attempt.tasks:
            self.out.pop(ref, None)
            self.ray.cancel(ref, force=True)
        attempt.tasks.clear()
        set_run_status(self.workspace, list(attempt.plan.run_ids.values()), "failed")


def _smallest_node_cpus(ray: ModuleType) -> float:
    """CPUs of the smallest live node (a task asking for more would never be scheduled)."""
    cpus = [node["Resources"].get("CPU", 0) for node in ray.nodes() if node.get("Alive")]
    return max(1.0, min((c for c in cpus if c > 0), default=1.0))
