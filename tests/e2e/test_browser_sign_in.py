"""Team mode in headless chromium: a page opened by its URL shows only the sign-in form until sign-in."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from analytics.data import list_targets
from analytics.team.accounts import SIGN_IN_FAILED
from tests.e2e.conftest import TEAM_PASSWORD as PASSWORD


def test_unsigned_visitor_sees_only_the_sign_in_form(page, team_server, e2e_workspace):
    server = team_server
    target_ids = list(list_targets(e2e_workspace)["id"])

    for path in ("Data", "Judge"):
        page.goto(f"{server.url}/{path}")
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        expect(page.get_by_role("heading", name=path)).to_have_count(0)
        expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
        expect(page.get_by_text(target_ids[0], exact=True)).to_have_count(0)

    page.get_by_label("Name").fill("al")
    page.get_by_label("Password", exact=True).fill("wrong password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text(SIGN_IN_FAILED)).to_be_visible()

    page.goto(f"{server.url}/Data")
    page.get_by_label("Name").fill("al")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Data")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/Data$"))
    expect(page.get_by_text(target_ids[0], exact=True)).to_be_visible()
    expect(page.get_by_test_id("stSidebarUserContent").get_by_text("Signed in as al (analyst)")).to_be_visible()
