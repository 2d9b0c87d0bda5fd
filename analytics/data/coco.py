"""COCO instance segmentation as targets: the ``instances.json`` that CVAT, Label Studio, FiftyOne and
Roboflow export (polygons and RLE, compressed or not, in one file) over a folder (or zip) of images.

The whole file is checked before any image is decoded, and a bad entry stops the import with one
line naming the file and the entry (unreadable JSON, an annotation pointing at an unknown image or
category, a polygon or RLE outside its image, a missing image file): the caller stores nothing.

Sizes the JSON declares are never trusted: no mask is rasterised and no image decoded until the
header of each image file that an instance may come from (not a crowd region, of a chosen category,
with a mask) has been read, nothing decoded, and found within the pixel limit
(:func:`~analytics.data.images.max_image_pixels`) and equal to the entry's ``width`` and ``height``;
a file past the limit or of another size stops the import with one line naming it, its size and the
limit or the size declared. Polygons (within :data:`EDGE_TOLERANCE`) and RLE sizes are checked
against the declared size, hence against the real one, so pycocotools never sees a size larger than
the image file: a 1 KB JSON declaring a 20,000,000-pixel side cannot exhaust the memory.

Entries left out by choice are counted in ``ImportResult.skipped`` by reason: crowd regions
(``iscrowd``), boxes without a mask, categories not chosen, instances below ``min_area`` of their
image and, unless ``all_instances``, every instance but the largest of its image. Each chosen
instance becomes a :class:`~analytics.data.datasets.Target` of class = its category name, through
the same checks and square fit as a ``folder`` import (:func:`analytics.data.images.fit_target`),
whose floor of 0.2 % of the image (:data:`~analytics.data.images.MIN_MASK_SHARE`) is lowered to
``min_area`` where that is smaller.

An import makes at most :func:`instance_limit` targets (:data:`MAX_INSTANCES`, 10,000; the
``max_instances`` argument, ``--max-instances``, ``$BACKDROP_MAX_INSTANCES``): more are refused in
one line, before any image or mask is decoded (:func:`check_instance_count`). The chosen instances
are decoded one at a time (:func:`stream_coco`), so an import into
:func:`~analytics.data.add_targets` holds a few targets in memory, not thousands (0.25 MB each).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Real
from pathlib import Path

import numpy as np
from pycocotools import mask as coco_mask

from analytics._choices import DEFAULT_MIN_AREA, MAX_INSTANCES, MAX_INSTANCES_ENV_VAR
from analytics._validation import check_fraction, read_json
from analytics.exceptions import InvalidInputError

from .archives import extracted, is_hidden
from .datasets import DEFAULT_IMAGE_SIZE, Target
from .images import LOWER_FLOOR_FIX, MIN_MASK_SHARE, fit_target, read_image, read_image_size
from .results import ImportResult

#: Polygon points may lie this many pixels outside the image (exporters round to the image's edge).
EDGE_TOLERANCE = 0.5

CROWD = "crowd region (iscrowd=1)"
NO_MASK = "no mask (a box only)"
OTHER_CATEGORY = "category not chosen"
TOO_SMALL = "smaller than the minimum area"
NOT_LARGEST = "not the largest instance of its image (import with all instances to keep it)"


@dataclass(frozen=True)
class _Candidate:
    """An annotation that may be imported, checked against its image's declared size, nothing rasterised."""

    number: int  # its place in the file's annotations
    id: int
    image: dict  # the image entry: id, file_name, width, height
    category: str
    segmentation: list | dict  # polygons of floats, or an RLE {"size", "counts"} (a list of runs, or bytes)


@dataclass(frozen=True)
class _Instance:
    id: int
    image: dict  # the image entry: id, file_name, width, height
    category: str
    rle: dict  # pycocotools RLE of the whole instance at the size of its image file's header
    area: float  # share of the image, 0..1

    @property
    def entry(self) -> str:
        return _entry(self.id, self.image)


def _entry(annotation_id: int, image: dict) -> str:
    """How a skipped annotation is listed: ``annotation 7 (image 3, street.jpg)``."""
    return f"annotation {annotation_id} (image {image['id']}, {image['file_name']})"


