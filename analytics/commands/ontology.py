"""``ontology`` and ``expand``: mine the keyword ontology and report keyword expansion per level.

Keywords come from a file (``--keywords``: reference HDF5, CSV or Backdrop HDF5) or from the
workspace's keyword tables (all of them, or ``--table NAME`` repeated). An ontology built from the
workspace is saved there.

Default mining settings (support 0.005, confidence 0.1, pairs only) and MAXITS 5 reproduce the
paper's Figure 9 on its keyword file: keywords per image grow for four levels, then saturate
(see :mod:`analytics.ontology`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from analytics._choices import ALGORITHM_NAMES, DEFAULT_ALGORITHM, DEFAULT_MAX_LEN, DEFAULT_MAXITS, DEFAULT_MIN_CONFIDENCE, DEFAULT_MIN_SUPPORT
from analytics.exceptions import InvalidInputError

from ._options import add_json_option, add_workspace_option, open_workspace

if TYPE_CHECKING:
    from analytics.keywords import KeywordTable


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    ontology = subparsers.add_parser("ontology", help="mine frequent itemsets, rules and the keyword ontology")
    expand = subparsers.add_parser("expand", help="keyword expansion statistics per level (paper Figure 9)")
    for parser in (ontology, expand):
        _add_source_options(parser)
        add_workspace_option(parser)
        _add_mining_options(parser)
        add_json_option(parser)
    expand.add_argument("--maxits", type=int, default=DEFAULT_MAXITS, help=f"MAXITS: expansion levels (default {DEFAULT_MAXITS}; the paper's gain flattens after level 4)")
    expand.add_argument("--minkws", type=int, default=None, help="MINKWS: stop once an image has this many keywords (default: none, expand to MAXITS)")
    ontology.set_defaults(handler=run_ontology)
    expand.set_defaults(handler=run_expand)


def _add_source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keywords", metavar="FILE", help="keyword file: reference HDF5, CSV or Backdrop HDF5")
    parser.add_argument("--table", action="append", metavar="NAME", help="workspace keyword table (repeatable; default all)")
    parser.add_argument("--places-top-k", type=int, default=1, help="reference HDF5: Places365 scenes kept per image (default 1)")
    parser.add_argument("--threshold", type=float, default=None, help="CSV of scores: present when score > THRESHOLD")
    parser.add_argument("--top-k", type=int, default=None, help="CSV of scores: present when among the TOP_K largest")


def _add_mining_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--algorithm", choices=sorted(ALGORITHM_NAMES), default=DEFAULT_ALGORITHM, help=f"frequent-itemset miner (default {DEFAULT_ALGORITHM})")
    parser.add_argument(
        "--min-support",
        type=float,
        default=DEFAULT_MIN_SUPPORT,
        help=f"minimum share of images holding a keyword or pair, in (0, 1] (default {DEFAULT_MIN_SUPPORT}: 9 of the reference file's 1712)",
    )
    parser.add_argument(
        "--min-confidence",
        type=float,
        default=DEFAULT_MIN_CONFIDENCE,
        help=f"minimum rule confidence P(B | A) for an edge A -> B, in (0, 1] (default {DEFAULT_MIN_CONFIDENCE}; "
        "at 0.3 only edges into a few frequent keywords remain and the reference file's expansion is flat from level 2)",
    )
    parser.add_argument(
        "--max-len",
        type=int,
        default=DEFAULT_MAX_LEN,
        help=f"largest itemset size (default {DEFAULT_MAX_LEN}: pairs, all the graph uses; 0 = no limit, which adds multi-keyword rules)",
    )


def run_ontology(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.ontology import build_ontology, save_ontology

    tables, names = _tables(args)
    ontology = build_ontology(tables, **_mining(args))
    result: dict[str, Any] = dict(ontology.summary)
    if names:
        result["ontology"] = save_ontology(open_workspace(args), ontology, tables=names)
    return result


def run_expand(args: argparse.Namespace) -> list[dict[str, Any]]:
    from analytics.ontology import build_ontology, expand_table, level_statistics

    tables, _ = _tables(args)
    ontology = build_ontology(tables, **_mining(args))
    expansions = [e for table in tables for e in expand_table(ontology, table, maxits=args.maxits, minkws=args.minkws)]
    stats = level_statistics(expansions, maxits=args.maxits)
    return [
        {"level": int(row.level), "min": int(row.min), "mean": float(row.mean), "max": int(row.max)}
        for row in stats.itertuples(index=False)
    ]


def _mining(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "algorithm": args.algorithm,
        "min_support": args.min_support,
        "min_confidence": args.min_confidence,
        "max_len": args.max_len or None,
    }


def _tables(args: argparse.Namespace) -> tuple[list[KeywordTable], list[str]]:
    """The keyword tables to mine, and their workspace names (empty for a file)."""
    from analytics.keywords import list_keyword_tables, load_keyword_table, read_keyword_file

    if args.keywords:
        if args.workspace or args.table:
            raise InvalidInputError("give --keywords FILE or --workspace DIR [--table NAME], not both")
        table = read_keyword_file(args.keywords, places_top_k=args.places_top_k, threshold=args.threshold, top_k=args.top_k)
        return [table], []

    workspace = open_workspace(args)
    names = args.table or list_keyword_tables(workspace)["name"].tolist()
    if not names:
        raise InvalidInputError(
            f"workspace {workspace.root} has no keyword tables; compute or import keywords first, or pass --keywords FILE"
        )
    return [load_keyword_table(workspace, name) for name in names], names
