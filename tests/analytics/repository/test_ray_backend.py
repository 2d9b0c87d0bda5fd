"""The Ray backend of repository runs (:mod:`analytics.repository.ray_backend`) on a small real local cluster.

One cluster for this module (``ray.init(num_cpus=2)``, shut down when its last test ends, so that
its workers, over a GiB, do not stay for the rest of the test session): Ray's ``local_mode`` no
longer exists, and starting a cluster takes seconds. While it is connected,
``run_repository(..., ray_address=...)`` and ``repository run --ray`` use it as it is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from analytics.cli import main
from analytics.exceptions import InvalidInputError, JobCancelled
from analytics.inference import SuiteImage
from analytics.repository import ray_backend, repository_status, run_repository
from analytics.workspace import PROJECT_ROOT, Workspace
from tests.analytics.repository.test_repository import HEADS, MIXED, N_IMAGES, break_head, heads_workspace, signals  # noqa: F401 (a fixture)
from tests.fixtures.models import TINY_SUITE


@pytest.fixture(scope="module")
def ray_cluster():
    """A 2-CPU Ray cluster on this machine, started once for this module."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def small_tasks(monkeypatch):
    """Two targets per Ray task, so each group of the tiny suite (6 targets) is three tasks."""
    monkeypatch.setattr(ray_backend, "TARGETS_PER_TASK", 2)


def test_ray_results_equal_the_local_engine(heads_workspace, ray_cluster, small_tasks, tmp_path):
    local = Workspace(shutil.copytree(heads_workspace.root, tmp_path / "local"))
    steps = []
    report = run_repository(heads_workspace, "mixed", TINY_SUITE, batch_size=8, ray_address="local", progress=lambda d, t, m: steps.append((d, t, m)))
    assert report["done"] == list(MIXED) and report["failed"] == {} and report["skipped"] == []
    assert steps[0][:2] == (0, len(MIXED)) and steps[-1][:2] == (len(MIXED), len(MIXED))
    assert any(m.endswith(f"{N_IMAGES} of {N_IMAGES} images") for _, _, m in steps)  # progress per stored task, up to the whole suite
    assert run_repository(local, "mixed", TINY_SUITE, device="cpu", batch_size=8)["done"] == list(MIXED)
    on_ray = repository_status(heads_workspace, "mixed", TINY_SUITE)
    assert (on_ray["status"] == "done").all() and (on_ray["images"] == N_IMAGES).all()
    here = repository_status(local, "mixed", TINY_SUITE)
    assert list(on_ray["run_id"]) == list(here["run_id"])  # the same runs (ids are content keys)
    pd.testing.assert_frame_equal(signals(heads_workspace, on_ray["run_id"]), signals(local, here["run_id"]), rtol=1e-5)
    pd.testing.assert_series_equal(on_ray["worst_case_accuracy"], here["worst_case_accuracy"])
    again = run_repository(heads_workspace, "mixed", TINY_SUITE, ray_address="local")
    assert again["skipped"] == list(MIXED) and again["done"] == []


def test_a_failing_model_on_ray_is_recorded_and_the_others_finish(heads_workspace, ray_cluster, small_tasks):
    break_head(heads_workspace, HEADS[1])  # its group's tasks raise; its siblings are tried again one by one
    report = run_repository(heads_workspace, "mixed", TINY_SUITE, batch_size=8, ray_address="local")
    assert report["done"] == [m for m in MIXED if m != HEADS[1]] and list(report["failed"]) == [HEADS[1]]
    assert "is missing" in report["failed"][HEADS[1]]  # the worker's own error, not Ray's wrapper
    status = repository_status(heads_workspace, "mixed", TINY_SUITE).set_index("model")
    assert status.loc[HEADS[1], "status"] == "failed" and (status.drop(index=HEADS[1])["images"] == N_IMAGES).all()


def test_a_cancelled_ray_run_stops_its_tasks_and_resumes(heads_workspace, ray_cluster, small_tasks):
    stored = []

    def cancel_after_first_stored_task(done, total, message):
        if message.endswith("images"):
            stored.append(message)
            raise JobCancelled("stopped")

    with pytest.raises(JobCancelled):
        run_repository(heads_workspace, "mixed", TINY_SUITE, batch_size=8, ray_address="local", progress=cancel_after_first_stored_task)
    status = repository_status(heads_workspace, "mixed", TINY_SUITE)
    assert len(stored) == 1 and set(status["status"]) == {"pending"}  # no run left 'running' after a cancel
    assert 0 < status["images"].sum() < len(MIXED) * N_IMAGES
    report = run_repository(heads_workspace, "mixed", TINY_SUITE, batch_size=8, ray_address="local")
    assert report["done"] == list(MIXED)
    status = repository_status(heads_workspace, "mixed", TINY_SUITE)
    assert (status["status"] == "done").all() and (status["images"] == N_IMAGES).all()


def test_cli_run_with_ray(heads_workspace, ray_cluster, capsys):
    ws = ["--workspace", str(heads_workspace.root), "--json"]
    assert main(["repository", "run", "--name", "mixed", "--suite", TINY_SUITE, "--ray", "local", "--batch-size", "16", *ws]) == 0
    assert json.loads(capsys.readouterr().out)["done"] == list(MIXED)
    assert main(["repository", "status", "--name", "mixed", "--suite", TINY_SUITE, *ws]) == 0
    assert json.loads(capsys.readouterr().out)["counts"] == {"done": len(MIXED)}


def test_device_and_gpus_must_agree(heads_workspace):
    with pytest.raises(InvalidInputError, match="needs GPUs per task"):
        run_repository(heads_workspace, "mixed", TINY_SUITE, device="cuda", ray_address="local")
    with pytest.raises(InvalidInputError, match="would not use"):
        run_repository(heads_workspace, "mixed", TINY_SUITE, device="cpu", ray_address="local", num_gpus_per_model=1)


def test_target_chunks_keep_targets_whole_and_balanced():
    jobs = [SuiteImage(f"t{t}", p, None if p == 0 else f"b{p}") for t in range(7) for p in range(3)]
    chunks = ray_backend.target_chunks(jobs, 3)
    assert [job for chunk in chunks for job in chunk] == jobs
    assert [len({job.target_id for job in chunk}) for chunk in chunks] == [2, 3, 2]
    assert not set.intersection(*({job.target_id for job in chunk} for chunk in chunks))
    assert ray_backend.target_chunks(jobs, 100) == [tuple(jobs)]


def test_importing_analytics_does_not_import_ray():
    code = "import sys, analytics.cli, analytics.repository, analytics.repository.ray_backend, analytics.commands.repository; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True, env={**os.environ})
    assert out.stdout.strip() == "False"
