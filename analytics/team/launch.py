"""How ``backdrop serve`` starts the dashboard: the checks first, then the ``streamlit run`` command;
and :func:`wait_until_serving`, how a caller that started it (the smoke check, the browser tests, the
screenshots tool, a benchmark) knows it answers.

The dashboard's files come from the checkout or from the installed wheel
(:func:`analytics._install.dashboard_dir`), so the same command serves from any folder.
"""

from __future__ import annotations

import http.client
import importlib.util
import os
import shlex
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from analytics._install import dashboard_dir
from analytics._validation import ParameterNames, user_path
from analytics.exceptions import InvalidInputError
from analytics.workspace import ENV_VAR

from .paths import DATA_ROOTS_ENV_VAR
from .server import TEAM_ENV_VAR, check_team_ready, streamlit_arguments


@dataclass(frozen=True)
class ServePlan:
    """What ``backdrop serve`` runs: the command, the folder it runs in (Streamlit reads
    ``.streamlit/config.toml`` from there) and the environment it adds."""

    command: list[str]
    cwd: Path
    env: dict[str, str]

    def shell_line(self) -> str:
        """The plan as one line a shell could run (``--dry-run`` prints it)."""
        assignments = [f"{name}={shlex.quote(value)}" for name, value in sorted(self.env.items()) if name == DATA_ROOTS_ENV_VAR]
        return " ".join([*assignments, *map(shlex.quote, self.command)])


def serve_plan(
    *, team: bool, port: int, workspace: str | os.PathLike, data_roots: Sequence[str | os.PathLike] = (), names: ParameterNames | None = None
) -> ServePlan:
    """Check everything ``serve`` needs before it starts, and say how to start the dashboard.

    Parameters
    ----------
    team : bool
        Team mode: every interface and sign-in; refused without an enabled admin (:func:`check_team_ready`).
    port : int
    workspace : path-like
        The server's workspace (``$BACKDROP_WORKSPACE`` of the dashboard process).
    data_roots : sequence of path-like
        Folders whose files a path typed in the browser may name (``$BACKDROP_DATA_ROOTS``).
    names : ParameterNames, optional
        How messages name ``data_roots`` and ``workspace`` (``serve`` passes its flags).

    Raises
    ------
    InvalidInputError
        A data root is not a folder, or the dashboard's files or Streamlit are not installed.
    WorkspaceError
        Team mode without an enabled admin.
    """
    names = names or ParameterNames()
    folders = []
    for root in data_roots:
        folder = user_path(root, names("data_roots"))
        if not folder.is_dir():
            raise InvalidInputError(f"{names('data_roots')} {root}: no such folder; create it or give an existing one")
        folders.append(str(folder.resolve()))
    workspace_path = user_path(workspace, names("workspace")).resolve()
    if team:
        check_team_ready(workspace_path)
    dashboard = dashboard_dir()
    if dashboard is None:
        raise InvalidInputError("the dashboard's files (app.py, pages/) are not installed here: reinstall with `pip install 'backdrop-invariance[app]'`")
    if importlib.util.find_spec("streamlit") is None:
        raise InvalidInputError("the dashboard needs Streamlit: `pip install 'backdrop-invariance[app]'` (team mode: `[team]`)")
    env = {ENV_VAR: str(workspace_path), TEAM_ENV_VAR: "1" if team else "0"}
    if folders:
        env[DATA_ROOTS_ENV_VAR] = os.pathsep.join(folders)
    command = [sys.executable, "-m", "streamlit", "run", str(dashboard / "app.py"), *streamlit_arguments(team=team, port=port)]
    return ServePlan(command=command, cwd=dashboard, env=env)


#: Streamlit's readiness endpoint: it answers ``ok`` once the server takes page requests.
_HEALTH_PATH = "/_stcore/health"
_REQUEST_TIMEOUT_S = 2.0  # one health request; a slow answer is asked again, until the deadline
_POLL_S = 0.25
_LOG_TAIL_CHARS = 3000  # the end of a server log: Streamlit's traceback or "port already in use"


def wait_until_serving(url: str, *, process: subprocess.Popen | None = None, timeout_s: float = 240.0, log: Path | None = None) -> None:
    """Return once the Streamlit server at ``url`` answers ``ok`` on ``/_stcore/health``.

    Parameters
    ----------
    url : str
        The server's root, ``http://HOST:PORT``.
    process : subprocess.Popen, optional
        The server's process: once it has exited, waiting stops at once and the error gives its exit status.
    timeout_s : float, default=240
        How long to wait; a cold start imports torch and OpenCV, which takes minutes on a busy machine.
    log : Path, optional
        The file the server writes its output to: the error names it and shows its last lines.

    Raises
    ------
    InvalidInputError
        ``url`` is not ``http(s)://...`` or ``timeout_s`` is not positive.
    RuntimeError
        ``process`` exited before the server answered.
    TimeoutError
        No ``ok`` within ``timeout_s``.
    """
    if not url.startswith(("http://", "https://")):
        raise InvalidInputError(f"url {url!r}: give the server's root as http://HOST:PORT")
    if not timeout_s > 0:
        raise InvalidInputError(f"timeout_s {timeout_s}: give a positive number of seconds")
    health = url.rstrip("/") + _HEALTH_PATH
    deadline = time.monotonic() + timeout_s
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server for {url} exited with status {process.returncode} before {health} answered; its log says why{_log_tail(log)}")
        if _answers_ok(health, timeout_s=min(_REQUEST_TIMEOUT_S, max(deadline - time.monotonic(), 0.1))):
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{health} did not answer ok within {timeout_s:g} s: is the server listening there? If it is slow to start, wait longer (timeout_s){_log_tail(log)}")
        time.sleep(_POLL_S)


def _answers_ok(health: str, *, timeout_s: float) -> bool:
    try:
        with urllib.request.urlopen(health, timeout=timeout_s) as response:
            return response.read().strip() == b"ok"
    except (OSError, http.client.HTTPException):  # not listening yet (URLError, HTTPError, a reset or timeout are OSErrors), or a half-started answer
        return False


def _log_tail(log: Path | None) -> str:
    if log is None:
        return ""
    try:
        text = log.read_text(errors="replace")
    except OSError as err:
        return f"; its log {log} cannot be read: {err}"
    return f"; the end of its log {log}:\n{text[-_LOG_TAIL_CHARS:]}"
