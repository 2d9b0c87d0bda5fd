"""Long work run as a background job: its own process, progress in the workspace, cancel and resume.

A job is a row of the ``jobs`` table (kind, parameters as JSON, status, done / total, a message,
the result as JSON, the worker's pid, the owner) and a detached worker process,
``python -m analytics jobs work ID --workspace W`` in a session of its own, whose output goes to
``<workspace>/jobs/<id>.log``. The worker calls the kind's function (:data:`JOB_KINDS`) with a
:class:`Progress`; each ``progress.update`` writes the row and raises :class:`JobCancelled` once the
row says ``cancelling``, so a cancel stops the work at its next step. A worker that does not stop
within :data:`CANCEL_GRACE_S` seconds gets SIGTERM (its whole process group), then SIGKILL.

Statuses: ``queued`` → ``running`` → ``done`` | ``failed`` | ``cancelled`` (via ``cancelling``). A
``queued``/``running``/``cancelling`` row whose worker process is gone (killed, machine restarted)
is marked ``failed`` with the message :data:`INTERRUPTED` whenever jobs are read. Cancelled and
failed jobs can be resumed: a new worker runs the same kind with the same parameters, and the work
skips what is already done — suites are content-addressed (building one again loads it), runs
resume from their stored batches, coverage and matrices are cached
(:mod:`analytics.suites`, :mod:`analytics.inference`, :mod:`analytics.methods`).

Team mode: starting or resuming a job needs the kind's permission (:data:`KIND_PERMISSIONS`) for
the workspace's actor; the worker acts as the owner, so the library's own checks apply there too.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .exceptions import BackdropError, InvalidInputError, NotFoundError
from .team.roles import require_permission
from .workspace import PROJECT_ROOT, Workspace, now

logger = logging.getLogger(__name__)

STATUSES = ("queued", "running", "cancelling", "cancelled", "done", "failed")
ACTIVE = ("queued", "running", "cancelling")
RESUMABLE = ("cancelled", "failed")
INTERRUPTED = "interrupted"  # the message of a job whose worker vanished
CANCEL_GRACE_S = 5.0  # how long a worker gets to stop by itself after a cancel
POLL_S = 0.2
START_GRACE_S = 30.0  # a queued row without a pid yet is not interrupted before this
JOB_COLUMNS = ["id", "kind", "status", "done", "total", "message", "owner", "created", "updated", "pid", "params", "result", "resumable"]


class JobCancelled(BackdropError):
    """Raised inside a worker by :meth:`Progress.update` once its job was asked to stop."""


class Progress:
    """What a job kind reports its progress to; the cancel request comes back through it.

    Parameters
    ----------
    workspace : Workspace
    job_id : str
    """

    def __init__(self, workspace: Workspace, job_id: str) -> None:
        self.workspace, self.job_id = workspace, job_id

    def update(self, done: int, total: int, message: str = "") -> None:
        """Record ``done`` of ``total`` steps (and what is being done); stop if a cancel was asked.

        Raises
        ------
        JobCancelled
            The job's row says ``cancelling``.
        """
        with self.workspace.transaction() as conn:
            conn.execute(
                "UPDATE jobs SET done = ?, total = ?, message = ?, updated = ? WHERE id = ?",
                (int(done), int(total), str(message), now(), self.job_id),
            )
        self.check()

    def check(self) -> None:
        """Raise :class:`JobCancelled` when the job was asked to stop."""
        row = self.workspace.query_one("SELECT status FROM jobs WHERE id = ?", (self.job_id,))
        if row is None or row["status"] == "cancelling":
            raise JobCancelled(f"job {self.job_id} was cancelled")


JobFn = Callable[[Workspace, dict, Progress], dict]


@dataclass(frozen=True)
class Job:
    """One row of the ``jobs`` table (``params`` and ``result`` decoded)."""

    id: str
    kind: str
    params: dict
    status: str
    done: int
    total: int
    message: str
    result: dict
    pid: int | None
    owner: str
    created: str
    updated: str

    @property
    def active(self) -> bool:
        """Queued, running or being cancelled."""
        return self.status in ACTIVE

    @property
    def resumable(self) -> bool:
        """Cancelled or failed: :func:`resume` can finish it."""
        return self.status in RESUMABLE

    @property
    def fraction(self) -> float:
        """``done / total`` in [0, 1] (0 before the first step is known)."""
        return min(1.0, self.done / self.total) if self.total else 0.0


# -- the kinds -----------------------------------------------------------------------------------
def _methods_kind(workspace: Workspace, params: dict, progress: Progress) -> dict:
    from .methods import record_step_cost, method_comparison

    started = time.monotonic()
    table = method_comparison(workspace, **params, progress=lambda step, done, total: progress.update(done, total, step))
    record_step_cost(workspace, params, time.monotonic() - started)
    return {"table": table.to_dict("records")}


def _suite_kind(workspace: Workspace, params: dict, progress: Progress) -> dict:
    from .suites import build_suite

    progress.update(0, 0, "screening the pool and sampling backgrounds")
    suite = build_suite(workspace, **params, progress=lambda done, total: progress.update(done, total, "semantic distances"))
    return {"suite_id": suite.id, "items": len(suite.items)}


def _runs_kind(workspace: Workspace, params: dict, progress: Progress) -> dict:
    from .runs import start_runs

    progress.update(0, 0, "loading the models")
    run_ids = start_runs(workspace, **params, progress=lambda done, total: progress.update(done, total, "images"))
    return {"run_ids": run_ids}


def _repository_kind(workspace: Workspace, params: dict, progress: Progress) -> dict:
    from .repository import run_repository

    return run_repository(workspace, **params, progress=progress.update)


def _saliency_kind(workspace: Workspace, params: dict, progress: Progress) -> dict:
    from .saliency.survey import object_share

    progress.update(0, 0, "loading the models")
    return object_share(workspace, **params, progress=progress.update)


#: Kind name -> the work: ``fn(workspace, params, progress) -> result`` (JSON-serialisable).
#: Every kind must be idempotent: run again with the same params, it skips what is done.
JOB_KINDS: dict[str, JobFn] = {
    "methods": _methods_kind, "suite": _suite_kind, "runs": _runs_kind, "repository": _repository_kind, "saliency": _saliency_kind,
}  # fmt: skip

#: Kind name -> the permission starting it needs (:mod:`analytics.team.roles`).
KIND_PERMISSIONS: dict[str, str] = {
    "methods": "build_suites", "suite": "build_suites", "runs": "run_models", "repository": "run_models", "saliency": "run_models",
}  # fmt: skip

#: Kind name -> the parameters its function accepts (checked by :func:`start`).
KIND_PARAMS: dict[str, frozenset[str]] = {
    "methods": frozenset({"model", "methods", "seeds", "n", "targets", "threshold", "layers", "recall_layers", "preset", "device"}),
    "suite": frozenset(
        {"method", "n", "seed", "target_ids", "pool_ids", "keyword_tables", "ontology_id", "distance_models", "realism",
         "realism_threshold", "top_up", "maxits", "batch_size", "device"}
    ),  # fmt: skip
    "runs": frozenset({"model_names", "suite_id", "device", "batch_size", "top_k"}),
    "repository": frozenset({"name", "suite_id", "device", "batch_size", "top_k"}),
    "saliency": frozenset({"models", "methods", "target_ids", "suite_id", "n_composites", "settings", "device"}),
}


#: Kinds registered by the module that does their work (:func:`register_kind`), imported on first
#: use so that every process (page, CLI, worker) knows them without importing that module first.
KIND_MODULES: dict[str, str] = {"zoo": "analytics.zoo"}


def _known(kind: str) -> bool:
    """Whether ``kind`` is a job kind, importing the module that registers it when needed."""
    if kind not in JOB_KINDS and kind in KIND_MODULES:
        importlib.import_module(KIND_MODULES[kind])
    return kind in JOB_KINDS


def register_kind(name: str, fn: JobFn, *, permission: str, params: frozenset[str]) -> None:
    """Add a job kind (its function must be importable by name: the worker imports its module).

    Parameters
    ----------
    name : str
    fn : callable (Workspace, dict, Progress) -> dict
    permission : str
        What starting it needs (a key of :data:`analytics.team.roles.ACTIONS`).
    params : frozenset of str
        The parameter names it accepts.
    """
    JOB_KINDS[name], KIND_PERMISSIONS[name], KIND_PARAMS[name] = fn, permission, frozenset(params)


# -- starting, cancelling, resuming --------------------------------------------------------------
def start(workspace: Workspace, kind: str, params: Mapping[str, Any], *, owner: str = "") -> Job:
    """Record a job and start its worker process.

    Parameters
    ----------
    workspace : Workspace
        Its actor (team mode) needs the kind's permission.
    kind : str
        A key of :data:`JOB_KINDS`.
    params : mapping of str to JSON values
        Keyword arguments of the kind's function (names in :data:`KIND_PARAMS`).
    owner : str, default=''
        Who started it; '' = the workspace's actor (or nobody in solo mode).

    Returns
    -------
    Job
        The queued job (its worker is starting).

    Raises
    ------
    InvalidInputError
        Unknown kind, unknown parameter names, or parameters that are not JSON.
    PermissionDeniedError
        The actor's role lacks the kind's permission.
    """
    if not _known(kind):
        raise InvalidInputError(f"job kind {kind!r} is unknown; use one of {', '.join(JOB_KINDS)}")
    unknown = sorted(set(params) - KIND_PARAMS[kind])
    if unknown:
        raise InvalidInputError(f"job {kind!r} got unknown parameter(s) {', '.join(unknown)}; it accepts {', '.join(sorted(KIND_PARAMS[kind]))}")
    try:
        text = json.dumps(dict(params), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise InvalidInputError(f"job parameters must be plain JSON values (numbers, text, lists); {err}") from None
    require_permission(workspace, KIND_PERMISSIONS[kind])
    actor = getattr(workspace, "actor", None)
    owner = owner or (actor.name if actor is not None else "")
    job_id, stamp = uuid.uuid4().hex[:12], now()
    with workspace.transaction() as conn:
        conn.execute(
            "INSERT INTO jobs(id, kind, params, status, owner, created, updated) VALUES (?, ?, ?, 'queued', ?, ?, ?)",
            (job_id, kind, text, owner, stamp, stamp),
        )
    _spawn(workspace, job_id, kind)
    return get_job(workspace, job_id)


def resume(workspace: Workspace, job_id: str) -> Job:
    """Start a new worker for a cancelled or failed (also interrupted) job, with the same parameters.

    Returns
    -------
    Job
        The job, queued again (done / total kept until the worker reports).

    Raises
    ------
    InvalidInputError
        The job is active or done.
    NotFoundError
        No such job.
    PermissionDeniedError
        The actor's role lacks the kind's permission.
    """
    job = get_job(workspace, job_id)
    if not job.resumable:
        raise InvalidInputError(f"job {job_id} is {job.status}; only a cancelled or failed job can be resumed")
    if not _known(job.kind):
        raise InvalidInputError(f"job {job_id} is of kind {job.kind!r}, which this installation does not know")
    require_permission(workspace, KIND_PERMISSIONS[job.kind])
    with workspace.transaction() as conn:
        conn.execute(
            "UPDATE jobs SET status = 'queued', pid = NULL, message = 'resuming', updated = ? WHERE id = ?", (now(), job_id)
        )
    _spawn(workspace, job_id, job.kind)
    return get_job(workspace, job_id)


def cancel(workspace: Workspace, job_id: str, *, grace: float = CANCEL_GRACE_S) -> Job:
    """Ask a job to stop; after ``grace`` seconds stop its process group by signal. Ends 'cancelled'.

    Parameters
    ----------
    workspace : Workspace
    job_id : str
    grace : float, default=CANCEL_GRACE_S
        Seconds the worker gets to stop at its next progress step.

    Returns
    -------
    Job
        The job as it ends: 'cancelled' (or what it ended as before the request, e.g. 'done').

    Raises
    ------
    NotFoundError
        No such job.
    """
    job = get_job(workspace, job_id)
    if not job.active:
        return job
    with workspace.transaction() as conn:
        conn.execute(
            "UPDATE jobs SET status = 'cancelling', updated = ? WHERE id = ? AND status IN ('queued', 'running')", (now(), job_id)
        )
    if not _wait_until(lambda: not _worker_alive(job.pid, job_id), grace):  # it records 'cancelled' and exits
        _stop_process_group(job.pid, job_id)
    with workspace.transaction() as conn:
        conn.execute(
            "UPDATE jobs SET status = 'cancelled', message = 'cancelled', pid = NULL, updated = ? WHERE id = ? AND status IN (?, ?, ?)",
            (now(), job_id, *ACTIVE),
        )
    return get_job(workspace, job_id)


def wait(workspace: Workspace, job_id: str, *, timeout: float | None = None) -> Job:
    """Block until the job is no longer active (or ``timeout`` seconds passed); returns it."""
    _wait_until(lambda: not get_job(workspace, job_id).active, timeout)
    return get_job(workspace, job_id)


# -- reading ------------------------------------------------------------------------------------
def get_job(workspace: Workspace, job_id: str) -> Job:
    """The job ``job_id`` (an interrupted one marked failed first).

    Raises
    ------
    NotFoundError
        No such job; the message names recent ones.
    """
    _mark_interrupted(workspace)
    row = workspace.query_one("SELECT * FROM jobs WHERE id = ?", (job_id,))
    if row is None:
        recent = [r["id"] for r in workspace.query("SELECT id FROM jobs ORDER BY created DESC LIMIT 5")]
        raise NotFoundError(f"no job {job_id!r} in {workspace.root}; recent jobs: {', '.join(recent) or 'none'}")
    return _job(row)


def list_jobs(workspace: Workspace, *, active_only: bool = False, kind: str | None = None) -> pd.DataFrame:
    """Jobs, newest first (interrupted ones marked failed first).

    Parameters
    ----------
    workspace : Workspace
    active_only : bool, default=False
        Only queued, running and cancelling jobs.
    kind : str or None
        Only jobs of this kind.

    Returns
    -------
    DataFrame
        Columns :data:`JOB_COLUMNS`; ``params`` and ``result`` are dicts, ``resumable`` bool.
    """
    _mark_interrupted(workspace)
    sql, args = "SELECT * FROM jobs WHERE 1 = 1", []
    if active_only:
        sql += f" AND status IN ({', '.join('?' * len(ACTIVE))})"
        args += ACTIVE
    if kind is not None:
        sql += " AND kind = ?"
        args.append(kind)
    jobs = [_job(row) for row in workspace.query(sql + " ORDER BY created DESC, rowid DESC", args)]
    records = [{**{c: getattr(j, c) for c in JOB_COLUMNS[:-1]}, "resumable": j.resumable} for j in jobs]
    table = pd.DataFrame(records, columns=JOB_COLUMNS)
    table["pid"] = pd.Series([j.pid for j in jobs], index=table.index, dtype=object)  # ints and None, never NaN
    return table


def latest_job(workspace: Workspace, kind: str, params: Mapping[str, Any] | None = None) -> Job | None:
    """The newest job of ``kind`` (with exactly these ``params`` when given), or None."""
    table = list_jobs(workspace, kind=kind)
    if params is not None:
        wanted = json.loads(json.dumps(dict(params), sort_keys=True))
        table = table[[p == wanted for p in table["params"]]]
    return None if table.empty else get_job(workspace, table["id"].iloc[0])


def _job(row) -> Job:
    return Job(
        row["id"], row["kind"], json.loads(row["params"]), row["status"], int(row["done"]), int(row["total"]), row["message"],
        json.loads(row["result"] or "{}"), row["pid"], row["owner"], row["created"], row["updated"],
    )  # fmt: skip


def _mark_interrupted(workspace: Workspace) -> None:
    """Active jobs whose worker process is gone become failed ('interrupted', resumable)."""
    for row in workspace.query(f"SELECT id, pid, status, updated FROM jobs WHERE status IN ({', '.join('?' * len(ACTIVE))})", ACTIVE):
        if row["pid"] is None and row["status"] == "queued" and not _older_than(row["updated"], START_GRACE_S):
            continue  # its worker is being started
        if not _worker_alive(row["pid"], row["id"]):
            ending = ("cancelled", "cancelled") if row["status"] == "cancelling" else ("failed", INTERRUPTED)
            with workspace.transaction() as conn:
                conn.execute(
                    "UPDATE jobs SET status = ?, message = ?, pid = NULL, updated = ? WHERE id = ? AND status = ?",
                    (*ending, now(), row["id"], row["status"]),
                )


def _older_than(stamp: str, seconds: float) -> bool:
    return (pd.Timestamp.now(tz="UTC") - pd.Timestamp(stamp)).total_seconds() > seconds


# -- the worker ---------------------------------------------------------------------------------
def work(workspace: Workspace, job_id: str) -> Job:
    """Run a queued job in this process (the worker's entry point) and record how it ended.

    Returns
    -------
    Job
        The job as it ended: done (with its result), cancelled or failed (the reason as message).

    Raises
    ------
    NotFoundError
        No such job.
    InvalidInputError
        The job is not queued (another worker has it, or it has ended).
    """
    job = get_job(workspace, job_id)
    if job.status != "queued":
        raise InvalidInputError(f"job {job_id} is {job.status}, not queued; resume it (`python -m analytics jobs resume {job_id}`)")
    with workspace.transaction() as conn:
        conn.execute("UPDATE jobs SET status = 'running', pid = ?, updated = ? WHERE id = ?", (os.getpid(), now(), job_id))
    signal.signal(signal.SIGTERM, _raise_cancelled)  # a cancel that escalates ends as 'cancelled', not a bare kill
    from .cli import to_json  # the CLI's JSON rules: numpy values plain, NaN as null

    status, message, result = "done", "done", {}
    try:
        progress = Progress(_as_owner(workspace, job.owner), job_id)
        progress.check()
        _known(job.kind)
        result = JOB_KINDS[job.kind](progress.workspace, dict(job.params), progress)
    except JobCancelled:
        status, message = "cancelled", "cancelled"
    except BackdropError as err:
        status, message = "failed", str(err)
    except Exception as err:  # a bug: the row says what, the log has the traceback
        logger.exception("job %s failed", job_id)
        status, message = "failed", f"{type(err).__name__}: {err}"
    with workspace.transaction() as conn:
        conn.execute(
            "UPDATE jobs SET status = ?, message = ?, result = ?, pid = NULL, updated = ? WHERE id = ?",
            (status, message, to_json(result), now(), job_id),
        )
    return get_job(workspace, job_id)


def _as_owner(workspace: Workspace, owner: str) -> Workspace:
    """The workspace acting as the job's owner (team mode), so the library's checks apply."""
    if not owner:
        return workspace
    from .team.accounts import active_user

    user = active_user(workspace, owner)
    if user is None:
        raise InvalidInputError(f"the job's owner {owner!r} has no enabled account any more; start the job again")
    return workspace.acting_as(user)


def _raise_cancelled(signum: int, frame: Any) -> None:
    raise JobCancelled("stopped by signal")


# -- processes ----------------------------------------------------------------------------------
def log_path(workspace: Workspace, job_id: str):
    """Where the worker's output goes: ``<workspace>/jobs/<id>.log``."""
    return workspace.root / "jobs" / f"{job_id}.log"


def _spawn(workspace: Workspace, job_id: str, kind: str) -> None:
    """Start the detached worker (own session, so a cancel can signal its whole group)."""
    command = [sys.executable, "-m", "analytics", "jobs", "work", job_id, "--workspace", str(workspace.root.resolve())]
    module = JOB_KINDS[kind].__module__
    if module != __name__:  # a kind registered elsewhere: the worker imports it first
        command += ["--kind-module", module]
    path = log_path(workspace, job_id)
    path.parent.mkdir(exist_ok=True)
    with open(path, "ab") as log:
        process = subprocess.Popen(
            command, cwd=PROJECT_ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    threading.Thread(target=process.wait, daemon=True).start()  # reap it, or it lingers as a zombie
    with workspace.transaction() as conn:
        conn.execute("UPDATE jobs SET pid = ?, updated = ? WHERE id = ? AND pid IS NULL", (process.pid, now(), job_id))


def _worker_alive(pid: int | None, job_id: str) -> bool:
    """Whether ``pid`` is a live (not zombie) worker of ``job_id`` (a reused pid is not)."""
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read().split(b"\0")
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X") and job_id.encode() in command


def _stop_process_group(pid: int | None, job_id: str) -> None:
    """SIGTERM the worker's process group, then SIGKILL what is still there."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _worker_alive(pid, job_id):
            return
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        _wait_until(lambda: not _worker_alive(pid, job_id), CANCEL_GRACE_S)


def _wait_until(condition: Callable[[], bool], timeout: float | None) -> bool:
    """Poll ``condition`` every :data:`POLL_S` seconds; whether it became true within ``timeout``."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not condition():
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True
