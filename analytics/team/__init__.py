"""Team judging: accounts with hashed passwords, roles and what each may do, and the two server modes.

:mod:`.accounts` stores users in the workspace's ``users`` table (argon2 hashes, lock after repeated
wrong passwords); :mod:`.roles` is the permission table and :func:`~.roles.require`; :mod:`.server`
builds the Streamlit arguments of solo mode (127.0.0.1, no sign-in) and team mode (all interfaces,
sign-in on every page) and refuses team mode without an enabled admin; :mod:`.paths` limits the server
paths typed in the browser to the configured data roots; :mod:`.sso` decides who enters through
single sign-on (``st.login``) and with which role.
"""

from .accounts import (
    LOCK_AFTER_FAILURES,
    LOCK_MINUTES,
    MIN_PASSWORD_LENGTH,
    SIGN_IN_FAILED,
    User,
    active_user,
    add_user,
    authenticate,
    disable_user,
    enable_user,
    has_enabled_admin,
    list_users,
    set_password,
    set_role,
)
from .launch import ServePlan, serve_plan
from .paths import (
    DATA_ROOTS_ENV_VAR,
    data_roots,
    resolve_server_path,
    server_paths_offered,
)
from .roles import (
    ACTIONS,
    PERMISSIONS,
    ROLES,
    Actor,
    allowed,
    require,
    require_permission,
    roles_with,
)
from .server import (
    MAX_CSV_UPLOAD_MB,
    MAX_UPLOAD_ENV_VAR,
    MAX_UPLOAD_MB,
    SOLO_ADDRESS,
    TEAM_ADDRESS,
    TEAM_ENV_VAR,
    check_team_ready,
    max_upload_mb,
    streamlit_arguments,
    team_mode,
)
from .sso import (
    SSO_ROLES_ENV_VAR,
    SSO_ROLES_FILE,
    SSOConfig,
    load_sso_config,
    sso_account,
    sso_config_path,
    sso_role,
)

__all__ = [
    "ACTIONS",
    "DATA_ROOTS_ENV_VAR",
    "LOCK_AFTER_FAILURES",
    "LOCK_MINUTES",
    "MAX_CSV_UPLOAD_MB",
    "MAX_UPLOAD_ENV_VAR",
    "MAX_UPLOAD_MB",
    "MIN_PASSWORD_LENGTH",
    "PERMISSIONS",
    "ROLES",
    "SIGN_IN_FAILED",
    "SOLO_ADDRESS",
    "SSO_ROLES_ENV_VAR",
    "SSO_ROLES_FILE",
    "TEAM_ADDRESS",
    "TEAM_ENV_VAR",
    "Actor",
    "ServePlan",
    "SSOConfig",
    "User",
    "active_user",
    "add_user",
    "allowed",
    "authenticate",
    "check_team_ready",
    "data_roots",
    "disable_user",
    "enable_user",
    "has_enabled_admin",
    "list_users",
    "load_sso_config",
    "max_upload_mb",
    "require",
    "require_permission",
    "resolve_server_path",
    "roles_with",
    "serve_plan",
    "server_paths_offered",
    "set_password",
    "set_role",
    "sso_account",
    "sso_config_path",
    "sso_role",
    "streamlit_arguments",
    "team_mode",
]
