"""``python -m analytics``: the headless command line.

Each module in :mod:`analytics.commands` adds its subcommands through ``register(subparsers)``; a
subcommand's handler takes the parsed arguments and returns a JSON-serialisable result (printed
with ``--json``) or an exit code. A :class:`BackdropError` becomes a one-line message on stderr and
exit status 2, and so does a usage error (:class:`OneLineParser`); anything else is a bug and shows
its traceback. Output is strict JSON: NaN and
infinities (an undefined κ, a suite without distances) are printed as ``null``.

Building the parser imports no stage (no torch, pandas or scipy: ``--help`` starts at once): the
choices and defaults it shows come from :mod:`analytics._choices`, and each handler imports its stage,
and :func:`analytics.workspace.to_json` here, when it runs (``tests/analytics/test_cli_startup.py``).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence
from typing import NoReturn

from analytics import commands

from .exceptions import BackdropError

EXIT_USER_ERROR = 2
PROG = "python -m analytics"
#: The console command an installed wheel puts on PATH (pyproject.toml ``[project.scripts]``).
CONSOLE_PROG = "backdrop"


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr and exit status 2, like a
    :class:`BackdropError`: the subcommand, argparse's message and where the full usage is, instead
    of the usage block. Subparsers are of the same class (``add_subparsers`` makes them so)."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix(PROG).removeprefix(CONSOLE_PROG).strip()
        where = f"{command}: " if command else ""
        self.exit(EXIT_USER_ERROR, f"error: {where}{' '.join(message.split())} (see `{self.prog} --help`)\n")


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = OneLineParser(prog=prog, description="Backdrop: background invariance testing")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        importlib.import_module(f"{commands.__name__}.{info.name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = PROG) -> int:
    parser = build_parser(prog)
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
        from analytics.workspace import to_json

        if getattr(args, "json", False):
            print(to_json(result))
        else:
            print(_human(result))
    return 0


def console() -> NoReturn:
    """The ``backdrop`` command of an installed wheel: every subcommand of ``python -m analytics``
    (``backdrop serve`` and ``backdrop demo`` among them)."""
    raise SystemExit(main(prog=CONSOLE_PROG))


def _human(result: object) -> str:
    from analytics.workspace import to_json

    if isinstance(result, dict):
        return "\n".join(f"{key}: {to_json(value)}" for key, value in result.items())
    return to_json(result, indent=2)
