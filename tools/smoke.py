"""CI's check of the README's first command: ``bash backdrop.sh serve --smoke`` ends here.

``python tools/smoke.py WORKSPACE PORT -- SERVE_COMMAND...`` starts the dashboard exactly as
``bash backdrop.sh serve`` would (the command after ``--``), waits for Streamlit's health endpoint,
opens Home in headless Debian chromium and checks that it shows the built demo: the "Start here"
finding and, in the workspace overview, as many runs as the workspace holds, with every model that
ran named on the page. Then it stops the server. Exit 0 when Home shows all that, 1 otherwise (with
the server's log), so a demo build or a server start that breaks fails CI before the tests run.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# run as a script (`python tools/smoke.py`), its folder is on sys.path, not the checkout's root
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analytics.team.launch import wait_until_serving  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
START_TIMEOUT_S = 240  # a cold start imports torch and OpenCV on a busy 2-core machine
PAGE_TIMEOUT_MS = 240_000  # Home's finding reads the matrices of every demo run on first load


def stored_runs(workspace: Path) -> tuple[int, list[str]]:
    """The number of finished runs in the workspace and the names of the real models that ran (not the
    zoo's heads, which Home sums up as a curve instead of naming them).

    Read straight from the workspace's database so that the check does not share the code it checks."""
    with sqlite3.connect(f"file:{workspace / 'backdrop.sqlite'}?mode=ro", uri=True) as db:
        count = db.execute("SELECT COUNT(*) FROM runs WHERE status = 'done'").fetchone()[0]
        ran = db.execute("SELECT DISTINCT m.name, m.spec FROM runs r JOIN models m ON m.name = r.model WHERE r.status = 'done' ORDER BY m.name")
        names = [name for name, spec in ran if not json.loads(spec).get("construction")]
    return int(count), names


def check_home(url: str, runs: int, models: list[str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url)
            expect(page.get_by_text("Start here", exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
            metric = page.locator('[data-testid="stMetric"]').filter(has_text="Runs")
            expect(metric.locator('[data-testid="stMetricValue"]')).to_have_text(str(runs), timeout=PAGE_TIMEOUT_MS)
            text = page.locator("body").inner_text()
            missing = [name for name in models if name not in text]
            if missing:
                raise RuntimeError(f"Home does not name the models that ran: {', '.join(missing)}")
        finally:
            browser.close()


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") != 2:
        print("usage: python tools/smoke.py WORKSPACE PORT -- SERVE_COMMAND...", file=sys.stderr)
        return 64
    workspace, port, command = Path(argv[0]), int(argv[1]), argv[3:]
    runs, models = stored_runs(workspace)
    if runs == 0:
        print(f"smoke: the demo build left no finished runs in {workspace}", file=sys.stderr)
        return 1
    url = f"http://127.0.0.1:{port}"
    with tempfile.NamedTemporaryFile("w+", prefix="backdrop-smoke-", suffix=".log", delete=False) as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        started = time.monotonic()
        try:
            wait_until_serving(url, process=server, timeout_s=START_TIMEOUT_S)  # no log: the failure below prints a longer tail of it
            check_home(url, runs, models)
        except Exception as err:  # any failure is CI's failure: say what, and show the server's log
            log.flush()
            print(f"smoke: FAILED after {time.monotonic() - started:.0f} s: {err}\n--- server log ({log.name}) ---", file=sys.stderr)
            print(Path(log.name).read_text(errors="replace")[-8000:], file=sys.stderr)
            return 1
        finally:
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGTERM)
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
    print(f"smoke: Home served the demo ({runs} runs of {', '.join(models)}) in {time.monotonic() - started:.0f} s; server stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
