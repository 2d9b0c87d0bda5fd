"""Server paths typed in the browser, limited to the data roots the server was started with.

A path typed in a page is read by the server process, so in team mode it could reach any file the
server may read (other users' data, keys, the workspace database). :func:`resolve_server_path` is the
one gate every such input passes, and :func:`server_paths_offered` the one rule for whether a page
shows such an input at all: it needs the ``server_paths`` permission (admins), refuses ``..``
and anything whose real path (symlinks followed) lies outside the roots of
``$BACKDROP_DATA_ROOTS`` (set by ``bash backdrop.sh serve --data-root DIR``). A folder is refused
when any file or folder under it is a symlink leading out of the roots, so a reader that lists it
(an import, the ImageNet-X folder) only ever opens files inside them, and nothing of it is imported.
In team mode with no roots configured every server path is refused; in solo mode with none, paths
are used as typed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from analytics._validation import user_path
from analytics.exceptions import InvalidInputError, PermissionDeniedError

from .roles import allowed, require_permission
from .server import team_mode

DATA_ROOTS_ENV_VAR = "BACKDROP_DATA_ROOTS"
_FIX = f"start the server with `bash backdrop.sh serve --team --data-root DIR` (or set ${DATA_ROOTS_ENV_VAR}, folders separated by {os.pathsep!r})"


def data_roots() -> list[Path]:
    """The folders server paths may lie in: ``$BACKDROP_DATA_ROOTS``, separated by :data:`os.pathsep`.

    Returns
    -------
    list of Path
        Each root with ``~`` expanded and symlinks resolved; empty when the variable is unset or blank.
    """
    text = os.environ.get(DATA_ROOTS_ENV_VAR, "")
    return [user_path(part.strip(), f"${DATA_ROOTS_ENV_VAR} entry").resolve() for part in text.split(os.pathsep) if part.strip()]


def server_paths_offered(workspace: Any) -> bool:
    """Whether a page offers inputs for paths on the server (what :func:`resolve_server_path` may accept).

    Parameters
    ----------
    workspace : Workspace
        Its ``actor`` (the signed-in account, None in solo mode) needs the ``server_paths`` permission.

    Returns
    -------
    bool
        True in solo mode; in team mode only for admins, and only when data roots are configured
        (without them every server path is refused, so the page offers uploads only).
    """
    actor = getattr(workspace, "actor", None)
    if actor is not None and not allowed(actor.role, "server_paths"):
        return False
    return not team_mode() or bool(data_roots())


def resolve_server_path(workspace: Any, text: str) -> Path:
    """The file or folder a path typed in the browser names, if the actor may read it.

    Parameters
    ----------
    workspace : Workspace
        Its ``actor`` (the signed-in account, None in solo mode) needs the ``server_paths`` permission.
    text : str
        The typed path; ``~`` is expanded. With roots configured, a relative path is taken inside
        the first root.

    Returns
    -------
    Path
        The real path (symlinks resolved) when roots are configured; else the typed path, ``~`` expanded.

    Raises
    ------
    PermissionDeniedError
        The role lacks ``server_paths``; the path has a ``..`` part or resolves outside every root;
        it is a folder holding a symlink (at any depth) that leads outside every root, or a folder
        that cannot be listed; team mode with no roots configured. The message names the path (and the link), the roots and the fix.
    InvalidInputError
        The text is empty or holds a NUL byte.
    """
    require_permission(workspace, "server_paths")
    typed = str(text).strip()
    if not typed:
        raise InvalidInputError("server path is empty; type the path of a file or folder on the server")
    if "\0" in typed:  # the OS refuses it with a ValueError (and a traceback on the page)
        raise InvalidInputError(f"server path {typed!r} holds a NUL byte (\\0), which no file name can; type the path without it")
    path = user_path(typed, "server path")
    roots = data_roots()
    if not roots:
        if team_mode():
            raise PermissionDeniedError(f"server path {typed!r} refused: this team server has no data roots configured; {_FIX}")
        return path
    listed = ", ".join(str(root) for root in roots)
    if ".." in path.parts:
        raise PermissionDeniedError(f"server path {typed!r} refused: '..' is not allowed; give the path inside a data root ({listed})")
    real = (path if path.is_absolute() else roots[0] / path).resolve()
    if not _inside(real, roots):
        raise PermissionDeniedError(
            f"server path {typed!r} refused: it resolves to {real}, outside the data roots ({listed}); "
            f"put the data inside one of them, or {_FIX}"
        )
    try:
        escape = _link_out(real, roots) if real.is_dir() else None
    except OSError as err:  # a folder that cannot be listed cannot be checked: its links might lead anywhere
        raise PermissionDeniedError(
            f"server path {typed!r} refused: cannot list {err.filename} to check its links ({err.strerror}); "
            "make it readable by the server or move it out of the folder"
        ) from err
    if escape is not None:
        link, target = escape
        raise PermissionDeniedError(
            f"server path {typed!r} refused: {link} is a symlink to {target}, outside the data roots ({listed}); "
            "copy what it points to into the folder (or a data root) in place of the link"
        )
    return real


def _inside(real: Path, roots: list[Path]) -> bool:
    return any(real.is_relative_to(root) for root in roots)


def _link_out(folder: Path, roots: list[Path]) -> tuple[Path, Path] | None:
    """The first symlink under the real folder ``folder`` (links to folders followed) whose real
    path lies outside every root, with that real path; None when every link stays inside.

    Only links need resolving: below a real folder inside a root, an entry that is no link is inside too.
    """
    pending, walked = [folder], {folder}
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.is_symlink():
                    target = Path(entry.path).resolve()
                    if not _inside(target, roots):
                        return Path(entry.path), target
                    if target.is_dir() and target not in walked:  # a link inside may hold links out
                        walked.add(target)
                        pending.append(Path(entry.path))
                elif entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
    return None