def read_coco(
    annotations: str | os.PathLike,
    images: str | os.PathLike,
    *,
    size: int = DEFAULT_IMAGE_SIZE,
    classes: Iterable[str] | None = None,
    min_area: float = DEFAULT_MIN_AREA,
    all_instances: bool = False,
    max_instances: int | None = None,
) -> ImportResult:
    """Read COCO instance segmentation as targets: one target per chosen instance (holding them all:
    stream a large import with :func:`stream_coco`).

    Parameters
    ----------
    annotations : path-like
        The COCO JSON (``images``, ``annotations``, ``categories``); a segmentation is a list of
        polygons ``[[x1, y1, x2, y2, ...], ...]`` or an RLE ``{"size": [height, width], "counts":
        str or list of int}``.
    images : path-like
        Folder or .zip holding the images; an image's ``file_name`` is found as written (also below
        an enclosing folder), else by its file name alone when that is unique.
    size : int, default=256
        Side of the stored square images.
    classes : iterable of str or None
        Category names to import (others are skipped); None imports every category.
    min_area : float, default=0.01
        Instances covering less than this share of their image are skipped. Below
        :data:`~analytics.data.images.MIN_MASK_SHARE` (0.2 %) it also lowers the floor every stored
        target's mask must reach (before and after the square fit), which otherwise refuses them.
    all_instances : bool, default=False
        One target per instance; by default only the largest chosen instance of each image.
    max_instances : int or None
        Refuse the import, before any image is decoded, when it would make more targets than this;
        None: :func:`instance_limit` (``$BACKDROP_MAX_INSTANCES``, else :data:`MAX_INSTANCES`, 10,000).

    Returns
    -------
    result : ImportResult
        ``accepted``: :class:`Target` records with id ``<category>/<image stem>-<annotation id>``, an
        image of shape (size, size, 3), uint8 and a mask of shape (size, size), bool; ``rejected``:
        instances whose mask the fit refuses (below the floor, or nearly the whole image);
        ``skipped``: entries by reason.

    Raises
    ------
    InvalidInputError
        A bad file or entry (one line naming the file and the entry), an image file of another size
        than its entry declares or past :func:`~analytics.data.images.max_image_pixels` (read from
        its header before any mask is made), ``classes`` naming no category, ``min_area`` outside
        [0, 1], or more targets to make than ``max_instances`` (:func:`check_instance_count`).
    """
    result = ImportResult()
    reading = stream_coco(annotations, images, result, size=size, classes=classes, min_area=min_area, all_instances=all_instances, max_instances=max_instances)
    with reading as targets:
        result.accepted = list(targets)
    return result


@contextmanager
def stream_coco(
    annotations: str | os.PathLike,
    images: str | os.PathLike,
    result: ImportResult,
    *,
    size: int = DEFAULT_IMAGE_SIZE,
    classes: Iterable[str] | None = None,
    min_area: float = DEFAULT_MIN_AREA,
    all_instances: bool = False,
    max_instances: int | None = None,
) -> Iterator[Iterator[Target]]:
    """:func:`read_coco` one target at a time: on entering the block the whole file is checked, the
    instances chosen (``result.skipped`` filled) and counted against the limit, nothing decoded; the
    block gets an iterator of :class:`Target` that decodes an instance only when advanced (an image
    once for consecutive instances of it), rejections added to ``result`` as they are met
    (``result.accepted`` is left alone). Into :func:`~analytics.data.add_targets`, memory holds a few
    targets whatever the count. Parameters and errors as :func:`read_coco`."""
    annotations = Path(annotations)
    min_area = check_fraction(min_area, "min_area", low_open=False)
    limit = instance_limit(max_instances)
    data = _load(annotations)
    image_entries = _images(annotations, data["images"])
    categories = _categories(annotations, data["categories"])
    chosen = None if classes is None else _chosen(annotations, classes, categories)
    candidates, skips = _instances(annotations, data["annotations"], image_entries, categories, chosen)
    with extracted(Path(images)) as (folder, shown):
        files = _find_images(annotations, Path(images), folder, candidates)
        sizes = _real_sizes(annotations, candidates, files, folder, shown)  # before anything is rasterised or decoded
        instances = _measured(annotations, candidates, sizes, min_area, skips)
        for _, reason, entry in sorted(skips):  # in the file's order, as listed
            result.skipped.setdefault(reason, []).append(entry)
        picked = instances if all_instances else _largest(instances, result)
        check_instance_count(annotations, len(picked), len({i.image["id"] for i in instances}), limit=limit, all_instances=all_instances)
        yield _targets(annotations, picked, files, folder, shown, size, min(min_area, MIN_MASK_SHARE), result)


