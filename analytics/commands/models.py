"""``add-model``, ``models``, ``evaluate`` and ``run``: the model registry and the batch engine.

``add-model --arch efficientnet-lite0`` (1, 2) registers the bundled ImageNet classifiers (no
checkpoint needed); ``--arch timm:NAME`` a timm architecture with ``--checkpoint`` (its
preprocessing read from timm; ``--input-size``, ``--mean``, ``--std``, ``--crop-pct``,
``--interpolation`` override it); ``--arch transformers`` a ``save_pretrained`` folder given as
``--checkpoint`` (labels from its config.json unless ``--labels``); ``--arch onnx`` an ONNX file
(``--mean`` and ``--std`` required: a graph does not record them); any other ``--arch`` is a torchvision architecture with
``--checkpoint``, and ``--arch torchscript`` a TorchScript file. torch is imported inside the handlers so that other
subcommands start fast.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from analytics._choices import RESIZE_FILTERS
from analytics.exceptions import InvalidInputError

from ._options import ProgressBar, add_device_option, add_json_option, add_workspace_option, open_workspace

if TYPE_CHECKING:
    from analytics.models import ModelSpec
    from analytics.workspace import Workspace

LITE_ARCHS = {f"efficientnet-lite{v}": v for v in (0, 1, 2)}
TIMM_PREFIX = "timm:"  # --arch timm:resnet18 (timm and torchvision share names such as resnet18)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    add = subparsers.add_parser("add-model", help="register a model (EfficientNet-Lite, torchvision or timm + checkpoint, transformers folder, ONNX, TorchScript)")
    add.add_argument("--name", help="name in the registry (default: the architecture for EfficientNet-Lite)")
    add_registration_options(add, arch_required=True)
    listing = subparsers.add_parser("models", help="list the registered models")
    evaluate = subparsers.add_parser("evaluate", help="accuracy of a model on the original target images")
    evaluate.add_argument("--model", required=True, help="registered model name")
    run = subparsers.add_parser("run", help="run models over a suite and store per-image signals (resumable)")
    run.add_argument("--model", required=True, action="append", help="registered model name (repeatable)")
    run.add_argument("--suite", required=True, help="suite id, label or name")
    run.add_argument("--top-k", type=int, default=3, help="embedding neurons picked on the foreground-only image (default 3)")
    run.add_argument(
        "--fill-conv", action="store_true",
        help="also compute the authors' last-conv-map signals for stored images that lack them (runs made before Backdrop stored them; other values are kept)",
    )  # fmt: skip
    for parser in (evaluate, run):
        add_device_option(parser)
    evaluate.add_argument("--batch-size", type=int, default=32, help="images per forward pass (default 32)")
    run.add_argument("--batch-size", type=int, default=None, help="images per batch (default: 256 on a GPU, 32 on a CPU)")
    for parser in (add, listing, evaluate, run):
        add_workspace_option(parser)
        add_json_option(parser)
    add.set_defaults(handler=run_add_model)
    listing.set_defaults(handler=run_list_models)
    evaluate.set_defaults(handler=run_evaluate)
    run.set_defaults(handler=run_run)


def add_registration_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, arch_required: bool) -> None:
    """The options of ``add-model`` that say what to register (``check`` registers its candidate with them)."""
    parser.add_argument(
        "--arch", required=arch_required,
        help="efficientnet-lite0/1/2, a torchvision architecture (resnet18, vit_b_16, …), timm:NAME (a timm architecture), 'transformers', 'onnx' or 'torchscript'",
    )  # fmt: skip
    parser.add_argument("--checkpoint", metavar="PATH", help="state dict (.pt/.pth/.safetensors), TorchScript or ONNX file, or a transformers save_pretrained folder")
    parser.add_argument(
        "--labels", default=None, metavar="imagenet|in9|FILE",
        help="label space: imagenet, in9, or a text file of class names (default imagenet; transformers: its config.json's id2label)",
    )  # fmt: skip
    parser.add_argument(
        "--in9-mapping", metavar="MAP",
        help="with --labels in9: ImageNet -> IN-9 map: official (default, the challenge's in_to_in9.json, built in), wordnet, or a JSON FILE in that format",
    )  # fmt: skip
    parser.add_argument(
        "--input-size", type=int, default=None,
        help="network input side in pixels (default 224; 299 for inception_v3; timm, transformers, ONNX: the model's own)",
    )  # fmt: skip
    parser.add_argument("--preprocessing", choices=("imagenet", "efficientnet-lite"), default="imagenet", help="TorchScript only: input normalisation")
    parser.add_argument("--mean", type=_three_numbers, default=None, metavar="R,G,B", help="timm, transformers, ONNX (required): normalisation mean of [0, 1] pixels (default: the model's own)")
    parser.add_argument("--std", type=_three_numbers, default=None, metavar="R,G,B", help="timm, transformers, ONNX (required): normalisation std (default: the model's own)")
    parser.add_argument("--crop-pct", type=float, default=None, help="timm, ONNX: centre-crop fraction, 1 for none (default: the model's own; ONNX: none)")
    parser.add_argument(
        "--interpolation", default=None, choices=RESIZE_FILTERS,
        help="timm, ONNX: resize interpolation (default: the model's own; ONNX: Backdrop's area resize)",
    )  # fmt: skip
    parser.add_argument("--replace", action="store_true", help="overwrite a model of the same name")


def _three_numbers(text: str) -> tuple[float, float, float]:
    parts = text.split(",")
    try:
        values = tuple(float(part) for part in parts)
    except ValueError:
        values = ()
    if len(values) != 3:
        raise argparse.ArgumentTypeError(f"expected three numbers R,G,B such as 0.485,0.456,0.406; got {text!r}")
    return values


def run_add_model(args: argparse.Namespace) -> dict[str, Any]:
    return register_from_args(open_workspace(args, create=True), args.name, args).summary()


def register_from_args(workspace: Workspace, name: str | None, args: argparse.Namespace, *, flag: str = "--name") -> ModelSpec:
    """Register the model :func:`add_registration_options` describe as ``name`` (given as ``flag``); the library checks the
    files (``torch.load(weights_only=True)``, a forward pass) before anything is stored. Returns its spec."""
    from analytics.data import parse_label_space
    from analytics.models import (
        register_efficientnet_lite,
        register_onnx,
        register_timm,
        register_torchscript,
        register_torchvision,
        register_transformers,
    )

    if args.arch in LITE_ARCHS:
        if name not in (None, args.arch):
            raise InvalidInputError(f"{flag}: EfficientNet-Lite models are registered as {args.arch!r}; got {name!r} (give {flag} {args.arch})")
        return register_efficientnet_lite(workspace, LITE_ARCHS[args.arch])
    if not name or not args.checkpoint:
        raise InvalidInputError(f"--arch {args.arch} needs {flag} NAME and --checkpoint FILE")
    if args.arch == "transformers":
        geometry = [flag for flag, value in (("--crop-pct", args.crop_pct), ("--interpolation", args.interpolation)) if value is not None]
        if geometry:
            raise InvalidInputError(f"{', '.join(geometry)}: not for transformers, whose preprocessor_config.json gives the resize and crop")
        return register_transformers(
            workspace, name, folder=args.checkpoint, input_size=args.input_size, mean=args.mean, std=args.std, replace=args.replace,
            label_space=None if args.labels is None else parse_label_space(args.labels, in9_mapping=args.in9_mapping),
        )  # fmt: skip
    labels = parse_label_space(args.labels or "imagenet", in9_mapping=args.in9_mapping)
    if args.arch.startswith(TIMM_PREFIX):
        return register_timm(
            workspace, name, arch=args.arch.removeprefix(TIMM_PREFIX), checkpoint=args.checkpoint, label_space=labels, input_size=args.input_size,
            mean=args.mean, std=args.std, crop_pct=args.crop_pct, interpolation=args.interpolation, replace=args.replace,
        )  # fmt: skip
    if args.arch == "onnx":
        return register_onnx(
            workspace, name, checkpoint=args.checkpoint, label_space=labels, input_size=args.input_size, mean=args.mean, std=args.std,
            crop_pct=args.crop_pct, interpolation=args.interpolation, replace=args.replace,
        )  # fmt: skip
    own = [flag for flag, value in (("--mean", args.mean), ("--std", args.std), ("--crop-pct", args.crop_pct), ("--interpolation", args.interpolation)) if value is not None]
    if own:
        raise InvalidInputError(f"{', '.join(own)}: only for models that read their own preprocessing (timm:NAME, transformers, onnx); {args.arch} uses Backdrop's")
    if args.arch == "torchscript":
        return register_torchscript(
            workspace, name, checkpoint=args.checkpoint, label_space=labels, input_size=args.input_size or 224,
            preprocessing=args.preprocessing, replace=args.replace,
        )
    return register_torchvision(
        workspace, name, arch=args.arch, checkpoint=args.checkpoint, label_space=labels, input_size=args.input_size, replace=args.replace
    )


def run_list_models(args: argparse.Namespace) -> list[dict[str, Any]]:
    from analytics.models import list_models

    return [spec.summary() for spec in list_models(open_workspace(args))]


def run_evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.inference import evaluate

    return evaluate(open_workspace(args), args.model, device=args.device, batch_size=args.batch_size).to_dict()


def run_run(args: argparse.Namespace) -> dict[str, Any] | list[dict[str, Any]]:
    from analytics.runs import list_runs, start_runs

    workspace = open_workspace(args)
    with ProgressBar("run", unit="img") as progress:
        run_ids = start_runs(workspace, args.model, args.suite, device=args.device, batch_size=args.batch_size, top_k=args.top_k, progress=progress,
                              fill_conv=args.fill_conv)
    runs = list_runs(workspace, suite_id=args.suite).set_index("id")
    results = [
        {"run": run_id, "label": runs.at[run_id, "label"], "model": model, "suite": runs.at[run_id, "suite"], "suite_id": args.suite,
         "images": int(runs.at[run_id, "images"]),
         "accuracy": float(runs.at[run_id, "accuracy"]), "worst_case_accuracy": float(runs.at[run_id, "worst_case_accuracy"])}
        for run_id, model in zip(run_ids, dict.fromkeys(args.model))
    ]  # fmt: skip
    return results[0] if len(results) == 1 else results
