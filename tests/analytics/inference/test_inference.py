"""The streaming batch engine: composites, runs, resumption, heads, plan/compute/write, the
composite cache, CUDA out-of-memory back-off, evaluation and the CLI."""

from __future__ import annotations

import json
import os
import pickle
import threading
import time

import cv2
import numpy as np
import pandas as pd
import pytest
import torch

from analytics.cli import main
from analytics.data import composite, custom_label_space, foreground_only, load_backgrounds, load_targets
from analytics.exceptions import InvalidInputError, NotFoundError, WorkspaceError
from analytics.inference import (
    ROW_COLUMNS,
    CompositeCache,
    SuiteImage,
    composite_cache,
    compositing_threads,
    device,
    engine,
    evaluate,
    evaluation,
    finish_runs,
    group_rows,
    iter_composites,
    model_threads,
    plan_runs,
    prefetch_for,
    run_models,
    stored_suite_images,
    stream,
    with_foreground,
    write_rows,
)
from analytics.inference.backoff import DeviceMemoryError
from analytics.inference.stream import PREFETCH_BATCHES
from analytics.models import LoadedModel, list_models, load_model, register_head, register_torchscript, resize_images
from tests.fixtures.models import TINY_SUITE, TINY_SUITE_N


def _rows(workspace, run_id: str) -> pd.DataFrame:
    return pd.DataFrame([dict(r) for r in workspace.query("SELECT * FROM run_images WHERE run_id = ? ORDER BY target_id, position", (run_id,))])


# -- composites ------------------------------------------------------------------------------------
# prefetch 0: generated on demand over every core (CPU models); 2: ahead on a worker, over `threads` threads
@pytest.mark.parametrize(("prefetch", "threads"), [(0, None), (2, 1), (2, 3)])
def test_iter_composites_matches_compose_batch_by_batch(tiny_model_workspace, prefetch, threads):
    jobs, _ = stored_suite_images(tiny_model_workspace, TINY_SUITE)
    assert len(jobs) == 6 * (TINY_SUITE_N + 1) and jobs[0].position == 0 and jobs[0].background_id is None
    cv2_threads = cv2.getNumThreads()
    batches = list(iter_composites(tiny_model_workspace, jobs, batch_size=4, prefetch=prefetch, threads=threads))
    assert cv2.getNumThreads() == cv2_threads  # OpenCV ran on one thread per compositing thread, and is back
    assert [len(b) for b, _ in batches] == [4] * 7 + [2]
    assert [job for batch, _ in batches for job in batch] == jobs
    images = np.concatenate([images for _, images in batches])
    targets, masks = load_targets(tiny_model_workspace, [job.target_id for job in jobs])
    originals = [i for i, job in enumerate(jobs) if job.background_id is None]
    swapped = [i for i, job in enumerate(jobs) if job.background_id is not None]
    np.testing.assert_array_equal(images[originals], targets[originals])
    backgrounds = load_backgrounds(tiny_model_workspace, [jobs[i].background_id for i in swapped])
    np.testing.assert_array_equal(images[swapped], composite(targets[swapped], masks[swapped], backgrounds))


def test_iter_composites_resizes_and_gives_foreground_only(tiny_model_workspace):
    jobs = [SuiteImage("disc/0", 0, None), SuiteImage("square/1", 2, "bg03")]
    (_, images), = iter_composites(tiny_model_workspace, jobs, size=32)
    assert images.shape == (2, 32, 32, 3)
    (_, fg), = iter_composites(tiny_model_workspace, [SuiteImage(j.target_id, j.position, j.background_id, foreground=True) for j in jobs])
    targets, masks = load_targets(tiny_model_workspace, ["disc/0", "square/1"])
    np.testing.assert_array_equal(fg, foreground_only(targets, masks))


