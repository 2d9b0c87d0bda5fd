"""Background jobs (``analytics.jobs``): a real worker process per job, progress, cancel, resume,
interrupted workers, permissions and the ``jobs`` CLI.

The kinds used here are registered when this module is imported; the worker imports it too
(``--kind-module``), so the subprocess knows them. Each step of ``sleepy`` appends its number to a
file: the side effects counted after a cancel.
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import time
from pathlib import Path

import pytest

from analytics import jobs
from analytics._progress import Progress
from analytics.cli import main as cli_main
from analytics.comparison import method_comparison
from analytics.exceptions import InvalidInputError, PermissionDeniedError
from analytics.gate import check_text
from analytics.jobs.kinds import JOB_KINDS, JobKind, register_kind
from analytics.jobs.process import log_path, wait
from analytics.jobs.records import _worker_alive
from analytics.repository import run_repository
from analytics.team import add_user
from analytics.workspace import Workspace
from analytics.zoo import build_zoo

WAIT_S = 120  # a worker imports numpy/pandas first: slow on a busy 2-core machine


def sleepy(workspace: Workspace, params: dict, progress: Progress) -> dict:
    """``steps`` steps of ``delay`` seconds; step i appends ``i`` to ``marks``; done steps are skipped."""
    marks = Path(params["marks"])
    done = len(marks.read_text().split()) if marks.exists() else 0  # idempotent: resume skips what is done
    for step in range(done, params["steps"]):
        progress(step, params["steps"], f"step {step}")
        time.sleep(params["delay"])
        with marks.open("a") as handle:
            handle.write(f"{step}\n")
    progress(params["steps"], params["steps"], "finished")
    return {"steps": params["steps"]}


def stubborn(workspace: Workspace, params: dict, progress: Progress) -> dict:
    """Never reports progress, so only a signal stops it."""
    time.sleep(params["seconds"])
    return {}


register_kind(JobKind("sleepy", sleepy, "build_suites", frozenset({"steps", "delay", "marks"})))
register_kind(JobKind("stubborn", stubborn, "run_models", frozenset({"seconds"})))


def wait_for(condition, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def marks(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def test_cancel_stops_the_work_and_resume_finishes_it(tiny_workspace, tmp_path):
    path = tmp_path / "marks.txt"
    job = jobs.start(tiny_workspace, "sleepy", {"steps": 40, "delay": 0.1, "marks": str(path)})
    assert job.status in ("queued", "running") and job.pid
    wait_for(lambda: jobs.get_job(tiny_workspace, job.id).done >= 3)
    running = jobs.get_job(tiny_workspace, job.id)
    assert running.status == "running" and running.total == 40 and running.message.startswith("step")
    assert jobs.list_jobs(tiny_workspace, active_only=True)["id"].tolist() == [job.id]

    cancelled = jobs.cancel(tiny_workspace, job.id)
    assert cancelled.status == "cancelled" and cancelled.resumable
    assert not _worker_alive(running.pid, job.id)  # the process is gone
    after_cancel = marks(path)
    time.sleep(1.0)  # ten steps' worth: none may happen
    assert marks(path) == after_cancel and 3 <= len(after_cancel) < 40
    assert jobs.list_jobs(tiny_workspace, active_only=True).empty

    jobs.resume(tiny_workspace, job.id)
    finished = wait(tiny_workspace, job.id, timeout=WAIT_S)
    assert finished.status == "done" and finished.result == {"steps": 40} and finished.done == 40
    assert marks(path) == list(range(40))  # each step once: resume skipped the done ones
    assert log_path(tiny_workspace, job.id).exists()


def test_a_killed_worker_is_detected_as_interrupted_and_can_be_resumed(tiny_workspace, tmp_path):
    path = tmp_path / "marks.txt"
    job = jobs.start(tiny_workspace, "sleepy", {"steps": 6, "delay": 0.2, "marks": str(path)})
    wait_for(lambda: jobs.get_job(tiny_workspace, job.id).done >= 1)
    pid = jobs.get_job(tiny_workspace, job.id).pid
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not _worker_alive(pid, job.id))
    failed = jobs.get_job(tiny_workspace, job.id)
    assert failed.status == "failed" and failed.message == jobs.INTERRUPTED and failed.resumable
    jobs.resume(tiny_workspace, job.id)
    assert wait(tiny_workspace, job.id, timeout=WAIT_S).status == "done"
    assert marks(path) == list(range(6))


def test_a_worker_that_ignores_the_cancel_is_stopped_by_signal(tiny_workspace):
    job = jobs.start(tiny_workspace, "stubborn", {"seconds": 600})
    wait_for(lambda: jobs.get_job(tiny_workspace, job.id).status == "running")
    pid = jobs.get_job(tiny_workspace, job.id).pid
    assert jobs.cancel(tiny_workspace, job.id, grace=0.5).status == "cancelled"
    assert not _worker_alive(pid, job.id)


def test_a_viewer_may_not_start_or_resume_jobs(tiny_workspace, fast_hashing, tmp_path):
    viewer = add_user(tiny_workspace, "vic", "viewer", "correct horse")
    analyst = add_user(tiny_workspace, "ana", "analyst", "correct horse")
    with pytest.raises(PermissionDeniedError, match="vic \\(viewer\\) may not build"):
        jobs.start(tiny_workspace.acting_as(viewer), "sleepy", {"steps": 1, "delay": 0, "marks": str(tmp_path / "m")})
    assert jobs.list_jobs(tiny_workspace).empty  # refused before anything was recorded
    job = jobs.start(tiny_workspace.acting_as(analyst), "sleepy", {"steps": 1, "delay": 0, "marks": str(tmp_path / "m")})
    assert job.owner == "ana"
    assert wait(tiny_workspace, job.id, timeout=WAIT_S).status == "done"  # the worker acted as ana
    with tiny_workspace.transaction() as conn:
        conn.execute("UPDATE jobs SET status = 'failed' WHERE id = ?", (job.id,))
    with pytest.raises(PermissionDeniedError):
        jobs.resume(tiny_workspace.acting_as(viewer), job.id)


def test_bad_requests_are_refused(tiny_workspace):
    with pytest.raises(InvalidInputError, match="kind 'sideways' is unknown"):
        jobs.start(tiny_workspace, "sideways", {})
    with pytest.raises(InvalidInputError, match="unknown parameter"):
        jobs.start(tiny_workspace, "methods", {"model": "tiny", "colour": "red"})
    with pytest.raises(InvalidInputError, match="plain JSON"):
        jobs.start(tiny_workspace, "methods", {"model": object()})
    assert jobs.list_jobs(tiny_workspace).empty


def test_cli_lists_cancels_and_resumes(tiny_workspace, tmp_path, capsys):
    path = tmp_path / "marks.txt"
    job = jobs.start(tiny_workspace, "sleepy", {"steps": 30, "delay": 0.1, "marks": str(path)})
    wait_for(lambda: jobs.get_job(tiny_workspace, job.id).done >= 1)
    where = ["--workspace", str(tiny_workspace.root), "--json"]
    assert cli_main(["jobs", "list", "--active", *where]) == 0
    listed = json.loads(capsys.readouterr().out)["jobs"]
    assert [(j["id"], j["kind"]) for j in listed] == [(job.id, "sleepy")]
    assert cli_main(["jobs", "cancel", job.id, *where]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "cancelled"
    assert cli_main(["jobs", "resume", job.id, *where]) == 0
    assert json.loads(capsys.readouterr().out)["status"] in ("queued", "running")
    assert wait(tiny_workspace, job.id, timeout=WAIT_S).status == "done"
    assert cli_main(["jobs", "resume", job.id, *where]) == 2  # a finished job: one line, exit 2
    assert "only a cancelled or failed job" in capsys.readouterr().err


def test_the_registry_reads_each_kinds_parameters_from_the_function_it_calls():
    assert {"methods", "suite", "runs", "repository", "saliency", "zoo", "gate"} <= set(JOB_KINDS)
    assert all(name == kind.name for name, kind in JOB_KINDS.items())
    assert JOB_KINDS["zoo"].params == frozenset(inspect.signature(build_zoo).parameters) - {"workspace", "progress"}
    assert JOB_KINDS["methods"].params == frozenset(inspect.signature(method_comparison).parameters) - {"workspace", "progress"}
    assert "save" not in JOB_KINDS["suite"].params and "method" in JOB_KINDS["suite"].params  # a job's suite is saved
    assert JOB_KINDS["repository"].params == frozenset({"name", "suite_id", "device", "batch_size", "top_k"})
    assert "ray_address" in inspect.signature(run_repository).parameters  # left out: a repository job runs locally
    assert JOB_KINDS["gate"].params == frozenset(inspect.signature(check_text).parameters) - {"workspace", "progress"}
    assert JOB_KINDS["gate"].permission == "run_models"
    assert {kind.permission for kind in JOB_KINDS.values()} <= {"build_suites", "run_models"}


def test_only_the_owner_or_a_lead_may_cancel_or_resume_a_job(tiny_workspace, fast_hashing):
    """Issue 25.4: jobs record who started them; cancel and resume need that account or a lead."""
    users = {name: add_user(tiny_workspace, name, role, "correct horse") for name, role in
             {"ana": "analyst", "bea": "analyst", "ann": "annotator", "vic": "viewer"}.items()}  # fmt: skip
    as_ = {name: tiny_workspace.acting_as(user) for name, user in users.items()}
    job = jobs.start(as_["ana"], "stubborn", {"seconds": 600})
    assert job.owner == "ana"
    try:
        for name, role in (("ann", "annotator"), ("vic", "viewer")):
            assert not jobs.may_control(as_[name], job) and not jobs.may_control(as_[name], job, action="resume")
            with pytest.raises(PermissionDeniedError, match=f"{name} \\({role}\\) may not cancel job {job.id}: it was started by ana; only ana or a lead \\(role admin or analyst\\)"):
                jobs.cancel(as_[name], job.id, grace=0.5)
            assert jobs.get_job(tiny_workspace, job.id).active  # refused before anything was asked of it
        assert jobs.may_control(as_["ana"], job) and jobs.may_control(as_["bea"], job) and jobs.may_control(tiny_workspace, job)
        assert jobs.cancel(as_["ana"], job.id, grace=0.5).status == "cancelled"  # the owner

        with pytest.raises(PermissionDeniedError, match="ann \\(annotator\\) may not resume"):
            jobs.resume(as_["ann"], job.id)
        assert jobs.get_job(tiny_workspace, job.id).status == "cancelled"
        assert jobs.may_control(as_["bea"], job, action="resume")
        assert jobs.resume(as_["bea"], job.id).status in ("queued", "running")  # a lead: another analyst
        assert jobs.cancel(as_["bea"], job.id, grace=0.5).status == "cancelled"
        jobs.resume(tiny_workspace, job.id)  # solo mode and the CLI: the machine's owner, not limited
        assert jobs.cancel(tiny_workspace, job.id, grace=0.5).status == "cancelled"
    finally:
        jobs.cancel(tiny_workspace, job.id, grace=0.5)

    # an owner who is no lead still controls their own job (here one started for ann by the CLI)
    own = jobs.start(tiny_workspace, "stubborn", {"seconds": 600}, owner="ann")
    try:
        assert jobs.may_control(as_["ann"], own) and not jobs.may_control(as_["vic"], own)
        assert not jobs.may_control(as_["ann"], own, action="resume")  # resuming also needs the kind's permission
        assert jobs.cancel(as_["ann"], own.id, grace=0.5).status == "cancelled"
    finally:
        jobs.cancel(tiny_workspace, own.id, grace=0.5)
    with tiny_workspace.transaction() as conn:  # a job from before team mode: no owner, only the leads
        conn.execute("UPDATE jobs SET owner = '' WHERE id = ?", (own.id,))
    ownerless = jobs.get_job(tiny_workspace, own.id)
    assert not jobs.may_control(as_["ann"], ownerless) and jobs.may_control(as_["bea"], ownerless)
    with pytest.raises(PermissionDeniedError, match="started outside team mode; only a lead"):
        jobs.resume(as_["vic"], own.id)
    with pytest.raises(InvalidInputError, match="action"):
        jobs.may_control(tiny_workspace, ownerless, action="delete")
