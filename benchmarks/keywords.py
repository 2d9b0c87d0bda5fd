"""Keyword extraction and pool screening against the keyword model's forward rate; prints one JSON object.

    OMP_NUM_THREADS=1 python -m benchmarks.keywords [--targets 16] [--batch-size 32] [--rounds 3] [--quick]
    OMP_NUM_THREADS=1 python -m benchmarks.keywords --stand-in 8000 --batch-size 256 [--pool 1024]

Both run every image as 1 + 3 x 3 views (the whole image and a 3 x 3 grid of patches, each
resized to the model's input) through EfficientNet-Lite0
(:func:`analytics.keywords.view_probabilities`), so their speed is counted in views per second:

- ``forward_views_per_s``: the model alone, :meth:`LoadedModel.run_batch` on a ready
  (preprocessed) batch of ``--batch-size`` views, as the keyword path calls it.
- ``background_keywords_views_per_s``: :func:`analytics.keywords.compute_keywords` over the
  workspace's backgrounds (reading the images, cutting and resizing the views, the model, the
  table written to the workspace).
- ``target_keywords_views_per_s``: the same over the targets (object filled first).
- ``screening_views_per_s``: :func:`analytics.suites.screen_pool` scoring every background afresh
  (views, model, the per-view probabilities written to the result cache).

``--stand-in RATE`` times instead the pool's keyword pass against a stand-in accelerator: a model
that reports a CUDA device and sleeps ``len(batch) / RATE`` seconds a batch (freeing the CPU as a
GPU does), over ``--pool`` more backgrounds, with the pool's reads and writes beside the model (as
on an accelerator, ``keywords.view_cache.computed_views``) and in line. It prints
``beside_vs_stand_in`` / ``in_line_vs_stand_in``: how much of a device of that rate this machine's
host side keeps busy. The view cutting, reads and writes are real; only the device is not.

Each round times the forward pass, the three paths, and the forward pass again; a path's ratio
in that round is its rate over the mean of the two forward rates, and the ratio reported is the
median over ``--rounds``; ``*_vs_forward_cpu`` is the same ratio of rates per CPU second of the
process (every path is single-threaded under ``OMP_NUM_THREADS=1``, so on a machine shared with
other work it shows what wall clocks blur) (one process, one model, one batch size, one thread count: set
``OMP_NUM_THREADS`` to compare like with like on a shared machine). Goal (issue 28): every ratio
>= 0.8. The workspace is synthetic (``benchmarks/inference.py``'s textures with disc masks, 256 px).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analytics.data import list_classes
from analytics.keywords import ClassifierPatchBackend, compute_keywords
from analytics.models import load_model
from analytics.suites import screen_pool
from analytics.workspace import Workspace
from benchmarks.inference import MODEL, N_BACKGROUNDS, build_workspace

GOAL = 0.8
VIEWS = 1 + 3 * 3  # the keyword backend's and the screening's default grid


class _Clock:
    """Wall-clock and CPU seconds (all threads of the process) since it was made."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def rates(self, count: int) -> tuple[float, float]:
        """``count`` per wall-clock second and per CPU second."""
        return count / (time.perf_counter() - self.wall), count / (time.process_time() - self.cpu)


def forward_rate(workspace: Workspace, batch_size: int, n_batches: int) -> tuple[float, float]:
    """Views per second of the keyword model alone on a ready batch of ``batch_size`` views."""
    model = load_model(workspace, MODEL, device="cpu")
    side = model.spec.input_size
    batch = model.preprocess(np.random.default_rng(1).integers(0, 256, (batch_size, side, side, 3), dtype=np.uint8))
    model.run_batch(batch)  # warm-up (freezes the CPU copy)
    clock = _Clock()
    for _ in range(n_batches):
        model.run_batch(batch)
    return clock.rates(batch_size * n_batches)


def keywords_rate(workspace: Workspace, backend: ClassifierPatchBackend, item_kind: str, batch_size: int) -> tuple[float, float]:
    """Views per second of a fresh keyword table of every item of ``item_kind``."""
    with workspace.transaction() as conn:  # a stored table, or the pool's cached views (screening stores them), would be reused
        conn.execute("DELETE FROM keyword_tables WHERE item_kind = ?", (item_kind,))
        conn.execute("DELETE FROM cache WHERE key LIKE 'screening/%'")
    table_rows = "targets" if item_kind == "target" else "backgrounds"
    n_items = workspace.query_one(f"SELECT COUNT(*) AS n FROM {table_rows}")["n"]
    clock = _Clock()
    compute_keywords(workspace, backend=backend, item_kind=item_kind, batch_size=batch_size)
    return clock.rates(n_items * VIEWS)


def screening_rate(workspace: Workspace, batch_size: int) -> tuple[float, float]:
    """Views per second of screening every background afresh."""
    with workspace.transaction() as conn:  # cached views would be reused
        conn.execute("DELETE FROM cache WHERE key LIKE 'screening/%'")
    clock = _Clock()
    screen_pool(workspace, model=MODEL, batch_size=batch_size, device="cpu")
    return clock.rates(N_BACKGROUNDS * VIEWS)


