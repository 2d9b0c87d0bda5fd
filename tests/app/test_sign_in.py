"""Team mode's sign-in gate (:mod:`ui.auth`) on pages run with ``AppTest``, single sign-on with the identity
AppTest hands to ``st.user``, what sign-out leaves; solo mode without a gate."""

from __future__ import annotations

from unittest.mock import MagicMock

import pytest
from streamlit.runtime import Runtime
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest, app_test

from analytics.team import active_user, add_user, disable_user
from analytics.team.accounts import SIGN_IN_FAILED
from analytics.team.sso import SSO_ROLES_FILE
from analytics.workspace import PROJECT_ROOT
from tests.fixtures.app import APP_TIMEOUT_S, as_shown
from tests.fixtures.team import TEAM_PASSWORD
from ui import auth
from ui.markdown import escape_markdown
from ui.state import SIGNED_IN

FORM = auth.FORM


@pytest.fixture
def team_server(tiny_workspace, fast_hashing, monkeypatch):
    """Team mode on ``tiny_workspace`` (the server's workspace) with an admin ``ada`` and an annotator ``ann``."""
    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(tiny_workspace.root))
    add_user(tiny_workspace, "ada", "admin", TEAM_PASSWORD)
    add_user(tiny_workspace, "ann", "annotator", TEAM_PASSWORD)
    return tiny_workspace


def whoami() -> None:
    """A minimal page: the gate, then who signs judgments."""
    import streamlit as st

    from ui import auth, state

    auth.require_sign_in()
    st.markdown(f"annotator={state.annotator()}")


def page(script: str) -> AppTest:
    return AppTest.from_file(str(PROJECT_ROOT / script), default_timeout=APP_TIMEOUT_S)


def sign_in(app: AppTest, name: str, password: str) -> AppTest:
    app.text_input(key=f"{FORM}.name").input(name)
    app.text_input(key=f"{FORM}.password").input(password)
    return app.button[0].click().run()


def only_sign_in_form(app: AppTest) -> bool:
    titles = [t.value for t in app.title]
    return titles == ["Backdrop"] and len(app.text_input) == 2 and not app.dataframe and not app.tabs


def test_page_opened_directly_shows_only_the_sign_in_form_until_signed_in(team_server):
    app = page("pages/1_Data.py").run()
    assert not app.exception and only_sign_in_form(app)
    app = sign_in(app, "ada", TEAM_PASSWORD)
    assert not app.exception
    assert [t.value for t in app.title] == ["Data"] and app.session_state[SIGNED_IN] == "ada"


def test_page_above_the_role_is_refused_naming_the_role_needed(team_server):
    app = sign_in(page("pages/2_Models.py").run(), "ann", TEAM_PASSWORD)  # annotators judge blind
    assert not app.exception and not app.title and not app.dataframe
    assert [e.value for e in app.error] == [
        "This page needs the role admin or analyst or viewer; you are signed in as ann (annotator). Ask an admin to change your role."
    ]


def test_home_in_team_mode_hides_sidebar_until_signed_in(team_server):
    app = page("app.py").run()
    assert not app.exception and only_sign_in_form(app) and not app.sidebar.text_input
    app = sign_in(app, "ada", TEAM_PASSWORD)
    assert not app.exception and not app.sidebar.text_input  # no workspace or name box in team mode
    assert "Signed in as **ada** (admin)" in [c.value for c in app.sidebar.caption]
    assert str(team_server.root) in "\n".join(c.value for c in app.caption)
    app = app.sidebar.button[0].click().run()  # sign out
    assert only_sign_in_form(app) and SIGNED_IN not in app.session_state


def test_wrong_password_and_disabled_account_get_one_message(team_server):
    app = sign_in(AppTest.from_function(whoami).run(), "ann", "wrong password")
    assert [as_shown(e.value) for e in app.error] == [SIGN_IN_FAILED] and only_sign_in_form(app)
    disable_user(team_server, "ada")
    app = sign_in(app, "ada", TEAM_PASSWORD)
    assert [as_shown(e.value) for e in app.error] == [SIGN_IN_FAILED]


