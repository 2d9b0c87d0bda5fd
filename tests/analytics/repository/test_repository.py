"""Model repositories (:mod:`analytics.repository`): a manifest of tiny torchvision checkpoints with
good and bad entries, run over the tiny suite with a failing model, resumed, and its status table.

The good entries are ``shufflenet_v2_x0_5`` state dicts with 2 classes (64 px input), seeded
differently so each copied checkpoint is its own file.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from analytics.cli import main
from analytics.data import custom_label_space
from analytics.exceptions import (
    InvalidInputError,
    JobCancelled,
    NotFoundError,
    WorkspaceError,
)
from analytics.inference import composite_cache
from analytics.models import (
    get_model_spec,
    list_models,
    register_head,
    register_torchscript,
)
from analytics.repository import add_repository, create_repository, get_repository, repository_status, run_repository
from analytics.repository import ledger as repository_ledger
from analytics.repository import run as repository_run
from analytics.repository.manifest import read_manifest
from analytics.repository.run import STATUS_COLUMNS
from analytics.runs import list_runs
from analytics.workspace import Workspace
from tests.fixtures.models import CLASSES, SIZE, TINY_SUITE, TINY_SUITE_N
from tests.fixtures.zoo import ZOO_BACKBONE

ARCH = "shufflenet_v2_x0_5"
GOOD = ("net-a", "net-b")
N_IMAGES = 6 * (TINY_SUITE_N + 1)  # tiny_workspace: 6 targets, each its original plus n composites
HEADS = ("head-0", "head-1", "head-2")  # random heads with a hidden layer on the zoo fixture's backbone
MIXED = ("tiny", *HEADS, "fg-only")  # the repository ``mixed``: three backbone groups


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


def register_heads(workspace: Workspace, names: tuple[str, ...] = HEADS, *, hidden: int = 6, seed: int = 0) -> None:
    """Random heads (15 -> ``hidden`` ReLU -> 2 classes) on the zoo fixture's backbone ``fg-bg``."""
    rng = np.random.default_rng(seed)
    width = 15  # fg-bg's embedding: the mean colour of 5 boxes
    for name in names:
        register_head(
            workspace, name, backbone=ZOO_BACKBONE, weight=rng.normal(size=(len(CLASSES), hidden)), bias=rng.normal(size=len(CLASSES)),
            hidden=(rng.normal(size=(hidden, width)), rng.normal(size=hidden)), class_names=CLASSES,
        )  # fmt: skip


def break_head(workspace: Workspace, name: str) -> None:
    """Delete the stored output weight of a registered head (its other arrays stay)."""
    digest = get_model_spec(workspace, name).checkpoint.removeprefix("store:").split(",")[2]
    (path,) = (workspace.root / "arrays").rglob(f"{digest}*")
    path.unlink()


@pytest.fixture
def heads_workspace(tiny_model_workspace, zoo_workspace) -> Workspace:
    """``tiny_model_workspace`` plus the zoo backbone, three heads on it, and the repository ``mixed``."""
    register_heads(tiny_model_workspace)
    create_repository(tiny_model_workspace, "mixed", list(MIXED))
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


def count_calls(monkeypatch) -> list[list[str]]:
    """Record the model list of every :func:`analytics.inference.run_models` call of the local runner (it still runs)."""
    calls = []
    real = repository_run.run_models
    monkeypatch.setattr(repository_run, "run_models", lambda ws, names, *a, **k: calls.append(list(names)) or real(ws, names, *a, **k))
    return calls


def test_run_records_a_failing_model_and_skips_finished_ones(repo_workspace, monkeypatch):
    spec = get_model_spec(repo_workspace, "net-b")
    truncate(repo_workspace.root / spec.checkpoint)  # its weights break after registration
    calls = count_calls(monkeypatch)
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


