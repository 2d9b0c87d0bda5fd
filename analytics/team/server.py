"""The two ways to serve the dashboard.

Solo (default): Streamlit listens on 127.0.0.1 only and nobody signs in; the workspace is whatever
folder the sidebar names. Team (``--team`` or ``$BACKDROP_TEAM=1``): Streamlit listens on every
interface, every page asks for sign-in first, and the workspace is fixed to the server's
(``$BACKDROP_WORKSPACE``); it refuses to start while that workspace has no enabled admin account.
"""

from __future__ import annotations

import os

from analytics._validation import user_path
from analytics.exceptions import InvalidInputError, WorkspaceError
from analytics.workspace import Workspace

from .accounts import has_enabled_admin

TEAM_ENV_VAR = "BACKDROP_TEAM"
SOLO_ADDRESS = "127.0.0.1"
TEAM_ADDRESS = "0.0.0.0"
# Largest upload in MB (Streamlit's server.maxUploadSize; also in .streamlit/config.toml). Streamlit holds
# every upload in memory, from any browser session, signed in or not (README "Serve a team"), so this
# covers the workflows and no more: keyword and predictions CSVs (MAX_CSV_UPLOAD_MB), image zips, and
# checkpoints up to ViT-B/16, ConvNeXt-Base or EfficientNet-V2-L; larger files: a server path. A whole
# number of GB (1024 MB): the upload box states the cap rounded to whole units, in kB of 1000 bytes outside
# Windows, so 512 MB read "1GB per file" there; 1024 MB reads "1GB" on every system (issue 47.10a).
MAX_UPLOAD_MB = 1024
# Largest CSV a reader takes (keyword tables, model predictions, judgment imports), in MB of 2**20 bytes:
# the one source of those readers' caps and of the limit their uploaders show (`max_upload_size`),
# so the page, the widget and the error agree (issue 42.11d). ~2 million long-format keyword rows.
MAX_CSV_UPLOAD_MB = 64
MAX_UPLOAD_ENV_VAR = "BACKDROP_MAX_UPLOAD_MB"


def team_mode() -> bool:
    """Whether this process serves a team: ``$BACKDROP_TEAM`` is 1, true or yes."""
    return os.environ.get(TEAM_ENV_VAR, "").strip().lower() in {"1", "true", "yes"}


def max_upload_mb() -> int:
    """The largest upload in MB: ``$BACKDROP_MAX_UPLOAD_MB``, else :data:`MAX_UPLOAD_MB`.

    Raises
    ------
    InvalidInputError
        ``$BACKDROP_MAX_UPLOAD_MB`` is not a positive whole number.
    """
    text = os.environ.get(MAX_UPLOAD_ENV_VAR, "").strip()
    if not text:
        return MAX_UPLOAD_MB
    if not text.isdigit() or int(text) < 1:
        raise InvalidInputError(f"${MAX_UPLOAD_ENV_VAR} must be a whole number of MB, at least 1; got {text!r}: unset it for {MAX_UPLOAD_MB}")
    return int(text)


def streamlit_arguments(*, team: bool, port: int) -> list[str]:
    """The options of ``streamlit run app.py`` for a mode (with the upload cap, :func:`max_upload_mb`).

    Parameters
    ----------
    team : bool
        Team mode (all interfaces) rather than solo (loopback only).
    port : int
        TCP port.

    Returns
    -------
    list of str
        ``["--server.port", "8501", "--server.headless", "true", "--server.address", "127.0.0.1",
        "--server.maxUploadSize", "1024"]`` in solo mode.
    """
    address = TEAM_ADDRESS if team else SOLO_ADDRESS
    return [
        "--server.port", str(int(port)), "--server.headless", "true", "--server.address", address,
        "--server.maxUploadSize", str(max_upload_mb()),
    ]  # fmt: skip


def check_team_ready(workspace_path: str | os.PathLike) -> None:
    """Refuse team mode while the workspace has no enabled admin account (nobody could manage users).

    Raises
    ------
    WorkspaceError
        No workspace at ``workspace_path``, or no enabled admin in it; the message gives the command to add one.
    """
    path = user_path(workspace_path, "workspace")
    fix = f"create one with `python -m analytics user add NAME --role admin --workspace {path}`, then start again"
    try:
        workspace = Workspace(path, create=False)
    except WorkspaceError:
        raise WorkspaceError(f"team mode needs an admin account, and there is no workspace at {path} yet: {fix}") from None
    if not has_enabled_admin(workspace):
        raise WorkspaceError(f"team mode needs an enabled admin account in the workspace {path}: {fix}")
