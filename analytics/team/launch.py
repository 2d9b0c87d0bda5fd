"""How ``backdrop serve`` starts the dashboard: the checks first, then the ``streamlit run`` command.

The dashboard's files come from the checkout or from the installed wheel
(:func:`analytics._install.dashboard_dir`), so the same command serves from any folder.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import sys
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
