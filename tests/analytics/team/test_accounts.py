"""Accounts, roles and server modes of :mod:`analytics.team`."""

from __future__ import annotations

import logging
import re
import threading
import tomllib
from datetime import timedelta

import pytest
from argon2 import PasswordHasher, Type

from analytics.exceptions import InvalidInputError, NotFoundError, PermissionDeniedError, SignInError, WorkspaceError
from analytics.team import User, accounts, add_user, allowed, authenticate, check_team_ready, disable_user, list_users, require_permission, set_password, streamlit_arguments
from analytics.team.accounts import LOCK_AFTER_FAILURES, LOCK_MINUTES, SIGN_IN_FAILED, has_enabled_admin
from analytics.team.roles import ACTIONS, PERMISSIONS, ROLES, require
from analytics.team.server import MAX_UPLOAD_ENV_VAR, MAX_UPLOAD_MB
from analytics.workspace import PROJECT_ROOT, Workspace
from tests.fixtures.team import TEAM_PASSWORD as PASSWORD

pytestmark = pytest.mark.usefixtures("fast_hashing")
REAL_HASHER = accounts._HASHER  # read at import, before fast_hashing swaps it


@pytest.fixture
def clock(monkeypatch):
    """Freeze :func:`accounts._now`; ``clock.advance(minutes)`` moves it on."""

    class Clock:
        now = accounts._now()

        def advance(self, minutes: float) -> None:
            self.now += timedelta(minutes=minutes)

    frozen = Clock()
    monkeypatch.setattr(accounts, "_now", lambda: frozen.now)
    return frozen


def refusal(workspace: Workspace, name: str, password: str) -> str:
    with pytest.raises(SignInError) as caught:
        authenticate(workspace, name, password)
    return str(caught.value)


def test_real_hasher_is_argon2id_with_recommended_costs():
    assert REAL_HASHER.type is Type.ID and REAL_HASHER.memory_cost >= 19 * 1024 and REAL_HASHER.time_cost >= 2  # RFC 9106 / OWASP


def test_password_is_stored_as_argon2id_hash_and_never_listed(team_workspace):
    (stored,) = team_workspace.query_one("SELECT password_hash FROM users WHERE name = 'ada'")
    assert stored.startswith("$argon2id$") and PASSWORD not in stored
    users = list_users(team_workspace)
    assert [u.name for u in users] == ["ada", "ann"]
    assert all(not hasattr(u, "password_hash") and stored not in repr(u) for u in users)
    assert authenticate(team_workspace, "ann", PASSWORD) == User("ann", "annotator", False, "", users[1].created)


def test_every_refusal_gives_the_same_message(team_workspace, clock):
    add_user(team_workspace, "off", "viewer", PASSWORD)
    disable_user(team_workspace, "off")
    add_user(team_workspace, "lock", "viewer", PASSWORD)
    for _ in range(LOCK_AFTER_FAILURES):
        refusal(team_workspace, "lock", "wrong password")
    messages = {
        "wrong password": refusal(team_workspace, "ada", "wrong password"),
        "unknown user": refusal(team_workspace, "nobody", PASSWORD),
        "disabled": refusal(team_workspace, "off", PASSWORD),
        "locked": refusal(team_workspace, "lock", PASSWORD),
    }
    assert set(messages.values()) == {SIGN_IN_FAILED}


def test_unknown_user_costs_a_hash_verification(team_workspace, monkeypatch):
    checked = []
    real_verify = accounts._verify
    monkeypatch.setattr(accounts, "_verify", lambda stored, password: checked.append(stored) or real_verify(stored, password))
    refusal(team_workspace, "nobody", PASSWORD)
    assert len(checked) == 1 and checked[0].startswith("$argon2id$")


