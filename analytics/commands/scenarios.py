"""``scenarios``: the XIMAGENET-12 scenarios on the workspace's targets for one or more models —
accuracy per scenario, robustness scores (§4 and Table 3 forms; by default over Table 3's eight
scenarios, ``--score-over all`` for every evaluated one) and Table 1's regression; ``--csv``
writes the per-image predictions. Evaluations are cached per (model, scenario), so a repeat is
instant and an interrupted one resumes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from analytics.exceptions import InvalidInputError

from ._options import add_device_option, add_json_option, add_workspace_option, open_workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    parser = subparsers.add_parser("scenarios", help="XIMAGENET-12 scenarios: accuracy, robustness score and regression per model")
    parser.add_argument("--models", required=True, metavar="A,B", help="registered model names, comma-separated")
    parser.add_argument("--scenarios", default=None, metavar="S,T", help="scenario names, comma-separated (default: all; the original is always included)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the random scenarios per target (default 0)")
    parser.add_argument(
        "--score-over", choices=("table3", "all"), default="table3",
        help="scenarios the robustness score spans: table3 (default: the paper's Table 3 eight, without rainbow, brightness and transparent) or all evaluated",
    )  # fmt: skip
    parser.add_argument("--baseline-model", default=None, help="the regression's reference model (default: the first of --models)")
    parser.add_argument("--csv", metavar="FILE", default=None, help="write the per-image predictions to FILE")
    add_device_option(parser)
    parser.add_argument("--batch-size", type=int, default=32, help="images per forward pass (default 32)")
    add_workspace_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=run_scenarios)


def _names(text: str | None, flag: str) -> list[str] | None:
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise InvalidInputError(f"{flag} must name at least one item, comma-separated; got {text!r}")
    return names


def run_scenarios(args: argparse.Namespace) -> dict[str, Any]:
    from tqdm import tqdm

    from analytics.robustness import evaluate_scenarios, robustness_scores, scenario_accuracy, scenario_regression
    from analytics.workspace import to_csv

    workspace = open_workspace(args)
    models = _names(args.models, "--models") or []  # required: argparse never leaves it None
    if args.csv and not Path(args.csv).parent.is_dir():
        raise InvalidInputError(f"--csv {args.csv}: folder {Path(args.csv).parent} does not exist; create it or choose another path")
    with tqdm(total=0, unit="img", desc="scenarios", file=sys.stderr, disable=not sys.stderr.isatty()) as bar:
        def progress(done: int, total: int, _message: str = "") -> None:
            bar.total = total
            bar.update(done - bar.n)

        predictions = evaluate_scenarios(
            workspace, models, scenarios=_names(args.scenarios, "--scenarios"), seed=args.seed,
            batch_size=args.batch_size, device=args.device, progress=progress,
        )  # fmt: skip
    if args.csv:
        to_csv(predictions, args.csv)
    accuracy = scenario_accuracy(predictions)
    result = {
        "models": models,
        "scenarios": list(accuracy.index),
        "seed": args.seed,
        "n_targets": int(predictions["target"].nunique()),
        "accuracy": {scenario: row.to_dict() for scenario, row in accuracy.iterrows()},
        "robustness": None,
        "robustness_scenarios": args.score_over,
        "regression": None,
    }
    try:
        result["robustness"] = robustness_scores(predictions, scenario_set=args.score_over).to_dict("index")
    except InvalidInputError as err:
        result["robustness_note"] = str(err)
    try:
        fit = scenario_regression(predictions, baseline_model=args.baseline_model)
    except InvalidInputError as err:
        result["regression_note"] = str(err)
    else:
        result["regression"] = {
            "baseline": fit.baseline, "n_cells": fit.n_cells, "r_squared": fit.r_squared,
            "f_value": fit.f_value, "f_pvalue": fit.f_pvalue, "terms": fit.table.to_dict("records"),
        }  # fmt: skip
    if args.csv:
        result["csv"] = str(Path(args.csv).resolve())
    return result
