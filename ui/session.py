"""The Streamlit session behind a team-mode sign-in: no resuming from elsewhere, no files left after sign-out.

Streamlit (1.67) lets a new websocket connection take over a live session by naming its id (the
third ``Sec-WebSocket-Protocol`` entry, ``runtime/websocket_session_manager.py`` ``connect_session``)
when both connections present the same user info; with Backdrop's own passwords every browser
presents none, so anyone holding the id of a signed-in session would get its signed-in view.
:func:`bind_to_connection` marks the session non-resumable (``Runtime.mark_session_nonresumable``,
the mark ``st.logout`` sets): a connection naming its id gets a new session, which shows the sign-in
form, and the session closes with its own websocket instead of waiting in storage for a reconnect.

Images and downloads are served at ``/media/<content hash>`` to whoever has the URL; Streamlit keeps
a file while some session shows it and a download one collection longer
(``runtime/media_file_manager.py``). :func:`drop_media` lets go of this session's files at sign-out
and collects them at once, downloads included. When a tab closes (or its connection drops), the
session shuts down and Streamlit collects once, which only marks its downloads; the next collection
came with some other session's next script run (~80 s on an idle server, while the README said
"when the tab closes"). :func:`collect_downloads_at_shutdown` adds that second collection to the
shutdown itself.
"""

from __future__ import annotations

import functools

from streamlit import runtime
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner import get_script_run_ctx


def session_id() -> str | None:
    """This browser session's id (None outside a script run)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else ctx.session_id


def bind_to_connection() -> None:
    """Let no other connection resume this session: one naming its id gets a fresh, signed-out session.

    A signed-in tab whose connection drops (sleep, network change) therefore signs in again.
    """
    sid = session_id()
    if sid is not None and runtime.exists():
        runtime.get_instance().mark_session_nonresumable(sid)
    collect_downloads_at_shutdown()


def collect_downloads_at_shutdown() -> None:
    """Make a session's shutdown (its tab closed, its connection gone) delete its downloads at once.

    Streamlit's ``AppSession.shutdown`` drops the session's references and collects once, which
    deletes its images but only marks its downloads; a second collection right after deletes
    them. It also deletes other downloads that an earlier collection already marked (files no
    session shows, one collection old), which the next script run anywhere would delete anyway.
    Installed once per server process (Streamlit 1.67, pinned; tests/e2e/test_browser_session_reuse.py
    checks it against the real server).
    """
    if getattr(AppSession.shutdown, "collects_downloads", False):
        return
    streamlit_shutdown = AppSession.shutdown

    @functools.wraps(streamlit_shutdown)
    def shutdown(self: AppSession) -> None:
        streamlit_shutdown(self)
        if runtime.exists():
            runtime.get_instance().media_file_mgr.remove_orphaned_files()

    shutdown.collects_downloads = True
    AppSession.shutdown = shutdown


def drop_media() -> None:
    """Forget the images and downloads this session showed, and delete those no other session shows.

    Streamlit deletes an unused image at the end of a run but an unused download only at the next
    collection (so that a click racing a rerun still gets its file); the second pass here is that
    collection, so the sign-out run leaves no URL of this session that still answers.
    """
    sid = session_id()
    if sid is None or not runtime.exists():
        return
    files = runtime.get_instance().media_file_mgr
    files.clear_session_refs(sid)
    files.remove_orphaned_files()
    files.remove_orphaned_files()
