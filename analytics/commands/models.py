"""``add-model``, ``models``, ``evaluate`` and ``run``: the model registry and the batch engine.

``add-model``'s options are generated from the model sources (:data:`analytics.models.SOURCES`):
``--source`` names one, and each source's registration options become flags (sources sharing a flag
share its meaning). Without ``--source`` the source that claims ``--arch`` registers:
``efficientnet-lite0`` (1, 2) the bundled ImageNet classifiers (no checkpoint needed); ``timm:NAME``
a timm architecture with ``--checkpoint`` (its preprocessing read from timm; ``--input-size``,
``--mean``, ``--std``, ``--crop-pct``, ``--interpolation`` override it); ``transformers`` a
``save_pretrained`` folder given as ``--checkpoint`` (labels from its config.json unless
``--labels``); ``onnx`` an ONNX file (``--mean`` and ``--std`` required: a graph does not record
them); ``torchscript`` a TorchScript file; any other ``--arch`` is a torchvision architecture with
``--checkpoint``. The sources' registry imports no torch; the handlers import the rest, so that
other subcommands start fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from analytics.exceptions import InvalidInputError
from analytics.models import ModelSource, Option, add_model, get_source, registrable_sources, source_for_arch

from ._options import ProgressBar, add_device_option, add_json_option, add_workspace_option, open_workspace

if TYPE_CHECKING:
    from analytics.models import ModelSpec
    from analytics.workspace import Workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    add = subparsers.add_parser("add-model", help=f"register a model ({', '.join(source.name for source in registrable_sources())})")
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
    """The options of ``add-model`` that say what to register (``check`` registers its candidate with them):
    ``--source`` and the registration options of every source (:data:`analytics.models.SOURCES`),
    one flag per option name, each help saying which sources take it.

    ``arch_required`` is kept for callers: ``--arch`` or ``--source`` is checked when registering.
    """
    sources = registrable_sources()
    parser.add_argument(
        "--source", choices=[source.name for source in sources], default=None,
        help="the model source (default: the one --arch names): " + "; ".join(f"{source.name}: {source.description}" for source in sources),
    )  # fmt: skip
    for flag, uses in _flags(sources).items():
        option = uses[0][1]
        parser.add_argument(flag, default=None, help=f"{option.help} [{', '.join(source.name for source, _ in uses)}]", **_argument_type(uses))
        if option.kind == "labels":
            parser.add_argument(
                "--in9-mapping", metavar="MAP",
                help="with --labels in9: ImageNet -> IN-9 map: official (default, the challenge's in_to_in9.json, built in), wordnet, or a JSON FILE in that format",
            )  # fmt: skip
    parser.add_argument("--replace", action="store_true", help="overwrite a model of the same name")


def _flags(sources: list[ModelSource]) -> dict[str, list[tuple[ModelSource, Option]]]:
    """Flag -> the sources that take it, with their option."""
    flags: dict[str, list[tuple[ModelSource, Option]]] = {}
    for source in sources:
        for option in source.options:
            flags.setdefault(option.flag, []).append((source, option))
    return flags


def _argument_type(uses: list[tuple[ModelSource, Option]]) -> dict[str, Any]:
    """argparse's ``type``, ``choices`` and ``metavar`` of a flag its sources agree on."""
    kinds = {option.kind for _, option in uses}
    option = uses[0][1]
    found: dict[str, Any] = {"metavar": option.metavar} if option.metavar else {}
    if len(kinds) > 1:
        return found
    if option.kind == "int":
        found["type"] = int
    elif option.kind == "fraction":
        found["type"] = float
    elif option.kind == "triple":
        found["type"] = _three_numbers
    elif option.kind == "choice" and len({o.choices for _, o in uses}) == 1 and option.choices:
        found["choices"] = option.choices
    return found


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
    """Register the model :func:`add_registration_options` describe as ``name`` (given as ``flag``) through
    its source (:func:`analytics.models.add_model`); the library checks the files
    (``torch.load(weights_only=True)``, a forward pass) before anything is stored. Returns its spec."""
    from analytics.data import parse_label_space

    source, arch = _chosen_source(args)
    flags = _flags(registrable_sources())
    taken = {option.flag for option in source.options}
    stray = [f for f in flags if f not in taken and f != "--arch" and getattr(args, _dest(f)) is not None]
    if stray:
        takers = {f: ", ".join(s.name for s, _ in flags[f]) for f in stray}
        raise InvalidInputError(f"{', '.join(stray)}: not for {source.name} models ({'; '.join(f'{f} is for {t}' for f, t in takers.items())})")
    options: dict[str, Any] = {}
    for option in source.options:
        value = arch if option.flag == "--arch" else getattr(args, _dest(option.flag))
        if option.kind == "labels":
            value = value or option.default
            value = None if value is None else parse_label_space(value, in9_mapping=args.in9_mapping)
        if value not in (None, ""):
            options[option.name] = value
    missing = [option.flag for option in source.options if option.required and option.name not in options]
    if source.needs_name and not name:
        missing.insert(0, flag)
    if missing:
        raise InvalidInputError(f"{source.name} models need {' and '.join(missing)}")
    with flags_in_errors({"source": "--source"} | {option.name: option.flag for option in source.options if option.flag}):
        return add_model(workspace, source.name, name, replace=args.replace, **options)


