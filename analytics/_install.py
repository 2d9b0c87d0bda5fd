"""Where Backdrop's own files are: in a checkout, or inside an installed wheel.

From a checkout (``python -m analytics`` in the repository) the dashboard (``app.py``, ``pages/``,
``ui/``, ``.streamlit/config.toml``) and ``assets/`` lie beside the library. A wheel
(``pip install backdrop-invariance``) carries them inside the library, under ``analytics/_dashboard``
(see ``pyproject.toml``), so that ``backdrop serve`` and ``backdrop demo`` work from any folder.
What a run writes by default follows the same split: the checkout's ``workspace/`` and
``.cache/assets/``, or, when installed, ``./workspace`` of the current folder and the user's cache.
"""

from __future__ import annotations

import os
from pathlib import Path

LIBRARY_DIR = Path(__file__).resolve().parent
#: The folder above the library: the checkout's root, or site-packages when installed.
PROJECT_ROOT = LIBRARY_DIR.parent
#: Where a wheel puts the dashboard's files and ``assets/``.
SHIPPED_DIR = LIBRARY_DIR / "_dashboard"


def checkout_root() -> Path | None:
    """The repository this library runs from, or None when it runs from an installed wheel."""
    return PROJECT_ROOT if (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "app.py").is_file() else None


def dashboard_dir() -> Path | None:
    """The folder holding ``app.py`` and ``pages/``: the checkout's root, or the wheel's copy; None
    when neither has them (a wheel built without the dashboard)."""
    for folder in (checkout_root(), SHIPPED_DIR):
        if folder is not None and (folder / "app.py").is_file() and (folder / "pages").is_dir():
            return folder
    return None


def project_file(relative: str) -> Path:
    """A file shipped with Backdrop (``assets/demo_catalogue.json``), wherever it was installed."""
    root = checkout_root()
    return (root if root is not None else SHIPPED_DIR) / relative


#: The environment variable naming the workspace used when none is given.
ENV_VAR = "BACKDROP_WORKSPACE"


def default_workspace_path() -> Path:
    """The workspace used when none is given: ``$BACKDROP_WORKSPACE``, else the checkout's
    ``workspace/`` (installed: ``./workspace``; :func:`default_data_dir`). Defined here, beside the
    other default folders, so that the command line's help names it without importing the workspace
    (:mod:`analytics.workspace` re-exports it)."""
    return Path(os.environ.get(ENV_VAR) or default_data_dir("workspace"))


def default_data_dir(name: str) -> Path:
    """A folder for what Backdrop writes when no option names one: ``<checkout>/<name>`` in a
    checkout; installed, ``./workspace`` for the workspace and ``$XDG_CACHE_HOME/backdrop`` (or
    ``~/.cache/backdrop``) for the asset cache, never site-packages."""
    root = checkout_root()
    if root is not None:
        return root / name
    if name == "workspace":
        return Path.cwd() / "workspace"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "backdrop"
    return cache / Path(name).name
