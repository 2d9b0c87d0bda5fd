"""Seconds the dashboard keeps a person waiting (issue 47.8), in headless Debian chromium against a
freshly started ``streamlit run app.py``.

Run from the repository root (a built workspace with finished runs, e.g. the demo's)::

    python -m benchmarks.dashboard_waits --workspace workspace
    python -m benchmarks.dashboard_waits --workspace workspace --repeat 3 --port 8611

Each repeat starts a new server (cold imports, empty caches) and measures, from the moment the
browser asks for the page:

* ``shell_s``: Home's shell: the sidebar's navigation (its Home link) and the "Backdrop" heading;
* ``home_s``: Home drawn to the end (its last section, "Assets and licences");
* ``matrices_shell_s``: after a click on Matrices in the sidebar, the "Matrices" heading;
* ``matrices_first_heatmap_s`` / ``matrices_heatmaps_s``: the first heatmap, then every one of the
  Run tab's (:data:`analytics.runs.SIGNALS`);
* ``matrices_idle_s``: the page drawn to the end;
* ``pairs_s``: after a click into the first heatmap, the "Image pairs behind the cell" heading, and
  ``pairs_in_view``: whether it was inside the window then (1400 x 900) without scrolling;
* ``compare_s``: after the dialog is closed and a click on the "Compare models" tab (drawn only while
  open), its "Difference: candidate − baseline" heading and every chart of the tab.

Prints one JSON object: every repeat's figures, their minimum and maximum, and the load average.
Needs Playwright's Python package and ``/usr/bin/chromium`` (never a downloaded browser).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analytics._choices import SIGNALS
from analytics.team.launch import wait_until_serving
from analytics.workspace import PROJECT_ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]
WIDTH, HEIGHT = 1400, 900
START_TIMEOUT_S = 240
WAIT_MS = 600_000
PAIRS = "Image pairs behind the cell"
COMPARE_TAB, DIFFERENCE = "Compare models", "Difference: candidate − baseline"


def start_server(workspace: Path, port: int, log: Path) -> subprocess.Popen:
    """``streamlit run app.py`` on ``workspace``, started: the caller waits until it serves and stops it."""
    command = [
        sys.executable, "-m", "streamlit", "run", str(PROJECT_ROOT / "app.py"), "--server.headless", "true",
        "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    env = {**os.environ, "BACKDROP_WORKSPACE": str(workspace.resolve())}
    return subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


def idle(page) -> None:
    """Wait until Streamlit's running indicator has shown and gone (a rerun is over)."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stStatusWidgetRunningIcon")).to_have_count(0, timeout=WAIT_MS)


def measure(url: str) -> dict[str, float | bool]:
    from playwright.sync_api import expect, sync_playwright

    found: dict[str, float | bool] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            start = time.perf_counter()
            page.goto(url)
            nav = page.get_by_test_id("stSidebarNav")
            expect(nav.get_by_text("Home", exact=True)).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_role("heading", name="Backdrop")).to_be_visible(timeout=WAIT_MS)
            found["shell_s"] = time.perf_counter() - start
            expect(page.get_by_role("heading", name="In this workspace")).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_role("heading", name="Assets and licences")).to_be_visible(timeout=WAIT_MS)
            found["home_s"] = time.perf_counter() - start
            idle(page)

            start = time.perf_counter()
            nav.get_by_text("Matrices", exact=True).click()
            expect(page.get_by_role("heading", name="Matrices")).to_be_visible(timeout=WAIT_MS)
            found["matrices_shell_s"] = time.perf_counter() - start
            heatmaps = page.locator(".js-plotly-plot")
            expect(heatmaps.first).to_be_visible(timeout=WAIT_MS)
            found["matrices_first_heatmap_s"] = time.perf_counter() - start
            expect(heatmaps.nth(len(SIGNALS) - 1)).to_be_attached(timeout=WAIT_MS)
            found["matrices_heatmaps_s"] = time.perf_counter() - start
            page.wait_for_timeout(500)
            idle(page)
            found["matrices_idle_s"] = time.perf_counter() - start

            heatmap = heatmaps.first
            heatmap.scroll_into_view_if_needed()
            pairs = page.get_by_role("heading", name=PAIRS)
            for _ in range(3):  # a click can land before the chart takes clicks
                area = heatmap.locator(".nsewdrag").first.bounding_box()
                assert area is not None, "the heatmap has no box"
                start = time.perf_counter()
                page.mouse.click(area["x"] + area["width"] * 0.55, area["y"] + area["height"] * 0.45)
                try:
                    expect(pairs).to_be_visible(timeout=120_000)
                    break
                except AssertionError:
                    continue
            found["pairs_s"] = time.perf_counter() - start
            box = pairs.bounding_box()
            found["pairs_in_view"] = box is not None and 0 <= box["y"] and box["y"] + box["height"] <= HEIGHT

            page.keyboard.press("Escape")  # close the pairs' dialog
            expect(pairs).to_have_count(0, timeout=WAIT_MS)
            idle(page)
            start = time.perf_counter()
            page.get_by_role("tab", name=COMPARE_TAB, exact=True).click()
            expect(page.get_by_role("heading", name=DIFFERENCE)).to_be_visible(timeout=WAIT_MS)
            idle(page)
            panel = page.get_by_role("tabpanel")  # the open tab's panel: the closed one's is not in the tree
            expect(panel.locator(".js-plotly-plot").last).to_be_visible(timeout=WAIT_MS)
            found["compare_s"] = time.perf_counter() - start
        finally:
            browser.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, default=PROJECT_ROOT / "workspace")
    parser.add_argument("--port", type=int, default=8611)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    repeats = []
    with tempfile.TemporaryDirectory() as folder:
        for index in range(args.repeat):
            log = Path(folder) / f"server{index}.log"
            server, url = start_server(args.workspace, args.port, log), f"http://127.0.0.1:{args.port}"
            try:
                wait_until_serving(url, process=server, timeout_s=START_TIMEOUT_S, log=log)
                repeats.append(measure(url))
            finally:
                server.terminate()
                server.wait(timeout=30)
    timed = [name for name in repeats[0] if name.endswith("_s")]
    print(json.dumps({
        "repeats": [{name: round(v, 2) if isinstance(v, float) else v for name, v in r.items()} for r in repeats],
        "range_s": {name: [round(min(r[name] for r in repeats), 2), round(max(r[name] for r in repeats), 2)] for name in timed},
        "load_average": round(os.getloadavg()[0], 2),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
