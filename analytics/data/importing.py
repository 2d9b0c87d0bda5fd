"""One import flow for targets and background pools: the command line's ``add-targets`` and
``add-backgrounds``, the Data page's import form and :func:`analytics.api.add_targets` /
:func:`analytics.api.add_backgrounds` all call :func:`import_targets` and :func:`import_backgrounds`.

Both stream: each file (or COCO / VOC instance) is decoded as it is read and its arrays written
(:mod:`analytics.data.batched_writes`), so memory holds a few images, not the set. Targets are all or
nothing (every row commits at the end, a failure removes every array written); backgrounds commit in
batches (an interrupted import keeps its committed batches; running it again adds the rest). Ids the
workspace already holds are listed as rejected. With nothing valid to add, :class:`NothingToImportError`
(an :class:`~analytics.exceptions.InvalidInputError`) carries the report of what was rejected or
skipped and the workspace is left as it was. Given a folder rather than a :class:`Workspace`, the
workspace is created only once a record has been read: a failed first import leaves no folder behind.

Messages name the Python parameters (``annotations``, ``layout='coco'``); a caller with other names
for them (the command line's ``--annotations``, ``--layout coco``) passes :class:`ParameterNames`.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from analytics._choices import COCO, DEFAULT_MIN_AREA, INSTANCE_LAYOUTS, TARGET_LAYOUTS, VOC
from analytics._validation import ParameterNames, check_positive_int, read_json
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.workspace import DB_NAME, Workspace, default_workspace_path

from .batched_writes import store_backgrounds, store_targets
from .classes import resolve_class
from .coco import stream_coco
from .datasets import DEFAULT_IMAGE_SIZE, Target, image_size, list_backgrounds, list_classes, load_backgrounds, on_home, stream_backgrounds, stream_targets
from .images import read_image
from .label_spaces import ClassMapping
from .results import ImportResult, Rejected
from .voc import stream_voc

Record = TypeVar("Record")  # a streamed import's records: Target or Background
WorkspaceLike = Workspace | str | os.PathLike[str] | None


@dataclass
class ImportReport:
    """What an import did: what the Data page shows and the command line prints.

    Attributes
    ----------
    added : int
        Records new to the workspace.
    accepted : list of str
        Ids of the records read and stored (or already stored under that id by this import).
    rejected : list of Rejected
        ``(file, reason)`` of each file left out, ids the workspace already held included.
    skipped : dict of str to list of str
        Instances (COCO, VOC) left out by choice, by reason; :meth:`skip_report` counts them.
    proposed : list of Target
        Photos without a mask, each with a proposed GrabCut mask to review (``propose_masks``).
    classes : list of str
        The accepted targets' classes, in the order met.
    new_classes : dict of str to ClassMapping
        The classes the workspace lacked, with the mapping each was given.
    layout : str or None
        The targets' layout; None for backgrounds.
    """

    added: int = 0
    accepted: list[str] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)
    proposed: list[Target] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    new_classes: dict[str, ClassMapping] = field(default_factory=dict)
    layout: str | None = None

    @property
    def unmapped_classes(self) -> list[str]:
        """The new classes given no mapping (:attr:`ClassMapping.mapped` false), by name: what the import
        itself could not resolve (map them with ``set_class_mapping``). Whether a model scores them is
        another question: a model registered with its own class names scores the classes it names unmapped;
        the classes no registered model scores are :func:`analytics.models.unscored_classes` (what the
        Data page warns about, and ``add-targets`` prints as ``unscored_classes``)."""
        return sorted(name for name, mapping in self.new_classes.items() if not mapping.mapped)

    def skip_report(self, *, examples: int = 5) -> dict[str, dict]:
        """``{reason: {"count": n, "examples": [the first entries]}}`` of :attr:`skipped`."""
        return ImportResult(skipped=self.skipped).skip_report(examples=examples)

    def to_dict(self) -> dict[str, Any]:
        """Plain values, as ``python -m analytics add-targets`` / ``add-backgrounds`` print them."""
        out: dict[str, Any] = {"added": self.added, "rejected": [{"file": r.file, "reason": r.reason} for r in self.rejected]}
        if self.layout is None:
            return out
        out |= {
            "new_classes": {name: list(m.imagenet) for name, m in self.new_classes.items()},
            "new_class_mappings": {name: m.to_dict() for name, m in self.new_classes.items()},
            "classes_without_imagenet": sorted(name for name, m in self.new_classes.items() if not m.imagenet),
            "unmapped_classes": self.unmapped_classes,
        }
        return out | ({"skipped": self.skip_report()} if self.layout in INSTANCE_LAYOUTS else {})


class NothingToImportError(InvalidInputError):
    """Nothing valid to add; :attr:`report` says what was rejected or skipped. The workspace is unchanged."""

    def __init__(self, message: str, report: ImportReport) -> None:
        super().__init__(message)
        self.report = report


def import_targets(
    workspace: WorkspaceLike,
    path: str | os.PathLike[str] | None = None,
    *,
    layout: str,
    annotations: str | os.PathLike[str] | None = None,
    images: str | os.PathLike[str] | None = None,
    home: str | os.PathLike[str] | None = None,
    home_id: str | None = None,
    classes: Sequence[str] | None = None,
    min_area: float | None = None,
    all_instances: bool = False,
    max_instances: int | None = None,
    split: str | None = None,
    propose_masks: bool = False,
    existing_classes_only: bool = False,
    imagenet_map: Mapping[str, int | Sequence[int]] | str | os.PathLike[str] | None = None,
    package: str = "",
    licence: str = "",
    origin: Callable[[str], str] | None = None,
    names: ParameterNames | None = None,
) -> ImportReport:
    """Read, check and store a target set, streamed and all or nothing (see the module's notes).

    Parameters
    ----------
    workspace : Workspace or path-like or None
        A workspace, or its folder (None: the default workspace), created once a target is read.
    path : path-like, optional
        The folder or .zip of every layout but ``'coco'``.
    layout : {'folder', 'bgchallenge', 'cutouts', 'coco', 'voc'}
    annotations, images : path-like, optional
        ``'coco'`` only: the COCO instance segmentation JSON and the folder (or .zip) of its images.
    home : path-like, optional
        ``'cutouts'`` only: a photo the cut-outs are pasted on (default neutral grey).
    home_id : str, optional
        ``'cutouts'`` only: a background of the workspace to paste them on instead.
    classes : sequence of str, optional
        ``'coco'``, ``'voc'``: import these categories alone.
    min_area : float, optional
        ``'coco'``, ``'voc'``: skip instances covering less of their image (default 0.01).
    all_instances : bool, default=False
        ``'coco'``, ``'voc'``: a target per instance, not only the largest of each image.
    max_instances : int, optional
        ``'coco'``, ``'voc'``: refuse, before decoding anything, an import of more targets.
    split : str, optional
        ``'voc'`` only: the ids of ``ImageSets/Segmentation/<split>.txt``.
    propose_masks : bool, default=False
        Folder layouts: photos without a mask get a GrabCut mask to review (:attr:`ImportReport.proposed`).
    existing_classes_only : bool, default=False
        Reject targets of classes the workspace lacks.
    imagenet_map : mapping or path-like, optional
        ``{"class": index or [indices]}`` (or a JSON file of it) for new classes; otherwise a new
        class is mapped from its name (:func:`analytics.data.classes.resolve_class`).
    package, licence : str, default=""
        Recorded with each target.
    origin : callable, optional
        Renames each record's origin (the Data page: an upload's name instead of its temporary copy).
    names : ParameterNames, optional
        How messages name these parameters (default: as here).

    Returns
    -------
    ImportReport

    Raises
    ------
    InvalidInputError
        A parameter does not fit ``layout``, or a file is malformed (nothing stored).
    NothingToImportError
        Nothing valid to add (its ``report`` lists why); the workspace is unchanged.
    """
    names = names or ParameterNames()
    _check_target_options(names, layout, path=path, annotations=annotations, images=images, home=home, home_id=home_id, classes=classes,
                          min_area=min_area, all_instances=all_instances, max_instances=max_instances, split=split, propose_masks=propose_masks)  # fmt: skip
    mapping = _imagenet_map(imagenet_map, names)
    destination = _Destination(workspace)
    existing = destination.existing
    if home_id is not None and existing is None:
        raise NotFoundError(f"{names('home_id')} {home_id!r}: the workspace {destination.root} does not exist yet; import backgrounds first")
    known = list_classes(existing) if existing is not None else {}
    size = image_size(existing) if existing is not None else DEFAULT_IMAGE_SIZE
    stored, result, report = _stored_ids(existing, "targets"), ImportResult(), ImportReport(layout=layout)
    home_image, home_photo = _home(existing, home, home_id, names)
    met: dict[str, None] = {}

    def new_class(name: str) -> ClassMapping:  # store_targets asks for each class the workspace lacks, as it meets it
        report.new_classes[name] = resolve_class(name, mapping)
        return report.new_classes[name]

    def tagged(targets: Iterable[Target]) -> Iterator[Target]:
        for target in targets:
            if _already_stored(target, stored, result):
                continue
            report.accepted.append(target.id)
            met.setdefault(target.class_name)
            renamed = origin(target.origin) if origin else target.origin
            # a cut-out's origin names its home photo, so no crop of that photo becomes its background
            renamed = on_home(renamed, home_photo) if home_photo is not None else renamed
            yield replace(target, origin=renamed, package=package, licence=licence)

    options = {"size": size, "home": home_image, "known": known if existing_classes_only else None, "classes": classes, "split": split,
               "min_area": DEFAULT_MIN_AREA if min_area is None else min_area, "all_instances": all_instances, "max_instances": max_instances,
               "names": names}  # fmt: skip
    try:
        with _read_targets(layout, path, annotations, images, result, propose_masks=propose_masks, **options) as targets:
            some = _some(tagged(targets), result, report, where=path or annotations, what="targets", names=names)
            if some is not None:
                report.added = store_targets(destination.open(), some, classes=new_class)
    finally:
        _fill(report, result)
        report.classes = list(met)
    return report


def import_backgrounds(
    workspace: WorkspaceLike,
    path: str | os.PathLike[str],
    *,
    crops_per_photo: int = 1,
    seed: int = 0,
    package: str = "",
    licence: str = "",
    origin: Callable[[str], str] | None = None,
    names: ParameterNames | None = None,
) -> ImportReport:
    """Read, check and store a background pool, streamed and committed in batches (see the module's notes).

    Parameters
    ----------
    workspace : Workspace or path-like or None
        A workspace, or its folder (None: the default workspace), created once a photo is read.
    path : path-like
        A flat folder (or .zip) of photos.
    crops_per_photo : int, default=1
        Distinct square crops per photo.
    seed : int, default=0
        Seed of the crop positions.
    package, licence : str, default=""
        Recorded with each background.
    origin : callable, optional
        Renames each record's origin (the Data page: an upload's name instead of its temporary copy).
    names : ParameterNames, optional
        How messages name these parameters (default: as here).

    Returns
    -------
    ImportReport
        ``classes`` and ``new_classes`` stay empty.

    Raises
    ------
    InvalidInputError
        A parameter is out of range, or the folder holds no photo.
    NothingToImportError
        Nothing valid to add (its ``report`` lists why); the workspace is unchanged.
    """
    names = names or ParameterNames()
    crops = check_positive_int(crops_per_photo, names("crops_per_photo"))
    destination = _Destination(workspace)
    existing = destination.existing
    size = image_size(existing) if existing is not None else DEFAULT_IMAGE_SIZE
    stored, result, report = _stored_ids(existing, "backgrounds"), ImportResult(), ImportReport()

    def tagged(backgrounds: Iterable[Any]) -> Iterator[Any]:
        for background in backgrounds:
            if not _already_stored(background, stored, result):
                report.accepted.append(background.id)
                renamed = origin(background.origin) if origin else background.origin
                yield replace(background, origin=renamed, package=package, licence=licence)

    try:
        with stream_backgrounds(path, result, size=size, crops_per_photo=crops, seed=seed) as backgrounds:
            some = _some(tagged(backgrounds), result, report, where=path, what="background photos", names=names)
            if some is not None:
                report.added = store_backgrounds(destination.open(), some)
    finally:
        _fill(report, result)
    return report


def read_imagenet_map(path: str | os.PathLike[str]) -> dict[str, list[int]]:
    """Read ``{"class": index or [indices]}`` from a JSON file and check every index is an ImageNet-1k index (0..999)."""
    raw = read_json(Path(path), "JSON file", 'write {"class": index or [indices]}')
    if not isinstance(raw, dict):
        raise InvalidInputError(f'{path}: must hold a JSON object {{"class": index or [indices]}}; got {type(raw).__name__}')
    return _checked_map(raw, str(path))


def _checked_map(raw: Mapping[str, Any], where: str) -> dict[str, list[int]]:
    mapping = {}
    for name, value in raw.items():
        indices = list(value) if isinstance(value, list | tuple) else [value]
        if not indices or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 1000 for i in indices):
            raise InvalidInputError(f"{where}: class {name!r} must map to ImageNet-1k indices in 0..999; got {value!r}")
        mapping[name] = indices
    return mapping


def _imagenet_map(given: Mapping[str, Any] | str | os.PathLike[str] | None, names: ParameterNames) -> dict[str, list[int]]:
    if given is None:
        return {}
    if isinstance(given, Mapping):
        return _checked_map(given, names("imagenet_map"))
    return read_imagenet_map(given)


def _check_target_options(names: ParameterNames, layout: str, **given: Any) -> None:
    """Each parameter given fits ``layout``; the sources ``layout`` reads are given (``path``, or
    ``annotations`` and ``images`` for COCO)."""
    if layout not in TARGET_LAYOUTS:
        raise InvalidInputError(f"{names('layout')} must be one of {', '.join(map(repr, TARGET_LAYOUTS))}; got {layout!r}")
    homes = [name for name in ("home", "home_id") if given[name] is not None]
    if homes and layout != "cutouts":
        raise InvalidInputError(f"{names(homes[0])} is only used with {names.setting('layout', 'cutouts')}; got {names.setting('layout', layout)}; drop {names(homes[0])}")
    if len(homes) == 2:
        raise InvalidInputError(f"give {names('home')} (a photo) or {names('home_id')} (a background of the workspace), not both")
    folder_layouts = tuple(name for name in TARGET_LAYOUTS if name not in INSTANCE_LAYOUTS)
    fitting = {  # parameter -> the layouts it goes with (checked when given: not None, not False)
        "annotations": (COCO,), "images": (COCO,), "split": (VOC,), "propose_masks": folder_layouts,
        **dict.fromkeys(("classes", "all_instances", "min_area", "max_instances"), INSTANCE_LAYOUTS),
    }  # fmt: skip
    misplaced: dict[tuple[str, ...], list[str]] = {}
    for name, layouts in fitting.items():
        if given[name] is not None and given[name] is not False and layout not in layouts:
            misplaced.setdefault(layouts, []).append(names(name))
    if misplaced:
        parts = [f"{', '.join(found)} only go with {names.setting('layout', *layouts)}" for layouts, found in misplaced.items()]
        raise InvalidInputError(f"{'; '.join(parts)}; got {names.setting('layout', layout)}")
    if layout != COCO:
        if given["path"] is None:
            raise InvalidInputError(f"{names.setting('layout', layout)} reads {names('path')}, a folder or .zip; give it")
    elif given["path"] is not None or given["annotations"] is None or given["images"] is None:
        raise InvalidInputError(f"{names.setting('layout', COCO)} reads {names('annotations')} (the COCO JSON) and {names('images')} (a folder or .zip), not {names('path')}; give both")


@contextmanager
def _read_targets(
    layout: str,
    path: Any,
    annotations: Any,
    images: Any,
    result: ImportResult,
    *,
    size: int,
    home: Any,
    known: Mapping[str, Any] | None,
    propose_masks: bool,
    **choice: Any,
) -> Iterator[Iterator[Target]]:
    """The targets of the source, read one at a time, rejections and skips going to ``result``; a
    class outside ``known`` (when given) is rejected."""
    if layout not in INSTANCE_LAYOUTS:
        with stream_targets(path, result, layout=layout, size=size, home=home, classes=known, propose_masks=propose_masks) as targets:
            yield targets
        return
    split = choice.pop("split")
    reading = stream_coco(annotations, images, result, size=size, **choice) if layout == COCO else stream_voc(path, result, size=size, split=split, **choice)
    with reading as instances:
        yield (target for target in instances if known is None or _known_class(target, known, result))


def _known_class(target: Target, known: Mapping[str, Any], result: ImportResult) -> bool:
    """True when the workspace has ``target``'s class, else False and the target listed as rejected."""
    if target.class_name not in known:
        result.reject(target.origin, f"{target.id}: unknown class {target.class_name!r}; known: {', '.join(sorted(known))}")
    return target.class_name in known


