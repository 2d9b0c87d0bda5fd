"""The circle's kernel sums in plain NumPy (small clouds) against the compiled Numba path (large ones):
the same points inside, the same weights, equal to rounding; and a small matrix imports no Numba."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analytics.variance import _circle, _circle_numpy, _circle_sums

ROOT = Path(__file__).resolve().parents[3]

# (grid, window, sigma): odd and even windows, a window of one cell, windows wider than the grid.
SETTINGS = [(8, 1, 0.7), (16, 3, 2.0), (32, 5, 2.0), (32, 16, 5.0), (64, 32, 10.0), (128, 32, 2.0), (128, 33, 10.0), (8, 24, 5.0)]


def _coordinates(rng: np.random.Generator, shape: tuple[int, ...], grid: int, half: float) -> np.ndarray:
    """Coordinates in cell units over and just past the grid; a third sit on half-cell steps, so
    their distance to a cell centre is a whole number of cells (on the rim when it equals ``half``),
    and a few hug the edges 0 and ``grid``."""
    coords = rng.uniform(-half - 1, grid + half + 1, shape)
    flat = coords.reshape(-1)
    third = flat.size // 3
    flat[:third] = np.round(flat[:third] * 2) / 2
    flat[third : third + 4] = [0.0, 1e-9, grid - 1e-9, float(grid)][: min(4, flat.size - third)]
    return coords


@pytest.mark.parametrize("grid, window, sigma", SETTINGS)
def test_point_sums_in_numpy_equal_the_compiled_ones(grid, window, sigma):
    rng = np.random.default_rng(grid * 100 + window)
    half = window / 2
    cells = _coordinates(rng, (1500, 2), grid, half)
    values = rng.random(1500)
    compiled = _circle.circle_point_sums(cells, values, grid, half=half, sigma=sigma)
    numpy = _circle_numpy.circle_point_sums(cells, values, grid, half=half, sigma=sigma)
    for ours, theirs in zip(numpy, compiled):
        np.testing.assert_array_equal(ours == 0, theirs == 0)  # the same cells reached
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)


@pytest.mark.parametrize("n_signals", [0, 1, 3])
@pytest.mark.parametrize("grid, window, sigma", SETTINGS)
def test_cloud_sums_in_numpy_equal_the_compiled_ones(grid, window, sigma, n_signals):
    rng = np.random.default_rng(grid * 100 + window + n_signals)
    half = window / 2
    coords = _coordinates(rng, (7, 12), grid, half)
    coords[:, 0] = 0.0  # the original image, as in a run
    signals = [rng.random(coords.shape) for _ in range(n_signals)]
    compiled = _circle.circle_cloud_sums(coords, signals, grid, half=half, sigma=sigma)
    numpy = _circle_numpy.circle_cloud_sums(coords, signals, grid, half=half, sigma=sigma)
    assert numpy.shape == compiled.shape == (n_signals + 1, grid, grid)
    # Both read a run of images as the difference of two prefix sums; where the run holds only the
    # point's own image (no point), the compiled path keeps that difference's rounding (<= 1e-15)
    # and np.exp may differ from the compiled exp in the last bit: hence the absolute floor.
    np.testing.assert_allclose(numpy, compiled, rtol=1e-12, atol=1e-14)


def test_blocks_of_points_and_targets_do_not_change_the_sums(monkeypatch):
    rng = np.random.default_rng(11)
    coords = _coordinates(rng, (9, 10), 32, 8.0)
    signals = [rng.random(coords.shape)]
    cells = _coordinates(rng, (400, 2), 32, 8.0)
    whole = _circle_numpy.circle_cloud_sums(coords, signals, 32, half=8.0, sigma=5.0)
    values = rng.random(len(cells))
    points = _circle_numpy.circle_point_sums(cells, values, 32, half=8.0, sigma=5.0)
    monkeypatch.setattr(_circle_numpy, "_BLOCK_ELEMENTS", 1)  # one target / one point a block
    np.testing.assert_allclose(_circle_numpy.circle_cloud_sums(coords, signals, 32, half=8.0, sigma=5.0), whole, rtol=1e-12, atol=1e-14)
    for blocked, one in zip(_circle_numpy.circle_point_sums(cells, values, 32, half=8.0, sigma=5.0), points):
        np.testing.assert_allclose(blocked, one, rtol=1e-12, atol=0)


def test_the_compiled_sums_count_their_targets_and_keep_every_bit(monkeypatch):
    """The compiled cloud sums go through the targets in blocks, counting them: the same sums, bit for
    bit, as one kernel call over every target (the Matrices page's numbers do not move), and the
    dispatch names the kernel's loading before the first count."""
    rng = np.random.default_rng(5)
    coords = _coordinates(rng, (45, 9), 32, 8.0)
    signals = [rng.random(coords.shape) for _ in range(2)]
    one_call = np.zeros((3, 32, 32))
    tables = np.ascontiguousarray(np.stack(signals))
    _circle._cloud_lower(np.ascontiguousarray(coords), tables, np.int64(32), np.float64(8.0), np.float64(5.0), one_call)
    one_call = np.tril(one_call) + np.tril(one_call, -1).transpose(0, 2, 1)
    reported = []
    monkeypatch.setattr(_circle_sums, "NUMPY_MAX_WORK", 0)
    blocked = _circle_sums.circle_cloud_sums(coords, signals, 32, half=8.0, sigma=5.0, progress=lambda *call: reported.append(call))
    np.testing.assert_array_equal(blocked, one_call)
    block = -(-45 // _circle.PROGRESS_STEPS)  # 3 targets a block
    counts = [(done, 45, _circle_sums.TARGETS_STEP) for done in range(block, 45 + 1, block)]
    assert reported == [(0, 0, _circle_sums.KERNEL_STEP), *counts]
    np.testing.assert_array_equal(_circle_sums.circle_cloud_sums(coords, signals, 32, half=8.0, sigma=5.0), one_call)  # no progress: the same


def test_a_target_of_one_image_and_an_empty_cloud_reach_nothing():
    coords = np.array([[3.0], [5.5]])
    sums = _circle_numpy.circle_cloud_sums(coords, [np.ones_like(coords)], 16, half=4.0, sigma=2.0)
    np.testing.assert_array_equal(sums, np.zeros((2, 16, 16)))
    weighted, total = _circle_numpy.circle_point_sums(np.empty((0, 2)), np.empty(0), 16, half=4.0, sigma=2.0)
    np.testing.assert_array_equal(weighted, 0.0)
    np.testing.assert_array_equal(total, 0.0)


def test_the_dispatch_takes_numpy_below_the_threshold_and_numba_above(monkeypatch):
    rng = np.random.default_rng(3)
    coords = rng.uniform(0, 32, (4, 9))
    signals = [rng.random(coords.shape)]
    calls = []
    for module in (_circle, _circle_numpy):
        for name in ("circle_point_sums", "circle_cloud_sums"):
            original = getattr(module, name)

            def spy(*args, _original=original, _name=f"{module.__name__.rpartition('.')[2]}.{name}", **kwargs):
                calls.append(_name)
                return _original(*args, **kwargs)

            monkeypatch.setattr(module, name, spy)
    small = _circle_sums.circle_cloud_sums(coords, signals, 32, half=8.0, sigma=5.0)
    _circle_sums.circle_point_sums(coords[:, :2], coords[:, 2], 32, half=8.0, sigma=5.0)
    assert calls == ["_circle_numpy.circle_cloud_sums", "_circle_numpy.circle_point_sums"]
    monkeypatch.setattr(_circle_sums, "NUMPY_MAX_WORK", 0)
    calls.clear()
    large = _circle_sums.circle_cloud_sums(coords, signals, 32, half=8.0, sigma=5.0)
    _circle_sums.circle_point_sums(coords[:, :2], coords[:, 2], 32, half=8.0, sigma=5.0)
    assert calls == ["_circle.circle_cloud_sums", "_circle.circle_point_sums"]
    np.testing.assert_allclose(small, large, rtol=1e-12, atol=1e-14)


def test_the_paper_scale_cloud_stays_compiled():
    # benchmarks/variance.py: 1,705 targets of 32 backgrounds (+ the original), 128 cells, window 32
    assert _circle_numpy.circle_cloud_work(1705, 33, 1, 128, 16.0) > 50 * _circle_sums.NUMPY_MAX_WORK
    assert _circle_numpy.circle_point_work(1_800_480, 16.0) > 50 * _circle_sums.NUMPY_MAX_WORK


# Run in a fresh interpreter: this test process has imported Numba already.
PROBE = """
import json, sys
import numpy as np
from analytics.variance import cloud_matrices, variance_matrix
from analytics.variance.point_cloud import point_cloud

rng = np.random.default_rng(0)
distances = rng.gamma(3.0, 0.1, size=(5, 11))
distances[:, 0] = 0.0
clouds = {"a": point_cloud(distances, rng.random((5, 11))), "b": point_cloud(distances, rng.random((5, 11)))}
matrices = cloud_matrices(clouds)
single = variance_matrix(clouds["a"].points, clouds["a"].values)
print(json.dumps({"numba": sorted(m for m in sys.modules if m.partition(".")[0] == "numba")[:3],
                  "difference": float(np.abs(matrices["a"].matrix - single.matrix).max())}))
"""


def test_a_small_matrix_imports_no_numba():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout.splitlines()[-1])
    assert probe["numba"] == []
    assert probe["difference"] < 1e-12  # the per-target and per-point sums of the same cloud agree
