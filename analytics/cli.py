"""``python -m analytics``: the headless command line.

Each module in :mod:`analytics.commands` adds its subcommands through ``register(subparsers)``; a
subcommand's handler takes the parsed arguments and returns a JSON-serialisable result (printed
with ``--json``) or an exit code. A :class:`BackdropError` becomes a one-line message on stderr and
exit status 2; anything else is a bug and shows its traceback. Output is strict JSON: NaN and
infinities (an undefined κ, a suite without distances) are printed as ``null``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import math
import pkgutil
import sys
from collections.abc import Sequence

from . import commands
from .exceptions import BackdropError
from .workspace import Workspace, default_workspace_path

EXIT_USER_ERROR = 2


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m analytics", description="Backdrop: background invariance testing")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"{commands.__name__}.{info.name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        result = args.handler(args)
    except BackdropError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    if isinstance(result, int):
        return result
    if result is not None:
        if getattr(args, "json", False):
            print(to_json(result))
        else:
            print(_human(result))
    return 0


def to_json(result: object, *, indent: int | None = None) -> str:
    """``result`` as strict JSON: numpy scalars and arrays become plain values, NaN and ±inf ``null``."""
    return json.dumps(_plain(result), indent=indent, allow_nan=False)


def _plain(value):
    """A copy of ``value`` made of JSON types only (dict keys as strings, non-finite floats as None)."""
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        value = value.tolist()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (str, int)):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _human(result) -> str:
    if isinstance(result, dict):
        return "\n".join(f"{key}: {to_json(value)}" for key, value in result.items())
    return to_json(result, indent=2)