def test_iter_composites_keeps_a_bounded_cache_and_stops_its_worker(tiny_model_workspace, monkeypatch):
    sizes = []
    original = stream._ImageCache._get

    def spy(self, key, load):
        value = original(self, key, load)
        sizes.append(len(self._items))
        return value

    monkeypatch.setattr(stream._ImageCache, "_get", spy)
    jobs, _ = stored_suite_images(tiny_model_workspace, TINY_SUITE)
    batches = iter_composites(tiny_model_workspace, jobs, batch_size=2, cache_items=3)
    next(batches)
    batches.close()  # the consumer stops early: the worker must end
    for thread in threading.enumerate():
        if thread.name == "backdrop-composites":
            thread.join(timeout=5)
            assert not thread.is_alive()
    assert list(iter_composites(tiny_model_workspace, jobs, batch_size=5, cache_items=3))  # runs to the end
    assert max(sizes) <= 3


def test_compositing_threads_load_each_target_once(tiny_model_workspace, monkeypatch):
    loads = []
    original = stream._ImageCache._cutout

    def counted(self, image_hash, mask_hash):
        loads.append(image_hash)
        time.sleep(0.05)  # long enough for the other threads to ask for the same target meanwhile
        return original(self, image_hash, mask_hash)

    monkeypatch.setattr(stream._ImageCache, "_cutout", counted)
    jobs, _ = stored_suite_images(tiny_model_workspace, TINY_SUITE)
    assert sum(len(images) for _, images in iter_composites(tiny_model_workspace, jobs, batch_size=len(jobs), threads=4)) == len(jobs)
    assert len(loads) == len(set(loads)) == len({job.target_id for job in jobs})


def test_worker_errors_reach_the_consumer(tiny_model_workspace):
    jobs, _ = stored_suite_images(tiny_model_workspace, TINY_SUITE)
    row = tiny_model_workspace.query_one("SELECT image_hash FROM backgrounds WHERE id = ?", (jobs[-1].background_id,))
    tiny_model_workspace._array_path(row["image_hash"]).unlink()
    with pytest.raises(NotFoundError, match="missing"):
        list(iter_composites(tiny_model_workspace, jobs, batch_size=4))


def test_unknown_ids_are_refused_before_any_work(tiny_model_workspace):
    with pytest.raises(NotFoundError, match="nope"):
        iter_composites(tiny_model_workspace, [SuiteImage("disc/0", 1, "nope")])
    with pytest.raises(NotFoundError, match="no suite 'missing'"):
        stored_suite_images(tiny_model_workspace, "missing")


# -- runs ----------------------------------------------------------------------------------------
def test_run_stores_every_image_with_consistent_signals(tiny_model_workspace):
    (run_id,) = run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=5)
    rows = _rows(tiny_model_workspace, run_id)
    assert len(rows) == 6 * (TINY_SUITE_N + 1)
    jobs, distances = stored_suite_images(tiny_model_workspace, TINY_SUITE)
    assert [distances[(t, p)] for t, p in zip(rows.target_id, rows.position)] == rows.distance.tolist()
    assert (rows.loc[rows.position == 0, "distance"] == 0).all()
    # recompute every signal independently with predict()
    model = load_model(tiny_model_workspace, "tiny")
    images = np.concatenate([imgs for _, imgs in iter_composites(tiny_model_workspace, jobs)])
    prediction = model.predict(images)
    targets, masks = load_targets(tiny_model_workspace, [job.target_id for job in jobs])
    topk = np.argsort(-model.predict(foreground_only(targets, masks)).embeddings, axis=1)[:, :3]
    classes = [job.target_id.split("/")[0] for job in jobs]
    truth = np.array([("disc", "square").index(c) for c in classes])
    emb = prediction.embeddings
    np.testing.assert_allclose(rows.true_prob, prediction.probabilities[np.arange(len(jobs)), truth], atol=1e-5)
    np.testing.assert_allclose(rows.max_prob, prediction.probabilities.max(1), atol=1e-5)
    assert rows.predicted.tolist() == [("disc", "square")[i] for i in prediction.probabilities.argmax(1)]
    assert rows.correct.tolist() == (prediction.probabilities.argmax(1) == truth).astype(int).tolist()
    np.testing.assert_allclose(rows.emb_topk_mean, np.take_along_axis(emb, topk, 1).mean(1), atol=1e-5)
    np.testing.assert_allclose(rows.emb_max, emb.max(1), atol=1e-5)
    np.testing.assert_allclose(rows.emb_mean, emb.mean(1), atol=1e-5)
    run = tiny_model_workspace.query_one("SELECT * FROM runs WHERE id = ?", (run_id,))
    summary = json.loads(run["summary"])
    assert "TorchScript" in summary.pop("conv_map")  # why the tiny TorchScript model has no conv-map signals
    assert run["status"] == "done" and summary == {"top_k": 3}  # accuracies: analytics.runs.summarize_run


