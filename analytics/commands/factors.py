"""``factors``: ImageNet-X factor analysis of models' ImageNet validation predictions.

From predictions CSVs in the ``imagenet-x`` package's format (``--predictions``, repeatable) and/or
from a workspace model run over a folder of ImageNet validation images (``--model`` with
``--imagenet-val``; ``--out`` keeps its predictions as such a CSV). Prints each model's overall
accuracy and, per factor, accuracy, error ratio and prevalence among its errors (see
:mod:`analytics.robustness.factors`). Heavy imports happen inside the handler.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from analytics.exceptions import InvalidInputError

from ._options import add_device_option, add_json_option, add_workspace_option, open_workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    parser = subparsers.add_parser(
        "factors",
        help="ImageNet-X: per-factor accuracy, error ratio and prevalence among errors of ImageNet validation predictions",
    )
    parser.add_argument(
        "--predictions", action="append", default=[], metavar="FILE.csv",
        help="predictions CSV (file_name,predicted_class[,predicted_probability]); repeat to compare models",
    )  # fmt: skip
    parser.add_argument("--names", nargs="+", default=None, metavar="NAME", help="one name per --predictions file (default: the file names' stems)")
    parser.add_argument("--model", default=None, help="a registered ImageNet-1k model to run over --imagenet-val")
    parser.add_argument("--imagenet-val", default=None, metavar="DIR", help="folder of ImageNet validation images (ILSVRC2012_val_00000001.JPEG …)")
    parser.add_argument("--out", default=None, metavar="FILE.csv", help="write the model's predictions there, in the imagenet-x CSV format")
    parser.add_argument("--batch-size", type=int, default=32, help="images per forward pass (default 32)")
    add_device_option(parser)
    add_workspace_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=run_factors)


def run_factors(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.robustness import analyse_models
    from analytics.workspace import to_csv

    if (args.out or args.imagenet_val) and args.model is None:
        raise InvalidInputError("--imagenet-val and --out go with --model: give --model M --imagenet-val DIR [--out FILE.csv]")
    if not args.predictions and args.model is None:
        raise InvalidInputError("give --predictions FILE.csv, or --model M --imagenet-val DIR")
    models = _file_predictions(args.predictions, args.names)
    out = None
    if args.model is not None:
        if args.model in models:
            raise InvalidInputError(f"--model {args.model}: a --predictions file has the same name; rename it with --names")
        models[args.model] = predictions = _model_predictions(args)
        if args.out:
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            to_csv(predictions, out)
    analysis = analyse_models(models)
    summary, details = analysis.summary, analysis.details
    return {
        "models": {
            name: {
                "images": int(summary.loc[name, "images"]),
                "accuracy": float(summary.loc[name, "accuracy"]),
                "worst_factor_accuracy": float(summary.loc[name, "worst_factor_accuracy"]),
                "factors": details[details["model"] == name].drop(columns="model").set_index("factor").to_dict(orient="index"),
            }
            for name in models
        },
        "predictions_out": None if out is None else str(out),
    }


def _file_predictions(paths: list[str], names: list[str] | None) -> dict[str, Any]:
    """``{name: predictions}`` of the --predictions files, named by --names or their stems."""
    from analytics.robustness import load_predictions

    if names is not None and len(names) != len(paths):
        raise InvalidInputError(f"--names: {len(names)} name(s) for {len(paths)} --predictions file(s); give one name per file")
    names = names or [Path(path).stem for path in paths]
    if len(set(names)) != len(names):
        raise InvalidInputError(f"--predictions: two files are both called {_first_twice(names)!r}; name them apart with --names")
    return {name: load_predictions(path) for name, path in zip(names, paths)}


def _first_twice(names: list[str]) -> str:
    return next(name for i, name in enumerate(names) if name in names[:i])


def _model_predictions(args: argparse.Namespace) -> Any:
    """The predictions of --model over --imagenet-val (a DataFrame), with a tqdm bar on stderr."""
    from analytics.robustness import predict_imagenet_val

    from .data import StepBars

    if args.imagenet_val is None:
        raise InvalidInputError("--model needs --imagenet-val DIR: the model is run over the validation images in that folder")
    bars = StepBars()
    try:
        predictions = predict_imagenet_val(
            open_workspace(args),
            args.model,
            args.imagenet_val,
            batch_size=args.batch_size,
            device=args.device,
            progress=lambda done, total, _message="": bars.update(done, total, f"predict {args.model}"),
        )
    finally:
        bars.close()
    return predictions
