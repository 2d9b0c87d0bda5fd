"""COCO instance segmentation as targets: the ``instances.json`` that CVAT, Label Studio, FiftyOne and
Roboflow export (polygons and RLE, compressed or not, in one file) over a folder (or zip) of images.

A JSON file larger than :func:`max_coco_json_bytes` (:data:`MAX_COCO_JSON_BYTES`, 128 MiB;
``$BACKDROP_MAX_COCO_JSON_BYTES``) is refused in one line before it is parsed: parsed, a COCO file
takes about 7 times its size in memory (polygons as Python floats; measured 815 MiB for 112 MiB).
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

RLE counts are checked before pycocotools sees them (a list of non-negative whole numbers, or a
COCO-compressed string read into one, adding up to the image's height x width: its C decoder writes
as many pixels as the runs say, past its buffer when they add up to more) and handed to it as the
runs checked (``frPyObjects``), never as the string; masks are made and measured by pycocotools
(``merge``, ``area``, ``decode``), its NumPy 2 ``DeprecationWarning`` caught at each call.

Entries left out by choice are counted in ``ImportResult.skipped`` by reason (the instance core,
:mod:`analytics.data.instances`, shared with Pascal VOC): crowd regions (``iscrowd``), boxes without
a mask, categories not chosen, instances below ``min_area`` of their image and, unless
``all_instances``, every instance but the largest of its image. Each chosen instance becomes a
:class:`~analytics.data.datasets.Target` of class = its category name, through
the same checks and square fit as a ``folder`` import (:func:`analytics.data.images.fit_target`),
whose floor of 0.2 % of the image (:data:`~analytics.data.images.MIN_MASK_SHARE`) is lowered to
``min_area`` where that is smaller.

An import makes at most :func:`instance_limit` targets (:data:`MAX_INSTANCES`, 10,000; the
``max_instances`` argument, ``--max-instances``, ``$BACKDROP_MAX_INSTANCES``): more are refused in
one line, before any image or mask is decoded (:func:`check_instance_count`). The chosen instances
are decoded one at a time (:func:`stream_coco`), so an import into
:func:`~analytics.data.store_targets` holds a few targets in memory, not thousands (0.25 MB each).
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Real
from pathlib import Path

import numpy as np
from pycocotools import mask as coco_mask

from analytics._choices import DEFAULT_MIN_AREA
from analytics._validation import ParameterNames, check_fraction, positive_limit, read_json
from analytics.exceptions import InvalidInputError

from .archives import extracted, is_hidden
from .datasets import DEFAULT_IMAGE_SIZE, Target
from .images import read_image, read_image_size
from .instances import (
    NO_MASK,
    Instance,
    OpenImage,
    Skip,
    choose,
    chosen_classes,
    instance_limit,
    instance_targets,
    skip_reason,
)
from .results import ImportResult

#: Polygon points may lie this many pixels outside the image (exporters round to the image's edge).
EDGE_TOLERANCE = 0.5
#: The largest COCO JSON file read (128 MiB): parsed, it takes about 7 times that in memory. COCO
#: val2017's instances file is 25 MB; train2017's (448 MB) is refused unless the limit is raised.
MAX_COCO_JSON_BYTES = 128 << 20
MAX_COCO_JSON_BYTES_ENV_VAR = "BACKDROP_MAX_COCO_JSON_BYTES"


@dataclass(frozen=True)
class _Candidate:
    """An annotation that may be imported, checked against its image's declared size, nothing rasterised."""

    number: int  # its place in the file's annotations
    id: int
    image: dict  # the image entry: id, file_name, width, height
    category: str
    segmentation: list | dict  # polygons of floats, or an RLE {"size", "counts"} (a list of runs, or bytes)


def _entry(annotation_id: int, image: dict) -> str:
    """How a skipped annotation is listed: ``annotation 7 (image 3, street.jpg)``."""
    return f"annotation {annotation_id} ({_place(image)})"


def _place(image: dict) -> str:
    return f"image {image['id']}, {image['file_name']}"


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
        [0, 1], more targets to make than ``max_instances`` (:func:`check_instance_count`), or a JSON
        file larger than :func:`max_coco_json_bytes`.
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
    names: ParameterNames | None = None,
) -> Iterator[Iterator[Target]]:
    """:func:`read_coco` one target at a time: on entering the block the whole file is checked, the
    instances chosen (``result.skipped`` filled) and counted against the limit, nothing decoded; the
    block gets an iterator of :class:`Target` that decodes an instance only when advanced (an image
    once for consecutive instances of it), rejections added to ``result`` as they are met
    (``result.accepted`` is left alone). Into :func:`~analytics.data.store_targets`, memory holds a few
    targets whatever the count. Parameters and errors as :func:`read_coco`; ``names`` says how the
    limit's messages name ``max_instances`` (:class:`~analytics._validation.ParameterNames`)."""
    annotations = Path(annotations)
    min_area = check_fraction(min_area, "min_area", low_open=False)
    limit = instance_limit(max_instances, names=names)
    data = _load(annotations)
    image_entries = _images(annotations, data["images"])
    categories = _categories(annotations, data["categories"])
    chosen = chosen_classes(annotations, classes, categories.values())
    candidates, skips = _instances(annotations, data["annotations"], image_entries, categories, chosen)
    with extracted(Path(images)) as (folder, shown):
        files = _find_images(annotations, Path(images), folder, candidates)
        sizes = _real_sizes(annotations, candidates, files, folder, shown)  # before anything is rasterised or decoded
        instances = _measured(annotations, candidates, sizes)
        picked = choose(annotations, instances, skips, result, min_area=min_area, all_instances=all_instances, limit=limit, names=names)
        yield instance_targets(picked, _opener(annotations, image_entries, files, folder, shown), result, size=size, min_area=min_area)


