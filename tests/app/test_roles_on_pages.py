"""Every page as every role in team mode: it renders, and a viewer writes nothing through it.

One small team workspace (targets, models, a suite, finished runs, a keyword table, an account per
role) serves the whole module. A viewer is either not offered a button that writes, or pressing it is
refused by the library (``PermissionDeniedError``, whose message names the role needed) and no table
gains or loses a row. A report (read only) may memoise what it computed, as any reader's view does
(the ``cache`` table): whether it does depends on what earlier tests computed, not on the role.
"""

from __future__ import annotations

import re
import time

import pytest
from argon2 import PasswordHasher
from streamlit.testing.v1 import AppTest

from analytics.keywords import save_keyword_table
from analytics.runs import start_runs
from analytics.team import accounts, add_user, allowed, roles_with
from analytics.team.roles import ROLES
from analytics.workspace import PROJECT_ROOT, Workspace
from tests.fixtures.app import APP_TIMEOUT_S
from tests.fixtures.keywords import TINY_LABELS, TINY_TRANSACTIONS, make_keyword_table
from tests.fixtures.models import TINY_SUITE, add_tiny_models, write_tiny_model_files
from tests.fixtures.runs import RUN_MODELS
from tests.fixtures.team import TEAM_PASSWORD, row_counts
from tests.fixtures.workspace import build_tiny_workspace
from ui.auth import LAST_SEEN
from ui.state import SIGNED_IN

PAGES = sorted(path.relative_to(PROJECT_ROOT).as_posix() for path in (PROJECT_ROOT / "pages").glob("*.py"))
#: Page -> the permission its gate asks (``require_page``); every other page asks "browse".
PAGE_PERMISSION = {"pages/8_Judge.py": "judge", "pages/12_Adjudication.py": "adjudicate"}
#: Words of a button label that changes the workspace.
#: Buttons whose label sounds like a write but which only read (each rendered to the viewer and pressed, too).
READ_ONLY = {"failures.report.build", "runs.report.build"}  # the HTML reports of Failures and Matrices: downloads
WRITES = re.compile(r"\b(build|save|evaluate|run|register|import|delete|remove|start|assign|record|train|create|cancel|resume|label|search)\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def team_site(tmp_path_factory) -> Workspace:
    """Team mode on a tiny workspace with finished runs, a keyword table and one account per role (named after it)."""
    root = tmp_path_factory.mktemp("team-site")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(accounts, "_HASHER", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
        workspace = add_tiny_models(build_tiny_workspace(root / "ws"), write_tiny_model_files(root / "model-files"))
        start_runs(workspace, RUN_MODELS, TINY_SUITE, device="cpu")
        save_keyword_table(workspace, make_keyword_table(TINY_TRANSACTIONS, TINY_LABELS), name="tiny")
        for role in ROLES:
            add_user(workspace, role, role, TEAM_PASSWORD)
    return workspace


@pytest.fixture(autouse=True)
def team_mode(team_site, monkeypatch, tmp_path):
    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(team_site.root))
    monkeypatch.setenv("BACKDROP_DATA_ROOTS", str(tmp_path))


def open_as(page: str, role: str) -> AppTest:
    """``page`` run once, signed in as the account of ``role``."""
    app = AppTest.from_file(str(PROJECT_ROOT / page), default_timeout=APP_TIMEOUT_S)
    app.session_state[SIGNED_IN] = role
    app.session_state[LAST_SEEN] = time.time()
    return app.run()


def errors(app: AppTest) -> str:
    return "\n".join(str(element.value) for element in app.error)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_for_every_role(team_site, page, role):
    app = open_as(page, role)
    assert not app.exception, f"{page} as {role}: {app.exception}"
    refused = "This page needs the role" in errors(app)
    assert refused == (not allowed(role, PAGE_PERMISSION.get(page, "browse")))


@pytest.mark.parametrize("page", PAGES)
def test_a_viewer_writes_nothing_through_any_page(team_site, page):
    app = open_as(page, "viewer")
    assert not app.exception
    assert not app.text_input or not any("server" in (box.label or "").lower() for box in app.text_input)  # admins only
    offered = [button.key or button.label for button in app.button if WRITES.search(button.label or "")]
    for key in offered:
        before = row_counts(team_site)
        button = next(b for b in app.button if (b.key or b.label) == key)
        app = button.click().run()
        assert not app.exception, f"{page}: pressing {key!r} as a viewer: {app.exception}"
        after = row_counts(team_site)
        if key in READ_ONLY:  # a report computes what it shows: results it memoises (table ``cache``) are no one's data
            before.pop("cache"), after.pop("cache")
        assert after == before, f"{page}: pressing {key!r} as a viewer wrote rows"
        if key not in READ_ONLY:
            assert "may not" in errors(app) and "that needs the role" in errors(app), f"{page}: {key!r} was offered to a viewer and not refused"


def test_the_ontology_page_offers_a_viewer_no_build_no_save_and_no_server_paths(team_site):
    app = open_as("pages/3_Ontology.py", "viewer")
    labels = [button.label for button in app.button]
    assert not any(WRITES.search(label) for label in labels), labels
    captions = "\n".join(caption.value for caption in app.caption)
    assert "Building keyword tables needs the role admin or analyst" in captions and "viewer (viewer)" in captions
    assert "Keyword file on the server" not in [option for radio in app.radio for option in radio.options]


def test_the_ontology_page_offers_an_admin_the_builder_and_server_paths(team_site):
    app = open_as("pages/3_Ontology.py", "admin")
    assert "Build keyword tables" in [button.label for button in app.button]
    assert "Keyword file on the server" in [option for radio in app.radio for option in radio.options]


#: Tabs a page leaves out for a role without the permission: (page, tab, permission, what its caption says needs the role).
ROLE_TABS = [
    ("pages/1_Data.py", "Import", "import_data", "Importing targets and backgrounds (the Import and GrabCut tabs)"),
    ("pages/1_Data.py", "GrabCut", "import_data", "Importing targets and backgrounds (the Import and GrabCut tabs)"),
    ("pages/2_Models.py", "Register", "register_models", "Registering models (the Register tab)"),
    ("pages/2_Models.py", "Zoo", "run_models", "Training a model zoo (the Zoo tab)"),
]


@pytest.mark.parametrize("role", ["admin", "analyst", "viewer"])
@pytest.mark.parametrize("page, tab, permission, what", ROLE_TABS, ids=[f"{case[0]}:{case[1]}" for case in ROLE_TABS])
def test_a_tab_left_out_for_a_role_is_named_with_the_role_it_needs(team_site, role, page, tab, permission, what):
    app = open_as(page, role)
    assert not app.exception, app.exception
    tabs = [shown.label for shown in app.tabs]
    captions = "\n".join(caption.value for caption in app.caption)
    if allowed(role, permission):
        assert tab in tabs and what not in captions
    else:
        assert tab not in tabs and f"{what} needs the role {' or '.join(roles_with(permission))}; you are signed in as {role} ({role})" in captions


def test_the_backgrounds_challenge_offers_evaluate_to_analysts_only(team_site):
    assert "Evaluate" in [button.label for button in open_as("pages/13_Backgrounds_Challenge.py", "analyst").button]
    app = open_as("pages/13_Backgrounds_Challenge.py", "viewer")
    assert "Evaluate" not in [button.label for button in app.button]
    assert any("Evaluate needs the role admin or analyst" in caption.value for caption in app.caption)

