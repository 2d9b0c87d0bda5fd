"""Seconds to build the RBF variance matrices of a paper-scale run; prints one JSON object.

Run from the repository root::

    OMP_NUM_THREADS=1 python -m benchmarks.variance              # 1,800,480 points, 128 x 128, window 32, sigma 10, K 32
    python -m benchmarks.variance --points 200000 --naive-points 5000

Every figure is given for both window shapes (``windows``: ``circle``, the paper's and the default,
and ``square``); ``seconds`` / ``meets_goal`` at the top are the circle's.

- ``seconds``: :func:`analytics.variance.cloud_matrices` on one signal's cloud, the path a run's
  matrices take (``analytics.runs.run_matrices``); ``four_signals_seconds``: the four signals of a
  run at once (they share the k-d tree and the kernel weights). Goal (issues 28, 41): under 1 s at
  1.8 M points. Median of ``--repeat`` timings, wall clock and CPU seconds (the CPU seconds
  count both threads; the wall clock depends on the machine's load, reported as
  ``load_average_1min``). The circle's compiled sums are compiled (or loaded from Numba's cache)
  once before timing, as a run's job does on its first matrix.
- ``point_path_seconds``: :func:`analytics.variance.variance_matrix` on the same points and values
  (kernel sums per point, for clouds of any shape), timed once; ``max_abs_difference_point_path``
  compares the two.
- The naive reference (``benchmarks/_naive.py``, the one the tests check the library against: a
  Python loop over cells, brute-force distances and K nearest) runs on the first ``--naive-points``
  points (on 128 x 128 cells it visits 16,384 cells, so the full cloud would take hours), is
  extrapolated linearly, and is compared with the point path on those points.
- ``max_abs_difference_circle_square``: the largest change of a cell between the two windows on the
  full cloud.

The clouds come from :func:`analytics.variance.signal_point_clouds` (one per signal, sharing the points)
on random distances and signals of targets with 32 backgrounds each: the fewest whole targets
with at least ``--points`` points.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np

from analytics.variance import (
    DEFAULT_K,
    DEFAULT_MATRIX_GRID,
    PRESETS,
    WINDOW_SHAPES,
    cloud_matrices,
    signal_point_clouds,
    variance_matrix,
)
from benchmarks._naive import naive_variance_matrix

N_BACKGROUNDS = 32
GOAL_SECONDS = 1.0
SIGNALS = ("true_prob", "emb_topk_mean", "emb_max", "emb_mean")


def _median_of(repeat: int, run: Callable[[], object]) -> tuple[float, float, list[float]]:
    """Median wall-clock and median CPU seconds of ``repeat`` runs, and the wall-clock seconds of each."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu), [round(w, 4) for w in wall]


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_800_000, help="least points in the cloud (whole targets of 32 backgrounds)")
    parser.add_argument("--naive-points", type=int, default=10_000, help="points the naive path is timed on (0: all)")
    parser.add_argument("--grid", type=int, default=DEFAULT_MATRIX_GRID, help=f"cells per axis (default {DEFAULT_MATRIX_GRID})")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="smooth", help="(window, sigma)")
    parser.add_argument("--repeat", type=int, default=3, help="timings of each path; the median is kept")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    n_targets = -(-args.points // (N_BACKGROUNDS * (N_BACKGROUNDS + 1)))
    distances = rng.gamma(4.0, 0.1, size=(n_targets, N_BACKGROUNDS + 1))
    distances[:, 0] = 0.0
    start = time.perf_counter()
    clouds = signal_point_clouds(distances, {signal: rng.random((n_targets, N_BACKGROUNDS + 1)) for signal in SIGNALS})
    cloud_seconds = (time.perf_counter() - start) / len(SIGNALS)
    first = clouds[SIGNALS[0]]
    points, values = first.points, first.values

    window, sigma = PRESETS[args.preset]
    settings = {"grid": args.grid, "window": window, "sigma": sigma, "k": DEFAULT_K}
    one = {SIGNALS[0]: first}
    n_naive = values.size if not args.naive_points else min(args.naive_points, values.size)
    sub_points, sub_values = points[:n_naive], values[:n_naive]
    warm = signal_point_clouds(distances[:2], {SIGNALS[0]: first.signals[:2]})
    windows, matrices = {}, {}
    for shape in WINDOW_SHAPES:
        shaped = {**settings, "window_shape": shape}
        cloud_matrices(warm, **shaped)  # compiles (or loads) the circle's sums, as a run's first matrix does
        variance_matrix(points[:10], values[:10], **shaped)
        seconds, cpu_seconds, rounds = _median_of(args.repeat, lambda: cloud_matrices(one, **shaped))
        four_seconds, four_cpu_seconds, _ = _median_of(args.repeat, lambda: cloud_matrices(clouds, **shaped))
        point_seconds, point_cpu_seconds, _ = _median_of(1, lambda: variance_matrix(points, values, **shaped))
        matrices[shape] = cloud_matrices(one, **shaped)[SIGNALS[0]].matrix
        difference = np.abs(matrices[shape] - variance_matrix(points, values, **shaped).matrix).max()
        fast_sub = variance_matrix(sub_points, sub_values, **shaped)
        start = time.perf_counter()
        naive_sub = naive_variance_matrix(sub_points, sub_values, d_max=fast_sub.d_max, **shaped)
        naive_seconds = time.perf_counter() - start
        windows[shape] = {
            "seconds": round(seconds, 4),
            "seconds_rounds": rounds,
            "cpu_seconds": round(cpu_seconds, 4),
            "meets_goal": seconds < GOAL_SECONDS,
            "four_signals_seconds": round(four_seconds, 4),
            "four_signals_cpu_seconds": round(four_cpu_seconds, 4),
            "point_path_seconds": round(point_seconds, 4),
            "point_path_cpu_seconds": round(point_cpu_seconds, 4),
            "max_abs_difference_point_path": float(difference),
            "naive_seconds_on_timed_points": round(naive_seconds, 4),
            "naive_seconds_extrapolated": round(naive_seconds * values.size / n_naive, 2),
            "max_abs_difference_naive_on_timed_points": float(np.abs(fast_sub.matrix - naive_sub).max()),
        }

    result = {
        "points": int(values.size),
        "targets": int(n_targets),
        "backgrounds_per_target": N_BACKGROUNDS,
        **settings,
        "seconds": windows[WINDOW_SHAPES[0]]["seconds"],
        "goal_seconds": GOAL_SECONDS,
        "meets_goal": windows[WINDOW_SHAPES[0]]["meets_goal"],
        "windows": windows,
        "max_abs_difference_circle_square": float(np.abs(matrices["circle"] - matrices["square"]).max()),
        "point_cloud_seconds_per_signal": round(cloud_seconds, 4),
        "repeats": args.repeat,
        "naive_points_timed": int(n_naive),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
