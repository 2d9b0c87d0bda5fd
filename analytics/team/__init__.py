"""Team judging: accounts with hashed passwords, roles and what each may do, and the two server modes.

:mod:`.accounts` stores users in the workspace's ``users`` table (argon2 hashes, lock after repeated
wrong passwords); :mod:`.roles` is the permission table and :func:`~.roles.require`; :mod:`.server`
builds the Streamlit arguments of solo mode (127.0.0.1, no sign-in) and team mode (all interfaces,
sign-in on every page) and refuses team mode without an enabled admin; :mod:`.paths` limits the server
paths typed in the browser to the configured data roots; :mod:`.sso` decides who enters through
single sign-on (``st.login``) and with which role; :mod:`.launch` plans ``backdrop serve``'s command
(its ``wait_until_serving``, how the smoke check, the screenshots, a benchmark and the browser tests
know a started server answers, is internal: those tools name it in tests/test_architecture.py).
"""

from .accounts import User, active_user, add_user, authenticate, disable_user, enable_user, list_users, set_password, set_role
from .launch import serve_plan
from .paths import DATA_ROOTS_ENV_VAR, resolve_server_path, server_paths_offered
from .roles import allowed, require_permission, roles_with
from .server import MAX_CSV_UPLOAD_MB, check_team_ready, streamlit_arguments, team_mode
from .sso import SSOConfig, load_sso_config, sso_account, sso_config_path

__all__ = [
    "DATA_ROOTS_ENV_VAR",
    "MAX_CSV_UPLOAD_MB",
    "SSOConfig",
    "User",
    "active_user",
    "add_user",
    "allowed",
    "authenticate",
    "check_team_ready",
    "disable_user",
    "enable_user",
    "list_users",
    "load_sso_config",
    "require_permission",
    "resolve_server_path",
    "roles_with",
    "serve_plan",
    "server_paths_offered",
    "set_password",
    "set_role",
    "sso_account",
    "sso_config_path",
    "streamlit_arguments",
    "team_mode",
]
