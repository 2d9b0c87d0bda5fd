"""Speed and memory of the inference engine with EfficientNet-Lite0; prints one JSON object.

    OMP_NUM_THREADS=1 python -m benchmarks.inference [--targets 40] [--n 32] [--batch-size 32] [--rss-n N] [--rounds 3] [--ratios-only] [--quick]
    OMP_NUM_THREADS=1 python -m benchmarks.inference --stand-in 8000 --batch-size 256 [--targets 400]

- ``forward_images_per_s``: the model alone on ready (preprocessed) tensors.
- ``suite_images_per_s``: :func:`analytics.inference.run_models` end to end (each batch composited
  over every core directly at the model's input size, then the model, signals written to the
  workspace), counted over the suite's images.
- ``cached_suite_images_per_s``: the same run reading its composites from a filled
  :class:`analytics.inference.composite_cache.CompositeCache` (what every model after the first sees when
  many models run over one suite: the composites were made once).
- ``model_load_seconds``: loading the model and freezing its CPU copy, which every engine run
  pays once (included in ``suite_images_per_s``; ``suite_vs_forward_after_load`` leaves it out,
  which is what the ratio tends to as the suite grows).
- ``naive_images_per_s``: the straightforward per-target script: load one target and its
  backgrounds, composite them, run the eager network (as its package builds it, NCHW,
  ``torch.no_grad()``) on the n + 1 images as one batch, repeat. The engine's lead over it comes
  from a frozen, channels-last copy of the network run in small CPU micro-batches
  (:func:`analytics.models.freeze_for_cpu`), from compositing each target's images with one
  :class:`analytics.data.compose.Cutout` at the model's input size, and from compositing on every core.
- ``peak_rss_mib_50`` / ``peak_rss_mib_200``: peak resident memory of a fresh process running a
  suite of 50 and of 200 targets (streaming means the two stay close).

Each round times the forward pass, the three paths, and the forward pass again; a path's ratio in
that round is its rate over the mean of the two forward rates (same process, model, batch size and
thread count: set ``OMP_NUM_THREADS`` to compare like with like on a shared machine), and each
``*_vs_forward`` is the median over ``--rounds``; rates are medians too. Goals (issue 28):
``suite_vs_forward`` >= 0.9 (at most 33/34 with n = 32: each target's foreground-only image is a
forward pass the suite does not count), suite >= 1.5 x naive, RSS difference < 150 MiB
(``cached_suite_vs_forward`` shows how close the engine comes once compositing is shared).
``--ratios-only`` skips the naive script and the memory runs.

``--stand-in RATE`` times instead a cached suite run (what every model after the first sees in a
repository) against a stand-in accelerator of RATE images/s (``benchmarks/_stand_in.py``: a model
that reports a CUDA device and sleeps its batches; the cache reads, signals and row writes are the
engine's own, its threads placed as for an accelerator). It prints ``cached_vs_stand_in``: how much
of such a device this machine's host side keeps busy, and the engine's phases (as
``benchmarks/gpu.py``'s ``engine_phases``). Not a GPU figure.
The workspace is synthetic (random textures with disc masks; timing does not depend on content) and
lives in a temporary folder. ``--quick`` shrinks every size to check that the script works.
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

from analytics.data import (
    Background,
    Target,
    composite,
    load_backgrounds,
    load_targets,
    store_backgrounds,
    store_targets,
)
from analytics.inference import CompositeCache, cpu_threads, model_threads, run_models
from analytics.models import build_efficientnet_lite, get_model_spec, load_model, register_efficientnet_lite, resize_images
from analytics.workspace import Workspace, now
from benchmarks._rss import peak_rss_mib

MODEL = "efficientnet-lite0"
SIZE = 256
N_BACKGROUNDS = 64
GOAL = 0.9


def build_workspace(root: Path, n_targets: int, n: int, seed: int = 0) -> Workspace:
    """Synthetic targets/backgrounds, Lite0, and suites ``s<k>`` over the first k targets (k = 50, 200, n_targets)."""
    rng = np.random.default_rng(seed)
    workspace = Workspace(root)
    workspace.set_meta("image_size", str(SIZE))
    yy, xx = np.mgrid[:SIZE, :SIZE]
    mask = (yy - SIZE / 2) ** 2 + (xx - SIZE / 2) ** 2 < (SIZE / 3) ** 2
    targets = [Target(f"obj/{i:04d}", "obj", _texture(rng), mask, origin="synthetic") for i in range(n_targets)]
    store_targets(workspace, targets, classes={"obj": [340]})
    store_backgrounds(workspace, [Background(f"bg{i:03d}", _texture(rng), origin="synthetic") for i in range(N_BACKGROUNDS)])
    for k in sorted({min(50, n_targets), min(200, n_targets), n_targets}):
        _add_suite(workspace, f"s{k}", [t.id for t in targets[:k]], n, rng)
    register_efficientnet_lite(workspace, 0)
    return workspace


def _texture(rng: np.random.Generator) -> np.ndarray:
    small = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
    return np.kron(small, np.ones((SIZE // 16, SIZE // 16, 1), np.uint8))


def _add_suite(workspace: Workspace, suite_id: str, target_ids: list[str], n: int, rng: np.random.Generator) -> None:
    with workspace.transaction() as conn:
        conn.execute("INSERT INTO suites(id, method, n, seed, params, created) VALUES (?, 'random', ?, 0, '{}', ?)", (suite_id, n, now()))
        conn.executemany(
            "INSERT INTO suite_items(suite_id, target_id, position, background_id, distance) VALUES (?, ?, ?, ?, ?)",
            [
                (suite_id, target, position, f"bg{b:03d}", float(rng.random()))
                for target in target_ids
                for position, b in enumerate(rng.choice(N_BACKGROUNDS, n, replace=False), start=1)
            ],
        )


def forward_rate(workspace: Workspace, batch_size: int, n_batches: int) -> tuple[float, float]:
    """Images per second of the model alone on a ready batch, and the seconds its loading took
    (reading the weights, then the first batch, which freezes the CPU copy: what each engine run pays once)."""
    start = time.perf_counter()
    model = load_model(workspace, MODEL, device="cpu")
    images = np.random.default_rng(1).integers(0, 256, (batch_size, SIZE, SIZE, 3), dtype=np.uint8)
    batch = model.preprocess(images)
    with cpu_threads(model.device):
        model.run_batch(batch)  # warm-up
        loaded = time.perf_counter()
        for _ in range(n_batches):
            model.run_batch(batch)
        rate = batch_size * n_batches / (time.perf_counter() - loaded)
    return rate, loaded - start - batch_size / rate  # less the warm-up batch's own forward pass


def suite_rate(workspace: Workspace, suite_id: str, batch_size: int, composites: CompositeCache | None = None) -> float:
    """Images per second of a fresh run of the suite (``composites``: read from that cache)."""
    images = workspace.query_one("SELECT COUNT(*) + COUNT(DISTINCT target_id) AS n FROM suite_items WHERE suite_id = ?", (suite_id,))["n"]
    with workspace.transaction() as conn:  # an earlier round's run would be resumed (i.e. skipped)
        conn.execute("DELETE FROM runs WHERE suite_id = ?", (suite_id,))
    start = time.perf_counter()
    run_models(workspace, [MODEL], suite_id, device="cpu", batch_size=batch_size, composites=composites)
    return images / (time.perf_counter() - start)


def naive_rate(workspace: Workspace, suite_id: str) -> float:
    """Composite one target's images, run them, repeat: the plain script the engine replaces.

    The network as its package builds it (eval mode, NCHW tensors) under ``torch.no_grad()``, one
    batch per target (its original + n composites), compositing and model in turn.
    """
    network = build_efficientnet_lite(0)
    size = get_model_spec(workspace, MODEL).input_size
    rows = workspace.query("SELECT target_id, background_id FROM suite_items WHERE suite_id = ? ORDER BY target_id, position", (suite_id,))
    per_target: dict[str, list[str]] = {}
    for row in rows:
        per_target.setdefault(row["target_id"], []).append(row["background_id"])
    count = 0
    with cpu_threads(torch.device("cpu")), torch.no_grad():
        start = time.perf_counter()
        for target_id, background_ids in per_target.items():
            image, mask = load_targets(workspace, [target_id])
            backgrounds = load_backgrounds(workspace, background_ids)
            n = len(background_ids)
            composites = composite(np.repeat(image, n, 0), np.repeat(mask, n, 0), backgrounds)
            batch = resize_images(np.concatenate([image, composites]), size)
            x = (torch.from_numpy(batch).permute(0, 3, 1, 2).float() - 127.0) / 128.0
            torch.softmax(network(x), dim=1).numpy()
            count += len(batch)
        return count / (time.perf_counter() - start)


def peak_rss_child(root: Path, suite_id: str, batch_size: int) -> float:
    """Peak RSS (MiB) of a fresh process that runs ``suite_id``."""
    return peak_rss_mib(
        "from analytics.workspace import Workspace; from analytics.inference import run_models",
        f"run_models(Workspace(sys.argv[1]), [{MODEL!r}], sys.argv[2], device='cpu', batch_size={batch_size})",
        str(root), suite_id,
    )  # fmt: skip


def stand_in_rates(rate: float, n_targets: int, n: int, batch_size: int, rounds: int) -> dict:
    """A cached suite run against a stand-in accelerator of ``rate`` images/s (see the module notes)."""
    from benchmarks._stand_in import StandInModel, stand_in
    from benchmarks.gpu import engine_phases, feed_rate, suite_images, suite_rate

    suite = f"s{n_targets}"
    result: dict = {"stand_in_images_per_s": rate, "targets": n_targets, "n": n, "batch_size": batch_size, "rounds": rounds}
    with tempfile.TemporaryDirectory(prefix="backdrop-bench-") as folder:
        workspace = build_workspace(Path(folder) / "ws", n_targets, n)
        model = StandInModel(get_model_spec(workspace, MODEL), rate)
        cpu = torch.device("cpu")
        with CompositeCache(workspace) as composites:
            feed_rate(workspace, suite, batch_size, model.spec.input_size, cpu, composites)  # fills the cache (untimed)
            result["images"] = suite_images(workspace, suite)
            with stand_in(model):
                ratios = [suite_rate(workspace, [MODEL], suite, batch_size, cpu, composites) / rate for _ in range(rounds + 1)]
                phases = engine_phases(workspace, suite, batch_size, cpu, composites)
    result["cached_vs_stand_in"] = round(statistics.median(ratios[1:]), 3)  # the first round warms up (page cache, threads)
    result["cached_vs_stand_in_rounds"] = [round(v, 3) for v in ratios[1:]]
    result["stand_in_ran"] = model.ran  # images, foreground-only ones included (a check that the engine ran the stand-in)
    result["engine_phases"] = phases["overlapped"]
    result["profile_tottime"] = phases["profile_tottime"]
    result["load_average_1min"] = round(os.getloadavg()[0], 2)
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=40, help="targets in the timed suite (default 40)")
    parser.add_argument("--n", type=int, default=32, help="backgrounds per target (default 32)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rss-n", type=int, default=None, help="backgrounds per target in the 50/200-target memory runs (default --n)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the timings; medians are reported (default 3)")
    parser.add_argument("--ratios-only", action="store_true", help="time only the forward pass and the engine (no naive script, no memory runs)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: check the script runs, timings mean little")
    parser.add_argument("--stand-in", type=float, metavar="RATE", help="time a cached suite run against a stand-in accelerator of RATE images/s instead")
    args = parser.parse_args(argv)
    if args.stand_in is not None:
        result = stand_in_rates(args.stand_in, 4 if args.quick else args.targets, 8 if args.quick else args.n, args.batch_size, 1 if args.quick else args.rounds)
        print(json.dumps(result))
        return result
    n_targets, n, forward_batches = (args.targets, args.n, 20) if not args.quick else (4, 8, 2)
    rss_n = args.rss_n or (n if not args.quick else 2)
    suite = f"s{n_targets}"
    with tempfile.TemporaryDirectory(prefix="backdrop-bench-") as folder:
        timed = build_workspace(Path(folder) / "timed", n_targets, n)
        result = {
            "model": MODEL,
            "targets": n_targets,
            "n": n,
            "batch_size": args.batch_size,
            "torch_threads": model_threads(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "rounds": args.rounds,
            "goal_suite_vs_forward": GOAL,
        }
        with CompositeCache(timed) as composites:
            paths: dict[str, Callable[[], float]] = {
                "suite": lambda: suite_rate(timed, suite, args.batch_size),
                "cached_suite": lambda: suite_rate(timed, suite, args.batch_size, composites),
            }
            if not args.ratios_only:
                paths["naive"] = lambda: naive_rate(timed, suite)
            suite_rate(timed, suite, args.batch_size, composites)  # fills the cache and freezes the CPU copy (untimed)
            rates: dict[str, list[float]] = {"forward": [], **{name: [] for name in paths}}
            ratios: dict[str, list[float]] = {name: [] for name in paths}
            loads, steady = [], []
            for _ in range(args.rounds):
                before, load_before = forward_rate(timed, args.batch_size, forward_batches)
                round_rates = {name: path() for name, path in paths.items()}
                after, load_after = forward_rate(timed, args.batch_size, forward_batches)
                rates["forward"] += [before, after]
                loads += [load_before, load_after]
                for name, rate in round_rates.items():
                    rates[name].append(rate)
                    ratios[name].append(rate / ((before + after) / 2))
                # The suite's rate once the model is loaded: its time less this round's mean loading time.
                n_images = n_targets * (n + 1)
                steady.append(n_images / (n_images / round_rates["suite"] - (load_before + load_after) / 2) / ((before + after) / 2))
        for name, values in rates.items():
            result[f"{name}_images_per_s"] = statistics.median(values)
            result[f"{name}_images_per_s_rounds"] = [round(v, 2) for v in values]
        for name, values in ratios.items():
            result[f"{name}_vs_forward"] = statistics.median(values)
            result[f"{name}_vs_forward_rounds"] = [round(v, 3) for v in values]
        result["model_load_seconds"] = statistics.median(loads)
        result["suite_vs_forward_after_load"] = statistics.median(steady)
        result["suite_vs_forward_after_load_rounds"] = [round(v, 3) for v in steady]
        if not args.ratios_only:
            result["suite_vs_naive"] = statistics.median(s / v for s, v in zip(rates["suite"], rates["naive"]))
            memory = build_workspace(Path(folder) / "memory", 200, rss_n)
            for k in (50, 200):
                result[f"peak_rss_mib_{k}"] = peak_rss_child(memory.root, f"s{k}", args.batch_size)
            result["rss_difference_mib"] = result["peak_rss_mib_200"] - result["peak_rss_mib_50"]
    result["meets_goal"] = result["suite_vs_forward"] >= GOAL
    result["load_average_1min"] = round(os.getloadavg()[0], 2)
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}))
    return result


if __name__ == "__main__":
    main()
