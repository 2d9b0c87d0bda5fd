"""``keywords``: build the workspace's keyword tables for the targets and/or the pool.

Three backends:

* ``classifier-patch`` (default): an ImageNet classifier over the image and a grid of patches
  (``--model``, default the first registered EfficientNet-Lite);
* ``precomputed``: a keyword file (``--file``): a CSV keyed by image names (long
  ``image,keyword[,score]`` or wide, see :mod:`analytics.keywords.readers`), a Backdrop keyword
  HDF5, or the reference HDF5 with ``--row-names`` (its rows name no images);
* ``scene-models``: the published ADE20K segmentation and Places365 checkpoints
  (``--ade20k-encoder``, ``--ade20k-decoder``, ``--places365``).

Suites and ontologies use the newest table of each item kind unless told otherwise, so the
tables built here are the ones the next ``suite`` / ``ontology`` command picks up.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from analytics._choices import VOCABULARIES
from analytics.exceptions import InvalidInputError

from ._options import add_device_option, add_json_option, add_workspace_option, open_workspace
from .models import flags_in_errors

if TYPE_CHECKING:
    from analytics.workspace import Workspace

PATCH, FILE, SCENES = "classifier-patch", "precomputed", "scene-models"
BACKEND_CHOICES = (PATCH, FILE, SCENES)
ITEMS = {"targets": ("target",), "backgrounds": ("background",), "both": ("target", "background")}
#: options that belong to some backends only (argparse dest -> backends)
BACKEND_OPTIONS = {
    "model": (PATCH,),
    "grid": (PATCH,),
    "vocabulary": (PATCH,),
    "threshold": (PATCH, FILE),
    "file": (FILE,),
    "row_names": (FILE,),
    "top_k": (FILE,),
    "min_share": (FILE, SCENES),
    "places_top_k": (FILE, SCENES),
    "ade20k_encoder": (SCENES,),
    "ade20k_decoder": (SCENES,),
    "places365": (SCENES,),
    "ade20k_names": (SCENES,),
    "places365_names": (SCENES,),
    "input_size": (SCENES,),
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    parser = subparsers.add_parser("keywords", help="build keyword tables of the targets and the pool (classifier, keyword file or scene models)")
    add_workspace_option(parser)
    parser.add_argument("--backend", choices=BACKEND_CHOICES, default=PATCH, help=f"keyword source (default {PATCH})")
    parser.add_argument("--items", choices=list(ITEMS), default="both", help="which items get a table (default both)")
    parser.add_argument("--threshold", type=float, default=None, help="presence threshold: classifier-patch probability (default 0.1); precomputed scores (present when > THRESHOLD)")
    parser.add_argument("--batch-size", type=int, default=32, help="images per forward pass (default 32)")
    add_device_option(parser)
    patch = parser.add_argument_group(PATCH)
    patch.add_argument("--model", metavar="NAME", help="registered ImageNet classifier (default: first EfficientNet-Lite)")
    patch.add_argument("--grid", type=int, default=None, help="patches per side (default 3)")
    patch.add_argument(
        "--vocabulary", choices=VOCABULARIES, default=None, help="keywords: scene classes, all outputs, or auto (scene for ImageNet-1k; default)"
    )
    precomputed = parser.add_argument_group(FILE)
    precomputed.add_argument("--file", metavar="FILE", help="keyword file: CSV keyed by image names, Backdrop HDF5 or reference HDF5")
    precomputed.add_argument("--row-names", metavar="FILE", help="text file, one image name per row of the file (needed by the reference HDF5)")
    precomputed.add_argument("--top-k", type=int, default=None, help="CSV of scores: present when among the TOP_K largest of its row")
    scenes = parser.add_argument_group("precomputed reference HDF5 and scene-models")
    scenes.add_argument("--min-share", type=float, default=None, help="ADE20K object present above this pixel share (default 0.01)")
    scenes.add_argument("--places-top-k", type=int, default=None, help="Places365 scenes kept per image (default 1)")
    models = parser.add_argument_group(SCENES)
    models.add_argument("--ade20k-encoder", metavar="FILE", help="encoder_epoch_20.pth of CSAIL ade20k-resnet18dilated-ppm_deepsup")
    models.add_argument("--ade20k-decoder", metavar="FILE", help="decoder_epoch_20.pth of the same model")
    models.add_argument("--places365", metavar="FILE", help="resnet18_places365.pth.tar of CSAIL places365")
    models.add_argument("--ade20k-names", metavar="FILE", help="object150_info.csv (default: next to the decoder)")
    models.add_argument("--places365-names", metavar="FILE", help="categories_places365.txt (default: next to --places365)")
    models.add_argument("--input-size", type=int, default=None, help="short side of the segmentation input in px (default 300)")
    add_json_option(parser)
    parser.set_defaults(handler=run_keywords)


def run_keywords(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.keywords import load_keyword_table, table_summary

    _check_options(args)
    workspace = open_workspace(args)
    kinds = ITEMS[args.items]
    result: dict[str, Any] = {"backend": args.backend}
    if args.backend == FILE:
        report = _import_file(workspace, args, kinds)
        tables, warnings = report.tables, report.warnings
        result.update({key: value for key, value in report.to_dict().items() if key != "tables"})
    else:
        tables, warnings = _compute(workspace, args, kinds), []
    result["tables"] = tables
    result["summary"] = {kind: table_summary(load_keyword_table(workspace, name)) for kind, name in tables.items()}
    result["warnings"] = warnings
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return result


def _check_options(args: argparse.Namespace) -> None:
    """Refuse options of another backend (a typo there would otherwise be ignored silently)."""
    foreign = [
        "--" + dest.replace("_", "-")
        for dest, backends in BACKEND_OPTIONS.items()
        if args.backend not in backends and getattr(args, dest) is not None
    ]
    if foreign:
        raise InvalidInputError(f"{', '.join(foreign)} do not apply to --backend {args.backend}; drop them or pick the backend they belong to")


def _import_file(workspace: Workspace, args: argparse.Namespace, kinds: tuple[str, ...]) -> Any:
    from analytics.keywords import import_keyword_table, read_keyword_file, read_row_names

    if not args.file:
        raise InvalidInputError("--backend precomputed needs --file FILE (a keyword CSV, a Backdrop keyword HDF5 or the reference HDF5)")
    with flags_in_errors({"threshold": "--threshold", "top_k": "--top-k", "places_top_k": "--places-top-k", "min_share": "--min-share"}):
        table = read_keyword_file(
            args.file,
            threshold=args.threshold,
            top_k=args.top_k,
            **_given(places_top_k=args.places_top_k, min_share=args.min_share),
        )
    return import_keyword_table(workspace, table, item_kinds=kinds, row_names=read_row_names(args.row_names) if args.row_names else None)


def _compute(workspace: Workspace, args: argparse.Namespace, kinds: tuple[str, ...]) -> dict[str, str]:
    from analytics.keywords import build_keyword_tables

    from .data import StepBars

    backend = _patch_backend(workspace, args) if args.backend == PATCH else _scene_backend(args)
    bars = StepBars()

    def progress(done: int, total: int, kind: str = "", /) -> None:  # one bar per item kind: "targets", "backgrounds"
        bars.update(done, total, f"{kind}s")

    try:
        return build_keyword_tables(workspace, backend, item_kinds=kinds, batch_size=args.batch_size, progress=progress)
    finally:
        bars.close()


def _patch_backend(workspace: Workspace, args: argparse.Namespace) -> Any:
    from analytics.data import list_classes
    from analytics.keywords import ClassifierPatchBackend
    from analytics.models import load_model
    from analytics.suites import default_keyword_model

    model = load_model(workspace, args.model or default_keyword_model(workspace), device=args.device)
    options = _given(grid=args.grid, threshold=args.threshold, vocabulary=args.vocabulary)
    # a target's own class is never a keyword of its scene
    return ClassifierPatchBackend(model, batch_size=args.batch_size, exclude_classes=list_classes(workspace), **options)


def _scene_backend(args: argparse.Namespace) -> Any:
    from analytics.keywords import SceneModelsBackend

    missing = [flag for flag, value in (("--ade20k-encoder", args.ade20k_encoder), ("--ade20k-decoder", args.ade20k_decoder), ("--places365", args.places365)) if not value]
    if missing:
        raise InvalidInputError(f"--backend scene-models needs the checkpoints {', '.join(missing)} (the published CSAIL files)")
    options = _given(
        ade_names=args.ade20k_names,
        places_names=args.places365_names,
        input_size=args.input_size,
        min_share=args.min_share,
        places_top_k=args.places_top_k,
    )
    return SceneModelsBackend(args.ade20k_encoder, args.ade20k_decoder, args.places365, device=args.device, batch_size=args.batch_size, **options)


def _given(**options: Any) -> dict[str, Any]:
    """The options the user gave (None = not given: the backend's own default applies)."""
    return {key: value for key, value in options.items() if value is not None}
