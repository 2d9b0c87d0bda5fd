"""A batch's rows (the per-image signals of docs/method.md, 'Signals') and the memory its images are made in."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analytics.inference import CompositeCache, iter_composites, stored_suite_images, stream, with_foreground
from analytics.inference.device import empty_batch
from analytics.inference.signals import Member, _rows
from analytics.inference.suite_images import SuiteImage
from tests.fixtures.models import TINY_SUITE


class _Spec:
    class label_space:  # noqa: N801 - stands in for a ModelSpec's label space
        names = [f"out{i}" for i in range(50)]


@pytest.mark.parametrize("with_conv", [True, False])
def test_rows_follow_the_formulas_row_by_row(with_conv):
    rng = np.random.default_rng(0)
    jobs = [SuiteImage(f"t{i % 7}", i, f"b{i}") for i in range(120)]
    class_of = {f"t{k}": ("dog", "cat", "car")[k % 3] for k in range(7)}
    outputs = {"dog": [0, 3, 4, 9], "cat": [17], "car": list(range(20, 45))}
    done = {(job.target_id, job.position) for job in jobs[::5]}
    member = Member(_Spec(), "run-1", outputs, done, None)
    probabilities = rng.dirichlet(np.ones(50), len(jobs)).astype(np.float32)
    probabilities[7] = probabilities[7, 3]  # a tie everywhere: the first output is predicted
    emb, conv = rng.normal(size=(len(jobs), 3)), rng.normal(size=(len(jobs), 2)) if with_conv else None
    distances = {(job.target_id, job.position): float(job.position) / 10 for job in jobs[:100]}

    rows = _rows(member, jobs, probabilities, emb, conv, distances, class_of)

    expected = []
    for i, job in enumerate(jobs):
        if (job.target_id, job.position) in done:
            continue
        wanted = outputs[class_of[job.target_id]]
        best = int(np.argmax(probabilities[i]))
        expected.append((
            "run-1", job.target_id, job.position, f"out{best}", float(sum(probabilities[i, k] for k in wanted)), float(probabilities[i].max()),
            int(best in wanted), *map(float, emb[i]), distances.get((job.target_id, job.position)),
            *((float(conv[i, 0]), float(conv[i, 1])) if with_conv else (None, None)),
        ))  # fmt: skip
    assert [row[:4] for row in rows] == [row[:4] for row in expected]
    assert [row[6:] for row in rows] == [row[6:] for row in expected]
    np.testing.assert_allclose([row[4:6] for row in rows], [row[4:6] for row in expected], rtol=1e-6)
    assert next(row for row in rows if row[2] == 7)[3] == "out0" and all(isinstance(row[6], int) for row in rows)


def test_rows_of_a_batch_the_run_has_are_none():
    job = SuiteImage("t0", 1, "b1")
    member = Member(_Spec(), "run-1", {"dog": [0]}, {("t0", 1)}, None)
    assert _rows(member, [job], np.full((1, 50), 0.02, np.float32), np.zeros((1, 3)), None, {}, {"t0": "dog"}) == []


@pytest.mark.parametrize("threads", [1, 3])
def test_batches_are_made_in_the_memory_the_stream_asks_for(tiny_model_workspace, monkeypatch, threads):
    given = []

    def recorded(shape, *, page_locked=False):
        given.append(np.empty(shape, np.uint8))
        return given[-1]

    monkeypatch.setattr(stream, "empty_batch", recorded)
    jobs = with_foreground(stored_suite_images(tiny_model_workspace, TINY_SUITE)[0])
    fresh = list(iter_composites(tiny_model_workspace, jobs, size=48, batch_size=4, threads=threads))
    with CompositeCache(tiny_model_workspace) as composites:
        cached = list(iter_composites(tiny_model_workspace, jobs, size=48, batch_size=4, composites=composites, suite_id=TINY_SUITE, threads=threads))
    for _, images in fresh + cached:
        assert any(images is array for array in given)  # written in place: no copy after the allocation
    np.testing.assert_array_equal(np.concatenate([im for _, im in fresh]), np.concatenate([im for _, im in cached]))


@pytest.mark.may_skip
@pytest.mark.skipif(not torch.cuda.is_available(), reason="page-locked memory needs CUDA")
def test_page_locked_batches_are_pinned():
    assert torch.from_numpy(empty_batch((2, 8, 8, 3), page_locked=True)).is_pinned()
