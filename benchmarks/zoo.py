"""Cost of the model zoo on EfficientNet-Lite0; prints one JSON object.

    python benchmarks/zoo.py [--classes 15] [--targets-per-class 4] [--backgrounds 264] [--seeds 3] [--n 16] [--quick]

- ``embedding_s`` / ``embedding_images``: the backbone pass over the zoo's embedding pool (the
  only image work of :func:`analytics.zoo.build_zoo`);
- ``heads_s`` / ``seconds_per_head``: training and registering the heads (5 strengths x 2 augment
  x ``--seeds``) on the cached embeddings; ``rebuild_s``: a second ``build_zoo`` (everything
  cached and registered: nothing is trained);
- ``one_head_s`` / ``all_heads_s``: :func:`analytics.inference.run_models` of one head and of every
  head over the same suite of held-out targets (fresh runs each, after a warm-up run); ``shared_backbone_speedup`` =
  n_heads x one_head_s / all_heads_s (n_heads when the heads cost nothing beside the backbone).

The workspace is synthetic (random textures, disc masks; one origin per 4 backgrounds, so home
groups are scenes of several crops, as in the demo) and lives in a temporary folder. ``--quick``
shrinks every size to check that the script works.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analytics.data import Background, Target, store_backgrounds, store_targets  # noqa: E402
from analytics.inference import run_models  # noqa: E402
from analytics.models import register_efficientnet_lite  # noqa: E402
from analytics.workspace import Workspace, now  # noqa: E402
from analytics.zoo import build_zoo, list_zoo, zoo_layout_of  # noqa: E402

SIZE = 256
CROPS_PER_SCENE = 4


def build_workspace(root: Path, n_classes: int, per_class: int, n_backgrounds: int, seed: int = 0) -> Workspace:
    """Synthetic targets (``per_class`` per class) and backgrounds, with Lite0 registered."""
    rng = np.random.default_rng(seed)
    workspace = Workspace(root)
    workspace.set_meta("image_size", str(SIZE))
    yy, xx = np.mgrid[:SIZE, :SIZE]
    mask = (yy - SIZE / 2) ** 2 + (xx - SIZE / 2) ** 2 < (SIZE / 3) ** 2
    classes = {f"class{c:02d}": [c] for c in range(n_classes)}
    targets = [Target(f"{name}/{i}", name, _texture(rng), mask, origin="synthetic") for name in classes for i in range(per_class)]
    store_targets(workspace, targets, classes=classes)
    store_backgrounds(
        workspace, [Background(f"bg{i:03d}", _texture(rng), origin=f"synthetic:scene{i // CROPS_PER_SCENE}") for i in range(n_backgrounds)]
    )
    register_efficientnet_lite(workspace, 0)
    return workspace


def _texture(rng: np.random.Generator) -> np.ndarray:
    small = rng.integers(0, 256, (SIZE // 16, SIZE // 16, 3), dtype=np.uint8)
    return np.kron(small, np.ones((16, 16, 1), np.uint8))


def heldout_suite(workspace: Workspace, n: int, seed: int = 0) -> str:
    """A suite of every held-out target on ``n`` held-out backgrounds (made-up distances: timing only)."""
    layout = zoo_layout_of(workspace)
    rng = np.random.default_rng(seed)
    n = min(n, len(layout.heldout_backgrounds))
    rows = [
        ("bench", t, position, str(b), float(rng.uniform(0.05, 1)))
        for t in layout.heldout_targets
        for position, b in enumerate(rng.choice(layout.heldout_backgrounds, n, replace=False), start=1)
    ]
    with workspace.transaction() as conn:
        conn.execute("INSERT INTO suites(id, method, n, seed, params, created) VALUES ('bench', 'random', ?, ?, '{}', ?)", (n, seed, now()))
        conn.executemany("INSERT INTO suite_items(suite_id, target_id, position, background_id, distance) VALUES (?, ?, ?, ?, ?)", rows)
    return "bench"


def timed_runs(workspace: Workspace, names: list[str], suite_id: str) -> float:
    """Seconds of a fresh :func:`run_models` of ``names`` (earlier runs of them deleted first)."""
    with workspace.transaction() as conn:
        marks = ",".join("?" * len(names))
        conn.execute(f"DELETE FROM run_images WHERE run_id IN (SELECT id FROM runs WHERE model IN ({marks}))", names)
        conn.execute(f"DELETE FROM runs WHERE model IN ({marks})", names)
    start = time.perf_counter()
    run_models(workspace, names, suite_id, device="cpu")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=15)
    parser.add_argument("--targets-per-class", type=int, default=4)
    parser.add_argument("--backgrounds", type=int, default=264)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n", type=int, default=16, help="backgrounds per held-out target in the run suite")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check that the script works")
    args = parser.parse_args()
    if args.quick:
        args.classes, args.targets_per_class, args.backgrounds, args.seeds, args.n = 3, 2, 12, 1, 2
    with tempfile.TemporaryDirectory() as folder:
        workspace = build_workspace(Path(folder) / "ws", args.classes, args.targets_per_class, args.backgrounds)
        marks: dict[str, float] = {}
        counts: dict[str, int] = {}

        def progress(done: int, total: int, stage: str = "") -> None:
            marks[stage] = time.perf_counter()
            counts[stage] = total

        start = time.perf_counter()
        build_zoo(workspace, seeds=tuple(range(args.seeds)), device="cpu", progress=progress)
        end = time.perf_counter()
        start_rebuild = time.perf_counter()
        build_zoo(workspace, seeds=tuple(range(args.seeds)), device="cpu")
        rebuild = time.perf_counter() - start_rebuild
        names = list_zoo(workspace)["name"].tolist()
        suite_id = heldout_suite(workspace, args.n)
        timed_runs(workspace, names[:1], suite_id)  # warm-up: first-call costs of torch and the caches
        one = timed_runs(workspace, names[:1], suite_id)
        together = timed_runs(workspace, names, suite_id)
    result = {
        "classes": args.classes,
        "targets": args.classes * args.targets_per_class,
        "backgrounds": args.backgrounds,
        "n_heads": len(names),
        "embedding_images": counts.get("embeddings", 0),
        "embedding_s": round(marks["embeddings"] - start, 2),
        "heads_s": round(end - marks["embeddings"], 2),
        "seconds_per_head": round((end - marks["embeddings"]) / len(names), 3),
        "rebuild_s": round(rebuild, 2),
        "one_head_s": round(one, 2),
        "all_heads_s": round(together, 2),
        "shared_backbone_speedup": round(len(names) * one / together, 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