@contextmanager
def flags_in_errors(flags: dict[str, str]) -> Iterator[None]:
    """Re-raise the library's :class:`InvalidInputError`, whose message names Python parameters
    (``crop_pct``), as the command line says it: the same class with each parameter of ``flags``
    written as its flag (``--crop-pct``), by :meth:`analytics._validation.ParameterNames.translate` (the
    mapping the import commands pass)."""
    try:
        yield
    except InvalidInputError as err:
        from analytics._validation import ParameterNames

        text = ParameterNames(flags).translate(str(err))
        if text == str(err) or type(err) is not InvalidInputError:  # a subclass may carry more than its message
            raise
        raise InvalidInputError(text) from err


def _chosen_source(args: argparse.Namespace) -> tuple[ModelSource, str | None]:
    """The source ``--source`` or else ``--arch`` names, and the value of its ``arch`` option."""
    if args.source is not None:
        source = get_source(args.source)
        claimed = source.claims_arch(args.arch) if args.arch else None
        return source, claimed if claimed is not None else args.arch
    if not args.arch:
        raise InvalidInputError(f"give --arch or --source ({', '.join(source.name for source in registrable_sources())})")
    with flags_in_errors({"arch": "--arch", "source": "--source"}):
        return source_for_arch(args.arch)


def _dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def run_list_models(args: argparse.Namespace) -> list[dict[str, Any]]:
    from analytics.models import list_models

    return [spec.summary() for spec in list_models(open_workspace(args))]


def run_evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.inference import evaluate

    return evaluate(open_workspace(args), args.model, device=args.device, batch_size=args.batch_size).to_dict()


def run_run(args: argparse.Namespace) -> dict[str, Any] | list[dict[str, Any]]:
    """Run the models through the library's one flow (:func:`analytics.api.run`, which the Run page's
    job calls too) and print one record per run."""
    from analytics.api import run

    workspace = open_workspace(args)
    with ProgressBar("run", unit="img") as progress:
        table = run(
            workspace, models=args.model, suite=args.suite, device=args.device, batch_size=args.batch_size, top_k=args.top_k, fill_conv=args.fill_conv,
            progress=progress,
        )  # fmt: skip
    results = [
        {"run": row["id"], "label": row["label"], "model": row["model"], "suite": row["suite"], "suite_id": row["suite_id"], "images": int(row["images"]),
         "accuracy": float(row["accuracy"]), "worst_case_accuracy": float(row["worst_case_accuracy"])}
        for row in table.to_dict("records")
    ]  # fmt: skip
    return results[0] if len(results) == 1 else results
