"""Helpers of the browser tests that sign in as each role of team mode and try a page's writes
(``test_browser_role_writes*.py``): accounts named after their role, signing in, the page's gate, the
library's refusal, and the workspace's row counts that prove what was written."""

from __future__ import annotations

import re
import time
from urllib.parse import urlsplit

import pytest
from argon2 import PasswordHasher
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from analytics import jobs
from analytics.team import accounts, add_user
from analytics.team.roles import ROLES
from analytics.workspace import Workspace
from tests.e2e.test_browser_own_data import LONG_MS, traced
from tests.fixtures.team import TEAM_PASSWORD, row_counts

#: The library's refusal (:func:`analytics.team.roles.require`), as a page shows it.
REFUSED = re.compile(r"may not .+: that needs the role")
#: Page -> the roles it lets in (annotators judge blind: no page that shows models or results by name).
PAGE_ROLES = {"Judge": ("admin", "analyst", "annotator"), "Adjudication": ("admin", "analyst")}
BROWSING = ("admin", "analyst", "viewer")


def add_role_accounts(workspace: Workspace, *extra: tuple[str, str]) -> None:
    """One account per role, named after it, and the ``(name, role)`` accounts of ``extra``, all with
    :data:`TEAM_PASSWORD` (cheap argon2: the server checks what the hash names)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(accounts, "_HASHER", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
        for name, role in [*((role, role) for role in ROLES), *extra]:
            add_user(workspace, name, role, TEAM_PASSWORD)


def sign_in(page: Page, url: str, path: str, name: str) -> None:
    """Open ``path`` (``''``: Home) and sign in there as the account ``name`` (named after its role)."""
    page.goto(f"{url}/{path}")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password", exact=True).fill(TEAM_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(signed_in_as(page, name)).to_be_visible(timeout=LONG_MS)


def signed_in_as(page: Page, name: str) -> Locator:
    return page.get_by_test_id("stSidebar").get_by_text(re.compile(rf"^Signed in as {name} \("))


def go_to(page: Page, url: str, path: str, name: str, shown: Locator) -> None:
    """Bring the tab to ``path`` (``''``: Home) of the server at ``url``, signed in as ``name``; wait for
    ``shown`` and for the page's script run to end (:func:`wait_until_idle`).

    A tab already signed in as ``name`` on that server, showing another page, follows its sidebar's link
    (one script run in the same session, seconds less than a sign-in); otherwise (a fresh tab, another
    server, a page its sidebar leaves out, or the page it shows already, as on a rerun after a failure)
    the URL is opened and the account signs in again: a new session, with nothing left of what the last
    test did on the page."""
    here = urlsplit(page.url)
    link = page.get_by_test_id("stSidebarNav").get_by_role("link", name=re.compile(rf"^(.* )?{re.escape(path.replace('_', ' ') or 'Home')}$"))
    if f"{here.scheme}://{here.netloc}" != url or here.path.strip("/") == path or not signed_in_as(page, name).count() or link.count() != 1:
        sign_in(page, url, path, name)
    else:
        for attempt in range(2):  # a click lost under load (the URL stays) is made once more
            wait_until_idle(page)
            link.click()
            try:
                page.wait_for_url(re.compile(rf"^{re.escape(url)}/{path}(\?.*)?$"), timeout=30_000)
                break
            except PlaywrightTimeoutError:
                if attempt:
                    raise
    expect(shown).to_be_visible(timeout=LONG_MS)
    expect(signed_in_as(page, name)).to_be_visible()
    wait_until_idle(page)


def wait_until_idle(page: Page, timeout_ms: float = LONG_MS) -> None:
    """Wait until the tab's session runs no script and its last run was not cut short for another
    (``st.rerun``), as the tab's ``WebsocketTrace`` (tests/e2e/conftest.py) saw them: a page's first
    elements (its heading) show while the rest is still being drawn, and a click on them then can land
    on an element that is replaced under it."""
    trace = page.websocket_trace
    deadline = time.monotonic() + timeout_ms / 1000
    while trace.running or trace.last_finish == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
        if time.monotonic() > deadline:
            raise AssertionError(f"the page's script run went on for {timeout_ms / 1000:.0f} s\n{traced(page)}")
        page.wait_for_timeout(100)


def open_as(page: Page, url: str, path: str, role: str) -> bool:
    """Open ``path`` signed in as ``role``'s account (:func:`go_to`); whether the page let the role in."""
    roles = PAGE_ROLES.get(path, BROWSING)
    refusal = page.get_by_text(f"This page needs the role {' or '.join(roles)}")
    heading = page.get_by_role("heading", name=path.replace("_", " "), exact=True)  # the URL path of "Backgrounds Challenge"
    go_to(page, url, path, role, refusal.or_(heading))
    let_in = role in roles
    expect(heading).to_have_count(1 if let_in else 0)
    expect(refusal).to_have_count(0 if let_in else 1)
    expect(page.get_by_test_id("stStatusWidgetRunningIcon")).to_have_count(0, timeout=LONG_MS)
    return let_in


def outcome(page: Page, done: Locator, may: bool) -> None:
    """Wait for the write's confirmation ``done`` or the library's refusal, then check it was the one ``may`` says."""
    refused = page.get_by_test_id("stAlertContentError").filter(has_text=REFUSED)
    expect(done.or_(refused).first).to_be_visible(timeout=LONG_MS)
    expect((done if may else refused).first).to_be_visible()


def not_offered(page: Page, button: Locator, what: str, role: str) -> None:
    """The control ``button`` is absent and the page's caption says which role ``what`` needs (``ui.auth.offer``)."""
    expect(page.get_by_text(re.compile(rf"^{re.escape(what)} needs the role .*; you are signed in as {role} \({role}\)"))).to_be_visible()
    expect(button).to_have_count(0)


def added(workspace: Workspace, before: dict[str, int]) -> dict[str, int]:
    """Rows added (or, negative, removed) per table since ``before`` (:func:`row_counts`); tables that did not change left out."""
    return {table: n - before.get(table, 0) for table, n in row_counts(workspace).items() if n != before.get(table, 0)}


def started_jobs(workspace: Workspace, before: dict[str, int], *, at_least: int = 0) -> list[tuple[str, str]]:
    """``(kind, owner)`` of the jobs started since ``before`` (:func:`row_counts`), newest first; each is
    stopped at once (what it goes on to write is the job's, not a page's).

    First waits (up to ``LONG_MS``) until ``at_least`` jobs have started: a page that shows the newest
    job of its settings shows, on a rerun, the first attempt's job until the click's is drawn, and its
    text passes for the click's confirmation."""
    deadline = time.monotonic() + LONG_MS / 1000
    while row_counts(workspace)["jobs"] - before["jobs"] < at_least and time.monotonic() < deadline:
        time.sleep(0.1)
    table = jobs.list_jobs(workspace).iloc[: max(0, row_counts(workspace)["jobs"] - before["jobs"])]
    for job_id in table["id"]:
        jobs.cancel(workspace, job_id, grace=0)  # no wait for the worker to notice: its process group is stopped now
    return [(job.kind, job.owner) for job in table.itertuples()]
