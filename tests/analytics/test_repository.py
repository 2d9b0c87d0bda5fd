"""Model repositories (:mod:`analytics.repository`): a manifest of tiny torchvision checkpoints with
good and bad entries, run over the tiny suite with a failing model, resumed, and its status table.

The good entries are ``shufflenet_v2_x0_5`` state dicts with 2 classes (64 px input), seeded
differently so each copied checkpoint is its own file.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from analytics import repository
from analytics.cli import main
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.jobs import JobCancelled
from analytics.models import get_model_spec, list_models
from analytics.repository import add_repository, get_repository, read_manifest, repository_status, run_repository
from analytics.runs import list_runs
from tests.fixtures.models import CLASSES, SIZE, TINY_SUITE, TINY_SUITE_N

ARCH = "shufflenet_v2_x0_5"
GOOD = ("net-a", "net-b")
N_IMAGES = 6 * (TINY_SUITE_N + 1)  # tiny_workspace: 6 targets, each its original plus n composites


def write_checkpoint(path: Path, seed: int) -> Path:
    import torchvision

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        torch.save(torchvision.models.get_model(ARCH, weights=None, num_classes=len(CLASSES)).state_dict(), path)
    return path


def truncate(path: Path) -> None:
    """Cut a checkpoint file in half (a copy that broke off)."""
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.fixture
def manifest(tmp_path, tiny_model_files) -> Path:
    """A manifest folder: two good checkpoints, a corrupt one, a missing one, an unknown architecture."""
    folder = tmp_path / "repo"
    (folder / "weights").mkdir(parents=True)
    write_checkpoint(folder / "weights" / "a.pt", 0)
    write_checkpoint(folder / "weights" / "b.pt", 1)
    truncate(write_checkpoint(folder / "weights" / "broken.pt", 2))
    labels = tiny_model_files["labels"]
    rows = [
        "name,architecture,checkpoint,label_space,input_size,optimiser,epochs",
        f"net-a,{ARCH},weights/a.pt,{labels},{SIZE},sgd,90",
        f"net-b,{ARCH},weights/b.pt,{labels},{SIZE},adam,30",
        f"net-broken,{ARCH},weights/broken.pt,{labels},{SIZE},sgd,90",
        f"net-missing,{ARCH},weights/missing.pt,{labels},{SIZE},sgd,90",
        f"net-unknown,resnet-999,weights/a.pt,{labels},{SIZE},sgd,90",
    ]
    path = folder / "manifest.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def repo_workspace(tiny_model_workspace, manifest):
    """``tiny_model_workspace`` with the repository ``zoo`` added from :func:`manifest`."""
    add_repository(tiny_model_workspace, manifest, name="zoo")
    return tiny_model_workspace


def test_read_manifest_resolves_paths_and_keeps_metadata(manifest):
    entries = read_manifest(manifest)
    assert [e.name for e in entries] == ["net-a", "net-b", "net-broken", "net-missing", "net-unknown"]
    first = entries[0]
    assert first.checkpoint == (manifest.parent / "weights" / "a.pt").resolve() and first.input_size == SIZE
    assert first.metadata == {"optimiser": "sgd", "epochs": 90} and first.row == 2


def test_read_manifest_names_bad_rows_and_missing_columns(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("name,architecture,checkpoint,label_space,input_size\nx,resnet18,,imagenet,\nx,resnet18,w.pt,imagenet,8\ny,resnet18,w.pt,in9,\ny,resnet18,w.pt,in9,\n")
    with pytest.raises(InvalidInputError) as err:
        read_manifest(path)
    text = str(err.value)
    assert str(path) in text and "row 2: empty checkpoint" in text and "row 3: input_size '8'" in text and "row 5: the name 'y'" in text
    path.write_text("name,arch,checkpoint\nx,resnet18,w.pt\n")
    with pytest.raises(InvalidInputError, match="lacks the column.*architecture, label_space"):
        read_manifest(path)
    with pytest.raises(InvalidInputError, match="manifest not found"):
        read_manifest(tmp_path / "nope.csv")


def test_add_registers_good_entries_and_skips_bad_ones_whole(tiny_model_workspace, manifest):
    before = {spec.name for spec in list_models(tiny_model_workspace)}
    report = add_repository(tiny_model_workspace, manifest, name="zoo")
    assert report.registered == list(GOOD) and report.unchanged == []
    assert set(report.skipped) == {"net-broken", "net-missing", "net-unknown"}
    assert "not a readable PyTorch checkpoint" in report.skipped["net-broken"] and "row 4" in report.skipped["net-broken"]
    assert "not found" in report.skipped["net-missing"] and "unknown architecture 'resnet-999'" in report.skipped["net-unknown"]
    # nothing half-registered: the bad entries left no row
    assert {spec.name for spec in list_models(tiny_model_workspace)} == before | set(GOOD)
    record = get_repository(tiny_model_workspace, "zoo")
    assert record["models"] == list(GOOD) and record["metadata"]["net-b"] == {"optimiser": "adam", "epochs": 30}
    again = add_repository(tiny_model_workspace, manifest, name="zoo")  # idempotent
    assert again.registered == [] and again.unchanged == list(GOOD)
    assert get_repository(tiny_model_workspace, "zoo")["models"] == list(GOOD)
    with pytest.raises(NotFoundError, match="known: zoo"):
        get_repository(tiny_model_workspace, "other")


def test_run_records_a_failing_model_and_skips_finished_ones(repo_workspace, monkeypatch):
    spec = get_model_spec(repo_workspace, "net-b")
    truncate(repo_workspace.root / spec.checkpoint)  # its weights break after registration
    calls = []
    real = repository.start_runs
    monkeypatch.setattr(repository, "start_runs", lambda ws, names, *a, **k: calls.append(list(names)) or real(ws, names, *a, **k))
    steps = []
    report = run_repository(repo_workspace, "zoo", TINY_SUITE, device="cpu", batch_size=8, progress=lambda d, t, m: steps.append((d, t)))
    assert report["done"] == ["net-a"] and list(report["failed"]) == ["net-b"]
    assert "not a readable PyTorch checkpoint" in report["failed"]["net-b"]
    assert steps[0] == (0, 2) and steps[-1] == (2, 2)
    status = repository_status(repo_workspace, "zoo", TINY_SUITE).set_index("model")
    assert status.loc["net-a", "status"] == "done" and status.loc["net-a", "images"] == N_IMAGES
    runs = list_runs(repo_workspace, model="net-a")
    assert status.loc["net-a", "worst_case_accuracy"] == runs["worst_case_accuracy"].iloc[0]
    assert np.isfinite(status.loc["net-a", "accuracy"])
    assert status.loc["net-b", "status"] == "failed" and "not a readable PyTorch checkpoint" in status.loc["net-b", "reason"]
    calls.clear()
    again = run_repository(repo_workspace, "zoo", TINY_SUITE, device="cpu", batch_size=8)
    assert calls == [["net-b"]] and again["skipped"] == ["net-a"]  # the finished model is not run again


def test_an_interrupted_repository_run_resumes(repo_workspace):
    def stop_after_first_batch(done, total, message):
        if message.endswith("images"):  # the model's first stored batch
            raise JobCancelled("stopped")  # as a job's cancel does, mid-run

    with pytest.raises(JobCancelled):
        run_repository(repo_workspace, "zoo", TINY_SUITE, device="cpu", batch_size=8, progress=stop_after_first_batch)
    status = repository_status(repo_workspace, "zoo", TINY_SUITE).set_index("model")
    assert status.loc["net-a", "status"] == "pending" and 0 < status.loc["net-a", "images"] < N_IMAGES  # a cancel is no failure
    assert status.loc["net-a", "reason"].startswith(f"interrupted after {status.loc['net-a', 'images']} of {N_IMAGES} images")
    assert status.loc["net-b", "status"] == "pending" and status.loc["net-b", "reason"] == ""
    report = run_repository(repo_workspace, "zoo", TINY_SUITE, device="cpu", batch_size=8)
    assert report["done"] == list(GOOD) and report["failed"] == {}
    status = repository_status(repo_workspace, "zoo", TINY_SUITE)
    assert (status["status"] == "done").all() and (status["images"] == N_IMAGES).all()
    stored = repo_workspace.query("SELECT COUNT(*) AS n FROM run_images WHERE run_id = ?", (status["run_id"].iloc[0],))[0]["n"]
    assert stored == N_IMAGES


def test_status_of_a_repository_not_run_yet(repo_workspace):
    status = repository_status(repo_workspace, "zoo", TINY_SUITE)
    assert list(status.columns) == repository.STATUS_COLUMNS
    assert list(status["model"]) == list(GOOD) and set(status["status"]) == {"pending"} and status["accuracy"].isna().all()


def test_cli_add_run_status(tiny_model_workspace, manifest, capsys):
    ws = ["--workspace", str(tiny_model_workspace.root), "--json"]
    assert main(["repository", "add", str(manifest), "--name", "zoo", *ws]) == 0
    added = json.loads(capsys.readouterr().out)
    assert added["registered"] == list(GOOD) and set(added["skipped"]) == {"net-broken", "net-missing", "net-unknown"}
    assert main(["repository", "run", "--name", "zoo", "--suite", TINY_SUITE, "--device", "cpu", *ws]) == 0
    assert json.loads(capsys.readouterr().out)["done"] == list(GOOD)
    assert main(["repository", "status", "--name", "zoo", "--suite", TINY_SUITE, *ws]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["counts"] == {"done": 2} and [m["status"] for m in status["models"]] == ["done", "done"]
    assert main(["repository", "status", "--name", "nope", "--suite", TINY_SUITE, *ws]) == 2
    assert "no repository 'nope'" in capsys.readouterr().err


def test_out_of_memory_in_one_model_does_not_stop_the_others(repo_workspace, monkeypatch):
    real = repository.start_runs

    def fake(ws, names, *args, **kwargs):
        if names == ["net-a"]:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")  # as the allocator raises it
        return real(ws, names, *args, **kwargs)

    monkeypatch.setattr(repository, "start_runs", fake)
    report = run_repository(repo_workspace, "zoo", TINY_SUITE, device="cpu")
    assert report["done"] == ["net-b"] and report["failed"] == {"net-a": "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}
    status = repository_status(repo_workspace, "zoo", TINY_SUITE).set_index("model")
    assert status.loc["net-a", "status"] == "failed" and status.loc["net-a", "reason"].startswith("OutOfMemoryError")
    monkeypatch.setattr(repository, "start_runs", real)
    assert run_repository(repo_workspace, "zoo", TINY_SUITE, device="cpu")["done"] == ["net-a"]  # a later attempt clears the failure
    assert set(repository_status(repo_workspace, "zoo", TINY_SUITE)["reason"]) == {""}
