"""The Judge page in a real browser draws two different models of one suite on the same colour scale:
the colour-bar numbers under each of the four matrices are the same for both models, and they are
the suite's frozen scale (probability 0 to 1)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from analytics.figures.matrices import VALUE_TITLE, colour_ticks
from analytics.runs import suite_colour_scale
from analytics.workspace import Workspace
from tests.e2e.conftest import PAGE_TIMEOUT_MS, VIEWPORT
from tests.e2e.test_browser_judge import COLD_START_MS, settle, workspace_with_runs
from ui.judge import JUDGED_SIGNALS, button_key

MODELS = ("tiny", "bg-only")  # a random small CNN and a network that reads only the background
SUITE = "scale-suite"


@pytest.fixture
def scale_workspace(tmp_path_factory) -> Workspace:
    """The tiny workspace with two models of different architectures, each with a finished run over one
    suite; each attempt at the module's one test judges on its own (a rerun finds no model left to judge)."""
    from tests.fixtures.models import CORNER_BOXES, RegionNet, TinyNet

    networks = {"tiny": TinyNet(), "bg-only": RegionNet(CORNER_BOXES)}
    return workspace_with_runs(tmp_path_factory.mktemp("judge-scale-e2e"), networks, SUITE)


def colour_bar_numbers(tab: Page) -> list[list[str]]:
    """The tick labels of the colour bar of each of the four heatmaps, in page order."""
    charts = tab.get_by_test_id("stPlotlyChart")
    expect(charts).to_have_count(len(JUDGED_SIGNALS), timeout=COLD_START_MS)  # matrices and scale are computed on first view
    numbers = []
    for i in range(len(JUDGED_SIGNALS)):
        bar = charts.nth(i).locator(".colorbar")
        expect(bar).to_have_count(1)
        numbers.append([t.strip() for t in bar.locator("text").all_text_contents() if t.strip() and t.strip() != VALUE_TITLE])  # ticks, not the title
    return numbers


def test_judge_page_shows_the_same_colour_bar_numbers_for_two_models(browser, server_per_test, scale_workspace):
    url = server_per_test(scale_workspace).url
    tab = browser.new_context(viewport=VIEWPORT).new_page()
    tab.set_default_timeout(PAGE_TIMEOUT_MS)
    try:
        tab.goto(f"{url}/Judge")
        expect(tab.get_by_role("heading", name="Judge")).to_be_visible(timeout=COLD_START_MS)
        tab.get_by_role("textbox", name="Your name").last.fill("ana")
        tab.get_by_role("button", name="Start judging").click()
        seen = {}
        for done in range(len(MODELS)):
            # the count first, then settle: the count of a rerun can show while that rerun still draws
            # the next model, and a click before it ends is refused as a judgment of the model before
            expect(tab.get_by_text(f"{done} of {len(MODELS)} judged by ana")).to_be_visible()
            settle(tab)
            heading = tab.get_by_role("heading", name=re.compile(r"^Model [0-9A-F]{6}$"))
            expect(heading).to_be_visible()
            seen[heading.inner_text()] = colour_bar_numbers(tab)
            tab.locator(f".st-key-{button_key('borderline')} button").click()
        settle(tab)
        expect(tab.get_by_text(f"You have judged all {len(MODELS)} models")).to_be_visible()

        assert len(seen) == 2, seen  # two different models were shown
        first, second = seen.values()
        assert first == second
        scale = suite_colour_scale(scale_workspace, SUITE)
        assert scale.frozen is not None  # the Judge page froze it when judging started
        assert first == [colour_ticks(scale.tops[signal], scale.bottom(signal))[1] for signal in JUDGED_SIGNALS]  # embedding: from the suite's 1st percentile
        assert first[0] == ["0", "0.5", "1"]  # the probability is drawn from 0 to 1
    finally:
        tab.context.close()
