"""Single sign-on: who may enter through the organisation's OpenID Connect provider, and with which role.

Team mode can offer Streamlit's ``st.login`` (OpenID Connect; the provider's client id and secret
go in ``.streamlit/secrets.toml`` under ``[auth]``, as Streamlit documents) beside the passwords.
Who gets in, and as what, is decided here from the ID token's claims and a roles file
(:func:`sso_config_path`: ``$BACKDROP_SSO_ROLES``, else ``sso-roles.toml`` in the workspace):

.. code-block:: toml

    name_claim = "email"          # the claim that names the person in Backdrop (default email)
    provider = "company"          # an [auth.company] section of secrets.toml; leave out for [auth]
    label = "Company account"     # the sign-in button says "Sign in with Company account"

    [people]                      # an allow-list: these people, with these roles
    "ada@example.org" = "admin"
    "ann@example.org" = "annotator"

    [claim]                       # and/or: roles from a claim the provider sends (a text or a list)
    name = "groups"
    roles = { "vision-leads" = "analyst", "labellers" = "annotator" }

A person listed in ``people`` gets that role; otherwise the most powerful role any value of the
claim maps to; anyone else is refused. An email-named person whose provider says the address is
not verified (``email_verified`` false) is refused. Each sign-in records the person as an account
of the workspace (``users`` row, :func:`sso_account`) with the role the file gives now, so roles,
assignments and ``user disable`` work as for password accounts; such an account has no password
(nobody signs in with one as it), and a password account of the same name is never taken over.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analytics._validation import user_path
from analytics.exceptions import InvalidInputError, SignInError
from analytics.workspace import Workspace

from .accounts import User, _check_name, _now, _stamp
from .roles import ROLES

SSO_ROLES_ENV_VAR = "BACKDROP_SSO_ROLES"
SSO_ROLES_FILE = "sso-roles.toml"
#: What an account made by single sign-on stores instead of a password hash: no password matches it.
SSO_PASSWORD_MARK = "!sso"


@dataclass(frozen=True)
class SSOConfig:
    """A parsed roles file (see the module notes)."""

    name_claim: str = "email"
    provider: str | None = None
    label: str = "single sign-on"
    people: dict[str, str] = field(default_factory=dict)
    claim: str | None = None
    claim_roles: dict[str, str] = field(default_factory=dict)


def sso_config_path(workspace_root: str | os.PathLike) -> Path:
    """Where the roles file is read from: ``$BACKDROP_SSO_ROLES``, else ``sso-roles.toml`` in the workspace."""
    configured = os.environ.get(SSO_ROLES_ENV_VAR, "").strip()
    return user_path(configured, f"${SSO_ROLES_ENV_VAR}") if configured else Path(workspace_root) / SSO_ROLES_FILE


def load_sso_config(path: str | os.PathLike) -> SSOConfig | None:
    """The roles file at ``path``, or None when there is none (single sign-on is off).

    Raises
    ------
    InvalidInputError
        The file is not TOML, has unknown keys, or names a role that does not exist.
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise InvalidInputError(f"{path}: not a TOML file ({err}); see `analytics.team.sso` for its form") from None
    unknown = set(data) - {"name_claim", "provider", "label", "people", "claim"}
    if unknown:
        raise InvalidInputError(f"{path}: unknown keys {sorted(unknown)}; use name_claim, provider, label, [people] and [claim]")
    claim = data.get("claim", {})
    if not isinstance(claim, dict) or set(claim) - {"name", "roles"} or ("roles" in claim) != ("name" in claim):
        raise InvalidInputError(f"{path}: [claim] needs name (the claim) and roles (claim value = role), and nothing else")
    people, claim_roles = _roles(path, data.get("people", {}), "people"), _roles(path, claim.get("roles", {}), "claim.roles")
    texts = {key: data.get(key) for key in ("name_claim", "provider", "label")}
    if any(value is not None and (not isinstance(value, str) or not value.strip()) for value in (*texts.values(), claim.get("name"))):
        raise InvalidInputError(f"{path}: name_claim, provider, label and claim.name must be non-empty text when given")
    return SSOConfig(
        name_claim=texts["name_claim"] or "email",
        provider=texts["provider"],
        label=texts["label"] or "single sign-on",
        people=people,
        claim=claim.get("name"),
        claim_roles=claim_roles,
    )


def sso_role(claims: Mapping[str, Any], config: SSOConfig) -> tuple[str, str]:
    """The Backdrop name and role of the person an ID token's claims describe.

    Parameters
    ----------
    claims : mapping
        The ID token's claims (``st.user`` after ``st.login``).
    config : SSOConfig

    Returns
    -------
    (name, role)

    Raises
    ------
    SignInError
        No usable name in ``config.name_claim``, an unverified email, or neither the allow-list
        nor the claim gives the person a role.
    """
    name = claims.get(config.name_claim)
    if not isinstance(name, str) or not name.strip():
        raise SignInError(f"Your sign-in carries no {config.name_claim!r}; ask an admin to check the provider's claims.")
    name = name.strip()
    if config.name_claim == "email" and claims.get("email_verified") is False:
        raise SignInError(f"{name}: the provider says this email address is not verified; verify it there first.")
    role = config.people.get(name)
    if role is None and config.claim is not None:
        values = claims.get(config.claim)
        values = [values] if isinstance(values, str) else values if isinstance(values, list) else []
        granted = {config.claim_roles[value] for value in values if isinstance(value, str) and value in config.claim_roles}
        role = next((candidate for candidate in ROLES if candidate in granted), None)  # ROLES: most powerful first
    if role is None:
        raise SignInError(f"{name} may not use this Backdrop server; ask an admin to add you to its single sign-on roles.")
    return name, role


def sso_account(workspace: Workspace, claims: Mapping[str, Any], config: SSOConfig) -> User:
    """Sign in through single sign-on: the workspace account of the person, created or given today's role.

    Raises
    ------
    SignInError
        As :func:`sso_role`; the name is not a valid account name; a password account has the
        name; the account has been disabled.
    """
    name, role = sso_role(claims, config)
    try:
        _check_name(name)
    except InvalidInputError as err:
        raise SignInError(f"Your sign-in name cannot name an account here: {err}") from None
    stamp = _stamp(_now())
    with workspace.transaction() as conn:
        row = conn.execute("SELECT role, password_hash, disabled, locked_until, created FROM users WHERE name = ?", (name,)).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO users (name, role, password_hash, created, updated) VALUES (?, ?, ?, ?, ?)",
                (name, role, SSO_PASSWORD_MARK, stamp, stamp),
            )
            return User(name, role, False, "", stamp)
        if row["password_hash"] != SSO_PASSWORD_MARK:
            raise SignInError(f"{name} has a password account on this server; sign in with the password, or ask an admin to rename one of them.")
        if row["disabled"]:
            raise SignInError(f"{name}: your account has been disabled; ask an admin.")
        if row["role"] != role:
            conn.execute("UPDATE users SET role = ?, updated = ? WHERE name = ?", (role, stamp, name))
    return User(name, role, False, row["locked_until"], row["created"])


def _roles(path: Path, table: object, where: str) -> dict[str, str]:
    if not isinstance(table, dict):
        raise InvalidInputError(f"{path}: [{where}] must be a table of name = role")
    bad = {key: value for key, value in table.items() if value not in ROLES}
    if bad:
        raise InvalidInputError(f"{path}: [{where}] gives unknown roles {bad}; use one of {', '.join(ROLES)}")
    return dict(table)
