"""Zips as a newcomer makes them, uploaded in the browser (issue 27.2 and 27.4): a cut-outs zip of one
class folder (`my_ball/*.png`, once "Accepted (0) Rejected (0)" with no reason), then a zip of ordinary
photos without masks (`images/my_cup/*.jpg`), whose GrabCut masks are reviewed in a grid and
imported with one click."""

from __future__ import annotations

import re
import zipfile

import cv2
import numpy as np
import pytest
from playwright.sync_api import expect

from analytics.data import list_targets
from analytics.workspace import Workspace
from tests.e2e.test_browser_own_data import LONG_MS, choose, open_page, pick_radio, settle, upload

SIZE = 64


def encoded(suffix: str, image: np.ndarray) -> bytes:
    to_bgr = cv2.COLOR_RGBA2BGRA if image.shape[2] == 4 else cv2.COLOR_RGB2BGR
    ok, data = cv2.imencode(suffix, cv2.cvtColor(image, to_bgr))
    assert ok
    return data.tobytes()


def disc_photo(seed: int, side: int = 96) -> np.ndarray:
    """A bright disc on dark noise (an object in the middle of a snapshot)."""
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 80, (side, side, 3), dtype=np.uint8)
    cv2.circle(image, (side // 2, side // 2), side // 4, (230, 200, 40), -1)
    return image


@pytest.fixture(scope="module")
def zips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("zips")
    with zipfile.ZipFile(folder / "my_ball.zip", "w") as archive:
        for i in range(2):
            rgba = np.zeros((80, 80, 4), np.uint8)
            cv2.circle(rgba, (40, 40), 25, (200, 60, 30, 255), -1)
            archive.writestr(f"my_ball/ball{i}.png", encoded(".png", rgba))
    with zipfile.ZipFile(folder / "my_cup.zip", "w") as archive:
        for i in range(3):
            archive.writestr(f"images/my_cup/cup{i}.jpg", encoded(".jpg", disc_photo(i)))
    return folder


@pytest.fixture
def empty_server(server_per_test, tmp_path_factory):
    """A server on an empty workspace, one per test run: a rerun (tests/e2e/conftest.py) imports again."""
    workspace = Workspace(tmp_path_factory.mktemp("zip-layouts") / "ws")
    workspace.set_meta("image_size", str(SIZE))
    return server_per_test(workspace)


def test_zips_without_an_enclosing_folder_and_photos_without_masks_import_in_the_browser(page, empty_server, zips):
    open_page(page, f"{empty_server.url}/Data", "Data")
    page.get_by_role("tab", name="Import", exact=True).click()
    panel = page.get_by_role("tabpanel", name="Import", exact=True)
    pick_radio(page, panel, "Target set")
    pick_radio(page, panel, "Uploaded zip")

    # 1. Cut-outs, one class folder at the top of the zip.
    choose(page, panel, "Layout", re.compile("^cutouts"))
    upload(page, panel, "Zip file", zips / "my_ball.zip")
    panel.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_text("Imported from my_ball.zip: 2 new of 2 accepted, 0 rejected")).to_be_visible(timeout=LONG_MS)
    settle(page)

    # 2. Ordinary photos in the folder layout, no masks: GrabCut proposals, reviewed, one dropped.
    choose(page, panel, "Layout", re.compile("^folder"))
    panel.get_by_text("Propose GrabCut masks for photos without one").click()
    settle(page)
    upload(page, panel, "Zip file", zips / "my_cup.zip")  # replaces the first zip
    panel.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_text("3 photos without a mask got a proposed GrabCut mask")).to_be_visible(timeout=LONG_MS)
    settle(page)
    expect(page.get_by_role("heading", name="Review 3 proposed masks")).to_be_visible()
    page.get_by_test_id("stRadio").nth(2 + 2).get_by_text("Drop", exact=True).click()  # after the two import radios
    settle(page)
    page.get_by_role("button", name="Import 2 accepted targets").click()
    expect(page.get_by_text("Imported 2 new of 2 accepted targets with reviewed masks (1 dropped).")).to_be_visible(timeout=LONG_MS)
    settle(page)
    ids = set(list_targets(Workspace(empty_server.workspace))["id"])
    assert ids == {"my_ball/ball0", "my_ball/ball1", "my_cup/cup0", "my_cup/cup1"}