def instance_limit(max_instances: int | None = None) -> int:
    """The most targets one instance import may make: ``max_instances``, else ``$BACKDROP_MAX_INSTANCES``,
    else :data:`MAX_INSTANCES`.

    Raises
    ------
    InvalidInputError
        ``max_instances`` or the environment variable is not a positive whole number.
    """
    if max_instances is not None:
        if isinstance(max_instances, bool) or not isinstance(max_instances, int) or max_instances <= 0:
            raise InvalidInputError(f"max_instances (--max-instances) must be a positive whole number of targets; got {max_instances!r}")
        return max_instances
    raw = os.environ.get(MAX_INSTANCES_ENV_VAR, "").strip()
    limit = int(raw) if raw.isdigit() else 0 if raw else MAX_INSTANCES
    if limit <= 0:
        raise InvalidInputError(f"{MAX_INSTANCES_ENV_VAR} must be a positive whole number of targets; got {raw!r}; unset it for the default {MAX_INSTANCES}")
    return limit


def check_instance_count(source: str | os.PathLike, count: int, images: int, *, limit: int, all_instances: bool) -> None:
    """Refuse an instance import of ``count`` targets (from ``images`` images) past ``limit``, before
    anything is decoded: each target is 0.25 MB of disk at 256 px, and seconds of work on a server.

    Raises
    ------
    InvalidInputError
        One line naming the source, the count, the limit and the ways out: the largest instance of
        each image (when that fits), fewer categories or a higher minimum area, or a higher limit.
    """
    if count <= limit:
        return
    largest = f"import the largest instance of each image instead of every instance ({images} targets), " if all_instances and images <= limit else ""
    raise InvalidInputError(
        f"{source}: {count} instances to import, past the limit of {limit} targets per import; {largest}choose fewer categories "
        f"or a higher minimum area, or raise the limit: --max-instances {count} (Python: max_instances={count}; "
        f"the Data page: {MAX_INSTANCES_ENV_VAR}={count} where the server starts)"
    )


def _targets(
    annotations: Path, picked: list[_Instance], files: dict[int, Path], folder: Path, shown: Path, size: int, floor: float, result: ImportResult
) -> Iterator[Target]:
    """The picked instances as targets, in order, one at a time; an image is decoded once for the
    instances of it that follow each other (exports list annotations image by image)."""
    decoded: tuple[int, np.ndarray] | None = None
    for instance in picked:
        path = files[instance.image["id"]]
        shown_path = shown / path.relative_to(folder)
        if decoded is None or decoded[0] != instance.image["id"]:
            decoded = None  # the previous image is freed before the next is decoded
            decoded = (instance.image["id"], _image(annotations, instance, path, shown_path))
        target = _target(instance, decoded[1], shown_path, size, floor, result)
        if target is not None:
            yield target


def _image(annotations: Path, instance: _Instance, path: Path, shown: Path) -> np.ndarray:
    """The decoded image of ``instance``, checked to be the size its header gave.

    Returns
    -------
    image : ndarray of shape (height, width, 3), uint8
    """
    entry = f"{annotations}: annotation {instance.id}"
    try:  # the file was found: a decoding failure is a bad input like a missing file
        image = read_image(path)
    except InvalidInputError as err:
        raise InvalidInputError(f"{entry}: {err}") from err
    width, height = instance.image["width"], instance.image["height"]
    if image.shape[:2] != (height, width):  # its header said otherwise (checked before): a file that lies
        raise InvalidInputError(
            f"{entry}: image {shown} decodes to {image.shape[1]}x{image.shape[0]} though its header says {width}x{height} "
            f"(image {instance.image['id']}); save the image again"
        )
    return image


def _target(instance: _Instance, image: np.ndarray, shown: Path, size: int, floor: float, result: ImportResult) -> Target | None:
    """``instance``'s mask made and fitted with its ``image`` as a target; None (the refusal added to ``result``) when the fit refuses it."""
    mask = _bitmap(instance.rle, *image.shape[:2])
    try:  # refused as in a folder import, below a floor min_area may lower
        image, mask = fit_target(image, mask, size, origin=f"{shown} annotation {instance.id}", min_share=floor, fix=LOWER_FLOOR_FIX)
    except InvalidInputError as err:
        result.reject(shown, str(err))
        return None
    stem = Path(instance.image["file_name"].replace("\\", "/")).stem
    return Target(f"{instance.category}/{stem}-{instance.id}", instance.category, image, mask, origin=str(shown))


