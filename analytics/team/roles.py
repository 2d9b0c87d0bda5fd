"""The four roles and what each may do.

``PERMISSIONS`` maps a role to its permissions; :func:`require` is the check every library call or
page guarded by a role makes first. Admins may do everything; analysts prepare and run tests, judge
and manage everyone's background jobs (the leads); annotators judge; viewers only read.
"""

from __future__ import annotations

from typing import Any, Protocol

from analytics._choices import ROLES
from analytics.exceptions import InvalidInputError, PermissionDeniedError

#: Permission -> what it allows, as the end of "may not ...".
ACTIONS = {
    "manage_users": "manage user accounts",
    "register_models": "register, replace or delete models (TorchScript and ONNX are code)",
    "import_data": "import targets or backgrounds",
    "server_paths": "read files from paths on the server",
    "build_suites": "build keywords, ontologies or suites",
    "run_models": "run models over suites",
    "judge": "judge models",
    "adjudicate": "record consensus labels",
    "manage_jobs": "cancel or resume other people's background jobs",
    "browse": "see models, runs, results and other people's judgments by name",
    "view": "view the workspace",
}

PERMISSIONS: dict[str, frozenset[str]] = {
    "admin": frozenset(ACTIONS),
    "analyst": frozenset({"build_suites", "run_models", "judge", "adjudicate", "manage_jobs", "browse", "view"}),
    # Annotators judge blind: they see the models assigned to them under neutral names only.
    "annotator": frozenset({"judge", "view"}),
    "viewer": frozenset({"browse", "view"}),
}


class Actor(Protocol):
    """What a permission check reads of an account: its name and role (:class:`~analytics.team.accounts.User` has both)."""

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...


def allowed(role: str, permission: str) -> bool:
    """Whether ``role`` has ``permission`` (both checked against :data:`PERMISSIONS`)."""
    if permission not in ACTIONS:
        raise InvalidInputError(f"permission {permission!r} is unknown; use one of {', '.join(ACTIONS)}")
    return permission in PERMISSIONS.get(role, frozenset())


def roles_with(permission: str) -> list[str]:
    """The roles that have ``permission``, most powerful first."""
    return [role for role in ROLES if allowed(role, permission)]


def require(user: Actor, permission: str) -> None:
    """Refuse an action the user's role does not allow.

    Parameters
    ----------
    user : Actor
        The signed-in account (a :class:`~analytics.team.accounts.User`, or anything with ``name`` and ``role``).
    permission : str
        A key of :data:`ACTIONS`, e.g. ``"register_models"``.

    Raises
    ------
    PermissionDeniedError
        The role lacks the permission; the message names the roles that have it.
    InvalidInputError
        ``permission`` is not a known permission.
    """
    if not allowed(user.role, permission):
        needed = " or ".join(roles_with(permission))
        raise PermissionDeniedError(
            f"{user.name} ({user.role}) may not {ACTIONS[permission]}: that needs the role {needed}. Ask an admin."
        )


def require_permission(workspace: Any, permission: str) -> None:
    """The check a library call that changes the workspace makes first.

    Parameters
    ----------
    workspace : Workspace
        Its ``actor`` is the signed-in account (team mode) or None (solo mode and the CLI: nobody
        signs in, so everything is allowed).
    permission : str
        A key of :data:`ACTIONS`.

    Raises
    ------
    PermissionDeniedError
        The actor's role lacks the permission.
    """
    actor = getattr(workspace, "actor", None)
    if actor is None:
        allowed("admin", permission)  # admins hold every permission: this only refuses an unknown name
        return
    require(actor, permission)
