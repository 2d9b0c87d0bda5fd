"""The Backgrounds Challenge page in headless chromium: evaluate, see the variant chart, the example grid and the gallery."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from analytics.data import custom_label_space
from analytics.models import register_torchscript
from analytics.workspace import Workspace
from tests.fixtures.models import CORNER_BOXES, RegionNet, save_torchscript, write_labels


@pytest.fixture(scope="module")
def challenge_server(app_server_factory, e2e_workspace, tmp_path_factory):
    """A copy of the e2e workspace with the ``bg-only`` model registered, served."""
    folder = tmp_path_factory.mktemp("bgchallenge")
    shutil.copytree(e2e_workspace.root, folder / "ws")
    workspace = Workspace(folder / "ws", create=False)
    labels = custom_label_space(write_labels(folder / "labels.txt"))
    register_torchscript(workspace, "bg-only", checkpoint=save_torchscript(RegionNet(CORNER_BOXES), folder / "bg.pt", seed=2), label_space=labels, input_size=64)
    return app_server_factory(workspace)


def test_evaluating_shows_variants_examples_and_gallery(page, challenge_server):
    page.goto(f"{challenge_server.url}/Backgrounds_Challenge")
    expect(page.get_by_role("heading", name="Backgrounds Challenge")).to_be_visible(timeout=90_000)  # first visit imports torch
    page.get_by_text("Search adversarial backgrounds").click()
    page.get_by_role("button", name="Evaluate").click()
    expect(page.get_by_role("heading", name="Accuracy per variant")).to_be_visible(timeout=90_000)
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=60_000)  # plotly.js loads slowly on a busy machine
    expect(page.get_by_role("heading", name="One target across the variants")).to_be_visible()
    expect(page.get_by_test_id("stImageCaption").filter(has_text="Mixed-Same (bg ")).to_be_visible()
    expect(page.get_by_role("heading", name="Adversarial backgrounds")).to_be_visible(timeout=90_000)
    expect(page.get_by_role("button", name="Download every prediction")).to_be_visible()
