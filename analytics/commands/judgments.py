"""``judge``, ``agreement`` and ``coverage``: decisions about models from the command line.

``judge`` stores one judgment (scripted or bulk entry; judgments count per suite, so name the run
or suite judged), ``agreement`` reports Fleiss' κ, Cohen's κ per pair, Krippendorff's α (ordinal and
nominal) and each annotator's agreement with the majority over the judgments that count on a suite
(without ``--suite``: the latest per annotator and model over all suites), each with the number of
models behind it, a flag below ``MIN_SHARED_MODELS`` and a seeded bootstrap 95 % interval;
``coverage`` measures the neuron coverage of a suite on a model.
Handlers import their stage modules (statsmodels, scikit-learn, torch) when they run, so that
building the parser for another command stays fast; ``..cli`` is imported late to avoid a cycle.
"""

from __future__ import annotations

import argparse
from typing import Any

from analytics._choices import LABELS

from ._options import add_device_option, add_json_option, add_workspace_option, open_workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    judge = subparsers.add_parser("judge", help="store one judgment: a model is invariant, borderline or variant")
    judge.add_argument("--annotator", required=True, help="who judges")
    judge.add_argument("--model", required=True, help="a registered model")
    judge.add_argument("--label", required=True, choices=LABELS, help="the decision")
    judge.add_argument("--note", default="", help="free text kept with the judgment")
    judge.add_argument("--confidence", type=float, default=None, help="how sure, in [0, 1]")
    judge.add_argument("--run", dest="run_id", default=None, help="the run whose matrices were judged")
    judge.add_argument("--suite", dest="suite_id", default=None, help="the suite whose matrices were judged")
    judge.set_defaults(handler=run_judge)

    agreement = subparsers.add_parser(
        "agreement",
        help="Fleiss' kappa, Cohen's kappa per pair, Krippendorff's alpha and agreement with the majority over the latest "
        "judgments on a suite, each with its number of models and a bootstrap 95%% interval",
    )
    agreement.add_argument("--suite", dest="suite_id", default=None, help="the suite whose judgments count (default: the latest per annotator and model over all suites)")
    agreement.add_argument("--resamples", type=int, default=None, help="bootstrap resamples per interval; 0: no intervals (default 1000)")
    agreement.add_argument("--seed", type=int, default=None, help="seed of the bootstrap (default 0)")
    agreement.set_defaults(handler=run_agreement)

    coverage = subparsers.add_parser("coverage", help="neuron coverage of a suite on a model (DeepXplore)")
    coverage.add_argument("--model", required=True, help="a registered model")
    coverage.add_argument("--suite", required=True, help="a suite id, label or name")
    coverage.add_argument(
        "--layers", choices=("embedding", "all"), default="embedding", help="embedding only, or every activation layer (default embedding)"
    )
    coverage.add_argument(
        "--threshold", type=float, default=0.5, help="covered when the scaled activation exceeds this, in [0, 1) (default 0.5)"
    )
    coverage.add_argument("--batch-size", type=int, default=32, help="images per forward pass (default 32)")
    add_device_option(coverage)
    coverage.set_defaults(handler=run_coverage)

    for parser in (judge, agreement, coverage):
        add_workspace_option(parser)
        add_json_option(parser)


def run_judge(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`analytics.api.judge`, the call a notebook makes (``--suite`` is resolved to its id on opening)."""
    from analytics.api import judge

    judgment = judge(
        open_workspace(args),
        annotator=args.annotator,
        model=args.model,
        label=args.label,
        run_id=args.run_id,
        suite=args.suite_id,
        confidence=args.confidence,
        note=args.note,
    )
    return judgment.to_dict()


def run_agreement(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.exceptions import NotFoundError
    from analytics.judging import AGREEMENT_BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, latest_judgments, measure_agreement

    workspace = open_workspace(args)
    if args.suite_id is not None and workspace.query_one("SELECT 1 FROM suites WHERE id = ?", (args.suite_id,)) is None:
        raise NotFoundError(f"--suite: no suite {args.suite_id!r} in workspace {workspace.root}; list them with `python -m analytics suites`")
    resamples = AGREEMENT_BOOTSTRAP_RESAMPLES if args.resamples is None else args.resamples
    seed = BOOTSTRAP_SEED if args.seed is None else args.seed
    agreement = measure_agreement(latest_judgments(workspace, args.suite_id), resamples=resamples, seed=seed)
    return {"suite": args.suite_id, **agreement.to_dict()}


def run_coverage(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.comparison import suite_coverage

    result = suite_coverage(
        open_workspace(args),
        args.model,
        args.suite,
        layers=args.layers,
        threshold=args.threshold,
        device=args.device,
        batch_size=args.batch_size,
    )
    return {"model": args.model, "suite": args.suite, "layers": args.layers, **result.to_dict()}
