"""``runs`` and ``matrices``: list test runs, and export a run's RBF variance matrices (the paper's
signals by default; ``--signal`` picks any of :data:`analytics.runs.MATRIX_SIGNALS`, the authors'
last-conv-map signals among them, which have no suite scale and are drawn on their own range).

The PNGs of ``matrices`` use the suite's fixed colour scale (:mod:`analytics.runs.colour_scale`), the one
the Judge page shows, unless ``--autoscale`` asks for each matrix's own range; ``--json`` reports the
scale used per signal. ``--classes A,B`` exports the matrices and the table of those classes' targets
only (the Matrices page's Classes filter); a class the run has no target of is one line naming it and
the run's classes (exit 2).

Runs are started with ``python -m analytics run`` (:mod:`analytics.commands.models`).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from analytics._choices import DEFAULT_K, DEFAULT_MATRIX_GRID, MATRIX_SIGNALS, PRESETS, SIGNALS, WINDOW_SHAPES

from ._options import add_json_option, add_workspace_option, comma_list, open_workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    listing = subparsers.add_parser("runs", help="list test runs with accuracy, worst-case accuracy and whether they are stale")
    listing.add_argument("--model", help="only runs of this model")
    listing.add_argument("--suite", help="only runs over this suite")
    matrices = subparsers.add_parser("matrices", help="write a run's variance matrices, one per signal (.npy, .png) and its per-image table (.csv)")
    matrices.add_argument("--run", required=True, help="run id (see `runs`)")
    matrices.add_argument("--out", required=True, metavar="DIR", help="output folder (created when missing)")
    presets = ", ".join(f"{name} = window {w}, sigma {s:g}" for name, (w, s) in PRESETS.items())
    matrices.add_argument("--preset", choices=list(PRESETS), default="smooth", help=f"interpolation preset in cells (default smooth; {presets})")
    matrices.add_argument(
        "--grid", type=int, default=DEFAULT_MATRIX_GRID, help=f"cells per axis (default {DEFAULT_MATRIX_GRID}); one cell = d_max / grid in semantic distance"
    )
    matrices.add_argument("--window", type=int, default=None, help="kernel window diameter in cells (overrides the preset)")
    matrices.add_argument(
        "--window-shape", choices=list(WINDOW_SHAPES), default=WINDOW_SHAPES[0],
        help="the paper's circle (default), or a square of side --window (Backdrop's earlier reading)",
    )  # fmt: skip
    matrices.add_argument("--sigma", type=float, default=None, help="Gaussian sigma in cells (overrides the preset)")
    matrices.add_argument(
        "--autoscale", action="store_true", help="draw each PNG on its own range instead of the suite's fixed colour scale (not comparable between models)"
    )
    matrices.add_argument("--classes", type=comma_list, metavar="A,B", help="only the targets of these classes (default: every class of the run)")
    matrices.add_argument("--k", type=int, default=DEFAULT_K, help=f"nearest points averaged into u(e) (default {DEFAULT_K})")
    labels = "; ".join(f"{key} = {label}" for key, label in MATRIX_SIGNALS.items())
    matrices.add_argument(
        "--signal", action="append", choices=list(MATRIX_SIGNALS), metavar="SIGNAL",
        help=f"signal to export (repeatable; default the paper's {', '.join(SIGNALS)}): {labels}",
    )  # fmt: skip
    for parser in (listing, matrices):
        add_workspace_option(parser)
        add_json_option(parser)
    listing.set_defaults(handler=run_list)
    matrices.set_defaults(handler=run_export)


def run_list(args: argparse.Namespace) -> list[dict[str, Any]]:
    from analytics.runs import list_runs

    table = list_runs(open_workspace(args), model=args.model, suite_id=args.suite)
    return [{key: (None if isinstance(value, float) and math.isnan(value) else value) for key, value in record.items()} for record in table.to_dict("records")]


def run_export(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.exceptions import NotFoundError
    from analytics.runs import export_run, run_matrices, suite_colour_scale
    from analytics.variance import MatrixSettings

    workspace = open_workspace(args)
    settings = MatrixSettings.of(args.preset, grid=args.grid, window=args.window, sigma=args.sigma, k=args.k, window_shape=args.window_shape)
    row = workspace.query_one("SELECT suite_id FROM runs WHERE id = ?", (args.run,))
    if row is None:
        raise NotFoundError(f"no run {args.run!r} in workspace {workspace.root}; list them with `python -m analytics runs`")
    signals = tuple(args.signal or SIGNALS)
    if args.autoscale:
        own = run_matrices(workspace, args.run, settings=settings, signals=signals, classes=args.classes)
        rule = "autoscale: this matrix's own range (not comparable between models)"
        used = {s: {"zmin": float(m.matrix.min()), "zmax": float(m.matrix.max()), "rule": rule} for s, m in own.items()}
        result = export_run(workspace, args.run, args.out, settings=settings, signals=signals, classes=args.classes)
        return {**result, "colour_scale": {"suite": row["suite_id"], "autoscale": True, "signals": used}}
    scale = suite_colour_scale(workspace, row["suite_id"], settings=settings)
    result = export_run(workspace, args.run, args.out, settings=settings, tops=scale.tops, signals=signals, classes=args.classes, bottoms=scale.bottoms)
    own_range = [signal for signal in signals if signal not in scale.tops]  # the authors' conv-map signals have no suite scale
    return {**result, "colour_scale": {"suite": row["suite_id"], "autoscale": False, **scale.as_dict(), **({"own_range": own_range} if own_range else {})}}
