"""The served app's Streamlit settings (``.streamlit/config.toml``)."""

from __future__ import annotations

import tomllib

from analytics.workspace import PROJECT_ROOT


def test_server_does_not_watch_its_files():
    """Issue 19.8: watching the tree (with .venv) floods the log with inotify overflows and costs CPU."""
    text = (PROJECT_ROOT / ".streamlit" / "config.toml").read_text()
    assert tomllib.loads(text)["server"]["fileWatcherType"] == "none"
    assert "--server.fileWatcherType auto" in text  # how to turn it back on for development
