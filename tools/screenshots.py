"""Full-page screenshots of a newcomer's pages at 1400 px, for before/after notes on UI work.

Serves a checkout of Backdrop (``--code``, default this one) on a workspace, the way
``bash backdrop.sh serve`` does (its ``--dry-run`` gives the command; no install, no demo build), and
drives headless Debian chromium (Playwright, ``/usr/bin/chromium``; never ``playwright install``)
through Home, Suites (as opened, then an ontology preview), Data (the Import tab, then a zip of
photos imported), Judge, Failures, and the HTML report the checkout's CLI writes. One PNG per shot
in ``--out``; a shot that fails leaves a note in ``--out/errors.txt`` and the rest go on. The server
is stopped at the end. Older checkouts work too: labels a checkout lacks (e.g. "Propose GrabCut
masks") are skipped.

    python tools/screenshots.py --workspace /tmp/ws-copy --out /tmp/shots --photos my-photos.zip
    python tools/screenshots.py --code /tmp/old-checkout --workspace /tmp/ws-copy2 --out /tmp/shots-before ...

Give it a copy of a workspace: opening it migrates the schema, and the pages may write to it.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect, sync_playwright

# run as a script (`python tools/screenshots.py`), its folder is on sys.path, not the checkout's root
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analytics.team.launch import wait_until_serving  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"]
WIDTH = 1400
#: Height of the page's content: the scrollHeight of every scrolling ancestor of the main block
#: (not of inner scrollers such as a data frame's, which are as tall as all their rows).
SCROLL_HEIGHT = """() => {
  let height = document.documentElement.scrollHeight;
  for (let e = document.querySelector('[data-testid=stMainBlockContainer]'); e; e = e.parentElement) {
    if (['auto', 'scroll'].includes(getComputedStyle(e).overflowY)) height = Math.max(height, e.scrollHeight);
  }
  return height;
}"""
SLOW_MS = 600_000  # Home's first load reads every run's matrices; the machine may be shared
START_TIMEOUT_S = 300  # a cold start imports torch and OpenCV on a possibly shared machine


def serve(code: Path, workspace: Path, port: int, log: Path) -> subprocess.Popen:
    """``bash backdrop.sh serve`` of ``code`` on ``workspace`` (its streamlit command), healthy when returned."""
    env = {**os.environ, "BACKDROP_WORKSPACE": str(workspace), "BACKDROP_PORT": str(port)}
    command = subprocess.run(["bash", "backdrop.sh", "serve", "--dry-run"], cwd=code, env=env, check=True, capture_output=True, text=True)
    with log.open("wb") as output:
        server = subprocess.Popen(shlex.split(command.stdout.strip()), cwd=code, env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_until_serving(f"http://127.0.0.1:{port}", process=server, timeout_s=START_TIMEOUT_S, log=log)
    except BaseException:
        server.terminate()
        raise
    return server


def settle(page: Page) -> None:
    """Wait until the script run is over and no element is stale (greyed)."""
    page.wait_for_timeout(1500)  # a click's rerun may not have started yet
    expect(page.get_by_test_id("stStatusWidgetRunningIcon")).to_have_count(0, timeout=SLOW_MS)
    expect(page.locator('[data-testid="stElementContainer"][data-stale="true"]')).to_have_count(0, timeout=SLOW_MS)
    expect(page.get_by_test_id("stSpinner")).to_have_count(0, timeout=SLOW_MS)  # cached work shows one, not the running icon
    page.wait_for_timeout(1500)  # charts and images finish drawing


def full_page(page: Page, path: Path) -> None:
    """A screenshot of the whole page: Streamlit scrolls inside a block of its own, so the viewport
    grows to the tallest scrolling content (again after the resize, which can relayout the page)."""
    page.mouse.move(0, 0)  # no tooltip of the last button clicked
    height = 1000
    for _ in range(3):
        tallest = page.evaluate(SCROLL_HEIGHT)
        if tallest <= height:
            break
        height = int(tallest) + 40
        page.set_viewport_size({"width": WIDTH, "height": height})
        settle(page)  # a resize can rerun parts of a page (components that read the viewport)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": WIDTH, "height": 1000})


def open_page(page: Page, url: str) -> None:
    page.goto(url, timeout=SLOW_MS)
    # the sidebar shows before the page's script has drawn anything: wait for its first element
    expect(page.get_by_test_id("stMain").get_by_test_id("stElementContainer").first).to_be_visible(timeout=SLOW_MS)
    settle(page)


def pick(page: Page, label: str, option: re.Pattern) -> None:
    box = page.get_by_test_id("stSelectbox").filter(has=page.get_by_test_id("stWidgetLabel").get_by_text(label, exact=True))
    box.get_by_role("combobox").click()
    page.get_by_role("option", name=option).first.click()


def suites_preview(page: Page, url: str) -> None:
    """Method ontology, N = 8, Preview: the paper's method as a newcomer first tries it (issue 27 item 1)."""
    open_page(page, f"{url}/Suites")
    pick(page, "Method", re.compile(r"^ontology"))
    page.get_by_role("spinbutton", name="Backgrounds per target (N)").fill("8")
    page.get_by_role("button", name="Preview").click()
    settle(page)


