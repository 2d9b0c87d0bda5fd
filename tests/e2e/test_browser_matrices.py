"""The Matrices page in headless chromium: click a heatmap cell, see the image pairs behind it."""

from __future__ import annotations

import re
import shutil

import pytest
from playwright.sync_api import expect

from analytics.data import custom_label_space
from analytics.models import register_torchscript
from analytics.runs import start_runs
from analytics.workspace import Workspace
from tests.fixtures.models import CORNER_BOXES, TINY_SUITE, RegionNet, insert_suite, save_torchscript, write_labels


@pytest.fixture(scope="module")
def run_server(app_server_factory, e2e_workspace, tmp_path_factory):
    """A copy of the e2e workspace with a finished ``bg-only`` run over ``tiny-suite``, served."""
    folder = tmp_path_factory.mktemp("matrices")
    shutil.copytree(e2e_workspace.root, folder / "ws")
    workspace = Workspace(folder / "ws", create=False)
    labels = custom_label_space(write_labels(folder / "labels.txt"))
    register_torchscript(workspace, "bg-only", checkpoint=save_torchscript(RegionNet(CORNER_BOXES), folder / "bg.pt", seed=2), label_space=labels, input_size=64)
    insert_suite(workspace)
    (run_id,) = start_runs(workspace, ["bg-only"], TINY_SUITE, device="cpu")
    return app_server_factory(workspace), run_id


def test_clicking_a_cell_shows_its_image_pairs(page, run_server):
    server, run_id = run_server
    page.goto(f"{server.url}/Matrices")
    expect(page.get_by_role("heading", name="Matrices")).to_be_visible()
    expect(page.get_by_role("combobox", name="Run")).to_have_value(server.run_label(run_id))
    heatmap = page.locator(".js-plotly-plot").first
    expect(heatmap).to_be_visible(timeout=60_000)  # 128 x 128 cells and the suite's colour scale on first view
    pairs = page.get_by_role("heading", name="Image pairs behind the cell")
    for _ in range(3):  # under load a click can land before the chart takes clicks (whole-suite runs lost one)
        # Click only once the script is idle, at the chart's box as it is now: captions and metrics drawn
        # after the first chart can move it, and a box read earlier then points past the heatmap.
        expect(page.get_by_test_id("stStatusWidgetRunningIcon")).to_have_count(0, timeout=60_000)
        area = heatmap.locator(".nsewdrag").first.bounding_box()
        page.mouse.click(area["x"] + area["width"] * 0.55, area["y"] + area["height"] * 0.45)
        try:
            expect(pairs).to_be_visible(timeout=20_000)
            break
        except AssertionError:
            continue
    expect(pairs).to_be_visible()
    expect(page.get_by_text(re.compile(r"^True-class probability · d\(y_ij\) in"))).to_be_visible()
    images = page.get_by_test_id("stImage")
    expect(images.first).to_be_visible()
    assert images.count() >= 3  # the original and the two images of at least one pair
    expect(page.get_by_test_id("stImageCaption").filter(has_text=re.compile(r"^j: "))).not_to_have_count(0)
