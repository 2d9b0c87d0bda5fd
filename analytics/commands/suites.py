"""``suite``: sample and save a background test suite for every target of a workspace.

The keyword methods need keyword tables for the targets and the pool, and ``ontology`` an
ontology; when the workspace has none, they are computed with defaults (classifier-patch keywords
from the first registered ImageNet classifier; an FP-Growth ontology of the keyword tables with
the defaults of :mod:`analytics.ontology`, support 0.005 and confidence 0.1, or with
``--min-support`` / ``--min-confidence``, which also pick the stored ontology mined with them) and a
line on stderr says so. Without ``--ontology``, the ontology is the newest one mined from exactly these keyword
tables; one mined from other keywords is refused (:func:`analytics.suites.check_expansion`).

``--classes A,B`` covers only the targets of those classes (``python -m analytics info`` lists them)
and ``--targets ID,...`` only those targets (within ``--classes`` when both are given); the class
selection is recorded in the suite's parameters (``selection``) and reported under ``selection``.

``--name TEXT`` gives the suite a name that pages, the report and listings call it by (at most 60
letters, digits, spaces and plain punctuation; the same settings again under another name rename
it); without one it is called by method, N, seed and targets (``label`` in the output). ``suites``
lists the saved suites by label, with the id the other commands take.

``--json`` reports, besides the statistics, the suite's provenance: the keyword tables (name,
backend) and ontology (id, parameters) it used and, for keyword methods, the backgrounds topped up
at random (``topped_up``, ``topped_up_targets``, ``topup_share``).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from analytics._choices import DEFAULT_MIN_CONFIDENCE, DEFAULT_MIN_SUPPORT, DEFAULT_REALISM, DEFAULT_REALISM_THRESHOLD, REALISM_SCORER_NAMES, SAMPLER_NAMES

from ._options import ProgressBar, add_device_option, add_json_option, add_workspace_option, comma_list, open_workspace

if TYPE_CHECKING:
    from analytics._progress import Progress


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    parser = subparsers.add_parser("suite", help="sample and save N backgrounds per target (a test suite)")
    add_workspace_option(parser)
    parser.add_argument("--method", choices=list(SAMPLER_NAMES), required=True, help="sampling method")
    parser.add_argument("--n", type=int, default=32, help="backgrounds per target (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--name", default="", metavar="TEXT", help="a name to call the suite by (default: method, N, seed and targets)")
    parser.add_argument("--classes", type=comma_list, metavar="A,B", help="cover only the targets of these classes (default: every class)")
    parser.add_argument("--targets", type=comma_list, metavar="ID,...", help="cover only these target ids (within --classes when given)")
    parser.add_argument("--distance-model", action="append", metavar="NAME", help="model of the distance ensemble (repeatable; default: every EfficientNet-Lite)")
    parser.add_argument("--target-table", metavar="NAME", help="keyword table of the targets (default: the newest)")
    parser.add_argument("--background-table", metavar="NAME", help="keyword table of the pool (default: the newest)")
    parser.add_argument("--ontology", metavar="ID", help="ontology id for --method ontology (default: the newest mined from the keyword tables, mined now if none)")
    parser.add_argument(
        "--min-support", type=float, default=None,
        help="--method ontology without --ontology: mine (or reuse) the ontology with this minimum support, in (0, 1] (default: "
        f"any ontology of the keyword tables, else {DEFAULT_MIN_SUPPORT}; as `ontology --min-support`)",
    )  # fmt: skip
    parser.add_argument(
        "--min-confidence", type=float, default=None,
        help="--method ontology without --ontology: mine (or reuse) the ontology with this minimum rule confidence, in (0, 1] "
        f"(default: any ontology of the keyword tables, else {DEFAULT_MIN_CONFIDENCE}; lower it on small data)",
    )  # fmt: skip
    parser.add_argument("--keyword-model", metavar="NAME", help="ImageNet classifier for keywords computed on the fly (default: first EfficientNet-Lite)")
    parser.add_argument("--realism", choices=list(REALISM_SCORER_NAMES), default=DEFAULT_REALISM, help=f"realism scorer (default {DEFAULT_REALISM})")
    parser.add_argument("--realism-threshold", type=float, default=DEFAULT_REALISM_THRESHOLD, help=f"minimum realism score in [0, 1] (default {DEFAULT_REALISM_THRESHOLD}; 0 accepts all)")
    parser.add_argument("--no-top-up", action="store_true", help="keyword methods: leave a target's suite short instead of topping it up at random")
    parser.add_argument(
        "--batch-size", type=int, default=None,
        help="images per forward pass (default: keywords and screening 256 on a GPU, 32 on a CPU; distances 32)",
    )  # fmt: skip
    add_device_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=run_suite)
    listing = subparsers.add_parser("suites", help="list the saved suites by label (name, or method, N, seed and targets) with their ids")
    add_workspace_option(listing)
    add_json_option(listing)
    listing.set_defaults(handler=run_list)


#: :func:`analytics.api.build_suite`'s parameters that its messages name, as this command's flags.
FLAGS = {"method": "--method", "ontology": "--ontology", "min_support": "--min-support", "min_confidence": "--min-confidence"}


def run_suite(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`analytics.api.build_suite`, the flow a notebook calls: keyword tables and the ontology
    computed when absent (a ``note:`` line each on stderr), one progress bar per step."""
    from analytics.api import build_suite

    from .models import flags_in_errors

    with _StepBars() as progress, flags_in_errors(FLAGS):
        result = build_suite(
            open_workspace(args),
            method=args.method,
            n=args.n,
            seed=args.seed,
            name=args.name,
            classes=args.classes,
            targets=args.targets,
            distance_models=args.distance_model,
            target_table=args.target_table,
            background_table=args.background_table,
            ontology=args.ontology,
            min_support=args.min_support,
            min_confidence=args.min_confidence,
            keyword_model=args.keyword_model,
            realism=args.realism,
            realism_threshold=args.realism_threshold,
            top_up=not args.no_top_up,
            batch_size=args.batch_size,
            device=args.device,
            progress=progress,
            say=_say,
        )
    skipped = result.pop("screening")
    if skipped:  # also in "warnings"; on stderr so it is seen without --json
        print(f"warning: {skipped}", file=sys.stderr)
    return result


class _StepBars:
    """A terminal-only progress bar per step of ``progress(done, total, step)``, the last one closed
    when the next step starts."""

    def __init__(self) -> None:
        self.step: str | None = None
        self.bar: ProgressBar | None = None

    def __enter__(self) -> Progress:
        return self.update

    def update(self, done: int, total: int, step: str = "", /) -> None:
        if step != self.step or self.bar is None:
            self.__exit__()
            self.step, self.bar = step, ProgressBar(step, terminal_only=True)
        self.bar.update(done, total)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__()
            self.bar = None


def run_list(args: argparse.Namespace) -> list[dict[str, Any]]:
    from analytics.suites import list_suites

    table = list_suites(open_workspace(args))
    table["classes"] = [list(c) for c in table["classes"]]
    records: list[dict[str, Any]] = table.to_dict("records")
    return records


def _say(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)