def test_on_an_accelerator_each_group_completes_while_the_next_runs(repo_workspace, monkeypatch):
    # Forced here on the CPU: the completions run on their own thread, in order, and all end before the report.
    monkeypatch.setattr(repository_run, "_complete_behind", lambda device: True)
    threads, real = [], repository_ledger.complete_runs

    def complete(workspace, run_ids):
        threads.append(threading.current_thread().name)
        real(workspace, run_ids)

    monkeypatch.setattr(repository_ledger, "complete_runs", complete)
    report = run_repository(repo_workspace, "zoo", TINY_SUITE, device="cpu", batch_size=8)
    assert report["done"] == ["net-a", "net-b"] and not report["failed"]
    assert len(threads) == 2 and all(name.startswith("backdrop-complete") for name in threads)
    listed = list_runs(repo_workspace).set_index("model")
    assert listed.loc[["net-a", "net-b"], "images"].tolist() == [N_IMAGES, N_IMAGES]  # summarised
    assert repository_status(repo_workspace, "zoo", TINY_SUITE)["status"].tolist() == ["done", "done"]


def test_a_completion_that_fails_behind_the_next_group_is_raised(repo_workspace, monkeypatch):
    assert repository_run._complete_behind("cpu") is False  # the CPU's cores run the model
    monkeypatch.setattr(repository_run, "_complete_behind", lambda device: True)

    def broken(workspace, run_ids):
        raise OSError("disk full while storing the matrices")

    monkeypatch.setattr(repository_ledger, "complete_runs", broken)
    with pytest.raises(OSError, match="disk full"):
        run_repository(repo_workspace, "zoo", TINY_SUITE, device="cpu", batch_size=8)


def signals(workspace, run_ids) -> pd.DataFrame:
    """Every stored row of the runs, sorted, without the run id (compared across workspaces)."""
    marks = ",".join("?" * len(run_ids))
    rows = workspace.query(f"SELECT r.model, i.* FROM run_images i JOIN runs r ON r.id = i.run_id WHERE i.run_id IN ({marks})", list(run_ids))
    table = pd.DataFrame([dict(row) for row in rows]).drop(columns="run_id")
    return table.sort_values(["model", "target_id", "position"], ignore_index=True)


def test_a_repository_run_killed_mid_way_resumes_without_rerunning_or_losing_anything(heads_workspace, monkeypatch, tmp_path):
    """Stop after the heads' second stored batch (as a job's cancel does: ``tiny`` is done then,
    ``fg-only`` not started), run again: every model ends with exactly the rows an uninterrupted
    run stores, and no finished model is run again."""
    clean = Workspace(shutil.copytree(heads_workspace.root, tmp_path / "clean"))
    batches = []

    def stop_in_the_heads(done, total, message):
        if message.startswith(f"{ZOO_BACKBONE} + 3 heads"):
            batches.append(message)
            if len(batches) == 2:
                raise JobCancelled("stopped")

    calls = count_calls(monkeypatch)
    with pytest.raises(JobCancelled):
        run_repository(heads_workspace, "mixed", TINY_SUITE, device="cpu", batch_size=8, progress=stop_in_the_heads)
    first = list(calls)
    status = repository_status(heads_workspace, "mixed", TINY_SUITE).set_index("model")
    finished = set(status.index[status["status"] == "done"])
    stopped = status.loc[status["status"] != "done"]
    assert finished == {"tiny"} and (stopped["status"] == "pending").all()  # a cancel is no failure
    assert (stopped.loc[list(HEADS), "images"] > 0).all() and (stopped["images"] < N_IMAGES).all()  # the heads kept their batches
    assert stopped.loc[list(HEADS), "reason"].str.startswith("interrupted after").all()
    calls.clear()
    report = run_repository(heads_workspace, "mixed", TINY_SUITE, device="cpu", batch_size=8)
    assert set(report["skipped"]) == finished and set(report["done"]) == set(MIXED) - finished and report["failed"] == {}
    assert not finished & {model for call in calls for model in call}  # no model run twice
    assert first == [["tiny"], list(HEADS)] and calls == [list(HEADS), ["fg-only"]]
    runs = heads_workspace.query("SELECT model, COUNT(*) AS n FROM runs WHERE suite_id = ? GROUP BY model", (TINY_SUITE,))
    assert {row["model"]: row["n"] for row in runs} == dict.fromkeys(MIXED, 1)
    run_repository(clean, "mixed", TINY_SUITE, device="cpu", batch_size=8)
    resumed = repository_status(heads_workspace, "mixed", TINY_SUITE)
    assert (resumed["status"] == "done").all() and (resumed["images"] == N_IMAGES).all()
    expected = signals(clean, repository_status(clean, "mixed", TINY_SUITE)["run_id"])
    pd.testing.assert_frame_equal(signals(heads_workspace, resumed["run_id"]), expected, rtol=1e-5)  # nothing lost or changed