def max_coco_json_bytes() -> int:
    """The largest COCO JSON file an import reads: ``$BACKDROP_MAX_COCO_JSON_BYTES``, else :data:`MAX_COCO_JSON_BYTES`.

    Raises
    ------
    InvalidInputError
        The environment variable is not a positive whole number.
    """
    return positive_limit(MAX_COCO_JSON_BYTES_ENV_VAR, MAX_COCO_JSON_BYTES, "bytes")


def _opener(annotations: Path, entries: dict[int, dict], files: dict[int, Path], folder: Path, shown: Path) -> OpenImage:
    """How :func:`~analytics.data.instances.instance_targets` opens an instance's image: decoded and
    checked, its instances' masks decoded from their RLE by pycocotools."""

    def open_image(instance: Instance) -> tuple[np.ndarray, Callable[[Instance], np.ndarray], Path]:
        path = files[instance.image]
        shown_path = shown / path.relative_to(folder)
        image = _image(annotations, instance, entries[instance.image], path, shown_path)
        return image, lambda each: _bitmap(each.mask, *image.shape[:2]), shown_path

    return open_image


def _image(annotations: Path, instance: Instance, entry: dict, path: Path, shown: Path) -> np.ndarray:
    """The decoded image of ``instance`` (its image ``entry``), checked to be the size its header gave.

    Returns
    -------
    image : ndarray of shape (height, width, 3), uint8
    """
    where = f"{annotations}: {instance.name}"
    try:  # the file was found: a decoding failure is a bad input like a missing file
        image = read_image(path)
    except InvalidInputError as err:
        raise InvalidInputError(f"{where}: {err}") from err
    width, height = entry["width"], entry["height"]
    if image.shape[:2] != (height, width):  # its header said otherwise (checked before): a file that lies
        raise InvalidInputError(f"{where}: image {shown} decodes to {image.shape[1]}x{image.shape[0]} though its header says {width}x{height} (image {entry['id']}); save the image again")
    return image


# -- the JSON ----------------------------------------------------------------------------------
def _load(path: Path) -> dict:
    limit = max_coco_json_bytes()
    fix = f"split it into files of fewer images (each imported on its own), or raise the limit: {MAX_COCO_JSON_BYTES_ENV_VAR}=<bytes> where Backdrop runs (the Data page: where the server starts)"
    data = read_json(path, "COCO JSON file", "export the annotations again as COCO", max_bytes=limit, too_large=fix)
    if not isinstance(data, dict) or not all(isinstance(data.get(key), list) for key in ("images", "annotations", "categories")):
        found = ", ".join(map(repr, data)) if isinstance(data, dict) else type(data).__name__
        raise InvalidInputError(f"{path}: not a COCO instances file: it needs the lists 'images', 'annotations' and 'categories'; got {found}")
    return data


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _images(path: Path, entries: list) -> dict[int, dict]:
    found: dict[int, dict] = {}
    for number, entry in enumerate(entries):
        ok = isinstance(entry, dict) and _whole(entry.get("id")) and isinstance(entry.get("file_name"), str) and entry["file_name"]
        if not ok or not all(_whole(entry.get(side)) and entry[side] > 0 for side in ("width", "height")):
            raise InvalidInputError(f"{path}: images[{number}] needs an integer id, a file_name and positive integer width and height; got {str(entry)[:120]}")
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


def _instances(path: Path, entries: list, images: dict[int, dict], categories: dict[int, str], chosen: set[str] | None) -> tuple[list[_Candidate], list[Skip]]:
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
        reason = skip_reason(category, chosen, crowd=bool(entry.get("iscrowd")), mask=segmentation is not None)
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