# -- the JSON ----------------------------------------------------------------------------------
def _load(path: Path) -> dict:
    data = read_json(path, "COCO JSON file", "export the annotations again as COCO")
    if not isinstance(data, dict) or not all(isinstance(data.get(key), list) for key in ("images", "annotations", "categories")):
        found = ", ".join(map(repr, data)) if isinstance(data, dict) else type(data).__name__
        raise InvalidInputError(
            f"{path}: not a COCO instances file: it needs the lists 'images', 'annotations' and 'categories'; got {found}"
        )
    return data


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _images(path: Path, entries: list) -> dict[int, dict]:
    found: dict[int, dict] = {}
    for number, entry in enumerate(entries):
        ok = isinstance(entry, dict) and _whole(entry.get("id")) and isinstance(entry.get("file_name"), str) and entry["file_name"]
        if not ok or not all(_whole(entry.get(side)) and entry[side] > 0 for side in ("width", "height")):
            raise InvalidInputError(
                f"{path}: images[{number}] needs an integer id, a file_name and positive integer width and height; "
                f"got {str(entry)[:120]}"
            )
        if entry["id"] in found:
            raise InvalidInputError(f"{path}: image id {entry['id']} appears twice ({found[entry['id']]['file_name']}, {entry['file_name']}); make ids unique")
        found[entry["id"]] = entry
    return found


def _categories(path: Path, entries: list) -> dict[int, str]:
    found: dict[int, str] = {}
    for number, entry in enumerate(entries):
        if not (isinstance(entry, dict) and _whole(entry.get("id")) and isinstance(entry.get("name"), str) and entry["name"].strip()):
            raise InvalidInputError(f"{path}: categories[{number}] needs an integer id and a name; got {str(entry)[:120]}")
        if entry["id"] in found:
            raise InvalidInputError(f"{path}: category id {entry['id']} appears twice ({found[entry['id']]!r}, {entry['name']!r}); make ids unique")
        if "/" in entry["name"]:
            raise InvalidInputError(f"{path}: category {entry['id']} {entry['name']!r} holds a '/', which class names cannot; rename it")
        found[entry["id"]] = entry["name"].strip()
    return found


def _chosen(path: Path, classes: Iterable[str], categories: dict[int, str]) -> set[str]:
    chosen = {name.strip() for name in classes if name.strip()}
    unknown = sorted(chosen - set(categories.values()))
    if unknown:
        raise InvalidInputError(
            f"{path}: no category named {', '.join(map(repr, unknown))}; its categories are {', '.join(sorted(set(categories.values())))}"
        )
    return chosen


def _instances(
    path: Path, entries: list, images: dict[int, dict], categories: dict[int, str], chosen: set[str] | None
) -> tuple[list[_Candidate], list[tuple[int, str, str]]]:
    """The annotations that may be imported, every entry checked and nothing rasterised (the image
    files' sizes are not known yet); and the others as ``(number, reason, entry)``."""
    instances, skips, seen = [], [], set()
    for number, entry in enumerate(entries):
        if not (isinstance(entry, dict) and _whole(entry.get("id"))):
            raise InvalidInputError(f"{path}: annotations[{number}] needs an integer id; got {str(entry)[:120]}")
        where = f"{path}: annotation {entry['id']}"
        if entry["id"] in seen:
            raise InvalidInputError(f"{where} appears twice; make annotation ids unique")
        seen.add(entry["id"])
        image = images.get(entry.get("image_id"))
        if image is None:
            raise InvalidInputError(f"{where}: image_id {entry.get('image_id')!r} is not in the file's images; fix the id or remove the annotation")
        category = categories.get(entry.get("category_id"))
        if category is None:
            raise InvalidInputError(f"{where}: category_id {entry.get('category_id')!r} is not in the file's categories; fix the id or remove the annotation")
        segmentation = _segmentation(where, entry.get("segmentation"), image["height"], image["width"])
        if entry.get("iscrowd") not in (None, 0, 1, False, True):
            raise InvalidInputError(f"{where}: iscrowd must be 0 or 1; got {entry['iscrowd']!r}")
        reason = (
            CROWD if entry.get("iscrowd")
            else OTHER_CATEGORY if chosen is not None and category not in chosen
            else NO_MASK if segmentation is None
            else None
        )  # fmt: skip
        if reason is not None or segmentation is None:
            skips.append((number, reason or NO_MASK, _entry(entry["id"], image)))
            continue
        instances.append(_Candidate(number, entry["id"], image, category, segmentation))
    return instances, skips