def test_annotator_is_the_signed_in_account_and_sessions_end(team_server):
    app = AppTest.from_function(whoami).run()
    app.session_state["backdrop.annotator"] = "someone else"  # the solo-mode name box cannot sign for an account
    app = sign_in(app, "ann", TEAM_PASSWORD)
    assert [m.value for m in app.markdown][-1] == "annotator=ann"
    app.session_state[auth.LAST_SEEN] = 0.0  # idle far longer than IDLE_MINUTES
    app = app.run()
    assert only_sign_in_form(app) and f"{auth.IDLE_MINUTES} minutes" in app.info[0].value
    app = sign_in(app, "ann", TEAM_PASSWORD)
    disable_user(team_server, "ann")
    app = app.run()
    assert only_sign_in_form(app) and "disabled" in app.info[0].value


def test_solo_mode_has_no_sign_in(tiny_workspace, monkeypatch, app_runner):
    monkeypatch.delenv("BACKDROP_TEAM", raising=False)
    app = app_runner("pages/1_Data.py", tiny_workspace)
    assert not app.exception and [t.value for t in app.title] == ["Data"] and SIGNED_IN not in app.session_state
    app = AppTest.from_function(whoami)
    app.session_state["backdrop.annotator"] = "kim"
    assert [m.value for m in app.run().markdown][-1] == "annotator=kim"


def report_page() -> None:
    """The gate, then an image and a report download (both served at /media/...), and the sidebar."""
    import numpy as np
    import streamlit as st

    from ui import auth

    user = auth.require_sign_in()
    st.image(np.full((4, 4, 3), 200, np.uint8))
    st.download_button("Report", data=b"<html>the signed-in view</html>", file_name="report.html")
    with st.sidebar:
        auth.account_sidebar(user)


@pytest.fixture
def one_runtime(monkeypatch) -> tuple[MediaFileManager, list[MagicMock]]:
    """Keep AppTest's media files across runs (it makes a new manager per run, as if the server
    restarted) and record each run's runtime, to see what sign-in and sign-out leave behind."""
    files = MediaFileManager(MemoryMediaFileStorage("/mock/media"))
    runtimes: list[MagicMock] = []

    def runtime_mock(*args, **kwargs) -> MagicMock:
        mock = MagicMock(*args, **kwargs)
        if kwargs.get("spec") is Runtime:
            runtimes.append(mock)
        return mock

    monkeypatch.setattr(app_test, "MediaFileManager", lambda storage: files)
    monkeypatch.setattr(app_test, "MagicMock", runtime_mock)
    return files, runtimes


def media_ids(app: AppTest) -> list[str]:
    urls = [app.get("download_button")[0].proto.url, *(image.url for element in app.main if element.type == "image" for image in element.proto.imgs)]
    return [url.rsplit("/", 1)[1].split(".")[0] for url in urls]


def test_sign_out_deletes_the_session_media_and_state(team_server, one_runtime):
    files, _ = one_runtime
    app = sign_in(AppTest.from_function(report_page).run(), "ada", TEAM_PASSWORD)
    app = app.run()  # a later run re-registers the same files
    ids = media_ids(app)
    assert len(ids) == 2 and all(files.read_file(file_id) is not None for file_id in ids)
    app.session_state["backdrop.some_selection"] = "run-1"
    app = app.sidebar.button[0].click().run()  # sign out
    assert [files.read_file(file_id) for file_id in ids] == [None, None]  # the download too, not one run later
    assert only_sign_in_form(app) and "backdrop.some_selection" not in app.session_state


def test_a_signed_in_session_cannot_be_resumed_by_another_connection(team_server, one_runtime):
    _, runtimes = one_runtime
    app = AppTest.from_function(report_page).run()
    assert not any(runtime.mark_session_nonresumable.called for runtime in runtimes)  # nothing to protect yet
    app = sign_in(app, "ada", TEAM_PASSWORD)
    marked = {call.args for runtime in runtimes for call in runtime.mark_session_nonresumable.call_args_list}
    assert len(marked) == 1 and isinstance(next(iter(marked))[0], str)  # this session's id, on the runtime that serves it


