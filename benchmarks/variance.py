"""Seconds to build one RBF variance matrix at the paper's scale, fast path vs the naive reference.

Run from the repository root::

    python -m benchmarks.variance                # 1,800,000 points, 128 x 128, window 32, sigma 10, K 32
    python -m benchmarks.variance --points 200000 --naive-points 5000

Prints one JSON object. The naive reference (``tests/analytics/variance/test_variance.py``: a Python loop
over cells, brute-force distances and K nearest) is timed on the first ``--naive-points`` points
(default 10,000: on 128 x 128 cells it visits 16,384 cells, so the full cloud would take hours) and
extrapolated linearly to the full cloud (its work per cell is linear in the number of points, but
small subsamples fit in the CPU cache, so the extrapolation underestimates); the two results are
compared on the timed points. Wall-clock seconds on a shared machine depend on its
load, so the CPU seconds of the fast path and the load average are reported too. The cloud comes
from :func:`analytics.variance.point_cloud` on random distances and signals of targets with 32
backgrounds each, cut to exactly ``--points``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence

import numpy as np

from analytics.variance import DEFAULT_GRID, DEFAULT_K, PRESETS, point_cloud, variance_matrix
from tests.analytics.variance.test_variance import naive_variance_matrix

N_BACKGROUNDS = 32


def _best_of(repeat: int, run: Callable[[], object]) -> tuple[float, float]:
    """Fastest wall-clock and fastest CPU seconds of ``repeat`` runs."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(wall), min(cpu)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_800_000, help="points in the cloud")
    parser.add_argument("--naive-points", type=int, default=10_000, help="points the naive path is timed on (0: all)")
    parser.add_argument("--grid", type=int, default=DEFAULT_GRID, help=f"cells per axis (default {DEFAULT_GRID})")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="smooth", help="(window, sigma)")
    parser.add_argument("--repeat", type=int, default=3, help="timings of the fast path; the best is kept")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    n_targets = -(-args.points // (N_BACKGROUNDS * (N_BACKGROUNDS + 1)))
    distances = rng.gamma(4.0, 0.1, size=(n_targets, N_BACKGROUNDS + 1))
    distances[:, 0] = 0.0
    signals = rng.random((n_targets, N_BACKGROUNDS + 1))
    start = time.perf_counter()
    cloud = point_cloud(distances, signals)
    cloud_seconds = time.perf_counter() - start
    points, values = cloud.points[: args.points], cloud.values[: args.points]

    window, sigma = PRESETS[args.preset]
    settings = {"grid": args.grid, "window": window, "sigma": sigma, "k": DEFAULT_K}
    fast_seconds, fast_cpu_seconds = _best_of(args.repeat, lambda: variance_matrix(points, values, **settings))

    n_naive = args.points if not args.naive_points else min(args.naive_points, args.points)
    sub_points, sub_values = points[:n_naive], values[:n_naive]
    fast_sub = variance_matrix(sub_points, sub_values, **settings)
    start = time.perf_counter()
    naive_sub = naive_variance_matrix(sub_points, sub_values, d_max=fast_sub.d_max, **settings)
    naive_seconds = time.perf_counter() - start

    result = {
        "points": int(values.size),
        "targets": int(n_targets),
        "backgrounds_per_target": N_BACKGROUNDS,
        **settings,
        "point_cloud_seconds": round(cloud_seconds, 4),
        "fast_seconds": round(fast_seconds, 4),
        "fast_cpu_seconds": round(fast_cpu_seconds, 4),
        "fast_repeats": args.repeat,
        "naive_points_timed": int(n_naive),
        "naive_seconds_on_timed_points": round(naive_seconds, 4),
        "naive_extrapolated": n_naive < values.size,
        "naive_seconds_extrapolated": round(naive_seconds * values.size / n_naive, 2),
        "max_abs_difference_on_timed_points": float(np.abs(fast_sub.matrix - naive_sub).max()),
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
