"""Nothing clipped or truncated at a 1400 px wide window (#47 item 9), on a copy of the demo workspace
(its own fifteen classes, long model and suite names, real runs, keyword tables and an ontology): on
every page that shows a table or a chart there,

* no table hides a column behind a horizontal scroll bar (the grid's scroll width is its width), and no
  multiselect hides chosen items the same way (its chips scroll sideways, the rest faded out),
* no label, radio option, heading or other text is cut with an ellipsis,
* every text of a chart lies inside the chart, no two labels of a chart overlap, and no chart note
  sits on a bar.

The demo takes tens of minutes to build, so it is not built here: ``$BACKDROP_DEMO_WORKSPACE`` names a
built one (CI sets it after the smoke, as for ``tests/test_readme_code.py``); without it the module
skips. One server and one browser tab for the module; each view's screenshot goes to
``$BACKDROP_SHOTS`` when that is set (e.g. ``/tmp/shots1400``), to look at."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import browser_tab
from tests.e2e.test_browser_own_data import LONG_MS, settle

DEMO_ENV = "BACKDROP_DEMO_WORKSPACE"
SHOTS_ENV = "BACKDROP_SHOTS"
VIEWPORT = {"width": 1400, "height": 1000}
SLACK_PX = 1.0  # sub-pixel rounding
#: (page path, tab to click or None): every view of the demo workspace with a table or a chart.
#: Models' Accuracy tab (per-class bars, the overall note in the right margin) is left out: it evaluates a
#: model on every target (tens of seconds on two cores); tests/analytics/figures/test_robustness.py checks its note.
VIEWS = [
    ("", None),  # Home: the story's charts and keyword tables, the image sources
    ("Data", "Classes"),  # the class mapping table
    ("Models", None),  # the registry table
    ("Ontology", None),  # the rules table and its checkbox
    ("Ontology", "Network"),  # the neighbourhood graph's labels
    ("Suites", None),  # the saved suites, the form's checkbox
    ("Run", None),  # the runs table
    ("Matrices", None),  # the four matrices and the pairs table
    ("Saliency", None),  # the metrics table
    ("Failures", None),  # heat map, keyword, level, gallery and baseline tables
    ("Gate", None),  # the gate's form: candidate, baseline, suite and policy pickers, the policy's warning
]
#: Views checked for their form: no table or chart shows there before the user acts (the demo has no gate verdict).
FORMS = {"Gate"}

#: Problems on the shown page: grids scrolled sideways, text cut with an ellipsis, chart text outside
#: its chart, overlapping chart labels, notes on bars.
MEASURE = """() => {
  const shown = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 && e.checkVisibility(); };
  const box = (e) => e.getBoundingClientRect();
  const overlap = (a, b, s) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > s && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > s;
  const main = document.querySelector('[data-testid="stMain"]');
  const problems = [];
  for (const grid of main.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller')) {
    if (shown(grid) && grid.scrollWidth > grid.clientWidth + SLACK) problems.push(`table columns hidden: ${grid.scrollWidth} px of columns in ${grid.clientWidth} px`);
  }
  for (const tags of main.querySelectorAll('[data-testid="stMultiSelectTagsContainer"]')) {
    const label = tags.closest('[data-testid="stMultiSelect"]')?.querySelector('[data-testid="stWidgetLabel"]')?.textContent.trim();
    if (shown(tags) && tags.scrollWidth > tags.clientWidth + SLACK) {
      problems.push(`multiselect ${JSON.stringify(label)}: chosen items hidden (${tags.scrollWidth} px of chips in ${tags.clientWidth} px)`);
    }
  }
  for (const e of main.querySelectorAll('*')) {
    if (getComputedStyle(e).textOverflow === 'ellipsis' && shown(e) && e.scrollWidth > e.clientWidth + SLACK) {
      problems.push(`text cut: ${JSON.stringify(e.textContent.trim().slice(0, 80))} (${e.scrollWidth} px in ${e.clientWidth} px)`);
    }
  }
  main.querySelectorAll('.js-plotly-plot').forEach((plot, n) => {
    if (!shown(plot)) return;
    const frame = box(plot);
    const texts = [...plot.querySelectorAll('text')].filter((t) => t.textContent.trim() && box(t).width > 0);
    for (const t of texts) {
      const r = box(t);
      if (r.left < frame.left - SLACK || r.right > frame.right + SLACK || r.top < frame.top - SLACK || r.bottom > frame.bottom + SLACK) {
        problems.push(`chart ${n}: ${JSON.stringify(t.textContent)} outside the chart`);
      }
    }
    const labels = [...plot.querySelectorAll('.textpoint text, .annotation-text')].filter((t) => t.textContent.trim() && box(t).width > 0);
    labels.forEach((a, i) => labels.slice(i + 1).forEach((b) => {
      if (overlap(box(a), box(b), 2)) problems.push(`chart ${n}: labels ${JSON.stringify(a.textContent)} and ${JSON.stringify(b.textContent)} overlap`);
    }));
    const bars = [...plot.querySelectorAll('.bars .point path')].map(box);
    for (const note of plot.querySelectorAll('.annotation-text')) {
      if (bars.some((bar) => overlap(box(note), bar, 1))) problems.push(`chart ${n}: note ${JSON.stringify(note.textContent)} on a bar`);
    }
  });
  return problems;
}""".replace("SLACK", str(SLACK_PX))


@pytest.fixture(scope="module")
def demo_url(app_server_factory, tmp_path_factory) -> str:
    """A server on a copy of the demo workspace (pages write caches and jobs into theirs)."""
    source = os.environ.get(DEMO_ENV)
    if not source:
        pytest.skip(f"{DEMO_ENV} is not set: build the demo (bash backdrop.sh serve) and set it to its workspace folder")
    if not (Path(source) / "backdrop.sqlite").is_file():
        pytest.fail(f"{DEMO_ENV}={source} holds no workspace (no backdrop.sqlite)")
    copy = tmp_path_factory.mktemp("fit-1400") / "workspace"
    shutil.copytree(source, copy)
    return app_server_factory(copy).url


@pytest.fixture(scope="module")
def tab(browser):
    """One tab for every view (each ``goto`` starts the page afresh; its session's caches are shared)."""
    with browser_tab(browser, VIEWPORT) as page:
        yield page


def drawn(tab: Page) -> None:
    """Settled, and each shown chart drawn twice alike (Plotly's automargin redraws after its first layout)."""
    settle(tab)
    tab.wait_for_function(
        """() => { const now = JSON.stringify([...document.querySelectorAll('.js-plotly-plot text')].map((t) => [t.textContent, t.getBoundingClientRect().x]));
                   const same = window.__fit_last === now; window.__fit_last = now; return same; }""",
        polling=300,
    )


def screenshot(tab: Page, name: str) -> None:
    """The whole main column (``$BACKDROP_SHOTS``): the window is made as tall as the page for the shot."""
    folder = os.environ.get(SHOTS_ENV)
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    height = tab.evaluate("() => document.querySelector('[data-testid=\"stMainBlockContainer\"]').scrollHeight")
    tab.set_viewport_size({"width": VIEWPORT["width"], "height": min(int(height) + 100, 8000)})
    tab.wait_for_timeout(500)
    tab.screenshot(path=str(Path(folder) / f"{name}.png"))
    tab.set_viewport_size(VIEWPORT)


@pytest.mark.parametrize("path, tab_name", VIEWS, ids=[f"{p or 'Home'}{'-' + t if t else ''}" for p, t in VIEWS])
def test_nothing_is_clipped_or_cut(tab, demo_url, path, tab_name):
    tab.goto(f"{demo_url}/{path}")
    expect(tab.locator('[data-testid="stMain"] h1').first).to_be_visible(timeout=LONG_MS)
    settle(tab)
    if tab_name:
        tab.get_by_role("tab", name=tab_name, exact=True).click()
        settle(tab)
    if path == "Failures":  # its tables below the fold render once scrolled to
        tab.get_by_role("heading", name="Against a baseline").scroll_into_view_if_needed()
    if path not in FORMS:
        expect(tab.locator('[data-testid="stDataFrame"]:visible, .js-plotly-plot:visible').first).to_be_visible(timeout=LONG_MS)
    drawn(tab)
    problems = tab.evaluate(MEASURE)
    screenshot(tab, f"{path or 'Home'}{'-' + tab_name if tab_name else ''}")
    assert not problems, "\n".join(problems)