def test_every_refusal_runs_the_same_statements_and_writes_one_row(team_workspace, clock, sql_trace):
    """No timing: an existing name with a wrong password, an unknown name, a disabled and a locked
    account run the same SQL and change one row each, so the commit's fsync is paid on every path
    (before, only an existing, enabled, unlocked account's attempt wrote: ~23 ms against ~1 ms)."""
    add_user(team_workspace, "off", "viewer", PASSWORD)
    disable_user(team_workspace, "off")
    add_user(team_workspace, "lock", "viewer", PASSWORD)
    for _ in range(LOCK_AFTER_FAILURES):
        refusal(team_workspace, "lock", "wrong password")
    def rows() -> set[tuple]:
        users = {("users", *row) for row in team_workspace.query("SELECT name, failed_attempts, locked_until, password_hash FROM users")}
        return users | {("meta", *row) for row in team_workspace.query("SELECT key, value FROM meta")}

    traces, written = {}, {}
    for case, name in (("wrong password", "ada"), ("unknown user", "nobody"), ("disabled", "off"), ("locked", "lock")):
        clock.advance(1)  # a new stamp, so that a rewritten row shows
        before = rows()
        sql_trace.clear()
        refusal(team_workspace, name, "wrong password")
        written[case] = len(rows() - before)
        # the statements with their values left out (names, stamps and flags differ by design)
        traces[case] = [re.sub(r"'[^']*'|\b\d+\b", "?", " ".join(statement.sql.split())) for statement in sql_trace]
    assert all(trace == traces["wrong password"] for trace in traces.values()), traces
    assert written == dict.fromkeys(traces, 1)
    stamped = team_workspace.query_one("SELECT value FROM meta WHERE key = 'sign_in_refused'")
    assert stamped is not None  # the refused paths wrote their row


def test_lock_after_five_wrong_passwords_and_unlock_after_the_time(team_workspace, clock):
    for _ in range(LOCK_AFTER_FAILURES - 1):
        refusal(team_workspace, "ann", "wrong password")
    assert authenticate(team_workspace, "ann", PASSWORD).name == "ann"  # a success resets the count
    for _ in range(LOCK_AFTER_FAILURES - 1):
        refusal(team_workspace, "ann", "wrong password")
    assert authenticate(team_workspace, "ann", PASSWORD).name == "ann"
    for _ in range(LOCK_AFTER_FAILURES):
        refusal(team_workspace, "ann", "wrong password")
    refusal(team_workspace, "ann", PASSWORD)  # locked: the right password is refused too
    assert list_users(team_workspace)[1].locked_until
    clock.advance(LOCK_MINUTES - 1)
    refusal(team_workspace, "ann", PASSWORD)
    clock.advance(2)
    assert authenticate(team_workspace, "ann", PASSWORD).name == "ann"


def test_new_password_unlocks_and_replaces_the_old_one(team_workspace, clock):
    for _ in range(LOCK_AFTER_FAILURES):
        refusal(team_workspace, "ann", "wrong password")
    set_password(team_workspace, "ann", "another password")
    refusal(team_workspace, "ann", PASSWORD)
    assert authenticate(team_workspace, "ann", "another password").name == "ann"



def attempt_all(root, passwords: list[str], name: str = "ann") -> list[bool]:
    """Sign ``name`` in once per password, all at the same moment, each thread with its own Workspace."""
    workspaces = [Workspace(root, create=False) for _ in passwords]
    barrier = threading.Barrier(len(passwords))
    signed_in = [False] * len(passwords)

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            signed_in[i] = authenticate(workspaces[i], name, passwords[i]).name == name
        except SignInError:
            pass

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(len(passwords))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return signed_in


