"""Options every subcommand spells the same, opening the workspace they name, and the progress bar."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from analytics._install import default_workspace_path

if TYPE_CHECKING:
    from tqdm import tqdm

    from analytics._progress import Progress
    from analytics.workspace import Workspace

#: The attributes every ``--suite`` option is parsed into.
_SUITE_OPTIONS = ("suite", "suite_id")


def add_workspace_option(parser: argparse.ArgumentParser) -> None:
    """``--workspace DIR`` spelled the same in every subcommand."""
    parser.add_argument(
        "--workspace",
        default=None,
        help=f"workspace folder (default: $BACKDROP_WORKSPACE or {default_workspace_path()})",
    )


#: The one help text of ``--device``: every subcommand that runs a model takes the same values.
DEVICE_HELP = "cpu, cuda or cuda:N (default: CUDA when available)"


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """``--device`` spelled and explained the same in every subcommand that runs a model."""
    parser.add_argument("--device", default=None, help=DEVICE_HELP)


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")


def open_workspace(args: argparse.Namespace, *, create: bool = False) -> Workspace:
    """The workspace ``--workspace`` names; a ``--suite`` given by its label or user name is turned
    into the suite's id here (:func:`analytics.suites.resolve_suite`), so every subcommand takes all three."""
    from analytics.suites import resolve_suite
    from analytics.workspace import Workspace

    workspace = Workspace(args.workspace, create=create)
    for option in _SUITE_OPTIONS:
        reference = getattr(args, option, None)
        if isinstance(reference, str) and reference:
            setattr(args, option, resolve_suite(workspace, reference))
    return workspace


def comma_list(text: str) -> list[str]:
    """``--classes A,B`` as a list (blanks dropped); the library refuses an empty one by name."""
    return [name.strip() for name in text.split(",") if name.strip()]


class ProgressBar:
    """A tqdm bar on stderr driven by ``(done, total[, message])`` callbacks, as a context manager.

    The bar starts at the first callback, so an error raised while the call still validates its
    input is the only line on stderr (no empty bar before it).

    Parameters
    ----------
    label : str
    unit : str, default="it"
    terminal_only : bool, default=False
        Show the bar only when stderr is a terminal.
    """

    def __init__(self, label: str, *, unit: str = "it", terminal_only: bool = False) -> None:
        self.label, self.unit, self.terminal_only = label, unit, terminal_only
        self.bar: tqdm[None] | None = None

    def __enter__(self) -> Progress:
        return self.update

    def update(self, done: int, total: int, message: str | None = None) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=self.label, unit=self.unit, file=sys.stderr, disable=self.terminal_only and not sys.stderr.isatty())
        self.bar.total = total
        self.bar.update(done - self.bar.n)
        if message is not None:
            self.bar.set_postfix_str(message, refresh=True)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()
