"""Team mode in headless chromium, one server for the module: every page URL shows only the sign-in
form to a visitor; roles decide what a signed-in account sees; wrong passwords and the lock."""

from __future__ import annotations

import re
import shutil

import pytest
from playwright.sync_api import Page, expect

from analytics.data import list_targets
from analytics.team import add_user, enable_user
from analytics.team.accounts import LOCK_AFTER_FAILURES, SIGN_IN_FAILED
from analytics.workspace import PROJECT_ROOT, Workspace
from tests.e2e.conftest import AppServer

PASSWORD = "correct horse"
ACCOUNTS = {"ada": "admin", "ann": "annotator", "vi": "viewer", "lou": "analyst"}
#: URL path of every page: Home ('') and each ``pages/<N>_<Name>.py`` (Streamlit drops the number).
PAGE_PATHS = ["", *sorted(re.sub(r"^\d+_", "", path.stem) for path in (PROJECT_ROOT / "pages").glob("[0-9]*_*.py"))]


@pytest.fixture(scope="module")
def team_server(app_server_factory, e2e_workspace, tmp_path_factory) -> AppServer:
    """A team-mode server on a copy of ``e2e_workspace`` with one account per role."""
    copy = tmp_path_factory.mktemp("team-roles") / "ws"
    shutil.copytree(e2e_workspace.root, copy)
    workspace = Workspace(copy, create=False)
    for name, role in ACCOUNTS.items():
        add_user(workspace, name, role, PASSWORD)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BACKDROP_TEAM", "1")  # inherited by the server process started now
        patch.delenv("BACKDROP_DATA_ROOTS", raising=False)
        return app_server_factory(copy)


def sign_in(page: Page, name: str, password: str) -> None:
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()


def account(server: AppServer, name: str):
    return Workspace(server.workspace, create=False).query_one("SELECT failed_attempts, locked_until FROM users WHERE name = ?", (name,))


def test_every_page_url_shows_only_the_sign_in_form(page, team_server, e2e_workspace):
    assert len(PAGE_PATHS) > 10 and "Models" in PAGE_PATHS and "Judge" in PAGE_PATHS
    target_id = list_targets(e2e_workspace)["id"].iloc[0]
    for path in PAGE_PATHS:
        page.goto(f"{team_server.url}/{path}")
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        expect(page.get_by_label("Password", exact=True)).to_be_visible()
        expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
        expect(page.get_by_role("tab")).to_have_count(0)
        expect(page.get_by_test_id("stDataFrame")).to_have_count(0)
        expect(page.get_by_text(target_id, exact=True)).to_have_count(0)
        if path:
            expect(page.get_by_role("heading", name=path)).to_have_count(0)


def test_annotator_cannot_open_model_registration(page, team_server):
    page.goto(f"{team_server.url}/Models")
    sign_in(page, "ann", PASSWORD)
    expect(page.get_by_text("This page needs the role admin or analyst or viewer; you are signed in as ann (annotator)")).to_be_visible()
    expect(page.get_by_role("heading", name="Models")).to_have_count(0)
    expect(page.get_by_role("tab")).to_have_count(0)
    expect(page.get_by_test_id("stSidebar").get_by_text("Signed in as ann (annotator)")).to_be_visible()
    # issue 42.11: the sidebar lists only what the role may open (Home and Judge), not pages that refuse it
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("link", name="Judge")).to_be_visible()
    for other in ("Data", "Models", "Matrices", "Adjudication"):
        expect(sidebar.get_by_role("link", name=other, exact=True)).to_have_count(0)


def test_viewer_cannot_judge(page, team_server):
    page.goto(f"{team_server.url}/Judge")
    sign_in(page, "vi", PASSWORD)
    expect(page.get_by_text("This page needs the role admin or analyst or annotator; you are signed in as vi (viewer)")).to_be_visible()
    expect(page.get_by_role("heading", name="Judge")).to_have_count(0)
    expect(page.get_by_role("radio")).to_have_count(0)  # no label to pick


@pytest.mark.parametrize(("name", "registers"), [("vi", False), ("ada", True)])
def test_only_admins_see_the_register_tab(page, team_server, name, registers):
    page.goto(f"{team_server.url}/Models")
    sign_in(page, name, PASSWORD)
    expect(page.get_by_role("heading", name="Models")).to_be_visible()
    expect(page.get_by_role("tab", name="Registered", exact=True)).to_be_visible()
    expect(page.get_by_role("tab", name="Accuracy", exact=True)).to_be_visible()
    expect(page.get_by_role("tab", name="Register", exact=True)).to_have_count(1 if registers else 0)


def test_wrong_password_is_refused_and_five_lock_the_account(page, team_server, attempt):
    if attempt > 1:  # the first attempt locked the account: its rerun counts wrong passwords from none again
        enable_user(Workspace(team_server.workspace, create=False), "lou")
    for wrong in range(1, LOCK_AFTER_FAILURES + 1):
        page.goto(f"{team_server.url}/Data")
        sign_in(page, "lou", "not the password")
        expect(page.get_by_text(SIGN_IN_FAILED)).to_be_visible()
        expect(page.get_by_role("heading", name="Data")).to_have_count(0)
        if wrong < LOCK_AFTER_FAILURES:
            assert account(team_server, "lou")["failed_attempts"] == wrong
    assert account(team_server, "lou")["locked_until"]  # locked by the fifth
    page.goto(f"{team_server.url}/Data")
    sign_in(page, "lou", PASSWORD)  # the right password, while locked
    expect(page.get_by_text(SIGN_IN_FAILED)).to_be_visible()
    expect(page.get_by_role("heading", name="Data")).to_have_count(0)
    expect(page.get_by_text("Signed in as")).to_have_count(0)