def test_simultaneous_attempts_never_sign_in_after_the_lock(team_workspace, clock, caplog):
    """11 wrong passwords and 1 right at once, many rounds: a success never follows the lock."""
    caplog.set_level(logging.INFO, logger=accounts.__name__)
    for _ in range(10):
        set_password(team_workspace, "ann", PASSWORD)  # unlocks, resets the count
        caplog.clear()
        passwords = ["wrong password"] * 11 + [PASSWORD]
        signed_in = attempt_all(team_workspace.root, passwords)
        # the outcomes are logged inside their transactions, so in the order they were committed
        events = [r.getMessage() for r in caplog.records if "signed in" in r.getMessage() or " locked until " in r.getMessage()]
        assert sum(signed_in) == sum("signed in" in e for e in events) <= 1 and not any(signed_in[:11])
        if any("locked until" in e for e in events):
            first_lock = next(i for i, e in enumerate(events) if "locked until" in e)
            assert not any("signed in" in e for e in events[first_lock:])  # nothing signs in once locked
        # at most LOCK_AFTER_FAILURES wrong passwords are checked before the lock or a success
        (failed,) = team_workspace.query_one("SELECT failed_attempts FROM users WHERE name = 'ann'")
        assert 0 <= failed < LOCK_AFTER_FAILURES


def test_right_password_racing_wrong_ones_is_refused_once_they_lock(team_workspace, clock, monkeypatch):
    """The race of issue 25: the right attempt reads the account first, the wrong ones lock it while it is checked."""
    real_verify = accounts._verify
    right_checking, wrong_done = threading.Event(), threading.Event()

    def verify(stored: str, password: str) -> bool:
        if password == PASSWORD:
            right_checking.set()
            assert wrong_done.wait(timeout=60)  # stay in the slow hash check until every wrong attempt ended
        return real_verify(stored, password)

    monkeypatch.setattr(accounts, "_verify", verify)
    outcome: list[object] = []

    def right() -> None:
        try:
            outcome.append(authenticate(Workspace(team_workspace.root, create=False), "ann", PASSWORD))
        except SignInError as error:
            outcome.append(error)

    thread = threading.Thread(target=right)
    thread.start()
    assert right_checking.wait(timeout=60)
    attempt_all(team_workspace.root, ["wrong password"] * 11)
    wrong_done.set()
    thread.join(timeout=60)
    assert len(outcome) == 1 and isinstance(outcome[0], SignInError) and str(outcome[0]) == SIGN_IN_FAILED
    assert list_users(team_workspace)[1].locked_until  # locked, and the right password did not undo it


def test_right_password_after_simultaneous_wrong_ones_is_refused(team_workspace, clock):
    assert not any(attempt_all(team_workspace.root, ["wrong password"] * LOCK_AFTER_FAILURES))
    assert list_users(team_workspace)[1].locked_until
    assert refusal(team_workspace, "ann", PASSWORD) == SIGN_IN_FAILED
    clock.advance(LOCK_MINUTES + 1)
    assert authenticate(team_workspace, "ann", PASSWORD).name == "ann"


def test_simultaneous_right_passwords_never_lock(team_workspace, clock):
    for _ in range(3):
        assert any(attempt_all(team_workspace.root, [PASSWORD] * 8))
        assert not list_users(team_workspace)[1].locked_until
        assert authenticate(team_workspace, "ann", PASSWORD).name == "ann"


@pytest.mark.parametrize(
    ("name", "role", "password", "complaint"),
    [
        ("ada", "admin", PASSWORD, "exists already"),
        ("", "admin", PASSWORD, "user name"),
        ("-x", "admin", PASSWORD, "user name"),
        ("bob", "root", PASSWORD, "role"),
        ("bob", "viewer", "short", "at least"),
    ],
)
def test_add_user_refuses_bad_input(team_workspace, name, role, password, complaint):
    with pytest.raises(InvalidInputError, match=complaint):
        add_user(team_workspace, name, role, password)


def test_unknown_names_are_not_found(team_workspace):
    with pytest.raises(NotFoundError, match="user list"):
        disable_user(team_workspace, "nobody")
    with pytest.raises(NotFoundError):
        set_password(team_workspace, "nobody", PASSWORD)