def test_heads_of_one_backbone_share_one_pass_and_every_group_one_composite_cache(heads_workspace, monkeypatch):
    caches = []
    real = repository_run.run_models

    def spy(ws, names, *args, composites=None, **kwargs):
        caches.append((list(names), composites))
        return real(ws, names, *args, composites=composites, **kwargs)

    monkeypatch.setattr(repository_run, "run_models", spy)
    report = run_repository(heads_workspace, "mixed", TINY_SUITE, device="cpu", batch_size=8)
    assert report["done"] == list(MIXED)
    assert [names for names, _ in caches] == [["tiny"], list(HEADS), ["fg-only"]]  # backbone groups, in repository order
    assert caches[0][1] is not None and all(cache is caches[0][1] for _, cache in caches)
    status = repository_status(heads_workspace, "mixed", TINY_SUITE)
    assert (status["status"] == "done").all() and (status["images"] == N_IMAGES).all()


def test_a_broken_head_fails_alone_and_its_backbone_siblings_finish(heads_workspace):
    break_head(heads_workspace, HEADS[1])
    report = run_repository(heads_workspace, "mixed", TINY_SUITE, device="cpu", batch_size=8)
    assert report["done"] == [m for m in MIXED if m != HEADS[1]] and list(report["failed"]) == [HEADS[1]]
    status = repository_status(heads_workspace, "mixed", TINY_SUITE).set_index("model")
    assert status.loc[HEADS[1], "status"] == "failed" and status.loc[HEADS[1], "reason"] == report["failed"][HEADS[1]]
    assert (status.drop(index=HEADS[1])["images"] == N_IMAGES).all()


def test_a_group_out_of_memory_fails_whole_without_retrying_each_head(heads_workspace, monkeypatch):
    real = repository_run.run_models
    calls = []

    def fake(ws, names, *args, **kwargs):
        calls.append(list(names))
        if HEADS[0] in names:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(ws, names, *args, **kwargs)

    monkeypatch.setattr(repository_run, "run_models", fake)
    report = run_repository(heads_workspace, "mixed", TINY_SUITE, device="cpu")
    assert calls == [["tiny"], list(HEADS), ["fg-only"]]  # the heads' shared pass would fail alone too
    assert report["done"] == ["tiny", "fg-only"] and set(report["failed"]) == set(HEADS)
    assert all(reason.startswith("OutOfMemoryError") for reason in report["failed"].values())


