"""End-to-end fixtures: a real ``streamlit run app.py`` server on a workspace, and headless Debian
chromium driven by Playwright (sync API). Later browser tests reuse them:

* ``app_server_factory(workspace)`` starts (once per workspace per test module) a server and
  returns an :class:`AppServer` with its ``url``; the module's servers stop when its tests end, so
  no more than one module's servers run at a time (each is a Python process of ~1 GB with torch
  loaded: kept for the whole session, 15 of them filled 18 GB);
* ``server_per_test(workspace)``: the same for servers one test uses, stopped when it ends;
* ``e2e_workspace`` is a small ready workspace (2 classes x 3 targets, 12 backgrounds, 64 px), and
  ``app_url`` the URL of a server on it (per module);
* ``page`` is a fresh browser tab (own context, so no session state leaks between tests); ``role_page``
  is a module's tab of a test's ``role`` parameter, kept for the module (sign in once per role).

Every test collected under ``tests/e2e`` gets the ``e2e`` marker (``pytest -m "not e2e"`` skips them)
and is run once more if it fails (pytest-rerunfailures' ``flaky``): a walk in a real browser on a
shared 2-core machine loses a click or an upload now and then (the websocket trace showed the request
never sent), and CI gets one try. A rerun is no pass in silence: the summary lists it as ``R``, and a
rerun that fails too starts its message with the first attempt's failure. A test that writes to its
workspace takes a fresh one per attempt (function-scoped fixtures), or, where the module's tests share
one server, names what it writes after its ``attempt``, so that a rerun is not refused or miscounted
by what the first attempt saved; ``pytest -p tests.e2e.second_attempt`` reruns every test to check that.
Playwright's bundled browsers are never installed: the tests use ``/usr/bin/chromium`` and skip,
saying so, where it is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from analytics.data import store_backgrounds, store_targets
from analytics.runs import list_runs
from analytics.team import add_user
from analytics.team.launch import wait_until_serving
from analytics.workspace import ENV_VAR, PROJECT_ROOT, Workspace
from tests.fixtures.workspace import CLASSES, SIZE, make_background, make_target

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
SERVER_START_TIMEOUT_S = 120  # cold imports of torch/OpenCV on a shared 2-core machine
PAGE_TIMEOUT_MS = 30_000
VIEWPORT = {"width": 1400, "height": 1000}
#: Password of the analyst ``al`` on :func:`team_server`.
TEAM_PASSWORD = "correct horse"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: end-to-end tests in a real headless browser")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.flaky(reruns=1))


_EARLIER_FAILURES = pytest.StashKey[list[str]]()
FIRST_FAILURE_LINES = 60  # the message, a websocket trace and the test's own lines


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A failure after a rerun starts with the first attempt's failure: the rerun may fail for a reason
    of its own (what the first attempt left behind), and CI's excerpt shows the final failure's start
    only, where the first attempt's traceback would be lost."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.failed or report.when != "call":
        return
    earlier = item.stash.setdefault(_EARLIER_FAILURES, [])
    text = str(report.longrepr)
    if earlier:
        report.longrepr = "".join(f"attempt {n} failed first:\n{first}\n\n" for n, first in enumerate(earlier, 1)) + f"then the rerun failed:\n{text}"
    earlier.append(_essential(text))


def _essential(failure: str) -> str:
    """The lines of a failure that say what failed: the test's own source lines (``>``), the error
    lines (``E``, without Playwright's page snapshot) and file positions, at most
    :data:`FIRST_FAILURE_LINES` of them."""
    lines, in_snapshot = [], False
    for line in failure.splitlines():
        in_snapshot = "Aria snapshot:" in line or (in_snapshot and line.startswith("E "))
        if not in_snapshot and line.startswith((">", "E ", "tests/")):
            lines.append(line)
    return "\n".join(lines[:FIRST_FAILURE_LINES])


@dataclass(frozen=True)
class AppServer:
    """A running ``streamlit run app.py`` on ``workspace``; its output goes to ``log``."""

    url: str
    workspace: Path
    process: subprocess.Popen
    log: Path

    def run_label(self, run_id: str) -> str:
        """How the pages show run ``run_id`` of this server's workspace (``analytics.runs.run_labels``)."""
        return str(list_runs(Workspace(self.workspace, create=False)).set_index("id").loc[run_id, "label"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(workspace: Path, log_dir: Path, *, port: int | None = None, options: Sequence[str] = ()) -> AppServer:
    """Start the dashboard (on ``port``, default a free one, with more ``streamlit run`` options) and
    wait until ``/_stcore/health`` answers ``ok``."""
    port = free_port() if port is None else port
    log = log_dir / f"streamlit-{port}.log"
    command = [
        sys.executable, "-m", "streamlit", "run", str(PROJECT_ROOT / "app.py"),
        "--server.headless", "true",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false",
        *options,
    ]  # fmt: skip
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=PROJECT_ROOT, env={**os.environ, ENV_VAR: str(workspace)}, stdout=output, stderr=subprocess.STDOUT
        )
    server = AppServer(f"http://127.0.0.1:{port}", workspace, process, log)
    try:
        wait_until_serving(server.url, process=process, timeout_s=SERVER_START_TIMEOUT_S, log=log)
    except BaseException:
        stop_server(server)
        raise
    return server


def stop_server(server: AppServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's chromium, or a skip that says how to get it."""
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) to run browser tests")
    return CHROMIUM


@contextmanager
def _servers(log_dir: Path) -> Iterator[Callable[[Workspace | Path], AppServer]]:
    """``start(workspace) -> AppServer``: one server per workspace, all stopped when the block ends."""
    servers: dict[Path, AppServer] = {}

    def start(workspace: Workspace | Path) -> AppServer:
        root = Path(workspace.root if isinstance(workspace, Workspace) else workspace).resolve()
        if root not in servers:
            servers[root] = start_server(root, log_dir)
        return servers[root]

    try:
        yield start
    finally:
        for server in servers.values():
            stop_server(server)


@pytest.fixture(scope="module")
def app_server_factory(chromium, tmp_path_factory) -> Iterator[Callable[[Workspace | Path], AppServer]]:
    """``start(workspace) -> AppServer``: one server per workspace, stopped when the module's tests end."""
    with _servers(tmp_path_factory.mktemp("streamlit-logs")) as start:
        yield start


@pytest.fixture
def server_per_test(chromium, tmp_path_factory) -> Iterator[Callable[[Workspace | Path], AppServer]]:
    """``start(workspace) -> AppServer`` for servers one test uses: stopped when the test ends."""
    with _servers(tmp_path_factory.mktemp("streamlit-logs")) as start:
        yield start


@pytest.fixture(scope="session")
def e2e_workspace(tmp_path_factory) -> Workspace:
    """The ``tiny_workspace`` contents, built once per session for the servers."""
    rng = np.random.default_rng(0)
    workspace = Workspace(tmp_path_factory.mktemp("e2e") / "ws")
    workspace.set_meta("image_size", str(SIZE))
    store_targets(workspace, [make_target(c, i, rng) for c in CLASSES for i in range(3)], classes=CLASSES)
    store_backgrounds(workspace, [make_background(i, rng) for i in range(12)])
    return workspace


@pytest.fixture
def team_server(server_per_test, e2e_workspace, tmp_path, monkeypatch) -> AppServer:
    """A team-mode server on a copy of :func:`e2e_workspace` with one account: the analyst ``al`` (:data:`TEAM_PASSWORD`)."""
    copy = tmp_path / "team-ws"
    shutil.copytree(e2e_workspace.root, copy)
    add_user(Workspace(copy, create=False), "al", "analyst", TEAM_PASSWORD)
    monkeypatch.setenv("BACKDROP_TEAM", "1")  # inherited by the server started now
    return server_per_test(copy)


@pytest.fixture(scope="module")
def app_url(app_server_factory, e2e_workspace) -> str:
    return app_server_factory(e2e_workspace).url


@pytest.fixture(scope="session")
def browser(chromium):
    from playwright.sync_api import expect, sync_playwright

    # A page's first visit imports torch in the server (seconds on a busy 2-core machine): give
    # assertions the same patience as page actions instead of Playwright's 5 s default.
    expect.set_options(timeout=PAGE_TIMEOUT_MS)

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@contextmanager
def browser_tab(browser, viewport: dict = VIEWPORT) -> Iterator:
    """A new tab in its own browser context (a fresh Streamlit session) of ``viewport``'s size."""
    context = browser.new_context(viewport=viewport)
    tab = context.new_page()
    tab.set_default_timeout(PAGE_TIMEOUT_MS)
    try:
        yield tab
    finally:
        context.close()


@contextmanager
def traced_tab(browser) -> Iterator:
    """:func:`browser_tab` with a :class:`WebsocketTrace` as its ``websocket_trace`` (read by helpers that
    put it in their failure message, tests/e2e/test_browser_own_data.py)."""
    with browser_tab(browser) as tab:
        tab.websocket_trace = WebsocketTrace(tab)
        yield tab


def print_trace(tab) -> None:
    """The tab's trace on the test's output: pytest shows it only when the test fails."""
    print("websocket trace (seconds since the tab opened):\n" + tab.websocket_trace.dump())


@pytest.fixture
def page(browser):
    """A new tab in its own browser context (a fresh Streamlit session), with a :class:`WebsocketTrace`
    printed at the end (pytest shows it only when the test fails)."""
    with traced_tab(browser) as tab:
        yield tab
        print_trace(tab)


@pytest.fixture(scope="module")
def tabs_by_role(browser) -> Iterator[Callable[[str], object]]:
    """``tab(role) -> Page``: one traced tab (own browser context) per role, kept for the module's tests,
    so that a role signs in once per module rather than once per test (``tests/e2e/roles.py``'s
    ``go_to`` follows the sidebar while the tab is signed in). Streamlit's session state carries from
    one test to the next; ``go_to`` signs in afresh where the tab already shows the test's page (a rerun)."""
    tabs: dict[str, object] = {}
    with ExitStack() as stack:

        def tab(role: str):
            if role not in tabs:
                tabs[role] = stack.enter_context(traced_tab(browser))
            return tabs[role]

        yield tab


@pytest.fixture
def role_page(tabs_by_role, role):
    """The module's tab of ``role`` (a test's parameter), its trace printed at the end like :func:`page`'s."""
    tab = tabs_by_role(role)
    yield tab
    print_trace(tab)


@pytest.fixture
def attempt(request) -> int:
    """Which attempt at the test this is: 1, then 2 on its rerun (pytest-rerunfailures' count). A test
    that writes to its module's workspace names what it writes after the attempt, so that the rerun
    writes anew rather than meeting what the first attempt saved (``tests/e2e/second_attempt.py``
    checks that every test survives its rerun)."""
    return getattr(request.node, "execution_count", 1)


class WebsocketTrace:
    """What a tab and its server said to each other, decoded: the widget triggers and uploads each rerun
    request carried, and each script run's end. Printed when a test fails (pytest shows a failed test's
    output), so a click or an upload that never took effect can be told apart from a message that was
    drawn and then lost. ``running`` and ``last_finish`` (the last run's ``ScriptFinishedStatus``) say
    whether the session's script is at work: the status widget's running icon was not drawn during a
    2-second run (tests/e2e/roles.py waits on these instead)."""

    def __init__(self, tab) -> None:
        self.start = time.monotonic()
        self.lines: list[str] = []
        self.running = False
        self.last_finish: int | None = None
        tab.on("websocket", self._watch)

    def _watch(self, socket) -> None:
        socket.on("framesent", lambda payload: self._record("->", payload))
        socket.on("framereceived", lambda payload: self._record("<-", payload))

    def _record(self, direction: str, payload) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        if isinstance(payload, str) or (direction == "<-" and len(payload) > 4096):
            return  # a large frame from the server is a delta (an element's content): not traced, not parsed
        message = BackMsg() if direction == "->" else ForwardMsg()
        try:
            message.ParseFromString(payload)
        except Exception:  # noqa: BLE001 - a frame of another kind: not ours to read
            return
        kind = message.WhichOneof("type")
        if kind in (None, "delta", "app_heartbeat", "heartbeat_ack", "ref_hash"):
            return
        detail = ""
        if kind == "rerun_script":
            states = message.rerun_script.widget_states.widgets
            triggers = [w.id.rsplit("-", 1)[-1] for w in states if w.WhichOneof("value") in ("trigger_value", "string_trigger_value", "json_trigger_value")]
            uploads = [f"{w.id.rsplit('-', 1)[-1]}:{[f.name for f in w.file_uploader_state_value.uploaded_file_info]}" for w in states if w.WhichOneof("value") == "file_uploader_state_value"]
            detail = f" page={message.rerun_script.page_name!r} fragment={message.rerun_script.fragment_id!r} triggers={triggers} uploads={uploads}"
        elif kind == "script_finished":
            self.last_finish = message.script_finished
            detail = f" {message.script_finished}"
        elif kind == "session_status_changed":
            self.running = message.session_status_changed.script_is_running
            detail = f" running={message.session_status_changed.script_is_running}"
        self.lines.append(f"{time.monotonic() - self.start:8.2f} {direction} {kind}{detail}")

    def dump(self, last: int = 80) -> str:
        return "\n".join(self.lines[-last:])
