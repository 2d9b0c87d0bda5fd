"""Accounts, roles and server modes of :mod:`analytics.team`."""

from __future__ import annotations

from datetime import timedelta

import pytest
from argon2 import PasswordHasher, Type

from analytics.exceptions import InvalidInputError, NotFoundError, PermissionDeniedError, SignInError, WorkspaceError
from analytics.team import (
    ACTIONS,
    LOCK_AFTER_FAILURES,
    LOCK_MINUTES,
    PERMISSIONS,
    ROLES,
    SIGN_IN_FAILED,
    User,
    accounts,
    add_user,
    allowed,
    authenticate,
    check_team_ready,
    disable_user,
    has_enabled_admin,
    list_users,
    require,
    require_permission,
    set_password,
    streamlit_arguments,
)
from analytics.workspace import Workspace
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