def test_foreground_only_model_is_invariant_and_background_only_is_not(tiny_model_workspace):
    fg_run, bg_run = run_models(tiny_model_workspace, ["fg-only", "bg-only"], TINY_SUITE, device="cpu")
    fg, bg = _rows(tiny_model_workspace, fg_run), _rows(tiny_model_workspace, bg_run)
    assert fg.groupby("target_id").true_prob.std().max() < 1e-6
    assert fg.groupby("target_id").emb_mean.std().max() < 1e-6
    assert bg.groupby("target_id").true_prob.std().min() > 1e-3


def test_interrupted_run_resumes_where_it_stopped(tiny_model_workspace):
    class Interrupt(Exception):
        pass

    stopped_at = []

    def stop_after_two_batches(done, total):
        if done >= 8:
            stopped_at.append(done)
            raise Interrupt

    with pytest.raises(Interrupt):
        run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=4, progress=stop_after_two_batches)
    (run_id,) = [row["id"] for row in tiny_model_workspace.query("SELECT id FROM runs")]
    partial = _rows(tiny_model_workspace, run_id)
    assert len(partial) == stopped_at[0] < 6 * (TINY_SUITE_N + 1)
    assert tiny_model_workspace.query_one("SELECT status FROM runs")["status"] == "failed"
    seen = []
    assert run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=4, progress=lambda d, t: seen.append((d, t))) == [run_id]
    assert seen[-1] == (6 * (TINY_SUITE_N + 1) - len(partial),) * 2  # only the missing images ran
    full = _rows(tiny_model_workspace, run_id)
    assert len(full) == 6 * (TINY_SUITE_N + 1)
    pd.testing.assert_frame_equal(full.merge(partial[["target_id", "position"]]), partial)
    fresh = run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", progress=lambda d, t: seen.append("again"))
    assert fresh == [run_id] and seen[-1] != "again"  # a finished run is reused


def test_heads_share_one_backbone_pass(tiny_model_workspace, monkeypatch):
    rng = np.random.default_rng(0)
    for name in ("head-a", "head-b"):
        register_head(tiny_model_workspace, name, backbone="tiny", weight=rng.normal(size=(2, 8)), bias=rng.normal(size=2), class_names=["disc", "square"])
    calls = []
    original = LoadedModel.run_batch
    monkeypatch.setattr(LoadedModel, "run_batch", lambda self, batch, **options: calls.append(len(batch)) or original(self, batch, **options))
    run_ids = run_models(tiny_model_workspace, ["head-a", "head-b", "tiny"], TINY_SUITE, device="cpu", batch_size=10)
    n_images = 6 * (TINY_SUITE_N + 1)
    assert sum(calls) == n_images + 6  # every image once (+ each target's foreground-only image)
    jobs, _ = stored_suite_images(tiny_model_workspace, TINY_SUITE)
    images = np.concatenate([imgs for _, imgs in iter_composites(tiny_model_workspace, jobs)])
    for name, run_id in zip(["head-a", "head-b", "tiny"], run_ids):
        rows = _rows(tiny_model_workspace, run_id)
        expected = load_model(tiny_model_workspace, name).predict(images).probabilities.max(1)
        np.testing.assert_allclose(rows.max_prob, expected, atol=1e-5)
    assert len(set(run_ids)) == 3


