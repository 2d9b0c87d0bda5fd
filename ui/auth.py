"""Sign-in for team mode: the gate every page passes first.

In solo mode (the default) :func:`require_sign_in` only sets up the session and returns None. In team
mode (``$BACKDROP_TEAM=1``, set by ``bash backdrop.sh serve --team``) it shows nothing but the
sign-in form until a user of the server's workspace signs in, then returns that account; each later
run re-checks the account (a disabled one is signed out) and ends a session idle for more than
:data:`IDLE_MINUTES` minutes (an open tab checks every :data:`IDLE_CHECK_SECONDS` seconds, so an unused one
is signed out too). A signed-in session cannot be resumed by another connection, and
signing out empties the session's state and deletes the images and downloads it showed
(:mod:`ui.session`). Where the workspace has a single sign-on roles file (:mod:`analytics.team.sso`),
the form also offers Streamlit's ``st.login``; who comes back from the provider gets the account and
role the file gives, and signing out also ends the sign-on (``st.logout``).
"""

from __future__ import annotations

import time

import streamlit as st

from analytics._validation import user_path
from analytics.exceptions import BackdropError, SignInError
from analytics.team import (
    SSOConfig,
    User,
    active_user,
    allowed,
    authenticate,
    load_sso_config,
    roles_with,
    sso_account,
    sso_config_path,
    team_mode,
)
from analytics.workspace import Workspace, default_workspace_path
from ui import session, state
from ui.markdown import escape_markdown

#: A signed-in session ends after this many minutes without a page run.
IDLE_MINUTES = 60
#: How often (seconds) an open signed-in tab checks that it is not idle past :data:`IDLE_MINUTES` (a fragment run, not activity).
IDLE_CHECK_SECONDS = 60
#: Time (``time.time()``) of the session's last page run while signed in.
LAST_SEEN = "backdrop.last_seen"
#: A message for the sign-in form (why the session ended).
NOTICE = "backdrop.sign_in_notice"
FORM = "backdrop.sign_in"


def require_sign_in() -> User | None:
    """Stop the page at the sign-in form unless the session may see the workspace.

    Returns
    -------
    User or None
        The signed-in account in team mode; None in solo mode (nobody signs in).
    """
    state.init_state()
    if not team_mode():
        return None
    session.harden_team_server()  # no clear_cache from any client, no page use in /_stcore/metrics
    user = _session_user()
    if user is None:
        _sign_in_form()
        st.stop()
    return user


def require_page(permission: str = "browse") -> User | None:
    """The gate of a page: sign-in first (team mode), then the role a page needs.

    Parameters
    ----------
    permission : str, default='browse'
        A key of :data:`analytics.team.roles.ACTIONS` the page needs; most pages show models and
        results by name, which annotators (who judge blind) may not see.

    Returns
    -------
    User or None
        The signed-in account (team mode), or None (solo mode: everything allowed).
    """
    user = require_sign_in()
    if not may(user, permission):
        st.error(f"This page {_needs(user, permission)} Ask an admin to change your role.", icon=":material/block:")
        st.stop()
    return user


def may(user: User | None, permission: str) -> bool:
    """Whether the session may do ``permission`` (always in solo mode): decides which controls a page shows."""
    return user is None or allowed(user.role, permission)


def offer(user: User | None, permission: str, what: str) -> bool:
    """Whether to show a control that needs ``permission``; when not, a caption says why (``what`` needs the role …).

    Parameters
    ----------
    user : User or None
        The signed-in account (:func:`require_page`); None in solo mode (always offered).
    permission : str
        A key of :data:`analytics.team.roles.ACTIONS`.
    what : str
        The control, as the start of a sentence ("Evaluate").
    """
    if may(user, permission):
        return True
    st.caption(f"{what} {_needs(user, permission)}", help="The library refuses it too: roles are checked on every write.")
    return False


def _needs(user: User, permission: str) -> str:
    return f"needs the role {' or '.join(roles_with(permission))}; you are signed in as {escape_markdown(user.name)} ({user.role})."


def signed_in_user() -> User | None:
    """The account this session signed in as (team mode), read without drawing or signing out
    anything: for the sidebar's page list, which is built before :func:`require_sign_in` runs."""
    name = st.session_state.get(state.SIGNED_IN) if team_mode() else None
    if not name:
        return None
    # team mode's workspace is always the server's; not through state.workspace_path(), whose
    # init_state may switch to app.py, and app.py calls this before its st.navigation (an endless loop)
    try:
        return active_user(state.open_workspace(user_path(default_workspace_path(), "workspace")), name)
    except BackdropError as err:
        st.error(escape_markdown(err))
        st.stop()


