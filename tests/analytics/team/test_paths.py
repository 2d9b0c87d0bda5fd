"""Server paths typed in the browser: only inside the configured data roots, only for admins."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from analytics.exceptions import InvalidInputError, PermissionDeniedError
from analytics.team import DATA_ROOTS_ENV_VAR, User, resolve_server_path, server_paths_offered
from analytics.team.paths import data_roots
from analytics.team.server import TEAM_ENV_VAR
from analytics.workspace import Workspace


@pytest.fixture
def layout(tmp_path, monkeypatch):
    """A data root holding ``images/a.png``, a secret outside it, and the root configured."""
    root, outside = tmp_path / "data", tmp_path / "private"
    (root / "images").mkdir(parents=True)
    outside.mkdir()
    (root / "images" / "a.png").write_bytes(b"png")
    (outside / "secret.txt").write_text("secret")
    monkeypatch.setenv(DATA_ROOTS_ENV_VAR, str(root))
    monkeypatch.delenv(TEAM_ENV_VAR, raising=False)
    return root, outside


@pytest.fixture
def workspace(tmp_path) -> Workspace:
    return Workspace(tmp_path / "ws")


def as_role(workspace: Workspace, role: str) -> Workspace:
    return workspace.acting_as(User(f"u-{role}", role, False, "", ""))


def test_data_roots_reads_the_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ROOTS_ENV_VAR, os.pathsep.join([str(tmp_path / "a"), " ", str(tmp_path / "b")]))
    assert data_roots() == [(tmp_path / "a").resolve(), (tmp_path / "b").resolve()]
    monkeypatch.delenv(DATA_ROOTS_ENV_VAR)
    assert data_roots() == []


def test_inside_a_root_is_allowed(layout, workspace):
    root, _ = layout
    assert resolve_server_path(workspace, f"  {root / 'images'}  ") == (root / "images").resolve()
    assert resolve_server_path(as_role(workspace, "admin"), "images/a.png") == (root / "images" / "a.png").resolve()


def test_dot_dot_is_refused_even_when_it_lands_inside(layout, workspace):
    root, _ = layout
    with pytest.raises(PermissionDeniedError, match=r"'\.\.' is not allowed") as refused:
        resolve_server_path(workspace, str(root / "images" / ".." / "images"))
    assert str(root.resolve()) in str(refused.value)


def test_outside_every_root_is_refused_with_the_roots_and_the_fix(layout, workspace):
    root, outside = layout
    with pytest.raises(PermissionDeniedError) as refused:
        resolve_server_path(workspace, str(outside / "secret.txt"))
    message = str(refused.value)
    assert str(outside / "secret.txt") in message and str(root.resolve()) in message and "--data-root" in message


def test_a_symlink_leading_out_of_the_root_is_refused(layout, workspace):
    root, outside = layout
    (root / "images" / "escape").symlink_to(outside)
    with pytest.raises(PermissionDeniedError, match="outside the data roots"):
        resolve_server_path(workspace, str(root / "images" / "escape" / "secret.txt"))
    (root / "inner").symlink_to(root / "images")  # a link that stays inside is fine
    assert resolve_server_path(workspace, str(root / "inner" / "a.png")) == (root / "images" / "a.png").resolve()


def test_team_mode_without_roots_refuses_every_path(tmp_path, workspace, monkeypatch):
    monkeypatch.delenv(DATA_ROOTS_ENV_VAR, raising=False)
    monkeypatch.setenv(TEAM_ENV_VAR, "1")
    with pytest.raises(PermissionDeniedError) as refused:
        resolve_server_path(as_role(workspace, "admin"), str(tmp_path))
    assert "no data roots" in str(refused.value) and "bash backdrop.sh serve --team --data-root DIR" in str(refused.value)
    assert DATA_ROOTS_ENV_VAR in str(refused.value)


def test_solo_mode_without_roots_takes_paths_as_typed(tmp_path, workspace, monkeypatch):
    monkeypatch.delenv(DATA_ROOTS_ENV_VAR, raising=False)
    monkeypatch.delenv(TEAM_ENV_VAR, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_server_path(workspace, "~/x/../y") == tmp_path / "x" / ".." / "y"
    with pytest.raises(InvalidInputError, match="empty"):
        resolve_server_path(workspace, "   ")


@pytest.mark.parametrize("role", ["analyst", "annotator", "viewer"])
def test_only_admins_may_use_server_paths(layout, workspace, role):
    root, _ = layout
    with pytest.raises(PermissionDeniedError, match=rf"\({role}\) may not read files from paths on the server.*admin"):
        resolve_server_path(as_role(workspace, role), str(root / "images"))


def test_server_path_inputs_are_offered_to_admins_of_a_team_server_with_roots_and_in_solo_mode(tmp_path, workspace, monkeypatch):
    monkeypatch.delenv(DATA_ROOTS_ENV_VAR, raising=False)
    monkeypatch.delenv(TEAM_ENV_VAR, raising=False)
    assert server_paths_offered(workspace)  # solo mode: paths as typed
    monkeypatch.setenv(TEAM_ENV_VAR, "1")
    assert not server_paths_offered(as_role(workspace, "admin"))  # no data roots: uploads only
    monkeypatch.setenv(DATA_ROOTS_ENV_VAR, str(tmp_path))
    assert server_paths_offered(as_role(workspace, "admin"))
    assert not any(server_paths_offered(as_role(workspace, role)) for role in ("analyst", "annotator", "viewer"))


def test_a_folder_holding_a_file_symlink_out_of_the_root_is_refused(layout, workspace):
    root, outside = layout
    (root / "images" / "b.png").symlink_to(outside / "secret.txt")
    with pytest.raises(PermissionDeniedError) as refused:
        resolve_server_path(workspace, str(root))
    message = str(refused.value)
    assert "\n" not in message
    assert str(root / "images" / "b.png") in message and str((outside / "secret.txt").resolve()) in message
    assert "in place of the link" in message


def test_a_class_folder_symlink_out_of_the_root_is_refused_at_any_depth(layout, workspace):
    root, outside = layout
    (root / "images" / "cat").symlink_to(outside)
    with pytest.raises(PermissionDeniedError, match=r"cat is a symlink to .*private, outside the data roots"):
        resolve_server_path(workspace, str(root / "images"))
    (root / "images" / "cat").unlink()
    (root / "deeper" / "cat").mkdir(parents=True)
    (root / "deeper" / "cat" / "escape").symlink_to(outside)  # behind a link that stays inside
    (root / "images" / "cat").symlink_to(root / "deeper")
    with pytest.raises(PermissionDeniedError, match="escape is a symlink"):
        resolve_server_path(workspace, "images")


def test_symlinks_that_stay_inside_the_root_are_fine(layout, workspace):
    root, _ = layout
    (root / "images" / "b.png").symlink_to(root / "images" / "a.png")
    (root / "images" / "loop").symlink_to(root)  # a cycle: walked once
    (root / "other").mkdir()
    (root / "other" / "cat").symlink_to(root / "images")
    assert resolve_server_path(workspace, str(root)) == root.resolve()
    assert resolve_server_path(workspace, "other") == (root / "other").resolve()


def test_a_folder_that_cannot_be_listed_is_refused(layout, workspace, monkeypatch):
    root, _ = layout
    locked = root / "images" / "locked"
    locked.mkdir()
    scandir = os.scandir

    def unreadable(path):  # as for a folder without read permission (chmod is moot when tests run as root)
        if Path(path) == locked:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", unreadable)
    with pytest.raises(PermissionDeniedError, match=rf"cannot list {locked} to check its links \(Permission denied\)"):
        resolve_server_path(workspace, str(root))


@pytest.mark.parametrize("team", [False, True])
def test_a_nul_byte_is_refused_in_one_line(layout, workspace, monkeypatch, team):
    monkeypatch.setenv("BACKDROP_TEAM", "1" if team else "0")
    with pytest.raises(InvalidInputError, match="NUL byte"):
        resolve_server_path(workspace, f"{layout[0]}/x\0")


NO_USER = "~nosuchuser-backdrop"  # pathlib's expanduser raises a RuntimeError for an account the machine lacks
NO_USER_LINE = f"'{NO_USER}' names no home folder on this machine (no such user); type the full path without '~'"


@pytest.mark.parametrize("roots", [False, True])
def test_a_tilde_of_no_user_is_one_line(layout, workspace, monkeypatch, roots):
    if not roots:
        monkeypatch.delenv(DATA_ROOTS_ENV_VAR)
    with pytest.raises(InvalidInputError) as caught:
        resolve_server_path(workspace, f"{NO_USER}/x")
    assert str(caught.value) == f"server path '{NO_USER}/x': {NO_USER_LINE}"
    monkeypatch.setenv(DATA_ROOTS_ENV_VAR, f"{NO_USER}/data")  # the server's own setting: named by its variable
    with pytest.raises(InvalidInputError, match=f"^\\${DATA_ROOTS_ENV_VAR} entry '{NO_USER}/data': "):
        data_roots()


def test_a_tilde_of_no_user_from_the_cli_is_one_line(tiny_workspace, capsys):
    from tests.fixtures.cli import cli_error

    line = cli_error(["export-judgments", "--workspace", str(tiny_workspace.root), "--out", f"{NO_USER}/judgments.csv"], capsys)
    assert line == f"error: --out '{NO_USER}/judgments.csv': {NO_USER_LINE}"
