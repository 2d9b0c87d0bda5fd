"""The ``jobs`` table read back: :class:`Job`, the statuses, and the rows of workers that vanished."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analytics.exceptions import NotFoundError
from analytics.workspace import Workspace, now

JOB_STATUSES = ("queued", "running", "cancelling", "cancelled", "done", "failed")
ACTIVE = ("queued", "running", "cancelling")
RESUMABLE = ("cancelled", "failed")
INTERRUPTED = "interrupted"  # the message of a job whose worker vanished
START_GRACE_S = 30.0  # a queued row without a pid yet is not interrupted before this
JOB_COLUMNS = ["id", "kind", "status", "done", "total", "message", "owner", "created", "updated", "pid", "params", "result", "resumable"]


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
