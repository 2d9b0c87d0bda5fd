"""``suite``: sample and save a background test suite for every target of a workspace.

The keyword methods need keyword tables for the targets and the pool, and ``ontology`` an
ontology; when the workspace has none, they are computed with defaults (classifier-patch keywords
from the first registered ImageNet classifier; an FP-Growth ontology with support 0.01 and
confidence 0.3) and a line on stderr says so.
"""

from __future__ import annotations

import argparse
import sys

from ..sampling import REALISM_SCORERS, SAMPLERS
from ..suites import DEFAULT_REALISM, DEFAULT_REALISM_THRESHOLD


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..cli import add_json_option, add_workspace_option

    parser = subparsers.add_parser("suite", help="sample and save N backgrounds per target (a test suite)")
    add_workspace_option(parser)
    parser.add_argument("--method", choices=list(SAMPLERS), required=True, help="sampling method")
    parser.add_argument("--n", type=int, default=32, help="backgrounds per target (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--distance-model", action="append", metavar="NAME", help="model of the distance ensemble (repeatable; default: every EfficientNet-Lite)")
    parser.add_argument("--target-table", metavar="NAME", help="keyword table of the targets (default: the newest)")
    parser.add_argument("--background-table", metavar="NAME", help="keyword table of the pool (default: the newest)")
    parser.add_argument("--ontology", metavar="ID", help="ontology id for --method ontology (default: the newest)")
    parser.add_argument("--keyword-model", metavar="NAME", help="ImageNet classifier for keywords computed on the fly (default: first EfficientNet-Lite)")
    parser.add_argument("--realism", choices=list(REALISM_SCORERS), default=DEFAULT_REALISM, help=f"realism scorer (default {DEFAULT_REALISM})")
    parser.add_argument("--realism-threshold", type=float, default=DEFAULT_REALISM_THRESHOLD, help=f"minimum realism score in [0, 1] (default {DEFAULT_REALISM_THRESHOLD}; 0 accepts all)")
    parser.add_argument("--no-top-up", action="store_true", help="keyword methods: leave a target's suite short instead of topping it up at random")
    parser.add_argument("--batch-size", type=int, default=32, help="images per forward pass (default 32)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    add_json_option(parser)
    parser.set_defaults(handler=run_suite)


def run_suite(args: argparse.Namespace) -> dict:
    from ..cli import open_workspace
    from ..suites import build_suite, ensure_ontology, suite_stats

    workspace = open_workspace(args)
    sampler = SAMPLERS[args.method]
    tables = ontology = None
    if sampler.needs_keywords:
        tables = _keyword_tables(workspace, args)
    if sampler.needs_ontology and args.ontology is None:
        ontology, built = ensure_ontology(workspace, tables)
        if built:
            _say(f"no ontology in the workspace: mined {ontology} (fpgrowth, support 0.01, confidence 0.3) from {', '.join(tables.values())}")
    with _bar("exact distances") as progress:
        suite = build_suite(
            workspace,
            method=args.method,
            n=args.n,
            seed=args.seed,
            keyword_tables=tables,
            ontology_id=args.ontology or ontology,
            distance_models=args.distance_model,
            realism=args.realism,
            realism_threshold=args.realism_threshold,
            top_up=not args.no_top_up,
            batch_size=args.batch_size,
            device=args.device,
            progress=progress,
        )
    stats = suite_stats(suite)
    return {
        "suite": suite.id,
        "method": suite.method,
        "targets": stats.targets,
        "per_target": stats.per_target_min,
        "per_target_max": stats.per_target_max,
        "keyword_diversity": stats.keyword_diversity,
        "distance_mean": stats.distance_mean,
        "distance_std": stats.distance_std,
        "below_realism": stats.below_realism,
        "warnings": list(suite.warnings),
    }


def _keyword_tables(workspace, args: argparse.Namespace) -> dict[str, str]:
    from ..suites import ensure_keyword_tables

    given = {kind: name for kind, name in (("target", args.target_table), ("background", args.background_table)) if name}
    if len(given) == 2:
        return given
    with _bar("keywords") as progress:
        names, computed = ensure_keyword_tables(workspace, model=args.keyword_model, batch_size=args.batch_size, device=args.device, progress=progress)
    for kind in computed:
        _say(f"no {kind} keyword table in the workspace: computed {names[kind]} with the classifier-patch backend")
    return {**names, **given}


def _say(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)


class _bar:
    """A tqdm bar on stderr driven by (done, total) callbacks; shown only on a terminal."""

    def __init__(self, label: str) -> None:
        self.label, self.bar = label, None

    def __enter__(self):
        return self.update

    def update(self, done: int, total: int) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=self.label, file=sys.stderr, disable=not sys.stderr.isatty())
        self.bar.update(done - self.bar.n)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()
