"""``saliency``: how much of a model's attribution falls on the object, over the first N targets.

For each target (original image, ordered by id) the explained output is the most probable of the
model outputs that count as the target's workspace class (``label_space.class_outputs``). The
result averages the per-image scores of :func:`analytics.saliency.explain` (NaNs left out)::

    python -m analytics saliency --workspace DIR --model NAME --method gradcam --targets 8 --json
    {"method": "gradcam", "iou": …, "pointing_game": …, "inside_share": …, "insertion_auc": …, "deletion_auc": …}

Method settings go through ``--set NAME=VALUE`` (repeatable), e.g. ``--set n_steps=16``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from analytics.exceptions import InvalidInputError

from ._options import add_device_option, add_json_option, add_workspace_option, open_workspace

REPORTED = ("iou", "pointing_game", "inside_share", "insertion_auc", "deletion_auc")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    parser = subparsers.add_parser("saliency", help="attribution maps of a model on the first N targets, scored against their masks")
    parser.add_argument("--model", required=True, help="registered model name")
    parser.add_argument(
        "--method",
        required=True,
        help="saliency, integrated_gradients, input_x_gradient, guided_backprop, gradcam, occlusion, gradcam_plus_plus or rise",
    )
    parser.add_argument("--targets", type=int, default=8, help="first N targets by id (default 8)")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="NAME=VALUE", help="a method setting (repeatable)")
    parser.add_argument("--threshold", type=float, default=0.2, help="top share of pixels kept when binarising maps (default 0.2)")
    parser.add_argument("--steps", type=int, default=16, help="steps of the insertion/deletion curves (default 16)")
    parser.add_argument("--baseline", default="blank", help="insertion/deletion baseline: blank or blur (default blank)")
    parser.add_argument("--batch-size", type=int, default=8, help="images attributed together (default 8)")
    add_device_option(parser)
    add_workspace_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=run_saliency)


def run_saliency(args: argparse.Namespace) -> dict[str, Any]:
    from analytics._validation import check_choice, check_positive_int
    from analytics.data import list_class_mappings, list_targets, load_targets
    from analytics.models import load_model
    from analytics.saliency import METHODS, explain

    method = check_choice(args.method, "--method", METHODS)
    settings = parse_settings(method, args.settings)
    n_targets = check_positive_int(args.targets, "--targets")
    workspace = open_workspace(args)
    table = list_targets(workspace).head(n_targets)
    if table.empty:
        raise InvalidInputError(f"workspace {workspace.root} has no targets; add some with `python -m analytics add-targets`")
    model = load_model(workspace, args.model, device=args.device)
    outputs = model.spec.label_space.class_outputs(list_class_mappings(workspace))
    images, masks = load_targets(workspace, table["id"].tolist())
    result = explain(
        model,
        images,
        masks,
        [outputs[c] for c in table["class_name"]],
        method=method,
        settings=settings,
        threshold=args.threshold,
        faithfulness_steps=args.steps,
        baseline=args.baseline,
        batch_size=args.batch_size,
    )
    summary = result.summary()
    return {"method": method, **{key: summary[key] for key in REPORTED}}


def parse_settings(method: str, pairs: Sequence[str]) -> dict[str, Any]:
    """``["n_steps=16", "reduce=sum"]`` → ``{"n_steps": 16, "reduce": "sum"}``, typed by the method's settings."""
    from analytics.saliency import METHODS

    numeric = {s.name: s for s in METHODS[method].settings}
    settings: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or name not in {*numeric, "reduce", "normalize"}:
            allowed = ", ".join([*numeric, "reduce", "normalize"])
            raise InvalidInputError(f"--set must be NAME=VALUE with NAME one of {allowed} for {method}; got {pair!r}")
        if name not in numeric:
            settings[name] = text
            continue
        try:
            settings[name] = int(text) if numeric[name].integer else float(text)
        except ValueError:
            raise InvalidInputError(f"--set {name} must be {'an integer' if numeric[name].integer else 'a number'}; got {text!r}") from None
    return settings
