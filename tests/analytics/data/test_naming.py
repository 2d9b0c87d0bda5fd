"""Background ids as a person reads them: the photo and its crop (issue 27.10)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from analytics.data import background_label, crop_id, read_backgrounds


def test_a_crop_reads_as_the_photo_and_where_it_was_cut():
    assert crop_id("ColorfulCups", 64, 30, 742) == "ColorfulCups@64,30,742"
    assert background_label("ColorfulCups@64,30,742") == "ColorfulCups, 742 px crop at top 64, left 30"
    assert background_label(crop_id("Beach at dusk", 0, 480, 1600)) == "Beach at dusk, 1600 px crop at top 0, left 480"


@pytest.mark.parametrize("background_id", ["beach", "bg03", "me@home", "a@1,2", "photo@x,1,2"])
def test_other_ids_are_shown_as_they_are(background_id):
    assert background_label(background_id) == background_id


def test_imported_photos_cut_into_crops_get_crop_ids(tmp_path):
    cv2.imwrite(str(tmp_path / "street.png"), np.random.default_rng(0).integers(0, 255, (120, 200, 3), dtype=np.uint8))
    result = read_backgrounds(tmp_path, size=64, crops_per_photo=2, seed=0)
    assert len(result.accepted) == 2
    for background in result.accepted:
        top, left, side = background.crop
        assert background.id == crop_id("street", top, left, side)
        assert background_label(background.id) == f"street, {side} px crop at top {top}, left {left}"
