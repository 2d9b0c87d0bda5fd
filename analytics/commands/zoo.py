"""``zoo`` and ``assess``: the model zoo with known background reliance, and the automated assessor.

``zoo`` trains (or completes) the zoo of :mod:`analytics.zoo` and prints each head's construction
strength and accuracy. ``assess`` evaluates the assessors of :mod:`analytics.assessor` against
human labels (a lead's consensus where recorded, else the majority vote of the latest judgments
on the suite, judgments being scoped to a suite) or against the zoo's construction labels (never
mixed: construction labels are not judgments), on one suite; models without a finished run on
that suite are run first (a note on stderr says so). Heavy imports happen inside the handlers.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from analytics._choices import DEFAULT_BACKBONE, DEFAULT_HIDDEN, DEFAULT_STRENGTHS, DEFAULT_TEMPERATURES, DEFAULT_ZOO_SEEDS

from ._options import add_device_option, add_json_option, add_workspace_option, open_workspace

if TYPE_CHECKING:
    import pandas as pd

    from analytics._progress import Progress
    from analytics.workspace import Workspace

LABEL_SOURCES = ("human", "construction")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    zoo = subparsers.add_parser("zoo", help="train the model zoo: heads with a controlled background reliance, and the figure-8 family")
    zoo.add_argument("--strengths", type=float, nargs="+", default=list(DEFAULT_STRENGTHS), metavar="S", help="background-class strengths in [0, 1] (default 0 0.25 0.5 0.75 1)")
    zoo.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_ZOO_SEEDS), metavar="K", help="training seeds (default 0 1 2)")
    zoo.add_argument("--augment", choices=("both", "yes", "no"), default="both", help="train with background augmentation, without, or both (default both)")
    zoo.add_argument("--backbone", default=DEFAULT_BACKBONE, help=f"registered model whose embedding the heads read (default {DEFAULT_BACKBONE}; registered when missing)")
    zoo.add_argument(
        "--temperatures", type=float, nargs="*", default=list(DEFAULT_TEMPERATURES), metavar="T",
        help="figure-8 family: output-layer factors of the s=0.5 plain head per seed, same decisions, T<1 invariant, 1 borderline, >1 variant "
        "(default 0.25 1 4; give none to skip the family)",
    )  # fmt: skip
    zoo.add_argument("--hidden", type=int, default=DEFAULT_HIDDEN, help=f"width of each head's hidden layer, its own embedding (default {DEFAULT_HIDDEN}; 0: linear heads)")
    zoo.add_argument("--n-train-per-class", type=int, default=36, help="object composites per class (default 36)")
    zoo.add_argument("--replace", action="store_true", help="retrain heads registered with another construction")
    zoo.add_argument("--batch-size", type=int, default=32, help="images per forward pass (default 32)")
    add_device_option(zoo)
    zoo.set_defaults(handler=run_zoo)

    assess = subparsers.add_parser(
        "assess", help="evaluate the automated assessors (random forest, AdaBoost) on the matrices vs the same learners on the accuracy statistics and the worst-case threshold"
    )
    assess.add_argument("--labels", choices=LABEL_SOURCES, required=True, help="human: consensus where recorded, else majority vote of the judgments; construction: the zoo's construction labels")
    assess.add_argument("--repeats", type=int, default=10, help="random 2/3-1/3 splits (default 10)")
    assess.add_argument("--suite", default=None, help="suite whose runs give the matrices and, with --labels human, whose judgments give the labels "
                        "(default: human, the suite with the most judged models; construction, the one with the most runs of the zoo)")
    assess.add_argument("--preset", choices=("fine", "medium", "smooth"), default="smooth", help="matrix interpolation preset (default smooth)")
    assess.add_argument(
        "--features", choices=("authors", "backdrop"), default="authors",
        help="matrix features: authors = the ML4ML authors' set (mean, s_mean, std, error rate > 0.15, discontinuity, asymmetry, "
        "signed gradients, sensitivity to a 90%% subsample; default), backdrop = Backdrop's earlier set",
    )  # fmt: skip
    assess.add_argument(
        "--crops", type=int, nargs="*", default=[], metavar="MARGIN",
        help="authors' features only: also measure nested centre crops, MARGIN cells in from each side (default none, as the authors' assessor)",
    )  # fmt: skip
    assess.add_argument(
        "--targets", choices=("correct", "all"), default=None,
        help="whose matrices the features measure: correct = the targets whose original image the model classifies correctly "
        "(the authors' set's default, as ML4ML's assessor), all = every target (the backdrop set's default)",
    )  # fmt: skip
    assess.add_argument("--seed", type=int, default=0, help="seed of the splits and estimators (default 0)")
    assess.add_argument("--batch-size", type=int, default=32, help="images per forward pass when models must be run (default 32)")
    add_device_option(assess)
    assess.set_defaults(handler=run_assess)

    for parser in (zoo, assess):
        add_workspace_option(parser)
        add_json_option(parser)


def run_zoo(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.zoo import build_zoo

    from .data import StepBars
    from .models import flags_in_errors

    augment = {"both": (False, True), "yes": (True,), "no": (False,)}[args.augment]
    bars = StepBars()
    try:
        with flags_in_errors({"replace": "--replace"}):
            models = build_zoo(
                open_workspace(args),
                strengths=args.strengths,
                augment=augment,
                seeds=args.seeds,
                backbone=args.backbone,
                n_train_per_class=args.n_train_per_class,
                hidden=args.hidden,
                temperatures=args.temperatures,
                batch_size=args.batch_size,
                device=args.device,
                replace=args.replace,
                progress=bars.update,
            )
    finally:
        bars.close()
    return {
        "models": [model.to_dict() for model in models],
        "backbone": args.backbone,
        "trained": sum(model.trained for model in models),
        "skipped": sum(not model.trained for model in models),
    }


def run_assess(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.assessor import FEATURE_SETS, evaluate_assessors

    from .data import StepBars

    workspace = open_workspace(args)
    suite_id, labels = _labels(workspace, args.labels, args.suite)
    bars = StepBars()
    try:
        data = _assessment_input(workspace, labels, suite_id, args, lambda done, total, _message="": bars.update(done, total, "run"))
    finally:
        bars.close()
    report = evaluate_assessors(data.features, labels, repeats=args.repeats, seed=args.seed)
    return {
        **report.to_dict(), "labels": args.labels, "suite": data.suite_id, "preset": args.preset, "feature_set": args.features,
        "crops": list(args.crops), "targets": args.targets or FEATURE_SETS[args.features].targets, "ran": list(data.ran),
    }  # fmt: skip


def _labels(workspace: Workspace, source: str, suite_id: str | None) -> tuple[str | None, pd.Series]:
    """(suite, labels): human labels (consensus, else majority) on the suite (default: the most judged one), or the
    zoo's construction labels (suite left to :func:`analytics.zoo.assessment_input`), as a Series
    indexed by model."""
    from analytics.exceptions import InvalidInputError

    if source == "construction":
        from analytics.zoo import construction_labels

        labels = construction_labels(workspace)
        if labels.empty:
            raise InvalidInputError(
                f"--labels construction: workspace {workspace.root} has no model zoo; build it first with "
                f"`python -m analytics zoo --workspace {workspace.root}`"
            )
        return suite_id, labels
    from analytics.assessor import human_labels, judged_suite

    suite_id = suite_id or judged_suite(workspace)
    labels = None if suite_id is None else human_labels(workspace, suite_id)
    if labels is None or labels.empty:
        where = f"on suite {suite_id}" if suite_id else "on any suite"
        raise InvalidInputError(
            f"--labels human: workspace {workspace.root} has no judgments {where}; judge models on the Judge page or with "
            "`python -m analytics judge` (or pick a judged suite with --suite), or pass --labels construction to use the "
            "zoo's construction labels"
        )
    return suite_id, labels


def _assessment_input(workspace: Workspace, labels: pd.Series, suite_id: str | None, args: argparse.Namespace, progress: Progress | None) -> Any:
    from analytics.zoo import assessment_input

    return assessment_input(
        workspace,
        labels.index.tolist(),
        suite_id=suite_id,
        preset=args.preset,
        feature_set=args.features,
        crops=tuple(args.crops),
        targets=args.targets,
        device=args.device,
        batch_size=args.batch_size,
        progress=progress,
        notify=lambda text: print(f"note: {text}", file=sys.stderr),
    )