def test_run_refuses_bad_arguments(tiny_model_workspace):
    with pytest.raises(InvalidInputError, match="model_names"):
        run_models(tiny_model_workspace, [], TINY_SUITE)
    with pytest.raises(InvalidInputError, match="top_k"):
        run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, top_k=0)
    with pytest.raises(NotFoundError, match="no model 'nope'"):
        run_models(tiny_model_workspace, ["nope"], TINY_SUITE)


# -- plan / compute / write -----------------------------------------------------------------------
def _forget_runs(workspace) -> None:
    with workspace.transaction() as conn:
        conn.execute("DELETE FROM runs")  # run_images go with them (ON DELETE CASCADE)


def _all_rows(workspace, run_ids) -> list[pd.DataFrame]:
    return [_rows(workspace, run_id).drop(columns="run_id") for run_id in run_ids]


def test_plan_compute_write_equals_run_models_and_compute_never_writes(tiny_model_workspace):
    expected = _all_rows(tiny_model_workspace, run_models(tiny_model_workspace, ["tiny", "bg-only"], TINY_SUITE, device="cpu", batch_size=7))
    _forget_runs(tiny_model_workspace)
    plan = plan_runs(tiny_model_workspace, ["tiny", "bg-only", "tiny"], TINY_SUITE, device="cpu")
    assert pickle.loads(pickle.dumps(plan)) == plan  # a worker process can receive it
    assert list(plan.run_ids) == ["tiny", "bg-only"] and plan.worked == frozenset(plan.run_ids.values())
    assert [g.models for g in plan.groups] == [("tiny",), ("bg-only",)] and plan.total == 2 * 6 * (TINY_SUITE_N + 1)
    assert {r["status"] for r in tiny_model_workspace.query("SELECT status FROM runs")} == {"running"}
    for group in plan.groups:
        half = [job for job in group.todo if job.target_id < "square"]  # whole targets
        for jobs in (half, None):  # the rest (None: group.todo) skips the rows stored by the first half
            batches = list(group_rows(tiny_model_workspace, plan, group, jobs=jobs, batch_size=7))
            assert all(len(row) == len(ROW_COLUMNS) == 13 for rows in batches for row in rows)
            assert len({row[0] for rows in batches for row in rows}) == 1
            assert tiny_model_workspace.query_one("SELECT COUNT(*) AS n FROM run_images WHERE run_id = ?", (plan.run_ids[group.models[0]],))["n"] == (
                0 if jobs is half else len(half)
            )  # computing wrote nothing
            for rows in batches:
                write_rows(tiny_model_workspace, rows)
    finish_runs(tiny_model_workspace, plan)
    assert {r["status"] for r in tiny_model_workspace.query("SELECT status FROM runs")} == {"done"}
    for got, want in zip(_all_rows(tiny_model_workspace, plan.run_ids.values()), expected):
        pd.testing.assert_frame_equal(got, want)


# -- composite cache -------------------------------------------------------------------------------
def _count_composited(monkeypatch) -> list[int]:
    counts = []
    original = stream._compose_batch
    monkeypatch.setattr(stream, "_compose_batch", lambda cache, jobs, blend, out, **kw: counts.append(len(jobs)) or original(cache, jobs, blend, out, **kw))
    return counts


def test_composite_cache_composites_each_image_once_across_models(tiny_model_workspace, monkeypatch):
    names = ["tiny", "bg-only", "fg-only"]  # three groups: without a cache each composites the suite
    expected = _all_rows(tiny_model_workspace, run_models(tiny_model_workspace, names, TINY_SUITE, device="cpu", batch_size=8))
    _forget_runs(tiny_model_workspace)
    counts = _count_composited(monkeypatch)
    with CompositeCache(tiny_model_workspace) as composites:
        run_ids = run_models(tiny_model_workspace, names, TINY_SUITE, device="cpu", batch_size=8, composites=composites)
        (path,) = composites.paths  # one input size, one finished file
        assert np.load(path).shape == (6 * (TINY_SUITE_N + 2), 64, 64, 3)  # each target: foreground-only, original, n composites
    assert sum(counts) == 6 * (TINY_SUITE_N + 2)
    assert not path.exists() and not path.parent.exists()  # deleted on close
    for got, want in zip(_all_rows(tiny_model_workspace, run_ids), expected):
        pd.testing.assert_frame_equal(got, want)