def _home(workspace: Workspace | None, home: Any, home_id: str | None, names: ParameterNames) -> tuple[Any, str | None]:
    """The home photo's image and the origin recorded with it (``home`` as given, or the background's own origin)."""
    if home is not None:
        return read_image(home), str(home)
    if home_id is None:
        return None, None
    assert workspace is not None  # import_targets refuses home_id without a workspace
    table = list_backgrounds(workspace).set_index("id")
    if home_id not in table.index:
        raise NotFoundError(f"{names('home_id')} {home_id!r} is not a background of the workspace")
    return load_backgrounds(workspace, [home_id])[0], str(table.at[home_id, "origin"])


class _Destination:
    """The workspace an import writes to: the one given, or the folder's, created when first needed."""

    def __init__(self, workspace: WorkspaceLike) -> None:
        self.existing: Workspace | None = workspace if isinstance(workspace, Workspace) else None
        if isinstance(workspace, Workspace):
            self.root = workspace.root
            return
        self.root = Path(workspace) if workspace is not None else default_workspace_path()
        if (self.root / DB_NAME).exists():
            self.existing = Workspace(self.root, create=False)

    def open(self) -> Workspace:
        if self.existing is None:
            self.existing = Workspace(self.root, create=True)
        return self.existing


def _stored_ids(workspace: Workspace | None, table: str) -> set[str]:
    """The ids ``table`` of the workspace holds (none without a workspace): each record is checked against them."""
    if workspace is None:
        return set()
    return {row["id"] for row in workspace.query(f"SELECT id FROM {table}")}


