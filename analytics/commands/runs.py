"""``runs`` and ``matrices``: list test runs, and export a run's four RBF variance matrices.

Runs are started with ``python -m analytics run`` (:mod:`analytics.commands.models`).
"""

from __future__ import annotations

import argparse
import math

from ..variance import DEFAULT_K, PRESETS


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..cli import add_json_option, add_workspace_option

    listing = subparsers.add_parser("runs", help="list test runs with accuracy and worst-case accuracy")
    listing.add_argument("--model", help="only runs of this model")
    listing.add_argument("--suite", help="only runs over this suite")
    matrices = subparsers.add_parser("matrices", help="write a run's four variance matrices (.npy, .png) and its per-image table (.csv)")
    matrices.add_argument("--run", required=True, help="run id (see `runs`)")
    matrices.add_argument("--out", required=True, metavar="DIR", help="output folder (created when missing)")
    presets = ", ".join(f"{name} = window {w}, sigma {s:g}" for name, (w, s) in PRESETS.items())
    matrices.add_argument("--preset", choices=list(PRESETS), default="smooth", help=f"interpolation preset (default smooth; {presets})")
    matrices.add_argument("--grid", type=int, default=32, help="cells per axis (default 32)")
    matrices.add_argument("--window", type=int, default=None, help="kernel window side in cells (overrides the preset)")
    matrices.add_argument("--sigma", type=float, default=None, help="Gaussian sigma in cells (overrides the preset)")
    matrices.add_argument("--k", type=int, default=DEFAULT_K, help=f"nearest points averaged into u(e) (default {DEFAULT_K})")
    for parser in (listing, matrices):
        add_workspace_option(parser)
        add_json_option(parser)
    listing.set_defaults(handler=run_list)
    matrices.set_defaults(handler=run_export)


def run_list(args: argparse.Namespace) -> list[dict]:
    from ..cli import open_workspace
    from ..runs import list_runs

    table = list_runs(open_workspace(args), model=args.model, suite_id=args.suite)
    return [{key: (None if isinstance(value, float) and math.isnan(value) else value) for key, value in record.items()} for record in table.to_dict("records")]


def run_export(args: argparse.Namespace) -> dict:
    from ..cli import open_workspace
    from ..runs import export_run

    return export_run(open_workspace(args), args.run, args.out, preset=args.preset, grid=args.grid, window=args.window, sigma=args.sigma, k=args.k)
