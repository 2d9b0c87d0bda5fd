"""The Streamlit session behind a team-mode sign-in: no resuming from elsewhere, no files left after sign-out.

Streamlit (1.67) lets a new websocket connection take over a live session by naming its id (the
third ``Sec-WebSocket-Protocol`` entry, ``runtime/websocket_session_manager.py`` ``connect_session``)
when both connections present the same user info; with Backdrop's own passwords every browser
presents none, so anyone holding the id of a signed-in session would get its signed-in view.
:func:`bind_to_connection` marks the session non-resumable (``Runtime.mark_session_nonresumable``,
the mark ``st.logout`` sets): a connection naming its id gets a new session, which shows the sign-in
form, and the session closes with its own websocket instead of waiting in storage for a reconnect.

Images and downloads are served at ``/media/<content hash>`` to whoever has the URL; Streamlit keeps
a file while some session shows it and a download one script run longer
(``runtime/media_file_manager.py``). :func:`drop_media` lets go of this session's files at sign-out
and collects them at once, downloads included.
"""

from __future__ import annotations

from streamlit import runtime
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
