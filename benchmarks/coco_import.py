"""A COCO import of every instance in bounded memory (issue 48.2); prints one JSON object.

    python -m benchmarks.coco_import                                  # 40,000 instances, 64 px targets
    python -m benchmarks.coco_import --instances 2000 --held          # and the old way beside it
    python -m benchmarks.coco_import --instances 4000 --image-size 256

Writes a synthetic COCO export into a temporary folder: ``--instances`` square polygons (20 px, 2.4 %
of their image) spread in order over ``--images`` noise PNGs of ``--side`` px, in one instances.json.
Then imports it with every instance (``add-targets --layout coco --all-instances``, the limit raised
to the count) into a fresh workspace of ``--image-size`` px images, in a fresh Python process, and
reports that process's ``seconds`` for the import and its peak resident memory (``peak_rss_mib``)
beside its resident memory once the library was imported (``imports_rss_mib``: torch and torchvision
too, which the command line's workspace opening imports). Streamed, the peak
should not grow with the count; ``--held`` also runs the way imports worked before (every target
read into a list by :func:`analytics.data.read_coco`, then stored), whose peak grows by a target's
image and mask (``image_size`` squared times 4 bytes) per instance.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

PROJECT = Path(__file__).resolve().parent.parent
SQUARE = 20  # side of each instance's polygon, px: 2.4 % of a 128 px image, above the default --min-area 1 %

#: Run in a fresh process: the import (the command line's, or read-then-store), timed, then the
#: process's peak resident memory; argv: mode, annotations, images, workspace, instances.
CHILD = """
import json, resource, sys, time
sys.path.insert(0, {project!r})
import analytics.suites  # what the command line's open_workspace imports (torch, torchvision): not the import's own memory
from analytics.cli import main
from analytics.data import store_targets
from analytics.data.classes import resolve_class
from analytics.data.coco import read_coco
from analytics.workspace import Workspace

mode, annotations, images, workspace, instances = sys.argv[1:]
imports_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
if mode == "streamed":
    argv = ["add-targets", "--layout", "coco", "--annotations", annotations, "--images", images, "--all-instances",
            "--max-instances", instances, "--workspace", workspace]
    code = main(argv)
    added = Workspace(workspace).query_one("SELECT COUNT(*) AS n FROM targets")["n"] if code == 0 else 0
else:
    ws = Workspace(workspace)
    size = int(ws.get_meta("image_size"))
    result = read_coco(annotations, images, size=size, all_instances=True, max_instances=int(instances))
    added = store_targets(ws, result.accepted, classes=resolve_class)
seconds = time.perf_counter() - start
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"seconds": seconds, "peak_rss_mib": peak_kib / 1024, "imports_rss_mib": imports_kib / 1024, "added": added}}))
"""


def write_many_instances(root: Path, count: int, *, images: int = 4, side: int = 128, seed: int = 0) -> tuple[Path, Path]:
    """A COCO export of ``count`` square polygons spread in order over ``images`` noise images.

    Annotations are grouped by image, as exporters write them; image ``k`` holds instances
    ``count * (k - 1) // images + 1`` onwards, each a :data:`SQUARE` px square at a random place.

    Returns
    -------
    annotations : Path
        ``root / "instances.json"`` (category ``widget``).
    folder : Path
        ``root / "images"``, the PNGs ``scene1.png`` ... of shape (side, side, 3), uint8.
    """
    rng = np.random.default_rng(seed)
    folder = root / "images"
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for image_id in range(1, images + 1):
        name = f"scene{image_id}.png"
        cv2.imwrite(str(folder / name), rng.integers(0, 255, (side, side, 3), dtype=np.uint8))
        entries.append({"id": image_id, "file_name": name, "height": side, "width": side})
    corners = rng.integers(0, side - SQUARE, (count, 2)).tolist()
    annotations = [
        {
            "id": number + 1,
            "image_id": 1 + number * images // count,
            "category_id": 1,
            "segmentation": [[x, y, x + SQUARE, y, x + SQUARE, y + SQUARE, x, y + SQUARE]],
            "iscrowd": 0,
        }
        for number, (x, y) in enumerate(corners)
    ]
    path = root / "instances.json"
    path.write_text(json.dumps({"images": entries, "categories": [{"id": 1, "name": "widget"}], "annotations": annotations}))
    return path, folder


def run_import(mode: str, annotations: Path, images: Path, workspace: Path, image_size: int, instances: int) -> dict:
    """One import (``streamed``: the command line; ``held``: read everything, then store) in a fresh process."""
    from analytics.workspace import Workspace

    Workspace(workspace).set_meta("image_size", str(image_size))
    code = CHILD.format(project=str(PROJECT))
    argv = [sys.executable, "-c", code, mode, str(annotations), str(images), str(workspace), str(instances)]
    done = subprocess.run(argv, cwd=PROJECT, capture_output=True, text=True, check=True)
    record = json.loads(done.stdout.strip().splitlines()[-1])
    record["arrays_mib"] = sum(p.stat().st_size for p in (workspace / "arrays").rglob("*.npy")) / 2**20
    return {key: round(value, 2) if isinstance(value, float) else value for key, value in record.items()}


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--instances", type=int, default=40_000, help="instances in the JSON, all imported (default 40,000)")
    parser.add_argument("--images", type=int, default=4, help="images they lie on (default 4)")
    parser.add_argument("--side", type=int, default=128, help="side of each image in pixels (default 128)")
    parser.add_argument("--image-size", type=int, default=64, help="the workspace's target size in pixels (default 64; 256 is the default workspace's)")
    parser.add_argument("--held", action="store_true", help="also import the old way: every target held in a list, then stored")
    parser.add_argument("--workdir", default=None, help="folder for the export and the workspaces (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    root = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="backdrop-coco-bench-"))
    try:
        annotations, images = write_many_instances(root / "export", args.instances, images=args.images, side=args.side)
        result: dict = {"instances": args.instances, "images": args.images, "side": args.side, "image_size": args.image_size}
        result["json_mib"] = round(annotations.stat().st_size / 2**20, 2)
        for mode in ("streamed", "held") if args.held else ("streamed",):
            result[mode] = run_import(mode, annotations, images, root / f"ws-{mode}", args.image_size, args.instances)
    finally:
        if not args.workdir:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
