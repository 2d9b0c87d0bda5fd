"""Options every subcommand spells the same, and opening the workspace they name."""

from __future__ import annotations

import argparse

from analytics.workspace import Workspace, default_workspace_path


def add_workspace_option(parser: argparse.ArgumentParser) -> None:
    """``--workspace DIR`` spelled the same in every subcommand."""
    parser.add_argument(
        "--workspace",
        default=None,
        help=f"workspace folder (default: $BACKDROP_WORKSPACE or {default_workspace_path()})",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")


def open_workspace(args: argparse.Namespace, *, create: bool = False) -> Workspace:
    return Workspace(args.workspace, create=create)