def test_status_of_a_repository_not_run_yet(repo_workspace):
    status = repository_status(repo_workspace, "zoo", TINY_SUITE)
    assert list(status.columns) == STATUS_COLUMNS
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
    real = repository_run.run_models

    def fake(ws, names, *args, **kwargs):
        if names == ["net-a"]:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")  # as the allocator raises it
        return real(ws, names, *args, **kwargs)

    monkeypatch.setattr(repository_run, "run_models", fake)
    report = run_repository(repo_workspace, "zoo", TINY_SUITE, device="cpu")
    assert report["done"] == ["net-b"] and report["failed"] == {"net-a": "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}
    status = repository_status(repo_workspace, "zoo", TINY_SUITE).set_index("model")
    assert status.loc["net-a", "status"] == "failed" and status.loc["net-a", "reason"].startswith("OutOfMemoryError")
    monkeypatch.setattr(repository_run, "run_models", real)
    assert run_repository(repo_workspace, "zoo", TINY_SUITE, device="cpu")["done"] == ["net-a"]  # a later attempt clears the failure
    assert set(repository_status(repo_workspace, "zoo", TINY_SUITE)["reason"]) == {""}


def test_create_records_registered_models_and_refuses_unknown_ones(heads_workspace, capsys):
    assert get_repository(heads_workspace, "mixed")["models"] == list(MIXED)
    with pytest.raises(NotFoundError, match="not registered.*nope"):
        create_repository(heads_workspace, "other", ["tiny", "nope"])
    ws = ["--workspace", str(heads_workspace.root), "--json"]
    assert main(["repository", "create", "pair", "--models", "tiny, fg-only", *ws]) == 0
    assert json.loads(capsys.readouterr().out) == {"repository": "pair", "models": ["tiny", "fg-only"]}
    assert main(["repository", "create", "pair", "--models", HEADS[0], *ws]) == 0  # extends it
    assert get_repository(heads_workspace, "pair")["models"] == ["tiny", "fg-only", HEADS[0]]
    assert main(["repository", "create", "bad", "--models", "nope", *ws]) == 2
    assert "nope" in capsys.readouterr().err


def test_run_refuses_bad_options(repo_workspace):
    with pytest.raises(InvalidInputError, match="batch_size"):
        run_repository(repo_workspace, "zoo", TINY_SUITE, batch_size=0)
    with pytest.raises(InvalidInputError, match="num_gpus_per_model applies to Ray"):
        run_repository(repo_workspace, "zoo", TINY_SUITE, num_gpus_per_model=1)
    with pytest.raises(InvalidInputError, match="num_gpus_per_model must be"):
        run_repository(repo_workspace, "zoo", TINY_SUITE, ray_address="local", num_gpus_per_model=-1)
    with pytest.raises(NotFoundError, match="no suite 'nope'"):
        run_repository(repo_workspace, "zoo", "nope")


@pytest.fixture
def sizes_workspace(tiny_model_workspace, tiny_model_files) -> Workspace:
    """``tiny_model_workspace`` plus ``tiny-32`` (the tiny network at 32 px input) and the repository
    ``sizes``: ``tiny`` (64 px), ``tiny-32``, ``bg-only`` (64 px)."""
    labels = custom_label_space(tiny_model_files["labels"])
    register_torchscript(tiny_model_workspace, "tiny-32", checkpoint=tiny_model_files["tiny"], label_space=labels, input_size=32)
    create_repository(tiny_model_workspace, "sizes", ["tiny", "tiny-32", "bg-only"])
    return tiny_model_workspace


def test_groups_run_by_input_size_and_each_size_is_freed_after_its_last_group(sizes_workspace, monkeypatch):
    """Issue 28.4: at most one input size's composites on disk at a time."""
    folder = sizes_workspace.root / "cache" / "composites"
    seen = []
    real = repository_run.run_models

    def spy(ws, names, *args, **kwargs):
        seen.append((list(names), sorted(p.name for p in folder.glob("*.npy")) if folder.exists() else []))
        return real(ws, names, *args, **kwargs)

    monkeypatch.setattr(repository_run, "run_models", spy)
    report = run_repository(sizes_workspace, "sizes", TINY_SUITE, device="cpu", batch_size=8)
    assert report["done"] == ["tiny", "tiny-32", "bg-only"] and report["failed"] == {}
    assert [names for names, _ in seen] == [["tiny-32"], ["tiny"], ["bg-only"]]  # by size, repository order within one
    files = [kept for _, kept in seen]
    assert files[1] == [] and len(files[2]) == 1  # the 32 px file went after tiny-32; the 64 px one serves both 64 px models
    assert not folder.exists()


def test_too_little_disk_for_the_composites_is_one_error_before_any_model_runs(sizes_workspace, monkeypatch):
    calls = count_calls(monkeypatch)
    monkeypatch.setattr(composite_cache.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10 << 30, 10 << 30, 1 << 20))
    with pytest.raises(WorkspaceError, match=r"needs 0\.0 GiB .* but only 0\.0 GiB is free; free disk space"):
        run_repository(sizes_workspace, "sizes", TINY_SUITE, device="cpu", batch_size=8)
    assert calls == []
