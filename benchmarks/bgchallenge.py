"""Speed of the Backgrounds Challenge with EfficientNet-Lite0 on CPU; prints one JSON object.

    python -m benchmarks.bgchallenge [--targets 24] [--rounds 3] [--quick]

- ``forward_images_per_s``: the model alone on ready tensors (``benchmarks.inference.forward_rate``:
  the frozen channels-last network of ``LoadedModel.run_batch``, batches of 32).
- ``variant_images_per_s``: all eight variants rendered for every target at 256 px
  (:func:`analytics.robustness.bgchallenge.render`, hard paste), counted over the images made.
- ``adversarial_images_per_s``: :func:`analytics.robustness.bgchallenge.prediction_matrix` (every foreground on
  the P = targets − 1 other Only-BG-T backgrounds, composited at the model's input size and run in
  batches of 32), counted over the composites classified.

Targets: variants >= 10 x forward, adversarial >= 0.8 x forward (the best of ``--rounds`` each).
The targets are synthetic textures with disc masks in 3 classes; timing does not depend on content.
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

from analytics.inference import cpu_threads  # noqa: E402
from analytics.models import load_model, register_efficientnet_lite  # noqa: E402
from analytics.robustness.bgchallenge import (
    VARIANTS,
    challenge_data,
    plan_variant,
    prediction_matrix,  # noqa: E402
    render,
)
from analytics.workspace import Workspace  # noqa: E402
from benchmarks.inference import MODEL, SIZE, _texture, forward_rate  # noqa: E402


def synthetic_data(n_targets: int, seed: int = 0):
    """``n_targets`` textured 256 px targets with off-centre disc masks in classes c0, c1, c2."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:SIZE, :SIZE]
    images = np.stack([_texture(rng) for _ in range(n_targets)])
    centres = rng.integers(SIZE // 3, 2 * SIZE // 3, (n_targets, 2))
    masks = (yy - centres[:, :1, None]) ** 2 + (xx - centres[:, 1:, None]) ** 2 < (SIZE / 5) ** 2
    return challenge_data([f"t{i}" for i in range(n_targets)], [f"c{i % 3}" for i in range(n_targets)], images, masks)


def variant_rate(data) -> float:
    start = time.perf_counter()
    made = sum(len(render(data, plan_variant(data, variant, seed=0))) for variant in VARIANTS)
    return made / (time.perf_counter() - start)


def adversarial_rate(model, data) -> float:
    n = len(data.ids)
    model.run_batch(model.preprocess(data.images[:2]))  # freeze the network first, as forward_rate's warm-up does
    start = time.perf_counter()
    prediction_matrix(model, data, batch_size=32)
    return n * (n - 1) / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=24, help="targets (the adversarial pool is targets - 1)")
    parser.add_argument("--rounds", type=int, default=3, help="repetitions; the best rate of each is kept")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check that the script works")
    args = parser.parse_args(argv)
    n_targets, rounds, forward_batches = (args.targets, args.rounds, 10) if not args.quick else (6, 1, 1)
    data = synthetic_data(n_targets)
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Workspace(Path(tmp) / "ws")
        register_efficientnet_lite(workspace, 0)
        model = load_model(workspace, MODEL, device="cpu")
        rates: dict[str, list[float]] = {"forward": [], "variant": [], "adversarial": []}
        for _ in range(rounds):
            rates["forward"].append(forward_rate(workspace, 32, forward_batches))
            rates["variant"].append(variant_rate(data))
            with cpu_threads(model.device):
                rates["adversarial"].append(adversarial_rate(model, data))
    result = {f"{name}_images_per_s": max(values) for name, values in rates.items()}
    result["variant_vs_forward"] = result["variant_images_per_s"] / result["forward_images_per_s"]
    result["adversarial_vs_forward"] = result["adversarial_images_per_s"] / result["forward_images_per_s"]
    result.update(targets=n_targets, pool=n_targets - 1, rounds=rounds, model=MODEL, size=SIZE)
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}))
    return result


if __name__ == "__main__":
    main()