def stand_in_rates(rate: float, pool: int, batch_size: int, rounds: int) -> dict:
    """The pool's keyword pass against a stand-in accelerator of ``rate`` views/s (see the module notes)."""
    from analytics.keywords import view_cache
    from benchmarks._stand_in import StandInModel, stand_in
    from benchmarks.gpu import add_pool

    ratios: dict[str, list[float]] = {"beside": [], "in_line": []}
    with tempfile.TemporaryDirectory(prefix="backdrop-bench-") as folder:
        workspace = build_workspace(Path(folder) / "ws", 2, n=2)
        add_pool(workspace, pool)
        model = StandInModel(load_model(workspace, MODEL, device="cpu").spec, rate)
        backend = ClassifierPatchBackend(model, batch_size=batch_size, exclude_classes=list_classes(workspace))
        overlapped = view_cache._overlapped
        try:
            with stand_in(model):
                for _ in range(rounds + 1):  # the first round warms up (page cache, threads)
                    for name in ratios:
                        view_cache._overlapped = lambda device, beside=(name == "beside"): beside
                        ratios[name].append(keywords_rate(workspace, backend, "background", batch_size)[0] / rate)
        finally:
            view_cache._overlapped = overlapped
    result = {"stand_in_views_per_s": rate, "backgrounds": pool + N_BACKGROUNDS, "batch_size": batch_size, "rounds": rounds, "stand_in_ran": model.ran}
    for name, values in ratios.items():
        result[f"{name}_vs_stand_in"] = round(statistics.median(values[1:]), 3)
        result[f"{name}_vs_stand_in_rounds"] = [round(v, 3) for v in values[1:]]
    result["load_average_1min"] = round(os.getloadavg()[0], 2)
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=16, help=f"targets of the workspace (it has {N_BACKGROUNDS} backgrounds)")
    parser.add_argument("--batch-size", type=int, default=32, help="views per forward pass (the default of both paths)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each ratio is the median over them (default 3)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: check the script runs, timings mean little")
    parser.add_argument("--stand-in", type=float, metavar="RATE", help="time the pool's keyword pass against a stand-in accelerator of RATE views/s instead")
    parser.add_argument("--pool", type=int, default=1024, help="backgrounds added for --stand-in (default 1024)")
    args = parser.parse_args(argv)
    if args.stand_in is not None:
        result = stand_in_rates(args.stand_in, 64 if args.quick else args.pool, args.batch_size, 1 if args.quick else args.rounds)
        print(json.dumps(result))
        return result
    n_targets, forward_batches = (args.targets, 10) if not args.quick else (2, 2)
    paths: dict[str, Callable[[Workspace, ClassifierPatchBackend], tuple[float, float]]] = {
        "background_keywords": lambda ws, backend: keywords_rate(ws, backend, "background", args.batch_size),
        "target_keywords": lambda ws, backend: keywords_rate(ws, backend, "target", args.batch_size),
        "screening": lambda ws, backend: screening_rate(ws, args.batch_size),
    }
    with tempfile.TemporaryDirectory(prefix="backdrop-bench-") as folder:
        workspace = build_workspace(Path(folder) / "ws", n_targets, n=2)
        backend = ClassifierPatchBackend(
            load_model(workspace, MODEL, device="cpu"), batch_size=args.batch_size, exclude_classes=list_classes(workspace)
        )
        for path in paths.values():  # warm-up: the frozen CPU copy, the page cache
            path(workspace, backend)
        rates: dict[str, list[float]] = {"forward": [], **{name: [] for name in paths}}
        ratios: dict[str, list[float]] = {name: [] for name in paths}
        cpu_ratios: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(args.rounds):
            before = forward_rate(workspace, args.batch_size, forward_batches)
            round_rates = {name: path(workspace, backend) for name, path in paths.items()}
            after = forward_rate(workspace, args.batch_size, forward_batches)
            rates["forward"] += [before[0], after[0]]
            for name, (wall, cpu) in round_rates.items():
                rates[name].append(wall)
                ratios[name].append(wall / ((before[0] + after[0]) / 2))
                cpu_ratios[name].append(cpu / ((before[1] + after[1]) / 2))
    result: dict = {
        "model": MODEL,
        "views_per_image": VIEWS,
        "targets": n_targets,
        "backgrounds": N_BACKGROUNDS,
        "batch_size": args.batch_size,
        "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "rounds": args.rounds,
        "goal": GOAL,
    }
    for name, values in rates.items():
        result[f"{name}_views_per_s"] = round(statistics.median(values), 2)
        result[f"{name}_views_per_s_rounds"] = [round(v, 2) for v in values]
    for name, values in ratios.items():
        result[f"{name}_vs_forward"] = round(statistics.median(values), 3)
        result[f"{name}_vs_forward_rounds"] = [round(v, 3) for v in values]
        result[f"{name}_vs_forward_cpu"] = round(statistics.median(cpu_ratios[name]), 3)
    result["meets_goal"] = all(result[f"{name}_vs_forward"] >= GOAL for name in paths)
    result["load_average_1min"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
