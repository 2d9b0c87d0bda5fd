"""A real model against independent labels: the demo catalogue's ImageNet classes, assigned by a
person to each Tux Paint stamp, not derived from any model's own top-1.

The catalogue's stamps were screened with EfficientNet-Lite0, so the check uses Lite1, which took
no part in choosing them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import analytics.demo.steps as steps
from analytics import demo
from analytics.data import list_targets, load_targets
from analytics.demo import is_fetched
from analytics.demo.steps import DEMO_STEPS
from analytics.models import load_model, register_efficientnet_lite
from analytics.workspace import Workspace


def _assets_ready() -> bool:
    return all(is_fetched(package) for package in demo.load_catalogue().packages)


def _top1_hits(top1: np.ndarray, classes: list[str], indices: dict[str, list[int]]) -> int:
    return sum(int(p) in indices[c] for p, c in zip(top1, classes, strict=True))


@pytest.mark.slow
def test_lite1_recognises_the_stamps_by_their_catalogue_class(tmp_path, monkeypatch):
    if not _assets_ready():
        pytest.skip("demo assets not in the cache; run `python -m analytics fetch-assets`")
    full = demo.load_catalogue()
    one_per_class = [next(t for t in full.targets if t.class_name == c) for c in sorted(full.classes)]
    small = replace(full, targets=one_per_class, digest="one-per-class")
    monkeypatch.setattr(steps, "load_catalogue", lambda *a, **k: small)
    workspace = Workspace(tmp_path / "ws")
    workspace.set_meta("image_size", "240")
    demo.build_demo(workspace, steps=[s for s in DEMO_STEPS if s.name in ("assets", "targets")])
    register_efficientnet_lite(workspace, 1)

    table = list_targets(workspace)
    images, _ = load_targets(workspace, list(table["id"]))
    top1 = load_model(workspace, "efficientnet-lite1", device="cpu").predict(images).probabilities.argmax(axis=1)
    classes = list(table["class_name"])
    hits = _top1_hits(top1, classes, full.classes)
    shuffled = classes[1:] + classes[:1]  # every target paired with another class's label
    print(f"lite1 top-1 on {len(classes)} stamps: {hits} match the catalogue, {_top1_hits(top1, shuffled, full.classes)} a wrong label")
    assert hits >= 0.7 * len(classes)
    assert _top1_hits(top1, shuffled, full.classes) <= 0.2 * len(classes)