ROLES = """
label = "Company account"
[people]
"ada@example.org" = "admin"
[claim]
name = "groups"
roles = { "labellers" = "annotator" }
"""


def whoami_with_role() -> None:
    import streamlit as st

    from ui import auth, state

    user = auth.require_sign_in()
    st.markdown(f"annotator={state.annotator()} role={user.role}")


@pytest.fixture
def sso_server(team_server):
    (team_server.root / SSO_ROLES_FILE).write_text(ROLES, encoding="utf-8")
    return team_server


def signed_on(claims: dict) -> AppTest:
    app = AppTest.from_function(whoami_with_role)
    app.user = {"is_logged_in": True, **claims}
    return app.run()


def test_the_form_offers_single_sign_on_only_when_set_up(team_server):
    app = AppTest.from_function(whoami_with_role).run()
    assert only_sign_in_form(app) and [b.label for b in app.button] == ["Sign in"]
    (team_server.root / SSO_ROLES_FILE).write_text(ROLES, encoding="utf-8")
    app = app.run()
    assert [b.label for b in app.button] == ["Sign in with Company account", "Sign in"]  # passwords still work


def test_a_person_back_from_the_provider_gets_the_role_the_file_gives(sso_server):
    app = signed_on({"email": "li@example.org", "groups": ["labellers"]})
    assert not app.exception and [m.value for m in app.markdown][-1] == "annotator=li@example.org role=annotator"
    assert app.session_state[SIGNED_IN] == "li@example.org" and active_user(sso_server, "li@example.org").role == "annotator"


def test_someone_the_file_does_not_name_is_refused_and_offered_another_account(sso_server):
    app = signed_on({"email": "eve@example.org", "groups": ["outsiders"]})
    assert only_sign_in_form(app) and SIGNED_IN not in app.session_state
    assert "eve@example.org may not use this Backdrop server" in as_shown(app.info[0].value)
    assert active_user(sso_server, "eve@example.org") is None  # no account made
    assert [b.label for b in app.button] == ["Sign out of Company account", "Sign in"]
    app = app.button(key=f"{FORM}.sso_out").click().run()
    assert not app.user["is_logged_in"] and [b.label for b in app.button] == ["Sign in with Company account", "Sign in"]


def test_sign_out_also_ends_the_sign_on(sso_server):
    app = signed_on({"email": "ada@example.org"})
    assert [m.value for m in app.markdown][-1] == "annotator=ada@example.org role=admin"
    app.session_state[auth.LAST_SEEN] = 0.0  # idle past the limit: the provider's cookie must not sign it back in
    app = app.run()
    assert only_sign_in_form(app) and not app.user["is_logged_in"] and f"{auth.IDLE_MINUTES} minutes" in app.info[0].value


def test_a_provider_sign_in_without_a_roles_file_is_refused(team_server):
    app = signed_on({"email": "ada@example.org"})
    assert only_sign_in_form(app) and "not set up on this server" in as_shown(app.info[0].value)
    assert SIGNED_IN not in app.session_state and [b.label for b in app.button] == [f"Sign out of {escape_markdown('single sign-on')}", "Sign in"]  # shown as "single sign-on"


def idle_tab_page() -> None:
    """The gate, a page, then (as if the tab had sat unused since this run began) the sidebar's idle watch."""
    import streamlit as st

    from ui import auth

    user = auth.require_sign_in()
    st.markdown("the signed-in view")
    if st.session_state.get("test.idle"):
        st.session_state[auth.LAST_SEEN] = 0.0
    with st.sidebar:
        auth.account_sidebar(user)


def test_an_open_idle_tab_is_signed_out_by_the_sidebar_watch(team_server):
    app = sign_in(AppTest.from_function(idle_tab_page).run(), "ada", TEAM_PASSWORD)
    assert [m.value for m in app.markdown] == ["the signed-in view"]
    app.session_state["test.idle"] = True
    app = app.run()  # the watch (a fragment that reruns every minute) finds the session idle and reruns the app
    assert only_sign_in_form(app) and f"{auth.IDLE_MINUTES} minutes" in app.info[0].value and "test.idle" not in app.session_state
