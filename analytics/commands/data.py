"""``demo``, ``fetch-assets``, ``info``, ``add-targets``, ``add-backgrounds``, ``classes`` and ``set-class``.

``add-targets`` and ``add-backgrounds`` are the library's one import flow (:func:`analytics.data.import_targets`,
:func:`analytics.data.import_backgrounds`, which the Data page and ``analytics.api`` call too; its messages
name this command's options, :data:`FLAGS`). They stream (``analytics.data.batched_writes``): each file (or
COCO / VOC instance) is decoded and its arrays written as it is read, so memory holds a few images,
not the set (a 20,000-photo pool held 5.3 GB, 40,000 COCO instances 4 GB). ``add-targets`` is
all-or-nothing: its rows commit in one transaction at the end, and a failure removes every array it
wrote. ``add-backgrounds`` commits its rows in batches of ``analytics.data.BACKGROUND_BATCH``: an
interrupted import keeps the batches it committed and no array of the one it was writing; running
it again adds the rest (ids already stored are listed as rejected, by either command). With nothing
valid to add either command fails (exit status 2, one line on stderr) and the workspace is left as
it was; a workspace folder that did not exist is not created.

``add-targets --layout coco --annotations instances.json --images DIR`` reads COCO instance
segmentation (:func:`analytics.data.read_coco`): one target per instance kept (the largest of each
image, or ``--all-instances``; ``--min-area``, ``--classes``), what was skipped counted by reason
under ``skipped``; a bad entry fails the whole import with one line naming it, and so does an
import of more than ``--max-instances`` targets (default ``$BACKDROP_MAX_INSTANCES``, else 10,000),
before any image is decoded.
``add-targets --layout voc --path DIR`` reads Pascal VOC instance masks the same way
(:func:`analytics.data.read_voc`: ``JPEGImages/`` with palette PNGs in ``SegmentationObject/`` and
``SegmentationClass/``; ``--split NAME`` takes the ids of ``ImageSets/Segmentation/NAME.txt``).

Classes of ``add-targets`` come from the class folder names (coco: the category names; voc: the class of each instance). A new class is mapped by the resolver
the Data page uses too (:func:`analytics.data.classes.resolve_class`): ImageNet-1k indices from
``--imagenet-map FILE`` (JSON ``{"class": index or [indices]}``), else from an exact ImageNet-1k
category name or WordNet id (case-insensitive, ``_`` read as a space, e.g. ``tennis_ball``), else
the IN-9 class of that name (``dog``, ``00_dog``), else none. New classes left without a mapping are
listed under ``unmapped_classes``; the imported classes no registered model scores yet under
``unscored_classes`` (:func:`analytics.models.unscored_classes`: a model registered with its own class
names scores the classes it names unmapped; with no model registered, the classes without a mapping).
Map them with ``set-class`` (find indices with ``classes --search``) or in the Data page's class editor. ``--existing-classes-only`` rejects files
of classes the workspace does not have yet.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from analytics._choices import DEFAULT_MIN_AREA, IN9_CLASSES, MAX_INSTANCES, MAX_INSTANCES_ENV_VAR, MIN_MASK_SHARE, TARGET_LAYOUTS

from ._options import add_json_option, add_workspace_option, open_workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    demo = subparsers.add_parser("demo", help="build the demo workspace from Debian packages (idempotent)")
    fetch = subparsers.add_parser("fetch-assets", help="download and unpack the demo's Debian packages into the cache")
    for parser in (demo, fetch):
        parser.add_argument("--cache", default=None, help="asset cache folder (default: $BACKDROP_CACHE or the checkout's .cache/assets; installed: ~/.cache/backdrop/assets)")
    demo.set_defaults(handler=run_demo)
    fetch.set_defaults(handler=run_fetch_assets)

    info = subparsers.add_parser("info", help="what the workspace holds: counts, classes, models, schema version")
    info.set_defaults(handler=run_info)

    targets = subparsers.add_parser("add-targets", help="import a target set (images + masks + classes) from a folder or zip")
    targets.add_argument("--path", default=None, help="folder or .zip (every layout but coco)")
    targets.add_argument("--layout", required=True, choices=TARGET_LAYOUTS, help="folder: images/<class>/* + masks/<class>/*; "
                         "bgchallenge: original/val/<class>/* + fg_mask/val/<class>/*.npy; cutouts: <class>/*.png with alpha; "
                         "coco: a COCO instance segmentation JSON (--annotations) over its images (--images); "
                         "voc: Pascal VOC JPEGImages/* + SegmentationObject/*.png + SegmentationClass/*.png (palette PNGs)")
    targets.add_argument("--annotations", default=None, help="coco only: the COCO JSON (instances.json) of CVAT, Label Studio, FiftyOne, Roboflow")
    targets.add_argument("--images", default=None, help="coco only: folder or .zip holding the images the JSON names")
    targets.add_argument("--min-area", type=float, default=None,
                         help=f"coco and voc only: skip instances covering less than this share of their image (default {DEFAULT_MIN_AREA}); "
                         f"below {MIN_MASK_SHARE} it also lowers the floor every target's mask must reach ({MIN_MASK_SHARE * 100:g} %% of the image)")
    targets.add_argument("--all-instances", action="store_true", help="coco and voc only: a target per instance (default: the largest of each image)")
    targets.add_argument("--classes", default=None, metavar="A,B", help="coco and voc only: import these categories alone (comma-separated names)")
    targets.add_argument("--max-instances", type=int, default=None, metavar="N",
                         help=f"coco and voc only: refuse, before decoding anything, an import of more than N targets "
                         f"(default ${MAX_INSTANCES_ENV_VAR}, else {MAX_INSTANCES})")
    targets.add_argument("--split", default=None, metavar="NAME", help="voc only: the ids of ImageSets/Segmentation/NAME.txt (a name, not a path; default: every mask)")
    targets.add_argument("--home", default=None, help="cutouts only: photo the cut-outs are pasted on (default: neutral grey)")
    targets.add_argument("--imagenet-map", default=None, help='JSON file {"class": index or [indices]} for new classes')
    targets.add_argument("--existing-classes-only", action="store_true", help="reject files of classes the workspace lacks")

    backgrounds = subparsers.add_parser("add-backgrounds", help="import a background pool: a flat folder (or zip) of photos")
    backgrounds.add_argument("--path", required=True, help="folder or .zip of photos")
    backgrounds.add_argument("--crops", type=int, default=1, help="distinct square crops per photo (default 1)")
    backgrounds.add_argument("--seed", type=int, default=0, help="seed of the crop positions (default 0)")

    for parser in (targets, backgrounds):
        parser.add_argument("--package", default="", help="source recorded with each image (e.g. a data set name)")
        parser.add_argument("--licence", default="", help="licence recorded with each image (e.g. CC-BY-4.0)")
    targets.set_defaults(handler=run_add_targets)
    backgrounds.set_defaults(handler=run_add_backgrounds)

    classes = subparsers.add_parser(
        "classes",
        help="list the workspace's classes with their mappings, or --search ImageNet-1k class names",
        description="Without --search: each workspace class with its target count and mapping (ImageNet indices, "
        "IN-9 class, custom label). With --search TEXT: ImageNet-1k classes whose name contains TEXT, or whose "
        "WordNet id or index is TEXT (no workspace needed); map a class to them with set-class.",
    )
    classes.add_argument("--search", default=None, metavar="TEXT", help="part of an ImageNet class name, a WordNet id (n04409515) or an index")
    classes.add_argument("--limit", type=int, default=20, help="--search only: at most this many matches (default 20)")
    classes.set_defaults(handler=run_classes)

    set_class = subparsers.add_parser(
        "set-class",
        help="map a class to ImageNet indices, an IN-9 class or a custom output label",
        description="Replace what model outputs count as a workspace class (the parts not given are cleared; runs "
        "scored with the old mapping become stale). Give at least one of --imagenet, --in9, --label. ImageNet "
        "classifiers use --imagenet, else the ImageNet classes of --in9; IN-9 classifiers use --in9, else the IN-9 "
        "classes of --imagenet; custom label spaces use --label, else the class's own name. Find ImageNet indices "
        "with `python -m analytics classes --search NAME`.",
    )
    set_class.add_argument("--class", dest="class_name", required=True, help="the workspace class")
    set_class.add_argument("--imagenet", default=None, metavar="I,J", help="comma-separated ImageNet-1k indices (0..999), e.g. 852")
    set_class.add_argument("--in9", default=None, choices=IN9_CLASSES, help="an IN-9 super-class")
    set_class.add_argument("--label", default=None, help="the output name in a custom label file")
    set_class.set_defaults(handler=run_set_class)

    for parser in (demo, fetch, info, targets, backgrounds, classes, set_class):
        add_workspace_option(parser)
        add_json_option(parser)


# -- demo ------------------------------------------------------------------------------------
def run_demo(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.demo import build_demo

    bars = StepBars()
    try:
        report = build_demo(open_workspace(args, create=True), cache_dir=args.cache, progress=bars.update)
    finally:
        bars.close()
    return report.to_dict()


def run_fetch_assets(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.demo import default_cache_dir, fetch_packages, load_catalogue

    packages = list(load_catalogue().packages)
    bars = StepBars()
    try:
        roots = fetch_packages(packages, cache_dir=args.cache, progress=lambda done, total, _package="": bars.update(done, total, "assets"))
    finally:
        bars.close()
    return {"cache": str(args.cache or default_cache_dir()), "packages": {name: str(root) for name, root in roots.items()}}


class StepBars:
    """One tqdm bar on stderr per demo step, driven by ``progress(done, total, step)``."""

    def __init__(self) -> None:
        self._bars: dict[str, Any] = {}

    def update(self, done: int, total: int, step: str = "") -> None:
        from tqdm import tqdm

        if step not in self._bars:
            self._bars[step] = tqdm(total=total, desc=step, unit="item", file=sys.stderr, leave=True)
        bar = self._bars[step]
        bar.total = total
        bar.update(done - bar.n)
        if done >= total:
            bar.close()  # a finished bar stays as one line; a step with several phases gets one per phase
            del self._bars[step]

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


# -- info ------------------------------------------------------------------------------------
def run_info(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.data import class_target_counts, image_size, list_classes
    from analytics.workspace import count_rows

    workspace = open_workspace(args)
    counts = count_rows(workspace, ("targets", "classes", "backgrounds", "suites", "runs", "judgments"))
    per_class = class_target_counts(workspace)
    return {
        "workspace": str(workspace.root),
        "schema_version": workspace.schema_version,
        "image_size": image_size(workspace),
        **counts,
        "models": [row["name"] for row in workspace.query("SELECT name FROM models ORDER BY name")],
        "class_counts": {name: per_class.get(name, 0) for name in list_classes(workspace)},
    }


# -- imports ---------------------------------------------------------------------------------
#: The command line's names of the import flow's parameters (:func:`analytics.data.import_targets`,
#: :func:`analytics.data.import_backgrounds`): the library's messages name these options instead.
FLAGS = {
    "path": "--path", "layout": "--layout", "annotations": "--annotations", "images": "--images", "home": "--home",
    "classes": "--classes", "min_area": "--min-area", "all_instances": "--all-instances", "max_instances": "--max-instances",
    "split": "--split", "existing_classes_only": "--existing-classes-only", "imagenet_map": "--imagenet-map",
    "crops_per_photo": "--crops", "seed": "--seed", "package": "--package", "licence": "--licence",
}  # fmt: skip


def run_add_targets(args: argparse.Namespace) -> dict[str, Any]:
    """Stream the targets into the workspace through the library's one import flow
    (:func:`analytics.data.import_targets`): one file or instance decoded at a time, every row committed
    at the end or none, the workspace created only once a target is read."""
    from analytics.data import ParameterNames, import_targets

    classes = None if args.classes is None else [name for name in args.classes.split(",") if name.strip()]
    report = import_targets(
        args.workspace, args.path, layout=args.layout, annotations=args.annotations, images=args.images, home=args.home, classes=classes,
        min_area=args.min_area, all_instances=args.all_instances, max_instances=args.max_instances, split=args.split,
        existing_classes_only=args.existing_classes_only, imagenet_map=args.imagenet_map, package=args.package, licence=args.licence,
        names=ParameterNames(FLAGS),
    )  # fmt: skip
    from analytics.models import unscored_classes

    return report.to_dict() | {"unscored_classes": unscored_classes(open_workspace(args), sorted(set(report.classes)))}


def run_add_backgrounds(args: argparse.Namespace) -> dict[str, Any]:
    """Stream the photos into the workspace through :func:`analytics.data.import_backgrounds`: one photo
    decoded at a time, rows committed in batches."""
    from analytics.data import ParameterNames, import_backgrounds

    report = import_backgrounds(
        args.workspace, args.path, crops_per_photo=args.crops, seed=args.seed, package=args.package, licence=args.licence, names=ParameterNames(FLAGS)
    )
    return report.to_dict()


# -- class mappings --------------------------------------------------------------------------
def run_classes(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.data import class_target_counts, list_class_mappings, search_imagenet

    if args.search is not None:
        matches = search_imagenet(args.search, limit=args.limit)
        return {"search": args.search, "matches": [{"index": m.index, "wnid": m.wnid, "name": m.name} for m in matches]}
    workspace = open_workspace(args)
    counts = class_target_counts(workspace)
    return {
        "classes": {name: {**m.to_dict(), "targets": counts.get(name, 0)} for name, m in list_class_mappings(workspace).items()},
    }


def run_set_class(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.data import set_class_mapping
    from analytics.workspace import class_mapping_key

    workspace = open_workspace(args)
    imagenet = None if args.imagenet is None else parse_indices(args.imagenet)
    mapping = set_class_mapping(workspace, args.class_name, imagenet=imagenet, in9=args.in9, label=args.label)
    return {"class": args.class_name, **mapping.to_dict(), "mapping_key": class_mapping_key(workspace, [args.class_name])}


def parse_indices(text: str) -> list[int]:
    """``'852,853'`` -> ``[852, 853]``; anything but comma-separated integers is a user error."""
    from analytics.exceptions import InvalidInputError

    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError as err:
        raise InvalidInputError(f"--imagenet must be comma-separated ImageNet-1k indices such as 852,853; got {text!r}") from err
