"""Running a model repository over a suite and following where its models stand.

* :func:`run_repository` runs the pending models over a suite: a model whose current run is
  finished is skipped; the zoo heads of one backbone run as one group that shares the backbone's
  forward pass; every group reads the suite's composites from one cache; an interrupted run
  resumes from its stored batches; a model that fails (bad weights, out of memory) is recorded as
  failed with its reason and does not stop the others. With ``ray_address`` the groups run as
  Ray tasks and only this process writes (:mod:`analytics.repository.ray_backend`).
* :func:`repository_status` is the table of the repository's models on a suite.

The job kind ``repository`` (:mod:`analytics.jobs`) runs :func:`run_repository` in the background.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import pandas as pd

from analytics._progress import Progress
from analytics._validation import check_positive_int
from analytics.data import image_size
from analytics.exceptions import InvalidInputError, JobCancelled, NotFoundError, PermissionDeniedError
from analytics.inference import CompositeCache, run_models
from analytics.models import get_model_spec, resolve_device
from analytics.runs import current_runs
from analytics.team import require_permission
from analytics.workspace import Workspace

from .ledger import RunLedger, backbone_groups, group_label
from .manifest import get_repository
from .ray_backend import run_on_ray

#: Columns of :func:`repository_status`.
STATUS_COLUMNS = ["model", "status", "accuracy", "worst_case_accuracy", "images", "expected_images", "run_id", "reason"]
#: Values of its ``status`` column.
REPOSITORY_STATUSES = ("done", "running", "failed", "pending")


def run_repository(
    workspace: Workspace,
    name: str,
    suite_id: str,
    *,
    device: str | None = None,
    batch_size: int | None = None,
    top_k: int = 3,
    progress: Progress | None = None,
    ray_address: str | None = None,
    num_gpus_per_model: float = 0,
) -> dict:
    """Run every pending model of a repository over a suite; models sharing a backbone run together.

    The pending models (finished ones are skipped) are grouped by the backbone whose forward pass
    they need: the zoo heads of one backbone form one group and share its pass, any other model is
    a group of its own. Locally the groups run one after another through
    :func:`analytics.inference.run_models`, all reading the suite's composites from one
    :class:`analytics.inference.CompositeCache`; with ``ray_address`` they run as Ray tasks
    (:mod:`analytics.repository.ray_backend`) and this process alone writes the results. A group that fails is
    tried again model by model (unless it ran out of memory, which the shared pass would repeat),
    so only the failing model is recorded as failed.

    Parameters
    ----------
    workspace : Workspace
        Its actor (team mode) needs ``run_models``.
    name : str
        The repository.
    suite_id : str
    device, batch_size, top_k
        As :func:`analytics.inference.run_models`.
    progress : callable (done_models, total_models, message) or None
        Called at the start, after every stored batch (a job's cancel comes through it) and at the end.
    ray_address : str or None, default=None
        None: run here. ``"local"``: start a Ray cluster on this machine for the call; else the
        address of a running cluster (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``).
    num_gpus_per_model : float, default=0
        GPUs each Ray task (one group of models) asks for; > 0 runs the tasks on CUDA.

    Returns
    -------
    dict
        ``repository``, ``suite_id``, ``done`` (models run now), ``skipped`` (finished before),
        ``failed`` (model -> reason); models in repository order.

    Raises
    ------
    InvalidInputError
        A bad batch size, top-k or GPU count, or an unusable Ray address.
    NotFoundError
        No such repository or suite.
    PermissionDeniedError
        The actor may not run models.
    JobCancelled
        ``progress`` asked to stop; runs resume from their stored batches on the next call.
    """
    require_permission(workspace, "run_models")
    if batch_size is not None:
        check_positive_int(batch_size, "batch_size")
    check_positive_int(top_k, "top_k")
    if isinstance(num_gpus_per_model, bool) or not isinstance(num_gpus_per_model, (int, float)) or not 0 <= num_gpus_per_model < 1e6:
        raise InvalidInputError(f"num_gpus_per_model must be a number >= 0; got {num_gpus_per_model!r}")
    if num_gpus_per_model and ray_address is None:
        raise InvalidInputError("num_gpus_per_model applies to Ray tasks; give ray_address too (or use device='cuda' here)")
    models = get_repository(workspace, name)["models"]
    if workspace.query_one("SELECT id FROM suites WHERE id = ?", (suite_id,)) is None:
        raise NotFoundError(f"no suite {suite_id!r} in workspace {workspace.root}; list them with `python -m analytics suites`")
    finished = set(_latest_runs(workspace, suite_id, top_k).query("status == 'done'")["model"])
    ledger = RunLedger(workspace, name, suite_id, models, skipped=[m for m in models if m in finished], progress=progress)
    groups = backbone_groups(workspace, [m for m in models if m not in finished], ledger)
    ledger.step("starting")
    if ray_address is None:
        _run_locally(workspace, suite_id, groups, ledger, device=device, batch_size=batch_size, top_k=top_k)
    else:
        run_on_ray(
            workspace, suite_id, groups, ledger, address=ray_address, device=device, batch_size=batch_size, top_k=top_k,
            num_gpus_per_model=num_gpus_per_model,
        )  # fmt: skip
    ledger.step("done")
    return ledger.report()


def _run_locally(workspace: Workspace, suite_id: str, groups: list[list[str]], ledger: RunLedger, *, device, batch_size: int | None, top_k: int) -> None:
    """Run the groups one after another in this process, every group reading one composite cache.

    Groups run by composite size (composites are cached per size, ~8.5 GB at 224 px for a 1,712-target
    suite; None, the workspace size, for models with their own library's transform), each size's
    files are deleted after its last group, and the disk is checked for the largest size before
    anything runs.
    """
    size = {model: _composite_size(workspace, group) for group in groups for model in group}  # a group's models share its size
    side = {key: image_size(workspace) if key is None else key for key in set(size.values())}  # None: the workspace size
    queue = deque(sorted(groups, key=lambda group: side[size[group[0]]]))  # stable: repository order within a size
    with CompositeCache(workspace) as composites, _completions(ledger, behind=_complete_behind(device)) as succeeded:
        composites.check_space(suite_id, sorted(set(side.values())))
        while queue:
            group = queue.popleft()
            label = group_label(workspace, group)

            def batch_step(done: int, total: int, label: str = label) -> None:
                ledger.step(f"{label}: {done} of {total} images")

            try:
                run_ids = run_models(
                    workspace, group, suite_id, device=device, batch_size=batch_size, top_k=top_k, progress=batch_step, composites=composites
                )
            except (JobCancelled, PermissionDeniedError):
                raise
            except Exception as err:  # any failure of one group (bad weights, out of memory, a bug) must not stop the others
                queue.extendleft(reversed(ledger.failed(group, err)))
            else:
                succeeded(dict(zip(group, run_ids)))
            if all(size[other[0]] != size[group[0]] for other in queue):  # a failed group's retries come first
                composites.release(size=size[group[0]])


def _complete_behind(device: str | None) -> bool:
    """Whether a group's runs are completed while the next group runs: on an accelerator, whose
    forward passes leave the CPU free (a paper-scale run's completion is ~1.5 s of CPU work, its
    summary, matrices and quantiles); not when a CPU model's threads take every core."""
    return resolve_device(device).type != "cpu"


@contextmanager
def _completions(ledger: RunLedger, *, behind: bool) -> Iterator[Callable[[dict[str, str]], None]]:
    """:meth:`RunLedger.succeeded` for each group that finished, at once or (``behind``) on one
    thread of its own, in order; a completion's error is raised by the next call or on leaving,
    after the completions already begun have ended."""
    if not behind:
        yield ledger.succeeded
        return
    pending: list[Future] = []

    def succeeded(run_ids: dict[str, str]) -> None:
        for future in [f for f in pending if f.done()]:
            pending.remove(future)
            future.result()
        pending.append(pool.submit(ledger.succeeded, run_ids))

    with ThreadPoolExecutor(1, thread_name_prefix="backdrop-complete") as pool:
        yield succeeded
    for future in pending:
        future.result()


def _composite_size(workspace: Workspace, group: Sequence[str]) -> int | None:
    """The composite size (``ModelSpec.composite_size``) of the backbone whose pass a group runs;
    0 when the backbone is gone (the group then fails in its turn, as before)."""
    spec = get_model_spec(workspace, group[0])
    try:
        return (get_model_spec(workspace, spec.backbone) if spec.source == "head" else spec).composite_size
    except NotFoundError:
        return 0


def _latest_runs(workspace: Workspace, suite_id: str, top_k: int) -> pd.DataFrame:
    """Per model, its current run on the suite with this top_k (a finished one first, else the newest)."""
    runs = current_runs(workspace, suite_id=suite_id)
    runs = runs[runs["top_k"].map(lambda k: pd.isna(k) or int(k) == top_k).astype(bool)]  # legacy runs: no top_k
    runs = runs.assign(finished_first=runs["status"] != "done").sort_values(["finished_first", "created"], ascending=[True, False], kind="stable")
    return runs.drop_duplicates("model").drop(columns="finished_first")


def repository_status(workspace: Workspace, name: str, suite_id: str, *, top_k: int = 3) -> pd.DataFrame:
    """Where every model of a repository stands on a suite.

    Parameters
    ----------
    workspace : Workspace
    name : str
    suite_id : str
    top_k : int, default=3
        The runs' embedding top-k (runs with another top-k are other runs).

    Returns
    -------
    DataFrame
        Columns :data:`STATUS_COLUMNS`, one row per model in repository order: ``status`` one of
        done / running (its run is under way, or its process was killed without a word) / failed
        (the last attempt raised; ``reason`` says what) / pending (never started, or cancelled:
        ``reason`` says how far it got; it resumes from there); ``accuracy`` and
        ``worst_case_accuracy`` (float, NaN until done); ``images`` / ``expected_images`` (int)
        stored so far; ``run_id`` ('' when none).

    Raises
    ------
    NotFoundError
        No such repository.
    """
    record = get_repository(workspace, name)
    failures = record.get("failures", {}).get(suite_id, {})
    runs = _latest_runs(workspace, suite_id, top_k).set_index("model")
    rows = []
    for model in record["models"]:
        run = runs.loc[model] if model in runs.index else None
        reason = failures.get(model, "")
        if run is not None and run["status"] == "done":
            status, reason = "done", ""
        elif reason:
            status = "failed"
        elif run is not None and run["status"] == "failed":  # stopped without a recorded reason: cancelled or killed
            status, reason = "pending", f"interrupted after {int(run['images'])} of {int(run['expected_images'])} images; resumes from there"
        else:
            status = "pending" if run is None else "running"
        rows.append({
            "model": model, "status": status,
            "accuracy": float("nan") if run is None else run["accuracy"],
            "worst_case_accuracy": float("nan") if run is None else run["worst_case_accuracy"],
            "images": 0 if run is None else int(run["images"]), "expected_images": 0 if run is None else int(run["expected_images"]),
            "run_id": "" if run is None else run["id"], "reason": reason,
        })  # fmt: skip
    table = pd.DataFrame(rows, columns=STATUS_COLUMNS)
    return table.astype({"accuracy": float, "worst_case_accuracy": float, "images": int, "expected_images": int})
