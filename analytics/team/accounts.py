"""User accounts stored in the workspace's ``users`` table.

Passwords are hashed with argon2id (``argon2-cffi``'s :class:`~argon2.PasswordHasher`, its
RFC 9106 defaults); no function returns a hash. :func:`authenticate` refuses a wrong password, an
unknown name, a disabled account and a locked account with one and the same :class:`SignInError`
message, and verifies a dummy hash for an unknown name so the time taken does not reveal which
names exist. After :data:`LOCK_AFTER_FAILURES` wrong passwords in a row an account is locked for
:data:`LOCK_MINUTES` minutes (logged as a warning on the server); a successful sign-in or a new
password resets the count. The check and the count are atomic (see :func:`authenticate`): no
number of simultaneous attempts gets more than :data:`LOCK_AFTER_FAILURES` password checks before
the lock, and none signs in once the lock is set.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from analytics._validation import check_choice
from analytics.exceptions import InvalidInputError, NotFoundError, SignInError
from analytics.workspace import Workspace

from .roles import ROLES

LOCK_AFTER_FAILURES = 5
LOCK_MINUTES = 15
MIN_PASSWORD_LENGTH = 8
SIGN_IN_FAILED = "Sign-in failed: wrong name or password, or the account is disabled or locked for a while."

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
_HASHER = PasswordHasher()
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class User:
    """An account as the app and the CLI see it (never its password hash)."""

    name: str
    role: str
    disabled: bool
    locked_until: str  # ISO-8601 UTC, '' when not locked
    created: str


def add_user(workspace: Workspace, name: str, role: str, password: str) -> User:
    """Create an account.

    Parameters
    ----------
    workspace : Workspace
    name : str
        1-64 characters: letters, digits, ``.``, ``_``, ``@``, ``-`` (not starting with a symbol).
    role : str
        One of :data:`~analytics.team.roles.ROLES`.
    password : str
        At least :data:`MIN_PASSWORD_LENGTH` characters; stored only as an argon2 hash.

    Returns
    -------
    User

    Raises
    ------
    InvalidInputError
        A bad name, role or password, or the name is taken.
    """
    _check_name(name)
    check_choice(role, "role", ROLES)
    password_hash = _hash(password)
    stamp = _stamp(_now())
    with workspace.transaction() as conn:
        if conn.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
            raise InvalidInputError(f"user {name!r} exists already; change its password with `python -m analytics user passwd {name}`")
        conn.execute(
            "INSERT INTO users (name, role, password_hash, created, updated) VALUES (?, ?, ?, ?, ?)",
            (name, role, password_hash, stamp, stamp),
        )
    return User(name, role, False, "", stamp)


def set_password(workspace: Workspace, name: str, password: str) -> None:
    """Replace an account's password; also clears its failed attempts and any lock.

    Raises
    ------
    NotFoundError
        No account has this name.
    InvalidInputError
        The password is too short.
    """
    _update(workspace, name, "password_hash = ?, failed_attempts = 0, locked_until = ''", (_hash(password),))


def disable_user(workspace: Workspace, name: str) -> None:
    """Disable an account: it can no longer sign in, and a signed-in session of it ends on its next page run.

    Raises
    ------
    NotFoundError
        No account has this name.
    """
    _update(workspace, name, "disabled = 1", ())


def enable_user(workspace: Workspace, name: str) -> None:
    """Let a disabled account sign in again; also clears its failed attempts and any lock.

    Raises
    ------
    NotFoundError
        No account has this name.
    """
    _update(workspace, name, "disabled = 0, failed_attempts = 0, locked_until = ''", ())


def set_role(workspace: Workspace, name: str, role: str) -> User:
    """Give an account another role (it applies from the account's next page run).

    Parameters
    ----------
    workspace : Workspace
    name : str
        An existing account.
    role : str
        One of :data:`~analytics.team.roles.ROLES`.

    Returns
    -------
    User
        The account as now stored.

    Raises
    ------
    NotFoundError
        No account has this name.
    InvalidInputError
        An unknown role, or the change would leave no enabled admin (team mode could not start).
    """
    check_choice(role, "role", ROLES)
    with workspace.transaction() as conn:
        row = conn.execute("SELECT role, disabled FROM users WHERE name = ?", (name,)).fetchone()
        admins = conn.execute("SELECT COUNT(*) FROM users WHERE role = 'admin' AND disabled = 0").fetchone()[0]
        if row is not None and row["role"] == "admin" and not row["disabled"] and role != "admin" and admins == 1:
            raise InvalidInputError(f"{name!r} is the only enabled admin; make another account admin first (`python -m analytics user role NAME admin`)")
    _update(workspace, name, "role = ?", (role,))
    return next(user for user in list_users(workspace) if user.name == name)


def list_users(workspace: Workspace) -> list[User]:
    """Every account, sorted by name (without password hashes)."""
    rows = workspace.query("SELECT name, role, disabled, locked_until, created FROM users ORDER BY name")
    return [_user(row) for row in rows]


def active_user(workspace: Workspace, name: str) -> User | None:
    """The account ``name`` when it exists and is enabled, else None (a signed-in session re-checks this)."""
    row = workspace.query_one("SELECT name, role, disabled, locked_until, created FROM users WHERE name = ?", (name,))
    return None if row is None or row["disabled"] else _user(row)


def has_enabled_admin(workspace: Workspace) -> bool:
    """Whether some enabled account has the admin role (team mode needs one)."""
    return workspace.query_one("SELECT 1 FROM users WHERE role = 'admin' AND disabled = 0") is not None


def authenticate(workspace: Workspace, name: str, password: str) -> User:
    """The account when ``password`` is right and the account may sign in.

    The decision cannot be raced: before the (slow) hash check the attempt claims one of the
    account's :data:`LOCK_AFTER_FAILURES` attempt slots in one transaction, counting it in
    ``failed_attempts`` up front, and is refused without a claim while the account is disabled,
    locked, or has every slot taken by earlier wrong passwords or attempts still being checked.
    The outcome is then settled in a second transaction: a wrong password that finds the count at
    the limit locks the account; a right one signs in (and resets the count) only if the account
    is, at that moment, still enabled, unlocked and under the same password. So once
    :data:`LOCK_AFTER_FAILURES` attempts without a success have been counted, no sign-in succeeds
    until the lock expires or an admin unlocks, however many run at once (with attempts in
    flight the lock may therefore come after fewer wrong passwords; it never comes later).

    Parameters
    ----------
    workspace : Workspace
    name, password : str
        As typed on the sign-in form.

    Returns
    -------
    User

    Raises
    ------
    SignInError
        :data:`SIGN_IN_FAILED`, whatever the reason: wrong password, unknown name, disabled or locked.
    """
    row, claimed = _claim_attempt(workspace, name)
    password_ok = _verify(_dummy_hash() if row is None else row["password_hash"], password)  # hash work on every path
    rehash = None  # stored under weaker parameters than today's: store a new hash (made outside the write lock)
    if claimed and password_ok and _HASHER.check_needs_rehash(row["password_hash"]):
        rehash = _HASHER.hash(password)
    user = _settle_attempt(workspace, name, row if claimed else None, password_ok, rehash)
    if user is None:
        raise SignInError(SIGN_IN_FAILED)
    return user


def _claim_attempt(workspace: Workspace, name: str):
    """``(row, claimed)``: the account as read (None if unknown) and whether this attempt got a slot.

    A slot is one unit of ``failed_attempts``, taken in the same write transaction that reads the
    row: an attempt counts as failed until :func:`_settle_attempt` proves otherwise (so one cut
    short by a crash counts as a wrong password, and a success clears it).

    Every attempt runs the same statements and changes exactly one row, so that an existing name
    costs what an unknown one does (the commit's fsync dominates; OWASP: responses must not differ
    by timing): the account's slot when one is claimed, else the workspace's ``sign_in_refused``
    stamp (meta). Before, only a claim wrote, and an existing name took ~20 ms longer.
    """
    now = _now()
    with workspace.transaction() as conn:
        row = conn.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone()
        claimed = conn.execute(
            "UPDATE users SET failed_attempts = failed_attempts + 1"
            " WHERE name = ? AND disabled = 0 AND failed_attempts < ? AND (locked_until = '' OR locked_until <= ?)",
            (name, LOCK_AFTER_FAILURES, _stamp(now)),
        ).rowcount == 1
        conn.execute("INSERT OR REPLACE INTO meta(key, value) SELECT 'sign_in_refused', ? WHERE ?", (_stamp(now), not claimed))
    if row is not None and not claimed and not row["disabled"]:
        if _locked(row, now):
            _log.warning("sign-in refused: account %r is locked until %s", name, row["locked_until"])
        else:
            _log.warning("sign-in refused: account %r has %d attempts failed or in progress", name, row["failed_attempts"])
    return row, claimed


def _settle_attempt(workspace: Workspace, name: str, claimed_row, password_ok: bool, rehash: str | None) -> User | None:
    """Record a checked attempt in one transaction; the account if it signs in, else None.

    ``claimed_row`` is the row read when the slot was claimed, None when no slot was (then only the
    read runs, as for a wrong password: every refusal costs the same database work). Log lines are written
    inside the transaction, hence in the order the outcomes were committed.
    """
    with workspace.transaction() as conn:
        row = conn.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone()
        if claimed_row is None:
            return None
        now = _now()
        if row is None or _locked(row, now):
            return None
        if not password_ok:  # already counted by the claim
            if row["failed_attempts"] >= LOCK_AFTER_FAILURES:
                until = _stamp(now + timedelta(minutes=LOCK_MINUTES))
                conn.execute("UPDATE users SET failed_attempts = 0, locked_until = ? WHERE name = ?", (until, name))
                _log.warning("account %r locked until %s after %d sign-in attempts without a success", name, until, row["failed_attempts"])
            return None
        if row["disabled"] or row["password_hash"] != claimed_row["password_hash"]:  # disabled or password changed meanwhile
            return None
        assignments, values = "failed_attempts = 0, locked_until = ''", ()
        if rehash is not None:
            assignments, values = assignments + ", password_hash = ?", (rehash,)
        conn.execute(f"UPDATE users SET {assignments}, updated = ? WHERE name = ?", (*values, _stamp(now), name))
        _log.info("account %r signed in", name)
        return _user(row)


def _locked(row, now: datetime) -> bool:
    return bool(row["locked_until"]) and now < datetime.fromisoformat(row["locked_until"])


def _update(workspace: Workspace, name: str, assignments: str, values: tuple) -> None:
    """``UPDATE users SET <assignments>, updated = now`` for one existing account (assignments are constants)."""
    with workspace.transaction() as conn:
        cursor = conn.execute(f"UPDATE users SET {assignments}, updated = ? WHERE name = ?", (*values, _stamp(_now()), name))
        if cursor.rowcount == 0:
            raise NotFoundError(f"no user named {name!r}; list them with `python -m analytics user list`")


def _verify(password_hash: str, password: str) -> bool:
    try:
        return _HASHER.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def _hash(password: str) -> str:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidInputError(f"password: at least {MIN_PASSWORD_LENGTH} characters are needed; choose a longer one")
    return _HASHER.hash(password)


@cache
def _dummy_hash() -> str:
    """A hash no typed password matches, verified for unknown names to take as long as a real check."""
    return _HASHER.hash("backdrop: no such user")


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidInputError(
            f"user name {name!r}: use 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit"
        )


def _user(row) -> User:
    return User(row["name"], row["role"], bool(row["disabled"]), row["locked_until"], row["created"])


def _now() -> datetime:
    """The current UTC time (tests replace it to move past a lock)."""
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")