def test_kept_composites_are_read_by_a_later_cache_and_sizes_get_their_own_files(tiny_model_workspace, tiny_model_files, monkeypatch):
    jobs = with_foreground(stored_suite_images(tiny_model_workspace, TINY_SUITE)[0])  # the whole suite, as the engine asks for it
    with CompositeCache(tiny_model_workspace, keep=True) as composites:
        for size in (48, None):
            list(iter_composites(tiny_model_workspace, jobs, size=size, composites=composites, suite_id=TINY_SUITE))
        paths = composites.paths
    assert len(paths) == 2 and all(p.exists() for p in paths)
    counts = _count_composited(monkeypatch)
    worker = pickle.loads(pickle.dumps(CompositeCache(tiny_model_workspace)))  # as a worker process gets it: keeps the files
    with worker, CompositeCache(tiny_model_workspace) as owner:
        for composites in (worker, owner):
            cached = np.concatenate([im for _, im in iter_composites(tiny_model_workspace, jobs, size=48, composites=composites, suite_id=TINY_SUITE)])
        assert worker.keep and counts == []  # read, not made
        with pytest.raises(InvalidInputError, match="suite_id"):
            iter_composites(tiny_model_workspace, jobs, composites=owner)
    assert not paths[0].exists() and paths[1].exists()  # the owner deleted the file it used
    monkeypatch.undo()
    np.testing.assert_array_equal(cached, np.concatenate([im for _, im in iter_composites(tiny_model_workspace, jobs, size=48)]))


