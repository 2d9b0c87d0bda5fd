"""``report``: a self-contained HTML report of a model (and others to compare) over one suite.

See :mod:`analytics.findings.report` for the sections; the file opens without a server or network.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._options import add_json_option, add_workspace_option, open_workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``report`` subcommand."""

    parser = subparsers.add_parser(
        "report", help="write a self-contained HTML report (accuracy, BG-Gap, matrices, failures, galleries, flips, judgments, assessor, provenance)"
    )
    parser.add_argument("--model", required=True, help="the model the report is about")
    parser.add_argument("--compare", nargs="*", default=[], metavar="MODEL", help="further models to show beside it")
    parser.add_argument("--suite", default=None, help="suite id, label or name (default: the suite of the model's newest finished run)")
    parser.add_argument("--min-count", type=int, default=1, help="leave out keywords with fewer composites (default 1)")
    parser.add_argument("--out", required=True, metavar="FILE.html", help="output file (overwritten)")
    add_workspace_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=run_report)


def run_report(args: argparse.Namespace) -> dict[str, Any]:
    """Write the report to ``--out`` (a tqdm bar over the sections on stderr); returns out, bytes, model and compare."""
    from tqdm import tqdm

    from analytics.exceptions import InvalidInputError
    from analytics.findings import SECTIONS, build_report

    out = Path(args.out)
    if out.is_dir():
        raise InvalidInputError(f"--out {out} is a folder; pass a file name such as {out / 'report.html'}")
    with tqdm(total=len(SECTIONS), desc="report", unit="section", file=sys.stderr) as bar:
        text = build_report(
            open_workspace(args), args.model, compare=args.compare, suite_id=args.suite, min_count=args.min_count,
            progress=lambda done, _total, _message="": bar.update(done - bar.n),
        )  # fmt: skip
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InvalidInputError(f"cannot write {out}: {error.strerror}; check that its folder exists and is writable") from error
    return {"out": str(out), "bytes": len(text.encode("utf-8")), "model": args.model, "compare": list(args.compare)}
