"""Session-state keys and the workspace every page works on.

``st.session_state`` holds selections and ids only (never models, arrays or connections). Key names
are the constants below; :func:`init_state` sets their defaults once per browser session, so any
page (also one run on its own by ``AppTest.from_file``) can call it first.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from analytics._validation import user_path
from analytics.exceptions import InvalidInputError, WorkspaceError
from analytics.team import User, active_user, team_mode
from analytics.workspace import Workspace, default_workspace_path
from ui.markdown import escape_markdown

#: Folder of the workspace (text; the sidebar's workspace selector writes it).
WORKSPACE_PATH = "backdrop.workspace_path"
#: Name of the person judging models (text; entered once per browser session in the sidebar; solo mode).
ANNOTATOR = "backdrop.annotator"
#: Name of the account signed in to this session (team mode; see :mod:`ui.auth`).
SIGNED_IN = "backdrop.signed_in"

#: Key of the button that creates a missing workspace (see :func:`offer_new_workspace`).
CREATE_WORKSPACE = "backdrop.create_workspace"

#: URL path of a page to open once ``app.py`` has set up the navigation (see :func:`init_state`).
RESUME_PAGE = "backdrop.resume_page"

#: Who acts through a team-mode workspace while nobody is signed in (the sign-in form reads the
#: accounts): a role without any permission, so no library write goes through.
NOBODY = User(name="(not signed in)", role="", disabled=True, locked_until="", created="")

DEMO_COMMAND = "python -m analytics demo"
ENTRYPOINT = "app.py"


def init_state() -> None:
    """Set the defaults of every key once per browser session (later runs keep the user's values).

    Until some session has run ``app.py``'s ``st.navigation``, Streamlit treats a folder named
    ``pages/`` as an old-style multipage app and runs a deep-linked page (``/Data`` on a freshly
    started server) without the entry point: no sidebar, no Home. Such a run is sent to the entry
    point, which then opens the requested page (:data:`RESUME_PAGE`).
    """
    if getattr(PagesManager, "uses_pages_directory", False):
        st.session_state[RESUME_PAGE] = urlparse(st.context.url or "").path.strip("/")
        st.switch_page(ENTRYPOINT, query_params=st.query_params.to_dict())  # a deep link's ?run=… (ui.deeplink) goes along
    st.session_state.setdefault(WORKSPACE_PATH, str(default_workspace_path()))
    st.session_state.setdefault(ANNOTATOR, "")


def workspace_path() -> Path:
    """The workspace folder chosen in this session (``~`` expanded); in team mode always the server's.

    Raises
    ------
    WorkspaceError
        ``~user`` names no user on the server (:func:`analytics._validation.user_path`'s one line).
    """
    init_state()
    typed = default_workspace_path() if team_mode() else str(st.session_state[WORKSPACE_PATH]).strip()
    try:  # team mode: accounts live in the server's workspace, so a typed path must not lead around them
        return user_path(typed, "workspace")
    except InvalidInputError as err:  # a workspace that cannot be used as typed: shown as such by current_workspace
        raise WorkspaceError(str(err)) from err


def annotator() -> str:
    """Who signs judgments: the signed-in account in team mode, else the name entered in the sidebar ('' while none)."""
    init_state()
    if team_mode():
        return str(st.session_state.get(SIGNED_IN, ""))
    return str(st.session_state[ANNOTATOR]).strip()


def open_workspace(path: str | os.PathLike, *, create: bool = False) -> Workspace:
    """The one way ``app.py``, ``pages/`` and ``ui/`` open a workspace: acting as the session's account.

    Parameters
    ----------
    path : path-like
        The workspace folder (:func:`workspace_path`, or ``str(workspace.root)`` as a cache key).
    create : bool, default=False
        Create a missing workspace (solo mode's "Create an empty workspace here" button only).

    Returns
    -------
    Workspace
        Solo mode: the workspace itself (nobody signs in; everything is allowed). Team mode: the
        workspace acting as the signed-in account, or as :data:`NOBODY` while nobody is signed in, so
        every library call that changes it checks a role (never ``actor=None``).

    Raises
    ------
    WorkspaceError
        No workspace at ``path`` (and ``create`` is False), or ``create`` in team mode (the
        workspace is the server's).
    """
    if create and team_mode():
        raise WorkspaceError(f"team mode works on the server's workspace only; {path} is not created from the browser")
    workspace = Workspace(path, create=create)
    if not team_mode():
        return workspace
    return workspace.acting_as(signed_in_user(workspace) or NOBODY)


def current_workspace() -> Workspace:
    """Open the session's workspace (:func:`open_workspace`), or explain how to get one and stop the page.

    Opening never creates a workspace: a mistyped path must not leave an empty database behind.

    Returns
    -------
    Workspace
        The workspace at :func:`workspace_path` (a cheap object holding paths, no connection); in
        team mode it acts as the signed-in account, so library calls check that account's role.
    """
    typed = str(st.session_state.get(WORKSPACE_PATH, "")).strip()
    path: Path | None = None  # stays None when the typed path cannot be expanded (~user of no one)
    try:
        path = workspace_path()
        workspace = open_workspace(path)
    except WorkspaceError as err:
        st.error(escape_markdown(err), icon=":material/folder_off:")
        if not team_mode() and path is not None:  # team mode's workspace is the server's, fixed
            offer_new_workspace(path)
        st.info(
            "To get started, " + ("" if team_mode() else "create an empty workspace here and import your images on the Data page, or ")
            + f"build the demo with `{DEMO_COMMAND} --workspace {path or typed}` (or `bash backdrop.sh serve`), then reload this page. To use "
            "another workspace, enter its folder under **Workspace** in the sidebar of the Home page."
        )
        st.stop()
    if workspace.actor is NOBODY:  # the sign-in gate shows the form; never hand out a workspace nobody acts for
        st.stop()
    return workspace


def offer_new_workspace(path: Path) -> None:
    """A button that creates an empty workspace at ``path`` (solo mode) and reruns the page on it.

    Only on a click: opening a mistyped path never creates anything by itself.
    """
    if not st.button("Create an empty workspace here", icon=":material/create_new_folder:", type="primary", key=CREATE_WORKSPACE):
        return
    try:
        open_workspace(path, create=True)
    except WorkspaceError as err:  # e.g. the path is a file
        st.error(escape_markdown(err))
        return
    st.rerun()


def signed_in_user(workspace: Workspace) -> User | None:
    """The enabled account signed in to this session (team mode), or None."""
    name = st.session_state.get(SIGNED_IN)
    return active_user(workspace, name) if name else None
