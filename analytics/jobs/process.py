"""Starting, cancelling and resuming jobs, and the detached worker process that runs one."""

from __future__ import annotations

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
from typing import Any

from analytics.exceptions import BackdropError, InvalidInputError, JobCancelled, PermissionDeniedError
from analytics.team import active_user, allowed, require_permission, roles_with
from analytics.workspace import PROJECT_ROOT, Workspace, now, to_json

from .kinds import JOB_KINDS
from .progress import JobProgress
from .records import ACTIVE, Job, _worker_alive, get_job

logger = logging.getLogger(__name__)

CANCEL_GRACE_S = 5.0  # how long a worker gets to stop by itself after a cancel
POLL_S = 0.2
LEAD_PERMISSION = "manage_jobs"  # who may cancel or resume anyone's job (analytics.team.roles.PERMISSIONS)


def start(workspace: Workspace, kind: str, params: Mapping[str, Any], *, owner: str = "") -> Job:
    """Record a job and start its worker process.

    Parameters
    ----------
    workspace : Workspace
        Its actor (team mode) needs the kind's permission.
    kind : str
        A key of :data:`JOB_KINDS`.
    params : mapping of str to JSON values
        Keyword arguments of the kind's work (names in its :attr:`JobKind.params`).
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
    if kind not in JOB_KINDS:
        raise InvalidInputError(f"job kind {kind!r} is unknown; use one of {', '.join(JOB_KINDS)}")
    accepted = JOB_KINDS[kind].params
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise InvalidInputError(f"job {kind!r} got unknown parameter(s) {', '.join(unknown)}; it accepts {', '.join(sorted(accepted))}")
    try:
        text = json.dumps(dict(params), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise InvalidInputError(f"job parameters must be plain JSON values (numbers, text, lists); {err}") from None
    require_permission(workspace, JOB_KINDS[kind].permission)
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
        The actor is neither the job's owner nor a lead (:func:`may_control`), or their role lacks
        the kind's permission.
    """
    job = get_job(workspace, job_id)
    _require_control(workspace, job, "resume")
    if not job.resumable:
        raise InvalidInputError(f"job {job_id} is {job.status}; only a cancelled or failed job can be resumed")
    if job.kind not in JOB_KINDS:
        raise InvalidInputError(f"job {job_id} is of kind {job.kind!r}, which this installation does not know")
    require_permission(workspace, JOB_KINDS[job.kind].permission)
    with workspace.transaction() as conn:
        conn.execute(
            "UPDATE jobs SET status = 'queued', pid = NULL, message = 'resuming', updated = ? WHERE id = ?", (now(), job_id)
        )
    _spawn(workspace, job_id, job.kind)
    return get_job(workspace, job_id)


def may_control(workspace: Workspace, job: Job, *, action: str = "cancel") -> bool:
    """Whether the workspace's actor may cancel (or resume) ``job``: what the pages ask before
    offering Cancel / Resume, and what :func:`cancel` and :func:`resume` enforce.

    Allowed with no actor (solo mode and the CLI run as the machine's owner), for the job's owner,
    and for a lead (a role with the ``manage_jobs`` permission: admin, analyst). Resuming also needs
    the kind's permission (:attr:`JobKind.permission`), as starting does.

    Parameters
    ----------
    workspace : Workspace
    job : Job
    action : {'cancel', 'resume'}, default='cancel'

    Raises
    ------
    InvalidInputError
        ``action`` is neither.
    """
    if action not in ("cancel", "resume"):
        raise InvalidInputError(f"action must be 'cancel' or 'resume', got {action!r}")
    actor = getattr(workspace, "actor", None)
    if actor is None:
        return True
    if not _controls(actor, job):
        return False
    return action == "cancel" or (job.kind in JOB_KINDS and allowed(actor.role, JOB_KINDS[job.kind].permission))


def _controls(actor: Any, job: Job) -> bool:
    """The actor started the job, or is a lead."""
    return (bool(job.owner) and actor.name == job.owner) or allowed(actor.role, LEAD_PERMISSION)


def _require_control(workspace: Workspace, job: Job, verb: str) -> None:
    """Refuse a cancel / resume by an actor who is neither the job's owner nor a lead (the kind's
    permission for a resume is checked by :func:`resume` itself, with its own message)."""
    actor = getattr(workspace, "actor", None)
    if actor is None or _controls(actor, job):
        return
    leads = " or ".join(roles_with(LEAD_PERMISSION))
    whose = f"it was started by {job.owner}; only {job.owner} or" if job.owner else "it was started outside team mode; only"
    raise PermissionDeniedError(
        f"{actor.name} ({actor.role}) may not {verb} job {job.id}: {whose} a lead (role {leads}) may. Ask one of them."
    )


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
    PermissionDeniedError
        The actor is neither the job's owner nor a lead (:func:`may_control`).
    """
    job = get_job(workspace, job_id)
    _require_control(workspace, job, "cancel")
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
    status, message, result = "done", "done", {}
    try:
        progress = JobProgress(_as_owner(workspace, job.owner), job_id)
        progress.check()
        result = JOB_KINDS[job.kind].work(progress.workspace, dict(job.params), progress.update)
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
            (status, message, to_json(result), now(), job_id),  # the CLI's JSON rules: numpy values plain, NaN as null
        )
    return get_job(workspace, job_id)


def _as_owner(workspace: Workspace, owner: str) -> Workspace:
    """The workspace acting as the job's owner (team mode), so the library's checks apply."""
    if not owner:
        return workspace
    user = active_user(workspace, owner)
    if user is None:
        raise InvalidInputError(f"the job's owner {owner!r} has no enabled account any more; start the job again")
    return workspace.acting_as(user)


def _raise_cancelled(signum: int, frame: Any) -> None:
    raise JobCancelled("stopped by signal")


def log_path(workspace: Workspace, job_id: str):
    """Where the worker's output goes: ``<workspace>/jobs/<id>.log``."""
    return workspace.root / "jobs" / f"{job_id}.log"


def _spawn(workspace: Workspace, job_id: str, kind: str) -> None:
    """Start the detached worker (own session, so a cancel can signal its whole group)."""
    command = [
        sys.executable, "-m", "analytics", "jobs", "work", job_id, "--workspace", str(workspace.root.resolve()),
        "--kind-module", JOB_KINDS[kind].work.__module__,  # so that a kind added by register_kind is known there
    ]  # fmt: skip
    path = log_path(workspace, job_id)
    path.parent.mkdir(exist_ok=True)
    with open(path, "ab") as log:
        process = subprocess.Popen(
            command, cwd=PROJECT_ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    threading.Thread(target=process.wait, daemon=True).start()  # reap it, or it lingers as a zombie
    with workspace.transaction() as conn:
        conn.execute("UPDATE jobs SET pid = ?, updated = ? WHERE id = ? AND pid IS NULL", (process.pid, now(), job_id))


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