def test_large_reads_are_split_over_threads_and_keep_the_order(tiny_model_workspace, monkeypatch):
    jobs = with_foreground(stored_suite_images(tiny_model_workspace, TINY_SUITE)[0])
    made = np.concatenate([im for _, im in iter_composites(tiny_model_workspace, jobs, size=48)])
    monkeypatch.setattr(composite_cache, "READ_PIECE", 2 * 48 * 48 * 3 + 1)  # two images a piece
    order = [*range(5, len(jobs)), 0, 2, 1, 3, 4]  # runs of consecutive rows, and single rows
    reads = []
    monkeypatch.setattr(os, "preadv", lambda fd, buffers, offset, preadv=os.preadv: reads.append(offset) or preadv(fd, buffers, offset))
    with CompositeCache(tiny_model_workspace) as composites:
        list(iter_composites(tiny_model_workspace, jobs, size=48, composites=composites, suite_id=TINY_SUITE))  # fills the file
        reads.clear()
        (_, cached), = iter_composites(
            tiny_model_workspace, [jobs[i] for i in order], size=48, composites=composites, suite_id=TINY_SUITE, batch_size=len(jobs)
        )  # fmt: skip
    np.testing.assert_array_equal(cached, made[order])
    assert len(reads) == -(-(len(jobs) - 5) // 2) + 4  # the long run in pieces of two; then rows 0, 2 and 1 alone, 3-4 together


def test_a_truncated_composites_file_is_named(tiny_model_workspace):
    jobs = with_foreground(stored_suite_images(tiny_model_workspace, TINY_SUITE)[0])
    with CompositeCache(tiny_model_workspace, keep=True) as composites:
        list(iter_composites(tiny_model_workspace, jobs, size=48, composites=composites, suite_id=TINY_SUITE))
        (path,) = composites.paths
    os.truncate(path, path.stat().st_size - 100)  # the last image loses its end
    with CompositeCache(tiny_model_workspace) as composites, pytest.raises(WorkspaceError, match=f"{path.name} is truncated.*delete it"):
        list(iter_composites(tiny_model_workspace, jobs, size=48, composites=composites, suite_id=TINY_SUITE))
    path.unlink()


def test_composites_made_at_the_input_size_match_resized_composites(tiny_model_workspace, tiny_model_files):
    register_torchscript(tiny_model_workspace, "tiny48", checkpoint=tiny_model_files["tiny"], label_space=custom_label_space(tiny_model_files["labels"]), input_size=48)
    jobs, _ = stored_suite_images(tiny_model_workspace, TINY_SUITE)
    at_size = np.concatenate([im for _, im in iter_composites(tiny_model_workspace, jobs, size=48)])
    resized = resize_images(np.concatenate([im for _, im in iter_composites(tiny_model_workspace, jobs)]), 48)
    originals = [i for i, job in enumerate(jobs) if job.position == 0]
    np.testing.assert_array_equal(at_size[originals], resized[originals])  # the same resize
    _, masks = load_targets(tiny_model_workspace, [job.target_id for job in jobs])
    hard = (resize_images(np.repeat(masks[..., None] * 255, 3, axis=3).astype(np.uint8), 48)[..., 0] > 127).astype(np.uint8)
    kernel = np.ones((9, 9), np.uint8)  # 4 px either side of the outline: the 64 px seam band (3 px) at 48 px, and the resize's reach
    seam = np.stack([cv2.dilate(m, kernel) > cv2.erode(m, kernel) for m in hard])
    difference = np.abs(at_size.astype(int) - resized.astype(int)).max(axis=3)
    assert difference[~seam].max() <= 1 and difference[seam].max() > 0  # away from the seam: the same up to rounding
    (run_id,) = run_models(tiny_model_workspace, ["tiny48"], TINY_SUITE, device="cpu")
    rows = _rows(tiny_model_workspace, run_id)
    old = load_model(tiny_model_workspace, "tiny48").predict(resized)
    np.testing.assert_allclose(rows.max_prob, old.probabilities.max(1), atol=1e-2)
    # the embedding is a mean over the image, and the seam is 1/7 of a 48 px tiny image's pixels (far less at 224 px)
    np.testing.assert_allclose(rows.emb_mean, old.embeddings.mean(1), rtol=2e-2)
    np.testing.assert_allclose(rows.emb_max, old.embeddings.max(1), rtol=2e-2)


# -- CUDA out-of-memory back-off -------------------------------------------------------------------
def test_out_of_memory_halves_the_model_batch_and_keeps_the_rows(tiny_model_workspace, monkeypatch):
    expected = _all_rows(tiny_model_workspace, run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=10))
    _forget_runs(tiny_model_workspace)
    seen = []
    original = LoadedModel.run_batch

    def fits_three(self, batch, **options):  # an allocator that fails above 3 images
        seen.append(len(batch))
        if len(batch) > 3:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return original(self, batch, **options)

    monkeypatch.setattr(LoadedModel, "run_batch", fits_three)
    run_ids = run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=10)
    assert seen[:4] == [10, 5, 2, 2] and max(seen[4:]) == 2  # halved until it fits, then kept small
    for got, want in zip(_all_rows(tiny_model_workspace, run_ids), expected):
        pd.testing.assert_frame_equal(got, want)
    _forget_runs(tiny_model_workspace)
    monkeypatch.setattr(LoadedModel, "run_batch", lambda self, batch, **options: (_ for _ in ()).throw(torch.cuda.OutOfMemoryError("out of memory")))
    with pytest.raises(DeviceMemoryError, match="'tiny'.*batch size 1"):
        run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=4)
    assert tiny_model_workspace.query_one("SELECT status FROM runs")["status"] == "failed"


