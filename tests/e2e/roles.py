"""Helpers of the browser tests that sign in as each role of team mode and try a page's writes
(``test_browser_role_writes*.py``): accounts named after their role, signing in, the page's gate, the
library's refusal, and the workspace's row counts that prove what was written."""

from __future__ import annotations

import re

import pytest
from argon2 import PasswordHasher
from playwright.sync_api import Locator, Page, expect

from analytics import jobs
from analytics.team import accounts, add_user
from analytics.team.roles import ROLES
from analytics.workspace import Workspace
from tests.e2e.test_browser_own_data import LONG_MS
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
    expect(page.get_by_test_id("stSidebar").get_by_text(re.compile(rf"^Signed in as {name} \("))).to_be_visible(timeout=LONG_MS)


def open_as(page: Page, url: str, path: str, role: str) -> bool:
    """Open ``path`` signed in as ``role``'s account; whether the page let the role in."""
    sign_in(page, url, path, role)
    roles = PAGE_ROLES.get(path, BROWSING)
    refusal = page.get_by_text(f"This page needs the role {' or '.join(roles)}")
    heading = page.get_by_role("heading", name=path.replace("_", " "), exact=True)  # the URL path of "Backgrounds Challenge"
    expect(refusal.or_(heading)).to_be_visible(timeout=LONG_MS)
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


def started_jobs(workspace: Workspace, before: dict[str, int]) -> list[tuple[str, str]]:
    """``(kind, owner)`` of the jobs started since ``before`` (:func:`row_counts`), newest first; each is
    stopped at once (what it goes on to write is the job's, not a page's)."""
    table = jobs.list_jobs(workspace).iloc[: max(0, row_counts(workspace)["jobs"] - before["jobs"])]
    for job_id in table["id"]:
        jobs.cancel(workspace, job_id)
    return [(job.kind, job.owner) for job in table.itertuples()]
