"""Single sign-on roles: the roles file, roles from the allow-list or a claim, and the accounts sign-in makes."""

from __future__ import annotations

import pytest

from analytics.exceptions import InvalidInputError, SignInError
from analytics.team import SSOConfig, active_user, add_user, authenticate, disable_user, list_users, load_sso_config, sso_account, sso_config_path
from analytics.team.sso import SSO_ROLES_ENV_VAR, sso_role
from analytics.workspace import Workspace

ROLES_FILE = """
name_claim = "email"
label = "Company account"

[people]
"ada@example.org" = "admin"

[claim]
name = "groups"
roles = { "vision-leads" = "analyst", "labellers" = "annotator", "readers" = "viewer" }
"""


@pytest.fixture
def config(tmp_path) -> SSOConfig:
    path = tmp_path / "sso-roles.toml"
    path.write_text(ROLES_FILE, encoding="utf-8")
    return load_sso_config(path)


def test_the_roles_file_is_read(config, tmp_path, monkeypatch):
    assert config == SSOConfig(
        name_claim="email",
        provider=None,
        label="Company account",
        people={"ada@example.org": "admin"},
        claim="groups",
        claim_roles={"vision-leads": "analyst", "labellers": "annotator", "readers": "viewer"},
    )
    assert load_sso_config(tmp_path / "none.toml") is None  # no file: single sign-on is off
    assert sso_config_path(tmp_path) == tmp_path / "sso-roles.toml"
    monkeypatch.setenv(SSO_ROLES_ENV_VAR, str(tmp_path / "elsewhere.toml"))
    assert sso_config_path(tmp_path) == tmp_path / "elsewhere.toml"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name_claim = ", "not a TOML file"),
        ("[people]\n'bob@example.org' = 'superuser'", r"\[people\] gives unknown roles \{'bob@example.org': 'superuser'\}"),
        ("[claim]\nname = 'groups'", r"\[claim\] needs name"),
        ("allow_all = true", r"unknown keys \['allow_all'\]"),
        ("name_claim = ''", "must be non-empty text"),
        ("people = 'everyone'", r"\[people\] must be a table"),
    ],
)
def test_a_bad_roles_file_is_refused_in_one_line(tmp_path, text, message):
    path = tmp_path / "sso-roles.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message):
        load_sso_config(path)


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"email": "ada@example.org", "groups": ["readers"]}, ("ada@example.org", "admin")),  # the allow-list first
        ({"email": "li@example.org", "groups": ["readers", "vision-leads"]}, ("li@example.org", "analyst")),  # the strongest
        ({"email": " ann@example.org ", "groups": "labellers"}, ("ann@example.org", "annotator")),  # one value as text
        ({"email": "vi@example.org", "groups": ["readers"], "email_verified": True}, ("vi@example.org", "viewer")),
    ],
)
def test_roles_come_from_the_allow_list_or_the_claim(config, claims, expected):
    assert sso_role(claims, config) == expected


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ({"email": "eve@example.org", "groups": ["outsiders"]}, "eve@example.org may not use this Backdrop server"),
        ({"email": "eve@example.org"}, "may not use this Backdrop server"),
        ({"email": "eve@example.org", "groups": {"vision-leads": True}}, "may not use"),  # a claim of another shape grants nothing
        ({"sub": "123", "groups": ["vision-leads"]}, "carries no 'email'"),
        ({"email": "ada@example.org", "email_verified": False}, "not verified"),
    ],
)
def test_anyone_else_is_refused(config, claims, message):
    with pytest.raises(SignInError, match=message):
        sso_role(claims, config)


def test_sign_in_makes_an_account_that_follows_the_roles_file(config, tmp_path):
    workspace = Workspace(tmp_path / "ws")
    user = sso_account(workspace, {"email": "li@example.org", "groups": ["labellers"]}, config)
    assert (user.name, user.role) == ("li@example.org", "annotator") and active_user(workspace, user.name).role == "annotator"
    promoted = sso_account(workspace, {"email": "li@example.org", "groups": ["vision-leads"]}, config)
    assert promoted.role == "analyst" and promoted.created == user.created and [u.role for u in list_users(workspace)] == ["analyst"]
    with pytest.raises(SignInError, match="Sign-in failed"):
        authenticate(workspace, "li@example.org", "!sso")  # no password opens an account made by single sign-on
    disable_user(workspace, "li@example.org")
    with pytest.raises(SignInError, match="has been disabled"):
        sso_account(workspace, {"email": "li@example.org", "groups": ["vision-leads"]}, config)


def test_a_password_account_is_never_taken_over(config, tmp_path):
    workspace = Workspace(tmp_path / "ws")
    add_user(workspace, "ada@example.org", "viewer", "a long enough password")
    with pytest.raises(SignInError, match="has a password account on this server"):
        sso_account(workspace, {"email": "ada@example.org"}, config)
    assert active_user(workspace, "ada@example.org").role == "viewer"


def test_a_name_that_cannot_be_an_account_is_refused(tmp_path):
    config = SSOConfig(name_claim="name", people={"Ada Lovelace": "admin"})
    with pytest.raises(SignInError, match="cannot name an account here"):
        sso_account(Workspace(tmp_path / "ws"), {"name": "Ada Lovelace"}, config)
