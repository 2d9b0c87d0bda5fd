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

Two server endpoints answer without any sign-in, and Streamlit has no setting to turn them off
(issue #48.7). The websocket's ``clear_cache`` BackMsg (the developer menu's "Clear cache") empties
every cache of the server, for all sessions; :func:`ignore_clear_cache` makes team mode ignore it
from every session, signed in or not: Backdrop's toolbar (``client.toolbarMode = "minimal"``) has no
such item, so only a hand-made client sends it, and no role should empty the caches of everyone.
``/_stcore/metrics`` lists sessions, cache entries by function (which pages are in use) and session
state; :func:`empty_metrics` makes it answer an empty metric set. :func:`harden_team_server` installs
both, from the first page run of a team-mode server (before it nothing is cached to clear or report);
each raises ``RuntimeError`` (shown on every page) if the Streamlit internal it patches has changed.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Mapping, Sequence
from unittest import mock

import streamlit
from streamlit import runtime
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.stats import Stat, StatsManager

from analytics.team import team_mode

_LOGGER = logging.getLogger(__name__)


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


def harden_team_server() -> None:
    """Team mode: ignore the websocket's ``clear_cache`` and report nothing at ``/_stcore/metrics``.

    Idempotent and cheap: every team-mode page run calls it (:func:`ui.auth.require_sign_in`).

    Raises
    ------
    RuntimeError
        The installed Streamlit no longer has an internal these patches rely on (tested with 1.67).
    """
    ignore_clear_cache()
    empty_metrics()


def _changed(what: str) -> RuntimeError:
    return RuntimeError(
        f"Streamlit {streamlit.__version__} changed {what}: Backdrop's team mode cannot close the endpoint (ui/session.py, tested with Streamlit 1.67); pin streamlit==1.67.* or update ui/session.py"
    )


def ignore_clear_cache() -> None:
    """Make ``AppSession`` ignore a ``clear_cache`` BackMsg while in team mode (solo mode: Streamlit's own).

    Streamlit's handler (``runtime/app_session.py`` ``_handle_clear_cache_request``) clears
    ``st.cache_data`` and ``st.cache_resource`` for the whole server, for any session that sends it.
    """
    handler = getattr(AppSession, "_handle_clear_cache_request", None)
    if getattr(handler, "ignored_in_team_mode", False):
        return
    if handler is None or "self._handle_clear_cache_request()" not in inspect.getsource(AppSession.handle_backmsg):
        raise _changed("how AppSession.handle_backmsg clears the caches (_handle_clear_cache_request)")
    streamlit_handler = handler

    @functools.wraps(streamlit_handler)
    def clear_cache(self: AppSession) -> None:
        if not team_mode():
            streamlit_handler(self)
            return
        _LOGGER.warning("team mode: ignored a clear_cache request from session %s", getattr(self, "id", "?"))

    setattr(clear_cache, "ignored_in_team_mode", True)
    setattr(AppSession, "_handle_clear_cache_request", clear_cache)


class _NoStats(StatsManager):
    """The stats manager of a team-mode server: no metric family, so ``/_stcore/metrics`` is empty."""

    def registered_families(self) -> Sequence[str]:
        return []

    def get_stats(self, family_names: Sequence[str] | None = None) -> Mapping[str, Sequence[Stat]]:
        return {}


def empty_metrics() -> None:
    """Make the server's ``/_stcore/metrics`` answer an empty metric set (no-op without a server, or under AppTest).

    The endpoint (``web/server/starlette/starlette_routes.py`` ``create_metrics_routes``) reads
    everything from ``Runtime.stats_mgr``, which nothing else reads; its class becomes one without
    families. Streamlit has no option to turn the endpoint off (1.67).
    """
    if not runtime.exists() or isinstance(runtime.get_instance(), mock.Mock):  # no server; AppTest's runtime is a mock
        return
    stats = runtime.get_instance().stats_mgr
    if isinstance(stats, _NoStats):
        return
    from streamlit.web.server.starlette import starlette_routes

    if type(stats) is not StatsManager or "runtime.stats_mgr" not in inspect.getsource(starlette_routes.create_metrics_routes):
        raise _changed("where /_stcore/metrics reads its metrics (Runtime.stats_mgr)")
    stats.__class__ = _NoStats
