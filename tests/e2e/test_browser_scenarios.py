"""The Scenarios page in headless chromium: evaluate two tiny models, see the accuracy table, the
robustness scores, the heat map, the regression and the example grid."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from analytics.data import custom_label_space
from analytics.models import register_torchscript
from analytics.workspace import Workspace
from tests.fixtures.models import CORNER_BOXES, RegionNet, TinyNet, save_torchscript, write_labels


@pytest.fixture(scope="module")
def scenarios_server(app_server_factory, e2e_workspace, tmp_path_factory):
    """A copy of the e2e workspace with the tiny models ``tiny`` and ``bg-only``, served."""
    folder = tmp_path_factory.mktemp("scenarios")
    shutil.copytree(e2e_workspace.root, folder / "ws")
    workspace = Workspace(folder / "ws", create=False)
    labels = custom_label_space(write_labels(folder / "labels.txt"))
    register_torchscript(workspace, "bg-only", checkpoint=save_torchscript(RegionNet(CORNER_BOXES), folder / "bg.pt", seed=2), label_space=labels, input_size=64)
    register_torchscript(workspace, "tiny", checkpoint=save_torchscript(TinyNet(), folder / "tiny.pt"), label_space=labels, input_size=64)
    return app_server_factory(workspace)


def test_evaluating_shows_the_scenario_table(page, scenarios_server):
    page.goto(f"{scenarios_server.url}/Scenarios")
    expect(page.get_by_role("heading", name="Scenarios")).to_be_visible(timeout=120_000)  # cold imports on a busy machine
    expect(page.get_by_text("Choose models and scenarios, then Evaluate.")).to_be_visible()
    page.get_by_role("button", name="Evaluate").click()
    expect(page.get_by_role("heading", name="Accuracy per scenario")).to_be_visible(timeout=120_000)
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()
    expect(page.get_by_role("heading", name="Robustness score")).to_be_visible()
    expect(page.get_by_role("heading", name="Regression: accuracy ~ model + scenario + class")).to_be_visible()
    expect(page.get_by_text("OLS over", exact=False)).to_be_visible()
    assert page.get_by_test_id("stDataFrame").count() == 3  # accuracy, robustness, regression
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    expect(page.get_by_test_id("stImageCaption").filter(has_text="Original — ").first).to_be_visible()
    expect(page.get_by_role("button", name="Per-image predictions (CSV)")).to_be_visible()