# -- evaluation ------------------------------------------------------------------------------------
def test_evaluate_matches_predict_and_is_cached(tiny_model_workspace, monkeypatch):
    result = evaluate(tiny_model_workspace, "tiny", device="cpu")
    ids = [row["id"] for row in tiny_model_workspace.query("SELECT id FROM targets ORDER BY id")]
    images, _ = load_targets(tiny_model_workspace, ids)
    predicted = load_model(tiny_model_workspace, "tiny").predict(images).probabilities.argmax(1)
    correct = predicted == np.array([("disc", "square").index(i.split("/")[0]) for i in ids])
    assert result.n == 6 and result.accuracy == pytest.approx(correct.mean())
    assert result.per_class == {"disc": pytest.approx(correct[:3].mean()), "square": pytest.approx(correct[3:].mean())}
    assert result.per_class_n == {"disc": 3, "square": 3}

    def no_model(*args, **kwargs):
        raise AssertionError("the cached evaluation should not load the model")

    monkeypatch.setattr(evaluation, "load_model", no_model)
    assert evaluate(tiny_model_workspace, "tiny").to_dict() == result.to_dict()


# -- CLI -------------------------------------------------------------------------------------------
def test_cli_evaluate_run_and_add_model(tiny_model_workspace, tiny_model_files, capsys):
    ws = str(tiny_model_workspace.root)
    assert main(["evaluate", "--workspace", ws, "--model", "fg-only", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"model", "n", "accuracy", "per_class"} and out["n"] == 6
    assert main(["run", "--workspace", ws, "--model", "tiny", "--suite", TINY_SUITE, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"run", "label", "model", "suite", "suite_id", "images", "accuracy", "worst_case_accuracy"} and out["images"] == 30
    assert main(["run", "--workspace", ws, "--model", "tiny", "--model", "bg-only", "--suite", TINY_SUITE, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [o["model"] for o in out] == ["tiny", "bg-only"]
    args = ["add-model", "--workspace", ws, "--name", "tiny2", "--arch", "torchscript", "--checkpoint", str(tiny_model_files["tiny"]),
            "--labels", str(tiny_model_files["labels"]), "--input-size", "64", "--json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "tiny2"
    before = [s.name for s in list_models(tiny_model_workspace)]
    assert main(["add-model", "--workspace", ws, "--name", "x", "--arch", "resnet18", "--checkpoint", str(tiny_model_files["labels"]), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "labels.txt" in err
    assert [s.name for s in list_models(tiny_model_workspace)] == before


@pytest.mark.parametrize(("omp", "cores", "threads", "prefetch"), [(None, 2, 2, 0), ("1", 2, 1, 2), ("4", 2, 2, 0), ("x", 2, 2, 0), ("1", 1, 1, 0)])
def test_cpu_models_take_omp_num_threads_and_a_free_core_composites_ahead(monkeypatch, omp, cores, threads, prefetch):
    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    monkeypatch.setattr(device, "cpu_count", lambda: cores)
    monkeypatch.setattr(stream, "cpu_count", lambda: cores)
    assert model_threads() == threads
    assert prefetch_for(torch.device("cpu")) == prefetch
    assert compositing_threads(torch.device("cpu"), prefetch) == (cores if prefetch == 0 else cores - threads)
    assert compositing_threads(torch.device("cuda"), PREFETCH_BATCHES) == cores  # every core feeds an accelerator
    before = torch.get_num_threads()
    with device.cpu_threads(torch.device("cpu")):
        assert torch.get_num_threads() == threads
    assert torch.get_num_threads() == before


def test_a_run_without_a_batch_size_takes_its_devices(tiny_model_workspace, monkeypatch):
    assert (device.default_batch_size(torch.device("cpu")), device.default_batch_size(torch.device("cuda"))) == (32, 256)
    asked = []
    monkeypatch.setattr(engine, "iter_composites", lambda *args, **kwargs: asked.append(kwargs["batch_size"]) or iter_composites(*args, **kwargs))
    run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu")
    _forget_runs(tiny_model_workspace)
    run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=5)
    assert asked == [32, 5]
    with pytest.raises(InvalidInputError, match="batch_size"):
        run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=0)
