"""``user``, ``serve`` and ``serve-check``: accounts for team mode, starting the dashboard, and the checks before it.

``user add NAME --role ROLE`` (creates the workspace when missing), ``user list``, ``user passwd
NAME``, ``user disable NAME``, ``user enable NAME`` (also unlocks), ``user role NAME ROLE``. A password is read from a hidden prompt (typed twice) or, with
``--password-stdin``, from the first line of standard input; never from an argument, so it stays out
of the shell history and the process list. ``serve-check [--team]`` prints the options of
``streamlit run`` one per line and, in team mode, refuses (exit 2) while the workspace has no
enabled admin. ``serve [--team] [--data-root DIR]... [--dry-run]`` makes those checks and starts the
dashboard (from a checkout or an installed wheel: :func:`analytics.team.serve_plan`).
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from analytics._choices import ROLES

from ._options import add_json_option, add_workspace_option, open_workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    user = subparsers.add_parser("user", help="team-mode accounts: add, list, passwd, disable, enable, role")
    actions = user.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="create an account")
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=ROLES, help="admin, analyst, annotator or viewer")
    add.set_defaults(handler=run_add)
    passwd = actions.add_parser("passwd", help="set a new password (also unlocks the account)")
    passwd.add_argument("name")
    passwd.set_defaults(handler=run_passwd)
    disable = actions.add_parser("disable", help="stop an account from signing in")
    disable.add_argument("name")
    disable.set_defaults(handler=run_disable)
    enable = actions.add_parser("enable", help="let a disabled account sign in again (also unlocks it)")
    enable.add_argument("name")
    enable.set_defaults(handler=run_enable)
    role = actions.add_parser("role", help="give an account another role")
    role.add_argument("name")
    role.add_argument("role", choices=ROLES, help="admin, analyst, annotator or viewer")
    role.set_defaults(handler=run_role)
    listing = actions.add_parser("list", help="list the accounts (never their password hashes)")
    listing.set_defaults(handler=run_list)
    for parser in (add, passwd):
        parser.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin instead of a prompt")

    check = subparsers.add_parser("serve-check", help="the `streamlit run` options of solo or team mode; team mode needs an enabled admin")
    check.add_argument("--team", action="store_true", help="team mode (also when $BACKDROP_TEAM=1): all interfaces, sign-in required")
    check.add_argument("--port", type=int, default=8501, help="TCP port (default 8501)")
    check.set_defaults(handler=run_serve_check)

    serve = subparsers.add_parser(
        "serve",
        help="start the dashboard: solo on 127.0.0.1 without sign-in; --team on every interface with sign-in",
        description="Start the dashboard on the workspace (build the demo one first with `backdrop demo`). Solo mode "
        "listens on 127.0.0.1 only; team mode (--team or $BACKDROP_TEAM=1) on every interface, signs everyone in, and "
        "refuses to start without an enabled admin account.",
    )
    serve.add_argument("--team", action="store_true", help="team mode (also when $BACKDROP_TEAM=1): all interfaces, sign-in required")
    serve.add_argument("--port", type=int, default=None, help="TCP port (default: $BACKDROP_PORT or 8501)")
    serve.add_argument("--data-root", action="append", default=[], metavar="DIR",
                       help="a folder whose files paths typed in the browser may name (repeatable; team mode: admins only)")
    serve.add_argument("--dry-run", action="store_true", help="check and print the command instead of starting it")
    serve.set_defaults(handler=run_serve)

    for parser in (add, passwd, disable, enable, role, listing, check, serve):
        add_workspace_option(parser)
        add_json_option(parser)


def read_password(args: argparse.Namespace) -> str:
    """The new password: stdin's first line with ``--password-stdin``, else a hidden prompt typed twice."""
    from analytics.exceptions import InvalidInputError

    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass(f"Password for {args.name}: ")
    if getpass.getpass("Again: ") != first:
        raise InvalidInputError("password: the two entries differ; run the command again")
    return first


def run_add(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.team import add_user

    password = read_password(args)
    user = add_user(open_workspace(args, create=True), args.name, args.role, password)
    return {"user": user.name, "role": user.role}


def run_passwd(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.team import set_password

    password = read_password(args)
    set_password(open_workspace(args), args.name, password)
    return {"user": args.name, "password_changed": True}


def run_disable(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.team import disable_user

    disable_user(open_workspace(args), args.name)
    return {"user": args.name, "disabled": True}


def run_enable(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.team import enable_user

    enable_user(open_workspace(args), args.name)
    return {"user": args.name, "disabled": False}


def run_role(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.team import set_role

    user = set_role(open_workspace(args), args.name, args.role)
    return {"user": user.name, "role": user.role}


def run_list(args: argparse.Namespace) -> dict[str, Any]:
    from dataclasses import asdict

    from analytics.team import list_users

    return {"users": [asdict(user) for user in list_users(open_workspace(args))]}


def run_serve(args: argparse.Namespace) -> int:
    import os

    from analytics._validation import ParameterNames
    from analytics.team import DATA_ROOTS_ENV_VAR, serve_plan, team_mode
    from analytics.workspace import default_workspace_path

    port = args.port if args.port is not None else int(os.environ.get("BACKDROP_PORT") or 8501)
    roots = args.data_root or [root for root in os.environ.get(DATA_ROOTS_ENV_VAR, "").split(os.pathsep) if root]
    team = args.team or team_mode()
    flags = ParameterNames({"data_roots": "--data-root" if args.data_root else DATA_ROOTS_ENV_VAR, "workspace": "--workspace"})
    plan = serve_plan(team=team, port=port, workspace=args.workspace or default_workspace_path(), data_roots=roots, names=flags)
    if args.dry_run:
        print(plan.shell_line())
        return 0
    where = f"port {port} of every interface (sign-in required)" if team else f"http://localhost:{port} (this machine only)"
    print(f"[backdrop] dashboard on {where}; workspace {plan.env['BACKDROP_WORKSPACE']}", file=sys.stderr)
    os.chdir(plan.cwd)  # Streamlit reads .streamlit/config.toml from the working folder
    os.execve(plan.command[0], plan.command, os.environ | plan.env)


def run_serve_check(args: argparse.Namespace) -> dict[str, Any] | int:
    from analytics.team import check_team_ready, streamlit_arguments, team_mode
    from analytics.workspace import default_workspace_path

    team = args.team or team_mode()
    if team:
        check_team_ready(args.workspace or default_workspace_path())
    arguments = streamlit_arguments(team=team, port=args.port)
    if args.json:
        return {"team": team, "arguments": arguments}
    print("\n".join(arguments))
    return 0