def sign_in_pending() -> bool:
    """Whether this session still has to sign in (team mode, nobody signed in); draws nothing."""
    return team_mode() and not st.session_state.get(state.SIGNED_IN)


def sign_out(notice: str = "") -> None:
    """End the session's sign-in (also the sidebar button's callback): nothing of it stays in the session.

    Every session-state key goes (selections, ids, the sign-in), and so do the images and downloads
    the session showed (:func:`ui.session.drop_media`); the next account starts afresh.
    """
    session.drop_media()
    st.session_state.clear()
    if _provider_signed_in():  # else the provider's cookie signs the next run straight back in
        st.logout()
    if notice:
        st.session_state[NOTICE] = notice


def account_sidebar(user: User) -> None:
    """Who is signed in, and the sign-out button (team mode's part of the sidebar); also watches for idleness."""
    st.caption(f"Signed in as **{escape_markdown(user.name)}** ({user.role})")
    st.button("Sign out", icon=":material/logout:", on_click=sign_out, key=FORM + ".out")
    _idle_watch()


@st.fragment(run_every=IDLE_CHECK_SECONDS)
def _idle_watch() -> None:
    """Rerun the app once the session is idle past the limit, so that an open tab nobody uses is
    signed out (and its images and downloads deleted) without waiting for someone to click."""
    if _idle_too_long():
        st.rerun(scope="app")  # the full run's gate signs the session out


def _idle_too_long() -> bool:
    return time.time() - st.session_state.get(LAST_SEEN, 0.0) > IDLE_MINUTES * 60


def _session_user() -> User | None:
    """The account signed in to this session, if it is still enabled and the session not idle too long."""
    name = st.session_state.get(state.SIGNED_IN)
    if not name:
        return _single_sign_on()
    if _idle_too_long():
        sign_out(f"Your session ended after {IDLE_MINUTES} minutes without activity; sign in again.")
        return None
    user = active_user(_server_workspace(), name)
    if user is None:
        sign_out("Your account has been disabled; ask an admin.")
        return None
    st.session_state[LAST_SEEN] = time.time()
    session.bind_to_connection()
    return user


def _single_sign_on() -> User | None:
    """The account of a person back from the provider (``st.login``), now signed in; None if nobody is, or they may not."""
    if not _provider_signed_in():
        return None
    config = _sso_config()
    try:
        if config is None:
            raise SignInError("Single sign-on is not set up on this server; sign in with your name and password.")
        user = sso_account(_server_workspace(), st.user.to_dict(), config)
    except SignInError as err:  # shown on the form, which offers to sign out of the provider (a redirect would lose it)
        st.session_state[NOTICE] = str(err)
        return None
    _start(user)
    return user


def _provider_signed_in() -> bool:
    """Whether an OpenID provider has signed this browser in (``st.user`` has no such key without ``[auth]`` secrets)."""
    return bool(st.user.to_dict().get("is_logged_in"))


def _sso_config() -> SSOConfig | None:
    """The workspace's single sign-on roles (None: passwords only); a broken file is shown and ignored."""
    try:
        return load_sso_config(sso_config_path(state.workspace_path()))
    except BackdropError as err:
        st.error(f"Single sign-on is off: {escape_markdown(err)}")
        return None


def _start(user: User) -> None:
    """Record ``user`` as this session's account, bound to this connection."""
    session.bind_to_connection()
    st.session_state[state.SIGNED_IN] = user.name
    st.session_state[LAST_SEEN] = time.time()


def _server_workspace() -> Workspace:
    try:
        return state.open_workspace(state.workspace_path())
    except BackdropError as err:
        st.error(escape_markdown(err))
        st.stop()


def _sign_in_form() -> None:
    st.title("Backdrop")
    st.markdown("This Backdrop server is shared by a team: sign in to continue.")
    notice = st.session_state.pop(NOTICE, "")
    if notice:
        st.info(escape_markdown(notice))
    config = _sso_config()
    label = "single sign-on" if config is None else config.label
    if _provider_signed_in():  # signed in there but not let in here: offer another account
        st.button(f"Sign out of {escape_markdown(label)}", on_click=st.logout, key=FORM + ".sso_out")
    elif config is not None and st.button(f"Sign in with {escape_markdown(label)}", type="primary", key=FORM + ".sso"):
        st.login(config.provider)
    with st.form(FORM, border=True, clear_on_submit=True):  # the browser empties the boxes after a try
        name = st.text_input("Name", key=FORM + ".name")
        password = st.text_input("Password", type="password", key=FORM + ".password")
        submitted = st.form_submit_button("Sign in", type="primary")
    if not submitted:
        return
    try:
        user = authenticate(_server_workspace(), name.strip(), password)
    except SignInError as err:
        st.error(escape_markdown(err))
        return
    _start(user)
    st.rerun()
