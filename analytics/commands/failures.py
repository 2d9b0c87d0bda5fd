"""``failures``: a run's error rate and probability drop per scene keyword and ontology level.

See :mod:`analytics.findings.failures` for what is counted and how the 95 % intervals are made.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._options import add_json_option, add_workspace_option, comma_list, open_workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``failures`` subcommand."""

    parser = subparsers.add_parser("failures", help="error rate and true-class probability drop of a run per scene keyword and ontology level")
    parser.add_argument("--run", required=True, help="run id (see `runs`)")
    parser.add_argument("--min-count", type=int, default=1, help="leave out keywords and levels with fewer composites (default 1)")
    parser.add_argument("--table", default=None, help="background keyword table (default: the suite's, else the newest current one)")
    parser.add_argument("--classes", type=comma_list, metavar="A,B", help="count only the composites of these classes (default: every class)")
    add_workspace_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=run_failures)


def run_failures(args: argparse.Namespace) -> dict[str, Any]:
    """The failure table of ``--run`` (:meth:`analytics.findings.failures.FailureTable.to_dict`)."""
    from analytics.findings import failure_table

    return failure_table(open_workspace(args), args.run, min_count=args.min_count, table=args.table, classes=args.classes).to_dict()