def _measured(annotations: Path, candidates: list[_Candidate], sizes: dict[int, tuple[int, int]]) -> list[Instance]:
    """The candidates as instances, their RLE made and measured by pycocotools at their image files'
    ``sizes`` (:func:`_real_sizes`)."""
    measured = []
    for candidate in candidates:
        height, width = sizes[candidate.image["id"]]
        rle = _rle(f"{annotations}: annotation {candidate.id}", candidate.segmentation, height, width)
        area = float(_quietly(coco_mask.area, rle)) / (height * width)
        stem = Path(candidate.image["file_name"].replace("\\", "/")).stem
        name = f"annotation {candidate.id}"
        measured.append(Instance(candidate.image["id"], candidate.id, name, _place(candidate.image), stem, candidate.category, area, candidate.number, rle))
    return measured


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
        raise InvalidInputError(f'{where}: segmentation must be a list of polygons [[x1, y1, x2, y2, ...]] or an RLE {{"size": [height, width], "counts": ...}}; got {str(segmentation)[:80]}')
    if segmentation["size"] != [height, width]:
        raise InvalidInputError(f"{where}: RLE size {segmentation['size']!r} is not its image's [height, width] = [{height}, {width}]; the mask lies outside the image")
    _runs(where, segmentation["counts"], height, width)
    return {"size": [height, width], "counts": segmentation["counts"]}


def _runs(where: str, counts, height: int, width: int) -> list[int]:
    """The run lengths of RLE ``counts`` (a list, or a COCO-compressed string), checked: whole
    numbers, none negative, adding up to ``height * width`` (pycocotools' decoder checks none of
    these, and writes as many pixels as the runs say)."""
    runs = _string_counts(counts) if isinstance(counts, str) else counts if isinstance(counts, list) and all(map(_whole, counts)) else None
    if runs is None or any(run < 0 for run in runs):
        raise InvalidInputError(f"{where}: RLE counts must be a COCO-compressed string or a list of non-negative integers; got {str(counts)[:80]}")
    if sum(runs) != height * width:
        raise InvalidInputError(f"{where}: RLE counts cover {sum(runs)} pixels but the image has {height}x{width} = {height * width}; the mask does not match its image")
    return runs


def _rle(where: str, segmentation: list | dict, height: int, width: int) -> dict:
    """One pycocotools RLE of a checked segmentation (:func:`_segmentation`) at its image file's size
    (read from the header, and equal to the declared size the segmentation was checked against). An
    RLE goes to pycocotools as the runs checked, never as the file's string: its decoder reads the
    runs it was given, whatever that string holds."""
    if isinstance(segmentation, list):
        return _quietly(coco_mask.merge, _quietly(coco_mask.frPyObjects, segmentation, height, width))
    if segmentation["size"] != [height, width]:  # never: checked against the declared size, found equal to the file's
        raise InvalidInputError(f"{where}: RLE size {segmentation['size']!r} is not its image file's [height, width] = [{height}, {width}]")
    runs = _runs(where, segmentation["counts"], height, width)
    return _quietly(coco_mask.frPyObjects, {"size": [height, width], "counts": runs}, height, width)


def _polygon(where: str, number: int, polygon, height: int, width: int) -> list[float]:
    if not (isinstance(polygon, list) and len(polygon) >= 6 and len(polygon) % 2 == 0):
        raise InvalidInputError(f"{where}: polygon {number} must be a list [x1, y1, x2, y2, ...] of at least 3 points; got {str(polygon)[:80]}")
    if not all(isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v) for v in polygon):
        raise InvalidInputError(f"{where}: polygon {number} holds a value that is not a finite number; got {str(polygon)[:80]}")
    xs, ys = polygon[0::2], polygon[1::2]
    low, high_x, high_y = -EDGE_TOLERANCE, width + EDGE_TOLERANCE, height + EDGE_TOLERANCE
    if min(xs) < low or min(ys) < low or max(xs) > high_x or max(ys) > high_y:
        raise InvalidInputError(f"{where}: polygon {number} reaches outside its {width}x{height} image (x {min(xs):g}..{max(xs):g}, y {min(ys):g}..{max(ys):g}); fix the annotation")
    return [float(v) for v in polygon]


def _bitmap(rle: dict, height: int, width: int) -> np.ndarray:
    """The mask of a pycocotools RLE made from checked runs (:func:`_rle`), decoded by pycocotools.

    Returns
    -------
    mask : ndarray of shape (height, width), bool
    """
    mask = _quietly(coco_mask.decode, rle)
    if mask.shape != (height, width):  # never: the RLE was made at this size
        raise InvalidInputError(f"an RLE of {mask.shape[1]}x{mask.shape[0]} pixels for a {width}x{height} image; export the annotations again")
    return np.ascontiguousarray(mask, dtype=bool)


def _quietly(function: Callable, *args):
    """``function(*args)`` of pycocotools with its warnings caught: on NumPy 2 its ``decode`` and
    ``area`` warn at every call (``__array__`` without a ``copy`` keyword), which says nothing of the file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return function(*args)


def _string_counts(text: str) -> list[int] | None:
    """The run lengths of a COCO-compressed RLE string (pycocotools' ``rleFrString``), None if malformed.

    Read here to check them before pycocotools sees them: its own reader takes any string and its
    decoder writes as many pixels as the runs say.
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
