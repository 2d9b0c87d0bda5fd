"""Galleries of a run (analytics/findings/galleries.py): fooling backgrounds per class, flips, images, saliency.

The hand-made run (model ``tiny``): every target of the tiny workspace gets the backgrounds ``bg00``
(sky tree), ``bg02`` (sky grass), ``bg05`` (sea sand), ``bg10`` (tree grass) at positions 1-4, with
the true-class probabilities of :data:`PROBS` (a probability below 0.5 predicts the other class).
Originals: 0.9 and correct, except ``disc/2``'s (0.3: predicted ``square``). So, by hand:

* discs' biggest drops: disc/0 @4 (0.8), disc/1 @3 (0.7), disc/0 @2 (0.5), disc/1 @1 (0.2), ...; one per
  target: disc/0 @4, disc/1 @3, and apart (its original is wrong) disc/2 @3 (0.15);
* squares' only drops: square/1 @4 (0.6), square/1 @1 (0.1): one per target, square/1 @4;
* flips: disc/0 @4, disc/1 @3, square/1 @4, disc/0 @2 (originals correct, by drop), then disc/2 @1
  (its original was wrong; the composite is right). disc/2 @3 and @4 lower the probability but keep
  the original's (wrong) prediction: no flip.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.findings import ClassGallery, GalleryItem, flips, fooling_backgrounds, item_images, item_saliency
from analytics.runs import compose_images
from analytics.workspace import Workspace, now
from tests.fixtures.suites import BACKGROUND_TABLE

RUN = "gallery-run"
SUITE = "gallery-suite"
BACKGROUNDS = {1: "bg00", 2: "bg02", 3: "bg05", 4: "bg10"}
ORIGINAL = {"disc/2": 0.3}  # default 0.9
PROBS = {
    "disc/0": [0.85, 0.4, 0.95, 0.1],
    "disc/1": [0.7, 0.9, 0.2, 0.9],
    "disc/2": [0.6, 0.3, 0.15, 0.2],
    "square/0": [0.9, 0.9, 0.9, 0.9],
    "square/1": [0.8, 0.9, 0.9, 0.3],
    "square/2": [0.9, 0.9, 0.9, 0.9],
}


def add_gallery_run(workspace: Workspace) -> str:
    """The finished run :data:`RUN` of model ``tiny`` over :data:`SUITE` with the outcomes of :data:`PROBS`."""
    targets = {row["id"]: row["class_name"] for row in workspace.query("SELECT id, class_name FROM targets")}
    assert set(targets) == set(PROBS)
    rows = []
    for target, class_name in targets.items():
        other = "square" if class_name == "disc" else "disc"
        for position, prob in enumerate([ORIGINAL.get(target, 0.9), *PROBS[target]]):
            predicted = class_name if prob >= 0.5 else other
            rows.append((RUN, target, position, predicted, prob, max(prob, 1 - prob), int(predicted == class_name), 0.0, 0.0, 0.0, 0.5 * (position > 0)))
    params = {"keyword_tables": {"background": {"name": BACKGROUND_TABLE}}}
    with workspace.transaction() as conn:
        conn.execute("INSERT INTO suites(id, method, n, seed, params, created) VALUES (?, 'random', 4, 0, ?, ?)", (SUITE, json.dumps(params), now()))
        conn.executemany(
            "INSERT INTO suite_items(suite_id, target_id, position, background_id, distance) VALUES (?, ?, ?, ?, 0.5)",
            [(SUITE, target, position, background) for target in targets for position, background in BACKGROUNDS.items()],
        )
        conn.execute("INSERT INTO runs(id, model, suite_id, status, created, finished) VALUES (?, 'tiny', ?, 'done', ?, ?)", (RUN, SUITE, now(), now()))
        conn.executemany(
            "INSERT INTO run_images(run_id, target_id, position, predicted, true_prob, max_prob, correct, emb_topk_mean, emb_max, emb_mean, distance) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    return RUN


@pytest.fixture
def gallery_workspace(suite_workspace) -> Workspace:
    """``suite_workspace`` (background keyword table ``tiny-backgrounds``) with the hand-made run."""
    add_gallery_run(suite_workspace)
    return suite_workspace


def keys(items: list[GalleryItem]) -> list[tuple[str, int]]:
    return [(item.target_id, item.position) for item in items]


def test_one_composite_per_target_biggest_drop_first_wrong_originals_apart(gallery_workspace):
    """Issue 47.4: a target fills one place (its biggest drop), and a target already wrong on its original is shown apart."""
    gallery = fooling_backgrounds(gallery_workspace, RUN)
    assert list(gallery) == ["disc", "square"] and all(isinstance(part, ClassGallery) for part in gallery.values())
    assert keys(gallery["disc"].hurt) == [("disc/0", 4), ("disc/1", 3)]  # disc/0 @2 and disc/1 @1 are the same targets again
    assert keys(gallery["disc"].already_wrong) == [("disc/2", 3)]  # its original predicts square already
    assert keys(gallery["square"].hurt) == [("square/1", 4)] and gallery["square"].already_wrong == ()  # only composites that lower the probability
    top = gallery["disc"].hurt[0]
    assert (top.run_id, top.class_name, top.background_id, top.original_correct) == (RUN, "disc", "bg10", True)
    assert (top.predicted, top.original_predicted) == ("square", "disc")
    assert (top.true_prob, top.original_true_prob, top.drop) == pytest.approx((0.1, 0.9, 0.8))
    assert gallery["disc"].already_wrong[0].original_correct is False and len(gallery["disc"]) == 3


def test_per_class_classes_and_keyword_narrow_the_gallery(gallery_workspace):
    one = fooling_backgrounds(gallery_workspace, RUN, per_class=1)["disc"]
    assert (keys(one.hurt), keys(one.already_wrong)) == ([("disc/0", 4)], [("disc/2", 3)])  # per_class holds in each part
    assert list(fooling_backgrounds(gallery_workspace, RUN, classes=["square"])) == ["square"]
    sea = fooling_backgrounds(gallery_workspace, RUN, keyword="sea")  # bg05 only
    assert (keys(sea["disc"].hurt), keys(sea["disc"].already_wrong)) == ([("disc/1", 3)], [("disc/2", 3)]) and not sea["square"]
    assert all("sea" in item.keywords for item in sea["disc"].hurt)


def test_background_keywords_are_attached(gallery_workspace):
    items = flips(gallery_workspace, RUN)
    by_background = {item.background_id: item.keywords for item in items}
    assert by_background == {"bg10": ("tree", "grass"), "bg05": ("sea", "sand"), "bg02": ("sky", "grass"), "bg00": ("sky", "tree")}


def test_flips_list_only_changed_predictions_original_correct_first(gallery_workspace):
    found = flips(gallery_workspace, RUN)
    assert keys(found) == [("disc/0", 4), ("disc/1", 3), ("square/1", 4), ("disc/0", 2), ("disc/2", 1)]
    assert all(item.predicted != item.original_predicted for item in found)
    assert (found[-1].original_predicted, found[-1].predicted) == ("square", "disc")
    assert keys(flips(gallery_workspace, RUN, limit=2)) == [("disc/0", 4), ("disc/1", 3)]
    assert keys(flips(gallery_workspace, RUN, class_name="square")) == [("square/1", 4)]
    assert keys(flips(gallery_workspace, RUN, keyword="tree")) == [("disc/0", 4), ("square/1", 4), ("disc/2", 1)]  # bg10, bg00


def test_inputs_are_validated(gallery_workspace):
    with pytest.raises(NotFoundError, match="nope"):
        fooling_backgrounds(gallery_workspace, "nope")
    with pytest.raises(NotFoundError, match="nope"):
        flips(gallery_workspace, "nope")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InvalidInputError, match="per_class"):
            fooling_backgrounds(gallery_workspace, RUN, per_class=bad)
        with pytest.raises(InvalidInputError, match="limit"):
            flips(gallery_workspace, RUN, limit=bad)
    with pytest.raises(InvalidInputError, match="'cat'.*disc, square"):
        fooling_backgrounds(gallery_workspace, RUN, classes=["cat"])
    with pytest.raises(InvalidInputError, match="list of class names"):
        fooling_backgrounds(gallery_workspace, RUN, classes="disc")
    with pytest.raises(InvalidInputError, match="'cat'"):
        flips(gallery_workspace, RUN, class_name="cat")


def test_item_images_are_the_original_and_the_composite_the_run_saw(gallery_workspace):
    item = flips(gallery_workspace, RUN, limit=1)[0]
    original, composite = item_images(gallery_workspace, item)
    expected = compose_images(gallery_workspace, item.target_id, ["", item.background_id])
    assert original.dtype == np.uint8 and original.shape == (64, 64, 3)
    np.testing.assert_array_equal(original, expected[0])
    np.testing.assert_array_equal(composite, expected[1])
    assert not np.array_equal(original, composite)


def test_saliency_maps_for_an_eager_model_and_none_for_torchscript(gallery_workspace, tiny_cnn_workspace):
    item = flips(gallery_workspace, RUN, limit=1)[0]
    maps = item_saliency(gallery_workspace, "tiny-cnn", item)
    assert maps is not None
    for heat in maps:
        assert heat.shape == (64, 64) and heat.dtype == np.float32
        assert heat.min() >= 0.0 and heat.max() <= 1.0
    assert item_saliency(gallery_workspace, "tiny", item) is None  # TorchScript: no hooks for Grad-CAM
    plain = item_saliency(gallery_workspace, "tiny", item, method="saliency")  # gradients need no hooks
    assert plain is not None and plain[0].shape == (64, 64)
    with pytest.raises(InvalidInputError, match="method"):
        item_saliency(gallery_workspace, "tiny", item, method="nope")
