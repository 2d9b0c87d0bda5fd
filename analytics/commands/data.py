"""``demo``, ``fetch-assets``, ``info``, ``add-targets`` and ``add-backgrounds``: the data of a workspace.

Imports are all-or-nothing per call: every file is read and checked first, then the accepted ones
are stored in one transaction. With nothing valid to add the command fails (exit status 2, one
line on stderr) and the workspace is left as it was; a workspace folder that did not exist is not
created.

Classes of ``add-targets`` come from the class folder names. A new class gets its ImageNet-1k
indices from ``--imagenet-map FILE`` (JSON ``{"class": index or [indices]}``), else from an exact
ImageNet-1k category name (case-insensitive, ``_`` read as a space, e.g. ``tennis_ball``), else
none: it is stored without an index (the Data page does the same) and listed under
``classes_without_imagenet`` in the output, because ImageNet classifiers cannot be scored on it.
``--existing-classes-only`` rejects files of classes the workspace does not have yet.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from ..datasets import LAYOUTS


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..cli import add_json_option, add_workspace_option

    demo = subparsers.add_parser("demo", help="build the demo workspace from Debian packages (idempotent)")
    fetch = subparsers.add_parser("fetch-assets", help="download and unpack the demo's Debian packages into the cache")
    for parser in (demo, fetch):
        parser.add_argument("--cache", default=None, help="asset cache folder (default: $BACKDROP_CACHE or <project>/.cache/assets)")
    demo.set_defaults(handler=run_demo)
    fetch.set_defaults(handler=run_fetch_assets)

    info = subparsers.add_parser("info", help="what the workspace holds: counts, classes, models, schema version")
    info.set_defaults(handler=run_info)

    targets = subparsers.add_parser("add-targets", help="import a target set (images + masks + classes) from a folder or zip")
    targets.add_argument("--path", required=True, help="folder or .zip")
    targets.add_argument("--layout", required=True, choices=LAYOUTS, help="folder: images/<class>/* + masks/<class>/*; "
                         "bgchallenge: original/val/<class>/* + fg_mask/val/<class>/*.npy; cutouts: <class>/*.png with alpha")
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

    for parser in (demo, fetch, info, targets, backgrounds):
        add_workspace_option(parser)
        add_json_option(parser)


# -- demo ------------------------------------------------------------------------------------
def run_demo(args: argparse.Namespace) -> dict:
    from ..cli import open_workspace
    from ..demo import build_demo

    bars = StepBars()
    try:
        report = build_demo(open_workspace(args, create=True), cache_dir=args.cache, progress=bars.update)
    finally:
        bars.close()
    return report.to_dict()


def run_fetch_assets(args: argparse.Namespace) -> dict:
    from ..assets import default_cache_dir, fetch_packages
    from ..demo import load_catalogue

    packages = list(load_catalogue().packages)
    bars, ready = StepBars(), []

    def tick(package: str) -> None:
        ready.append(package)
        bars.update("assets", len(ready), len(packages))

    try:
        roots = fetch_packages(packages, cache_dir=args.cache, progress=tick)
    finally:
        bars.close()
    return {"cache": str(args.cache or default_cache_dir()), "packages": {name: str(root) for name, root in roots.items()}}


class StepBars:
    """One tqdm bar on stderr per demo step, driven by ``progress(step, done, total)``."""

    def __init__(self) -> None:
        self._bars: dict = {}

    def update(self, step: str, done: int, total: int) -> None:
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
def run_info(args: argparse.Namespace) -> dict:
    from ..cli import open_workspace
    from ..datasets import image_size, list_classes

    workspace = open_workspace(args)
    counts = {
        table: workspace.query_one(f"SELECT COUNT(*) AS n FROM {table}")["n"]
        for table in ("targets", "classes", "backgrounds", "suites", "runs", "judgments")
    }
    per_class = {row["class_name"]: row["n"] for row in workspace.query("SELECT class_name, COUNT(*) AS n FROM targets GROUP BY class_name")}
    return {
        "workspace": str(workspace.root),
        "schema_version": workspace.schema_version,
        "image_size": image_size(workspace),
        **counts,
        "models": [row["name"] for row in workspace.query("SELECT name FROM models ORDER BY name")],
        "class_counts": {name: per_class.get(name, 0) for name in list_classes(workspace)},
    }


# -- imports ---------------------------------------------------------------------------------
def run_add_targets(args: argparse.Namespace) -> dict:
    from ..datasets import DEFAULT_IMAGE_SIZE, add_targets, image_size, list_classes, read_targets
    from ..exceptions import InvalidInputError
    from ..images import read_image

    if args.home is not None and args.layout != "cutouts":
        raise InvalidInputError(f"--home is only used with --layout cutouts; got --layout {args.layout}; drop --home")
    workspace = _existing_workspace(args)
    known = list_classes(workspace) if workspace is not None else {}
    mapping = read_imagenet_map(Path(args.imagenet_map)) if args.imagenet_map else {}
    result = read_targets(
        args.path,
        layout=args.layout,
        size=image_size(workspace) if workspace is not None else DEFAULT_IMAGE_SIZE,
        home=read_image(args.home) if args.home else None,
        classes=known if args.existing_classes_only else None,
    )
    accepted = _drop_stored(workspace, "targets", result)
    _require_some(args.path, accepted, result.rejected, what="targets")
    new_classes = {t.class_name: class_indices(t.class_name, mapping) for t in accepted if t.class_name not in known}
    workspace = workspace or _create_workspace(args)
    added = add_targets(workspace, [replace(t, package=args.package, licence=args.licence) for t in accepted], classes=new_classes)
    return {
        "added": added,
        "rejected": [{"file": r.file, "reason": r.reason} for r in result.rejected],
        "new_classes": new_classes,
        "classes_without_imagenet": sorted(name for name, indices in new_classes.items() if not indices),
    }


def run_add_backgrounds(args: argparse.Namespace) -> dict:
    from .._validation import check_positive_int
    from ..datasets import DEFAULT_IMAGE_SIZE, add_backgrounds, image_size, read_backgrounds

    crops = check_positive_int(args.crops, "--crops")
    workspace = _existing_workspace(args)
    size = image_size(workspace) if workspace is not None else DEFAULT_IMAGE_SIZE
    result = read_backgrounds(args.path, size=size, crops_per_photo=crops, seed=args.seed)
    accepted = _drop_stored(workspace, "backgrounds", result)
    _require_some(args.path, accepted, result.rejected, what="background photos")
    workspace = workspace or _create_workspace(args)
    added = add_backgrounds(workspace, [replace(b, package=args.package, licence=args.licence) for b in accepted])
    return {"added": added, "rejected": [{"file": r.file, "reason": r.reason} for r in result.rejected]}


def read_imagenet_map(path: Path) -> dict[str, list[int]]:
    """Read ``{"class": index or [indices]}`` and check every index is an ImageNet-1k index (0..999)."""
    from ..exceptions import InvalidInputError

    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise InvalidInputError(f"{path}: not a readable JSON file ({err}); write {{\"class\": index or [indices]}}") from err
    if not isinstance(raw, dict):
        raise InvalidInputError(f"{path}: must hold a JSON object {{\"class\": index or [indices]}}; got {type(raw).__name__}")
    mapping = {}
    for name, value in raw.items():
        indices = value if isinstance(value, list) else [value]
        if not indices or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 1000 for i in indices):
            raise InvalidInputError(f"{path}: class {name!r} must map to ImageNet-1k indices in 0..999; got {value!r}")
        mapping[name] = indices
    return mapping


def class_indices(name: str, mapping: dict[str, list[int]]) -> list[int]:
    """ImageNet-1k indices of a new class: from ``mapping``, else an exact category name, else none."""
    from ..models import imagenet_label_space

    if name in mapping:
        return mapping[name]
    wanted = name.replace("_", " ").casefold()
    return [i for i, category in enumerate(imagenet_label_space().names) if category.casefold() == wanted]


def _existing_workspace(args: argparse.Namespace):
    """The workspace if it exists, else None (it is created only once there is something to add)."""
    from ..cli import open_workspace
    from ..workspace import DB_NAME, default_workspace_path

    root = Path(args.workspace) if args.workspace else default_workspace_path()
    return open_workspace(args) if (root / DB_NAME).exists() else None


def _create_workspace(args: argparse.Namespace):
    from ..cli import open_workspace

    return open_workspace(args, create=True)


def _drop_stored(workspace, table: str, result) -> list:
    """Accepted records whose id the workspace already holds move to the rejected list."""
    if workspace is None or not result.accepted:
        return list(result.accepted)
    ids = [item.id for item in result.accepted]
    stored = set()
    for start in range(0, len(ids), 500):  # SQLite caps the number of ? placeholders
        chunk = ids[start : start + 500]
        rows = workspace.query(f"SELECT id FROM {table} WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        stored.update(row["id"] for row in rows)
    for item in result.accepted:
        if item.id in stored:
            result.reject(item.origin, f"id {item.id!r} is already in the workspace; rename the file to add it as a new one")
    return [item for item in result.accepted if item.id not in stored]


def _require_some(path: str, accepted: list, rejected: list, *, what: str) -> None:
    from ..exceptions import InvalidInputError

    if accepted:
        return
    if not rejected:
        raise InvalidInputError(f"{path}: found no {what} to add; check --path and --layout. The workspace is unchanged")
    file, reason = rejected[0].file, rejected[0].reason
    first = reason if reason.startswith(file) else f"{file}: {reason}"
    raise InvalidInputError(f"{path}: no valid {what} to add ({len(rejected)} rejected; first: {first}); the workspace is unchanged")
