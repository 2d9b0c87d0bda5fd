"""Issue 48.7: two server endpoints that answer without sign-in, closed in team mode (:mod:`ui.session`).

The websocket's ``clear_cache`` BackMsg emptied every cache of the server, and ``/_stcore/metrics``
listed the cached functions (which pages are in use). Both are driven here through Streamlit's own
code (``AppSession.handle_backmsg``, the metrics route), without starting a server.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
import streamlit as st
from starlette.requests import Request
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.runtime import Runtime
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.state import SessionState
from streamlit.runtime.stats import CacheStat, StatsManager
from streamlit.web.server.starlette.starlette_routes import create_metrics_routes

from ui import session


@pytest.fixture
def patched_clear_cache(monkeypatch):
    """``AppSession`` with the team-mode handler installed for this test only."""
    monkeypatch.setattr(AppSession, "_handle_clear_cache_request", AppSession._handle_clear_cache_request)
    session.ignore_clear_cache()
    session.ignore_clear_cache()  # installed once
    assert getattr(AppSession._handle_clear_cache_request, "ignored_in_team_mode", False)
    assert not getattr(AppSession._handle_clear_cache_request.__wrapped__, "ignored_in_team_mode", False)


class BareSession(AppSession):
    """An ``AppSession`` with only what the clear_cache handler touches (no runtime, no script runner)."""

    def __del__(self) -> None:
        pass


def send_clear_cache() -> SessionState:
    """Send a ``clear_cache`` BackMsg to a bare ``AppSession``; its state afterwards."""
    app_session = object.__new__(BareSession)
    app_session._session_state = SessionState()
    app_session._session_state["kept"] = 1
    message = BackMsg()
    message.clear_cache = True
    app_session.handle_backmsg(message)
    return app_session._session_state


@pytest.mark.parametrize("team", [True, False])
def test_team_mode_ignores_clear_cache_from_any_session(team, monkeypatch, patched_clear_cache):
    monkeypatch.setenv("BACKDROP_TEAM", "1" if team else "0")
    calls = []

    @st.cache_data
    def cached(x: int) -> int:
        calls.append(x)
        return x

    cached(1)
    state = send_clear_cache()
    cached(1)
    assert calls == ([1] if team else [1, 1])  # solo mode: Streamlit's own "Clear cache"
    assert ("kept" in state) is team
    cached.clear()


def metrics_route(stats: StatsManager):
    """Streamlit's ``GET /_stcore/metrics`` over ``stats``: a function giving what it answers."""
    (get, _) = create_metrics_routes(SimpleNamespace(stats_mgr=stats), None)
    request = Request({"type": "http", "method": "GET", "path": "/_stcore/metrics", "headers": [], "query_string": b""})
    def answer() -> str:
        # on a thread of its own: a worker that ran browser tests before still has Playwright's loop running here
        with ThreadPoolExecutor(1) as thread:
            return thread.submit(asyncio.run, get.endpoint(request)).result().body.decode()

    return answer


class PageCache:
    """A provider like Streamlit's cache stats: names the cached function of a page."""

    stats_families = ["cache_memory_bytes"]

    def get_stats(self, family_names=None):
        return {"cache_memory_bytes": [CacheStat("st_cache_data", "pages.judge.queue", 123)]}


def test_team_mode_empties_the_metrics_endpoint(monkeypatch, patched_clear_cache):
    stats = StatsManager()
    stats.register_provider(PageCache())
    metrics = metrics_route(stats)
    assert "pages.judge.queue" in metrics()
    server = object.__new__(Runtime)
    server._stats_mgr = stats
    monkeypatch.setattr(Runtime, "_instance", server)
    session.harden_team_server()
    session.empty_metrics()  # installed once
    assert metrics().split() == ["#", "EOF"]  # also while the route still holds the first answer


def test_the_patches_fail_loudly_when_streamlit_changes(monkeypatch):
    """An upgrade that renames what they patch stops team mode's pages instead of leaving the endpoints open."""
    monkeypatch.delattr(AppSession, "_handle_clear_cache_request")
    with pytest.raises(RuntimeError, match="pin streamlit"):
        session.ignore_clear_cache()
    monkeypatch.undo()
    server = object.__new__(Runtime)
    server._stats_mgr = SimpleNamespace()  # not the StatsManager the endpoint reads
    monkeypatch.setattr(Runtime, "_instance", server)
    with pytest.raises(RuntimeError, match="/_stcore/metrics"):
        session.empty_metrics()