def _real_sizes(annotations: Path, candidates: list[_Candidate], files: dict[int, Path], folder: Path, shown: Path) -> dict[int, tuple[int, int]]:
    """``{image id: (height, width)}`` from each needed image file's header (nothing decoded), within
    the pixel limit and equal to its entry's declared size: masks are made at the files' sizes, never
    at the JSON's alone."""
    first: dict[int, _Candidate] = {}
    for candidate in candidates:
        first.setdefault(candidate.image["id"], candidate)
    sizes = {}
    for image_id, instance in first.items():
        path, image = files[image_id], instance.image
        entry = f"{annotations}: annotation {instance.id}"
        try:
            width, height = read_image_size(path)
        except InvalidInputError as err:
            raise InvalidInputError(f"{entry}: {err}") from err
        if (width, height) != (image["width"], image["height"]):
            raise InvalidInputError(
                f"{entry}: image {shown / path.relative_to(folder)} is {width}x{height} pixels but the JSON declares "
                f"{image['width']}x{image['height']} for image {image_id}; export the annotations again for these image files"
            )
        sizes[image_id] = (height, width)
    return sizes


def _measured(annotations: Path, candidates: list[_Candidate], sizes: dict[int, tuple[int, int]], min_area: float, skips: list[tuple[int, str, str]]) -> list[_Instance]:
    """The candidates as instances, their masks made at their image files' ``sizes`` (:func:`_real_sizes`);
    those below ``min_area`` added to ``skips``."""
    kept = []
    for candidate in candidates:
        height, width = sizes[candidate.image["id"]]
        rle = _rle(f"{annotations}: annotation {candidate.id}", candidate.segmentation, height, width)
        area = float(coco_mask.area(rle)) / (height * width)
        instance = _Instance(candidate.id, candidate.image, candidate.category, rle, area)
        if area < min_area:
            skips.append((candidate.number, TOO_SMALL, instance.entry))
            continue
        kept.append(instance)
    return kept


def _largest(instances: list[_Instance], result: ImportResult) -> list[_Instance]:
    """The largest instance of each image (the lowest annotation id on a tie); the others skipped."""
    best: dict[int, _Instance] = {}
    for instance in instances:
        current = best.get(instance.image["id"])
        if current is None or (instance.area, -instance.id) > (current.area, -current.id):
            best[instance.image["id"]] = instance
    kept = {id(instance) for instance in best.values()}
    for instance in instances:
        if id(instance) not in kept:
            result.skipped.setdefault(NOT_LARGEST, []).append(instance.entry)
    return [instance for instance in instances if id(instance) in kept]


# -- masks -------------------------------------------------------------------------------------
def _segmentation(where: str, segmentation, height: int, width: int) -> list | dict | None:
    """A segmentation checked against the image's declared size, nothing rasterised: polygons as
    lists of floats, or an RLE ``{"size", "counts"}`` (a list of runs, or compressed bytes); None for
    none (a box only)."""
    if segmentation is None or segmentation == []:
        return None
    if isinstance(segmentation, list):
        return [_polygon(where, number, polygon, height, width) for number, polygon in enumerate(segmentation)]
    if not isinstance(segmentation, dict) or not {"size", "counts"} <= set(segmentation):
        raise InvalidInputError(
            f"{where}: segmentation must be a list of polygons [[x1, y1, x2, y2, ...]] or an RLE "
            f'{{"size": [height, width], "counts": ...}}; got {str(segmentation)[:80]}'
        )
    if segmentation["size"] != [height, width]:
        raise InvalidInputError(f"{where}: RLE size {segmentation['size']!r} is not its image's [height, width] = [{height}, {width}]; the mask lies outside the image")
    counts = segmentation["counts"]
    runs = _string_counts(counts) if isinstance(counts, str) else counts if isinstance(counts, list) and all(map(_whole, counts)) else None
    if runs is None or any(run < 0 for run in runs):
        raise InvalidInputError(f"{where}: RLE counts must be a COCO-compressed string or a list of non-negative integers; got {str(counts)[:80]}")
    if sum(runs) != height * width:
        raise InvalidInputError(
            f"{where}: RLE counts cover {sum(runs)} pixels but the image has {height}x{width} = {height * width}; "
            "the mask does not match its image"
        )
    if isinstance(counts, list):
        return {"size": [height, width], "counts": counts}
    return {"size": [height, width], "counts": counts.encode("ascii")}


