"""``suite``: sample and save a background test suite for every target of a workspace.

The keyword methods need keyword tables for the targets and the pool, and ``ontology`` an
ontology; when the workspace has none, they are computed with defaults (classifier-patch keywords
from the first registered ImageNet classifier; an FP-Growth ontology of the keyword tables with
the defaults of :mod:`analytics.ontology`, support 0.005 and confidence 0.1) and a line on stderr
says so. Without ``--ontology``, the ontology is the newest one mined from exactly these keyword
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
    from analytics.workspace import Workspace


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


def run_suite(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.suites import SAMPLERS, build_suite, check_suite_name, ensure_ontology, screening_warning, suite_labels_of, suite_stats

    workspace = open_workspace(args)
    name = check_suite_name(args.name)  # before any slow step
    sampler = SAMPLERS[args.method]
    tables = ontology = None
    if sampler.needs_keywords:
        tables = _keyword_tables(workspace, args)
    if sampler.needs_ontology and args.ontology is None:
        assert tables is not None  # a sampler that needs the ontology needs keywords (analytics.suites.SAMPLERS)
        ontology, built = ensure_ontology(workspace, tables)
        if built:
            _say(
                f"no ontology of these keyword tables in the workspace: mined {ontology} (fpgrowth, support "
                f"{DEFAULT_MIN_SUPPORT}, confidence {DEFAULT_MIN_CONFIDENCE}) from {', '.join(tables.values())}"
            )
    with ProgressBar("exact distances", terminal_only=True) as progress:
        suite = build_suite(
            workspace,
            method=args.method,
            n=args.n,
            seed=args.seed,
            classes=args.classes,
            target_ids=args.targets,
            keyword_tables=tables,
            ontology_id=args.ontology or ontology,
            distance_models=args.distance_model,
            realism=args.realism,
            realism_threshold=args.realism_threshold,
            top_up=not args.no_top_up,
            batch_size=args.batch_size,
            device=args.device,
            name=name,
            progress=progress,
        )
    skipped = screening_warning(suite.params.get("pool_screening") or {})
    if skipped:  # also in "warnings"; on stderr so it is seen without --json
        print(f"warning: {skipped}", file=sys.stderr)
    stats = suite_stats(suite)
    return {
        "suite": suite.id,
        "label": suite_labels_of(workspace)[suite.id],
        "name": suite.name,
        "method": suite.method,
        "targets": stats.targets,
        "per_target": stats.per_target_min,
        "per_target_max": stats.per_target_max,
        "keyword_diversity": stats.keyword_diversity,
        "distance_mean": stats.distance_mean,
        "distance_std": stats.distance_std,
        "below_realism": stats.below_realism,
        "topped_up": stats.topped_up,
        "topped_up_targets": stats.topped_up_targets,
        "topup_share": stats.topup_share,
        "keyword_tables": suite.params.get("keyword_tables", {}),
        "ontology": suite.params.get("ontology"),
        "selection": suite.params.get("selection"),
        "warnings": list(suite.warnings),
    }


def run_list(args: argparse.Namespace) -> list[dict[str, Any]]:
    from analytics.suites import list_suites

    table = list_suites(open_workspace(args))
    table["classes"] = [list(c) for c in table["classes"]]
    records: list[dict[str, Any]] = table.to_dict("records")
    return records


def _keyword_tables(workspace: Workspace, args: argparse.Namespace) -> dict[str, str]:
    from analytics.suites import ensure_keyword_tables

    given = {kind: name for kind, name in (("target", args.target_table), ("background", args.background_table)) if name}
    if len(given) == 2:
        return given
    with ProgressBar("keywords", terminal_only=True) as progress:
        names, computed = ensure_keyword_tables(workspace, model=args.keyword_model, batch_size=args.batch_size, device=args.device, progress=progress)
    for kind in computed:
        _say(f"no {kind} keyword table in the workspace: computed {names[kind]} with the classifier-patch backend")
    return {**names, **given}


def _say(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)
