"""Charts readable at a 1400 px wide window (#42 item 10): on Home, Judge and Matrices, every shown
Plotly chart keeps its axis titles inside the chart (not clipped at its edge), off its axis's tick
labels, and draws axis text at 12 px or more in a dark colour (:func:`analytics.figures.apply_style`).

One server for the module, on a workspace with one finished run; one tab per page at 1400 x 900."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from analytics.workspace import Workspace
from tests.e2e.conftest import browser_tab
from tests.e2e.test_browser_judge import COLD_START_MS, settle, workspace_with_runs

VIEWPORT = {"width": 1400, "height": 900}
#: Page -> the fewest charts it shows (Home: the story's matrix; Judge and Matrices: four signals).
PAGES = {"": 1, "Judge": 4, "Matrices": 4}
MIN_FONT_PX = 12
MIN_CONTRAST = 4.5  # WCAG AA for text on the white chart background
SLACK_PX = 0.5  # sub-pixel rounding of the text boxes

#: Per shown chart: its box, and per axis the boxes of its title and tick labels and the tick text's font.
MEASURE = """() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return {left: r.left, top: r.top, right: r.right, bottom: r.bottom}; };
  return [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.getBoundingClientRect().width > 0).map((plot) => {
    const chart = {box: box(plot), axes: {}};
    for (const axis of ['x', 'y']) {
      const ticks = [...plot.querySelectorAll(`.${axis}axislayer-above .${axis}tick text`)].filter((t) => t.textContent.trim());
      const titles = [...plot.querySelectorAll(`.g-${axis}title text`)].filter((t) => t.textContent.trim());
      chart.axes[axis] = {
        titles: titles.map((t) => ({text: t.textContent, box: box(t)})),
        ticks: ticks.map((t) => ({text: t.textContent, box: box(t)})),
        fonts: [...ticks, ...titles].map((t) => [parseFloat(getComputedStyle(t).fontSize), getComputedStyle(t).fill]),
      };
    }
    return chart;
  });
}"""


@pytest.fixture(scope="module")
def server_url(app_server_factory, tmp_path_factory) -> str:
    """A server on the tiny workspace with one finished run (``bg-only`` over a 4-background suite)."""
    from tests.fixtures.models import CORNER_BOXES, RegionNet

    workspace: Workspace = workspace_with_runs(tmp_path_factory.mktemp("readable-e2e"), {"bg-only": RegionNet(CORNER_BOXES)}, "readable-suite")
    return app_server_factory(workspace).url


@pytest.fixture
def tab(browser):
    with browser_tab(browser, VIEWPORT) as page:
        yield page


def inside(inner: dict, outer: dict) -> bool:
    return (
        inner["left"] >= outer["left"] - SLACK_PX and inner["top"] >= outer["top"] - SLACK_PX
        and inner["right"] <= outer["right"] + SLACK_PX and inner["bottom"] <= outer["bottom"] + SLACK_PX
    )  # fmt: skip


def overlap(a: dict, b: dict) -> bool:
    return min(a["right"], b["right"]) - max(a["left"], b["left"]) > SLACK_PX and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > SLACK_PX


def contrast_on_white(fill: str) -> float:
    """WCAG contrast ratio of an ``rgb(r, g, b)`` colour on white."""
    channels = [int(c) / 255 for c in fill[fill.index("(") + 1 : fill.index(")")].split(",")[:3]]
    r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05)


def measured_charts(tab: Page, fewest: int) -> list[dict]:
    """The shown charts once drawn: at least ``fewest``, each with both axis titles, the same twice running
    (Plotly's automargin redraws a chart after its first layout)."""
    expect(tab.locator(".js-plotly-plot").first).to_be_visible(timeout=COLD_START_MS)  # matrices and colour scale on first view
    settle(tab)
    deadline, previous = time.monotonic() + 60, None
    while True:
        charts = tab.evaluate(MEASURE)
        drawn = len(charts) >= fewest and all(chart["axes"][axis]["titles"] for chart in charts for axis in "xy")
        if (drawn and charts == previous) or time.monotonic() > deadline:
            return charts
        previous = charts
        time.sleep(0.5)


@pytest.mark.parametrize("path", list(PAGES), ids=["Home", "Judge", "Matrices"])
def test_axis_titles_are_whole_and_off_the_tick_labels(tab, server_url, path):
    tab.goto(f"{server_url}/{path}")
    if path == "Judge":
        expect(tab.get_by_role("heading", name="Judge")).to_be_visible(timeout=COLD_START_MS)
        tab.get_by_role("textbox", name="Your name").last.fill("ana")
        tab.get_by_role("button", name="Start judging").click()
    charts = measured_charts(tab, PAGES[path])

    assert len(charts) >= PAGES[path], charts
    problems = []
    for n, chart in enumerate(charts):
        for axis, parts in chart["axes"].items():
            assert parts["titles"] and parts["ticks"], f"chart {n}: no {axis} title or tick labels: {parts}"
            for title in parts["titles"]:
                if not inside(title["box"], chart["box"]):
                    problems.append(f"chart {n}: {axis} title {title['text']!r} {title['box']} is clipped by the chart {chart['box']}")
                problems += [
                    f"chart {n}: {axis} title {title['text']!r} {title['box']} overlaps tick label {tick['text']!r} {tick['box']}"
                    for tick in parts["ticks"] if overlap(title["box"], tick["box"])
                ]  # fmt: skip
            for size, fill in parts["fonts"]:
                if size < MIN_FONT_PX or contrast_on_white(fill) < MIN_CONTRAST:
                    problems.append(f"chart {n}: {axis} axis text {size} px in {fill} (contrast {contrast_on_white(fill):.1f}:1)")
    assert not problems, "\n".join(sorted(set(problems)))
