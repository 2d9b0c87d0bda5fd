"""Composites pasted on the model's device (analytics.inference.device_blend): OpenCV's pyramid
steps and Cutout.paste written in torch, and the stream that uses them for an accelerator. On this
machine the device is the CPU (forced); the CUDA test runs where there is one."""

from __future__ import annotations

import threading

import cv2
import numpy as np
import pandas as pd
import pytest
import torch

from analytics.data import Cutout
from analytics.exceptions import InvalidInputError
from analytics.inference import CompositeCache, device_blend, engine, iter_composites, run_models, stored_suite_images, stream, with_foreground
from analytics.inference.device_blend import DeviceCutout, paste_on_device, pyr_down, pyr_up
from tests.analytics.inference.test_inference import _all_rows, _forget_runs
from tests.fixtures.models import TINY_SUITE

CPU = torch.device("cpu")


def _as_planes(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(array).permute(2, 0, 1)


@pytest.mark.parametrize(("height", "width"), [(224, 224), (37, 41), (150, 75), (8, 8), (4, 5)])
def test_pyramid_steps_are_opencvs(height, width):
    image = np.random.default_rng(height * width).standard_normal((height, width, 3)).astype(np.float32) * 100
    down = cv2.pyrDown(image)
    np.testing.assert_allclose(pyr_down(_as_planes(image)).permute(1, 2, 0).numpy(), down, rtol=0, atol=1e-4)
    up = cv2.pyrUp(down, dstsize=(width, height))  # an odd side is one short of twice the smaller one
    np.testing.assert_allclose(pyr_up(_as_planes(down), (height, width)).permute(1, 2, 0).numpy(), up, rtol=0, atol=1e-4)


def _cutouts(side: int, rng: np.random.Generator) -> list[Cutout]:
    """A hard disc, a soft (blurred) disc and a hard disc touching the image's edge."""
    cutouts = []
    for centre, soft in [((side // 2, side // 2), False), ((side // 2, side // 3), True), ((side // 5, side // 2), False)]:
        mask = np.zeros((side, side), np.float32)
        cv2.circle(mask, centre, side // 3, 1.0, -1)
        if soft:
            mask = np.clip(cv2.GaussianBlur(mask, (0, 0), side / 30 + 0.5), 0, 1)
        cutouts.append(Cutout(rng.integers(0, 256, (side, side, 3), np.uint8), mask))
    return cutouts


@pytest.mark.parametrize("side", [224, 37, 8])
@pytest.mark.parametrize("blend", [True, False])
def test_pasting_on_the_device_gives_the_cpus_composites(side, blend, monkeypatch):
    monkeypatch.setattr(device_blend, "CHUNK", 7)  # several passes, each mixing targets
    rng = np.random.default_rng(side)
    cutouts = _cutouts(side, rng)
    on_device = [DeviceCutout.of(c, CPU) for c in cutouts]
    which = rng.integers(0, len(cutouts), 30)
    backgrounds = rng.integers(0, 256, (30, side, side, 3), np.uint8)
    expected = np.stack([cutouts[k].paste(backgrounds[i : i + 1], blend=blend)[0] for i, k in enumerate(which)])
    made = paste_on_device(on_device, which.tolist(), torch.from_numpy(backgrounds), blend=blend).numpy()
    assert made.dtype == np.uint8 and made.shape == expected.shape
    difference = np.abs(made.astype(int) - expected)
    # The paste is the CPU's arithmetic; the blend's sums may round a value next to .5 the other way.
    assert difference.max() <= (1 if blend else 0)
    assert np.count_nonzero(difference) <= difference.size * 1e-5


def test_one_cutout_per_background_is_required():
    cutout = DeviceCutout.of(Cutout(np.zeros((8, 8, 3), np.uint8), np.ones((8, 8), bool)), CPU)
    with pytest.raises(InvalidInputError, match="one cutout per background"):
        paste_on_device([cutout], [0], torch.zeros((2, 8, 8, 3), dtype=torch.uint8))
    assert paste_on_device([], [], torch.zeros((0, 8, 8, 3), dtype=torch.uint8)).shape == (0, 8, 8, 3)


def _images(batches) -> np.ndarray:
    return np.concatenate([images for _, images in batches])


@pytest.mark.parametrize("threads", [1, 3])
def test_a_stream_pasting_on_the_device_gives_the_same_images(tiny_model_workspace, threads):
    jobs = with_foreground(stored_suite_images(tiny_model_workspace, TINY_SUITE)[0])
    on_threads = _images(iter_composites(tiny_model_workspace, jobs, size=48, batch_size=5, threads=threads))
    on_device = list(iter_composites(tiny_model_workspace, jobs, size=48, batch_size=5, threads=threads, blend_on=CPU))
    assert [job for batch, _ in on_device for job in batch] == jobs
    difference = np.abs(_images(on_device).astype(int) - on_threads)
    assert difference.max() <= 1 and np.count_nonzero(difference) <= difference.size * 1e-5
    with CompositeCache(tiny_model_workspace) as composites:  # a first model's run fills the cache this way
        first = _images(iter_composites(tiny_model_workspace, jobs, size=48, composites=composites, suite_id=TINY_SUITE, blend_on=CPU))
        again = _images(iter_composites(tiny_model_workspace, jobs, size=48, composites=composites, suite_id=TINY_SUITE))
    np.testing.assert_array_equal(first, _images(on_device))
    np.testing.assert_array_equal(again, first)


def test_out_of_device_memory_composites_the_batch_on_the_cpu(tiny_model_workspace, monkeypatch):
    jobs = with_foreground(stored_suite_images(tiny_model_workspace, TINY_SUITE)[0])
    calls = []

    def full(*args, **kwargs):
        calls.append(len(args[0]))
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")

    monkeypatch.setattr(stream, "paste_on_device", full)
    made = _images(iter_composites(tiny_model_workspace, jobs, size=48, batch_size=8, blend_on=CPU))
    assert calls  # the device was tried for each batch, and the CPU made the images
    np.testing.assert_array_equal(made, _images(iter_composites(tiny_model_workspace, jobs, size=48, batch_size=8)))


def test_the_paste_runs_ahead_of_the_model_on_its_threads_own_stream(tiny_model_workspace, monkeypatch):
    jobs = with_foreground(stored_suite_images(tiny_model_workspace, TINY_SUITE)[0])
    asked = []
    monkeypatch.setattr(stream, "own_stream", lambda device: asked.append((threading.current_thread(), device)))  # None: no stream to enter
    made = _images(iter_composites(tiny_model_workspace, jobs, size=48, batch_size=8, prefetch=2, blend_on=CPU))
    assert len(asked) == -(-len(jobs) // 8)  # once per batch
    assert all(thread is not threading.current_thread() and device == CPU for thread, device in asked)
    np.testing.assert_array_equal(made, _images(iter_composites(tiny_model_workspace, jobs, size=48, batch_size=8, blend_on=CPU, prefetch=0)))


@pytest.mark.may_skip
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_stream_gives_the_cpus_images(tiny_model_workspace):
    jobs = with_foreground(stored_suite_images(tiny_model_workspace, TINY_SUITE)[0])
    on_threads = _images(iter_composites(tiny_model_workspace, jobs, size=48, batch_size=5))
    on_cuda = _images(iter_composites(tiny_model_workspace, jobs, size=48, batch_size=5, page_locked=True, blend_on=torch.device("cuda")))
    difference = np.abs(on_cuda.astype(int) - on_threads)
    assert difference.max() <= 1 and np.count_nonzero(difference) <= difference.size * 1e-4


def test_a_run_pasting_on_the_device_stores_the_rows_of_a_cpu_run(tiny_model_workspace, monkeypatch):
    names = ["tiny", "bg-only"]
    expected = _all_rows(tiny_model_workspace, run_models(tiny_model_workspace, names, TINY_SUITE, device="cpu", batch_size=8))
    _forget_runs(tiny_model_workspace)
    asked = []

    def on_device(*args, **kwargs):  # what the engine asks for on an accelerator, here on the CPU
        asked.append(kwargs["blend_on"])
        return iter_composites(*args, **{**kwargs, "blend_on": CPU})

    monkeypatch.setattr(engine, "iter_composites", on_device)
    run_ids = run_models(tiny_model_workspace, names, TINY_SUITE, device="cpu", batch_size=8)
    assert asked == [None, None]  # on a CPU the engine pastes on the threads
    for got, want in zip(_all_rows(tiny_model_workspace, run_ids), expected):
        pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-5)
