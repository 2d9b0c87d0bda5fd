"""Shared pytest set-up: every module in tests/fixtures/ is a fixture plugin.

Fixture modules import one another, so rewriting is registered for the whole package up front
(a plugin imported before pytest registers it would otherwise miss assertion rewriting).
"""

import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.fixtures")

_FIXTURES = sorted(p.stem for p in (Path(__file__).parent / "fixtures").glob("*.py") if p.stem != "__init__")
pytest_plugins = [f"tests.fixtures.{name}" for name in _FIXTURES]

# CI sets BACKDROP_REQUIRE_ASSETS=1 (`.ci/run`): a test that would skip because the demo assets,
# ../shared/reference or Debian's chromium are missing then fails, so CI cannot pass with its
# real-data tests silently skipped. Local runs still skip, with the reason.
REQUIRE_ASSETS = os.environ.get("BACKDROP_REQUIRE_ASSETS") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ASSETS and report.skipped and item.get_closest_marker("may_skip") is None:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped, but BACKDROP_REQUIRE_ASSETS=1 requires it to run: {reason}"


@pytest.fixture(autouse=True)
def _pytest_main_module():
    """Give ``__main__`` back after each test: Streamlit's script runner (``AppTest``) installs the page
    it ran as ``sys.modules["__main__"]`` and leaves it there, so a later ``multiprocessing`` spawn in
    the same process re-ran that page in the child (seen when a page test preceded the concurrent
    judgment writers)."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


# -- the suite's time by folder ---------------------------------------------------------------------
# The suite has a time budget (docs/benchmarks.md, "The test suite's time"): every run ends with the
# seconds spent per folder and in the slowest files (setup + call + teardown), so CI's own log shows
# where the time goes without a second run with --durations.
_SECONDS_BY_FILE: dict[str, float] = defaultdict(float)
SLOWEST_FILES = 15
_STARTED = time.monotonic()  # this process's start: the wall time of the whole run, collection included


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _SECONDS_BY_FILE[report.nodeid.split("::", 1)[0]] += report.duration


def folder_of(path: str) -> str:
    """The folder a test file's time is summed under: ``tests/e2e``, ``tests/app``, ``tests/analytics/<package>``, or ``tests`` itself."""
    parts = Path(path).parts
    depth = 3 if parts[:2] == ("tests", "analytics") and len(parts) > 3 else 2
    return "/".join(parts[:depth]) if len(parts) > depth else "/".join(parts[:-1]) or "."


def pytest_terminal_summary(terminalreporter) -> None:
    if not _SECONDS_BY_FILE:
        return
    by_folder: dict[str, float] = defaultdict(float)
    for path, seconds in _SECONDS_BY_FILE.items():
        by_folder[folder_of(path)] += seconds
    write = terminalreporter.write_line
    terminalreporter.section("time by folder (setup + call + teardown, seconds)")
    for folder, seconds in sorted(by_folder.items(), key=lambda item: -item[1]):
        write(f"{seconds:8.1f}  {folder}")
    write(f"{sum(by_folder.values()):8.1f}  in all")
    workers = getattr(terminalreporter.config.option, "numprocesses", None) or 0
    spread = f" on {workers} pytest-xdist workers (the sums above add the workers' times)" if workers else ""
    write(f"{time.monotonic() - _STARTED:8.1f}  wall clock, collection included{spread}")
    terminalreporter.section(f"the {SLOWEST_FILES} slowest files")
    for path, seconds in sorted(_SECONDS_BY_FILE.items(), key=lambda item: -item[1])[:SLOWEST_FILES]:
        write(f"{seconds:8.1f}  {path}")