def _already_stored(item: Any, stored: set[str], result: ImportResult) -> bool:
    """True (and ``item`` listed as rejected) when the workspace holds its id."""
    if item.id in stored:
        result.reject(item.origin, f"id {item.id!r} is already in the workspace; rename the file to add it as a new one")
    return item.id in stored


def _fill(report: ImportReport, result: ImportResult) -> None:
    report.rejected, report.skipped, report.proposed = list(result.rejected), dict(result.skipped), list(result.proposed)


def _some(records: Iterator[Record], result: ImportResult, report: ImportReport, *, where: Any, what: str, names: ParameterNames) -> Iterator[Record] | None:
    """``records`` again once one is read; None when none was but masks wait for review; else
    :class:`NothingToImportError` (before a workspace is created). The first record is read ahead
    and not kept once passed on: a streamed import holds no more than its batch."""
    ahead = list(itertools.islice(records, 1))
    if ahead:
        return _then(ahead, records)
    if result.proposed:
        return None
    _fill(report, result)
    rejected, skipped = result.rejected, result.skipped
    if skipped and not rejected:
        counts = "; ".join(f"{len(entries)} {reason}" for reason, entries in skipped.items())
        message = f"{where}: no {what} to add, every instance was skipped ({counts}); the workspace is unchanged"
    elif not rejected:
        check = f"{names('path')} and {names('layout')}" if report.layout is not None else names("path")
        message = f"{where}: found no {what} to add; check {check}. The workspace is unchanged"
    else:
        file, reason = rejected[0].file, rejected[0].reason
        first = reason if reason.startswith(file) else f"{file}: {reason}"
        message = f"{where}: no valid {what} to add ({len(rejected)} rejected; first: {first}); the workspace is unchanged"
    raise NothingToImportError(message, report)


def _then(ahead: list[Record], rest: Iterator[Record]) -> Iterator[Record]:
    while ahead:
        yield ahead.pop()
    yield from rest