def test_require_names_the_roles_needed():
    viewer = User("vic", "viewer", False, "", "")
    with pytest.raises(PermissionDeniedError, match="vic \\(viewer\\) may not judge models: that needs the role admin or analyst or annotator"):
        require(viewer, "judge")
    require(viewer, "view")
    with pytest.raises(PermissionDeniedError, match="needs the role admin\\."):
        require(User("al", "analyst", False, "", ""), "register_models")
    with pytest.raises(InvalidInputError, match="unknown"):
        require(viewer, "fly")
    assert set(PERMISSIONS) == set(ROLES) and PERMISSIONS["admin"] == frozenset(ACTIONS)
    assert PERMISSIONS["viewer"] < PERMISSIONS["analyst"] and PERMISSIONS["annotator"] < PERMISSIONS["analyst"] < PERMISSIONS["admin"]
    assert not allowed("annotator", "browse") and allowed("viewer", "browse")  # annotators judge blind


def test_require_permission_checks_the_workspace_actor(team_workspace):
    require_permission(team_workspace, "register_models")  # solo: nobody signs in, everything allowed
    with pytest.raises(InvalidInputError, match="unknown"):
        require_permission(team_workspace, "fly")
    annotator = team_workspace.acting_as(User("ann", "annotator", False, "", ""))
    require_permission(annotator, "judge")
    with pytest.raises(PermissionDeniedError, match="ann \\(annotator\\) may not import targets"):
        require_permission(annotator, "import_data")
    assert team_workspace.actor is None and annotator.root == team_workspace.root


def test_solo_binds_loopback_and_team_all_interfaces():
    solo = streamlit_arguments(team=False, port=8600)
    assert solo[solo.index("--server.address") + 1] == "127.0.0.1"
    assert solo[solo.index("--server.port") + 1] == "8600"
    team = streamlit_arguments(team=True, port=8600)
    assert team[team.index("--server.address") + 1] == "0.0.0.0"


def test_uploads_are_capped_in_both_modes(monkeypatch):
    """Issue 25.3: Streamlit keeps any session's uploads in memory, signed in or not; cap them."""
    config = tomllib.loads((PROJECT_ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == MAX_UPLOAD_MB == 1024  # plain `streamlit run app.py` too
    monkeypatch.delenv(MAX_UPLOAD_ENV_VAR, raising=False)
    for team in (False, True):
        arguments = streamlit_arguments(team=team, port=8600)
        assert arguments[arguments.index("--server.maxUploadSize") + 1] == "1024"
    monkeypatch.setenv(MAX_UPLOAD_ENV_VAR, "2048")
    team = streamlit_arguments(team=True, port=8600)
    assert team[team.index("--server.maxUploadSize") + 1] == "2048"
    monkeypatch.setenv(MAX_UPLOAD_ENV_VAR, "lots")
    with pytest.raises(InvalidInputError, match="BACKDROP_MAX_UPLOAD_MB must be a whole number.*'lots'"):
        streamlit_arguments(team=True, port=8600)


def test_team_mode_needs_an_enabled_admin(tmp_path, team_workspace):
    with pytest.raises(WorkspaceError, match="no workspace at .*user add NAME --role admin"):
        check_team_ready(tmp_path / "missing")
    no_admin = Workspace(tmp_path / "no-admin")
    add_user(no_admin, "ann", "annotator", PASSWORD)
    with pytest.raises(WorkspaceError, match="enabled admin.*user add NAME --role admin"):
        check_team_ready(no_admin.root)
    check_team_ready(team_workspace.root)
    disable_user(team_workspace, "ada")
    assert not has_enabled_admin(team_workspace)
    with pytest.raises(WorkspaceError, match="enabled admin"):
        check_team_ready(team_workspace.root)


def test_sign_in_upgrades_a_hash_made_with_weaker_parameters(team_workspace, monkeypatch):
    stronger = PasswordHasher(time_cost=2, memory_cost=1024, parallelism=1)
    monkeypatch.setattr(accounts, "_HASHER", stronger)
    authenticate(team_workspace, "ann", PASSWORD)
    (stored,) = team_workspace.query_one("SELECT password_hash FROM users WHERE name = 'ann'")
    assert not stronger.check_needs_rehash(stored) and stronger.verify(stored, PASSWORD)