def _rle(where: str, segmentation: list | dict, height: int, width: int) -> dict:
    """One pycocotools RLE of a checked segmentation (:func:`_segmentation`) at its image file's size
    (read from the header, and equal to the declared size the segmentation was checked against)."""
    if isinstance(segmentation, list):
        return coco_mask.merge(coco_mask.frPyObjects(segmentation, height, width))
    if segmentation["size"] != [height, width]:  # never: checked against the declared size, found equal to the file's
        raise InvalidInputError(f"{where}: RLE size {segmentation['size']!r} is not its image file's [height, width] = [{height}, {width}]")
    if isinstance(segmentation["counts"], list):  # uncompressed (crowd regions): pycocotools compresses it
        return coco_mask.frPyObjects(segmentation, height, width)
    return segmentation


def _polygon(where: str, number: int, polygon, height: int, width: int) -> list[float]:
    if not (isinstance(polygon, list) and len(polygon) >= 6 and len(polygon) % 2 == 0):
        raise InvalidInputError(f"{where}: polygon {number} must be a list [x1, y1, x2, y2, ...] of at least 3 points; got {str(polygon)[:80]}")
    if not all(isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v) for v in polygon):
        raise InvalidInputError(f"{where}: polygon {number} holds a value that is not a finite number; got {str(polygon)[:80]}")
    xs, ys = polygon[0::2], polygon[1::2]
    low, high_x, high_y = -EDGE_TOLERANCE, width + EDGE_TOLERANCE, height + EDGE_TOLERANCE
    if min(xs) < low or min(ys) < low or max(xs) > high_x or max(ys) > high_y:
        raise InvalidInputError(
            f"{where}: polygon {number} reaches outside its {width}x{height} image "
            f"(x {min(xs):g}..{max(xs):g}, y {min(ys):g}..{max(ys):g}); fix the annotation"
        )
    return [float(v) for v in polygon]


def _bitmap(rle: dict, height: int, width: int) -> np.ndarray:
    """The mask of a checked pycocotools RLE (runs of 0s and 1s down the columns, 0s first).

    Expanded here, not by ``pycocotools.mask.decode``: the runs are checked already, and its decode
    warns on NumPy 2 at every call.

    Returns
    -------
    mask : ndarray of shape (height, width), bool
    """
    runs = _string_counts(rle["counts"].decode("ascii"))
    return np.ascontiguousarray(np.repeat(np.arange(len(runs)) % 2 == 1, runs).reshape(width, height).T)


def _string_counts(text: str) -> list[int] | None:
    """The run lengths of a COCO-compressed RLE string (pycocotools' ``rleFrString``), None if malformed.

    Checked here because pycocotools decodes counts that do not add up to the image without a word.
    """
    if not text.isascii():
        return None
    data, runs, position = text.encode("ascii"), [], 0
    while position < len(data):
        value, shift = 0, 0
        while True:
            if position >= len(data) or not 48 <= data[position] < 112:
                return None
            char = data[position] - 48
            value |= (char & 0x1F) << shift
            position, shift = position + 1, shift + 5
            if not char & 0x20:
                if char & 0x10:
                    value |= -1 << shift
                break
        runs.append(value + (runs[-2] if len(runs) > 2 else 0))
    return runs


# -- image files -------------------------------------------------------------------------------
def _find_images(annotations: Path, images: Path, folder: Path, instances: list[_Candidate]) -> dict[int, Path]:
    """The file of each image the instances need; a missing or ambiguous one is an error."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not is_hidden(p, folder))
    by_path = {p.relative_to(folder).as_posix(): p for p in files}
    by_tail: dict[str, list[Path]] = {}  # "c.jpg", "b/c.jpg", "a/b/c.jpg" -> a/b/c.jpg: found below enclosing folders
    for relative, file in by_path.items():
        parts = relative.split("/")
        for first in range(len(parts)):
            by_tail.setdefault("/".join(parts[first:]), []).append(file)
    found: dict[int, Path] = {}
    for instance in instances:
        image = instance.image
        if image["id"] in found:
            continue
        written = image["file_name"].replace("\\", "/").removeprefix("./")
        matches = [by_path[written]] if written in by_path else by_tail.get(written) or by_tail.get(Path(written).name, [])
        if len(matches) != 1:
            problem = "matches several files" if matches else "is not"
            raise InvalidInputError(
                f"{annotations}: annotation {instance.id}: image {image['id']} {image['file_name']!r} {problem} in {images}; "
                + ("give each image a unique path" if matches else "add the image there or point at the folder that holds the images")
            )
        found[image["id"]] = matches[0]
    return found