def import_tab(page: Page, url: str) -> None:
    open_page(page, f"{url}/Data")
    page.get_by_role("tab", name="Import", exact=True).click()
    settle(page)


def data_import(page: Page, url: str, photos: Path) -> None:
    """Data → Import: a zip of ordinary photos (no masks), with GrabCut proposals where the checkout offers them."""
    import_tab(page, url)
    panel = page.get_by_role("tabpanel", name="Import", exact=True)
    if panel.get_by_text("Uploaded zip", exact=True).count():
        panel.get_by_text("Uploaded zip", exact=True).click()
        settle(page)
    propose = panel.get_by_text("Propose GrabCut masks for photos without one")
    if propose.count():
        propose.click()
    panel.get_by_test_id("stFileUploader").get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(photos))
    expect(panel.get_by_role("button", name=f"Remove {photos.name}")).to_be_visible(timeout=60_000)
    panel.get_by_role("button", name="Import", exact=True).click()
    settle(page)
    rejected = page.get_by_role("tab", name=re.compile(r"^Rejected \([1-9]"))
    if rejected.count() and not page.get_by_text(re.compile(r"^Review \d+ proposed masks")).count():
        rejected.click()  # the reasons are what a newcomer reads when nothing was imported
        settle(page)


def judge(page: Page, url: str) -> None:
    open_page(page, f"{url}/Judge")
    name = page.get_by_test_id("stForm").get_by_role("textbox", name="Your name")  # the sidebar has one too
    if name.count():
        name.fill("ana")
        page.get_by_role("button", name="Start judging").click()
        settle(page)


def report(code: Path, workspace: Path, out: Path, models: list[str]) -> Path:
    """The checkout's CLI writes the report (``python -m analytics report``)."""
    html = out / "report.html"
    command = [str(code / ".venv/bin/python"), "-m", "analytics", "report", "--model", models[0], "--out", str(html), "--workspace", str(workspace)]
    if models[1:]:
        command += ["--compare", *models[1:]]
    subprocess.run(command, cwd=code, check=True)
    return html


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1], help="the checkout to serve (default: this one)")
    parser.add_argument("--workspace", type=Path, required=True, help="a workspace COPY (it is migrated and may be written)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNGs")
    parser.add_argument("--photos", type=Path, required=True, help="a zip of photos without masks (images/<class>/*.jpg) for Data → Import")
    parser.add_argument("--models", nargs="+", default=["efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2"], help="report: model, then compared ones")
    parser.add_argument("--port", type=int, default=8631)
    args = parser.parse_args()
    code, out = args.code.resolve(), args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{args.port}"
    shots: dict[str, Callable[[Page], None]] = {
        "home": lambda page: open_page(page, url),
        "suites": lambda page: open_page(page, f"{url}/Suites"),
        "suites-ontology-preview": lambda page: suites_preview(page, url),
        "data-import": lambda page: import_tab(page, url),
        "data-masks": lambda page: data_import(page, url, args.photos.resolve()),
        "judge": lambda page: judge(page, url),
        "failures": lambda page: open_page(page, f"{url}/Failures"),
    }
    errors: list[str] = []
    server = serve(code, args.workspace.resolve(), args.port, out / "server.log")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for name, steps in shots.items():
                context = browser.new_context(viewport={"width": WIDTH, "height": 1000})  # a fresh session per shot
                page = context.new_page()
                try:
                    steps(page)
                    full_page(page, out / f"{name}.png")
                    print(f"{name}.png", flush=True)
                except (PlaywrightError, AssertionError):  # one failed shot still leaves the others; the note says why
                    page.screenshot(path=str(out / f"{name}-failed.png"), full_page=True)
                    errors.append(f"{name}:\n{traceback.format_exc()}")
                context.close()
            page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
            page.goto(report(code, args.workspace.resolve(), out, args.models).as_uri())
            page.wait_for_timeout(3000)
            page.screenshot(path=str(out / "report.png"), full_page=True)
            print("report.png", flush=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    if errors:
        (out / "errors.txt").write_text("\n".join(errors))
        raise SystemExit(f"{len(errors)} shot(s) failed; see {out / 'errors.txt'}")


if __name__ == "__main__":
    main()
