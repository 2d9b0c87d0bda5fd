"""Pascal VOC instance masks as targets: ``JPEGImages/<id>.jpg`` with two palette PNGs per image,
``SegmentationObject/<id>.png`` (index k > 0 is instance k, 0 background, 255 the void border) and
``SegmentationClass/<id>.png`` (the class index of each pixel, 255 void), in a folder or a zip (the
VOC2012 download's ``VOCdevkit/VOC2012`` is found below its enclosing folders).

An instance's class is the most common class index under its pixels, named by the 20 VOC classes
(index 1 aeroplane ... 20 tvmonitor), or by a ``labelmap.txt`` beside the folders (CVAT and
Datumaro write one: ``name:colour:parts:actions`` a line, background first; a plain list of names,
background first, reads the same). ``ImageSets/Segmentation/<split>.txt`` picks the images when a
split is given; else every ``SegmentationObject`` PNG is read.

The choice of instances is the COCO import's (:mod:`analytics.data.coco`), through the one
instance core (:mod:`analytics.data.instances`): every instance is checked before any photo is decoded, and a bad file stops the import with one line naming it (a
mask with no photo or no class mask, sizes that differ, a PNG that is not a palette PNG, a class
index without a name): the caller stores nothing. Instances left out by choice are counted in
``ImportResult.skipped`` under the COCO reasons: classes not chosen, below ``min_area`` of the image
and, unless ``all_instances``, every instance but the largest of its image. The void border is not
part of any instance. Each chosen instance becomes a :class:`~analytics.data.datasets.Target`
through the same checks and square fit as a ``folder`` import (:func:`analytics.data.images.fit_target`).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from analytics._choices import DEFAULT_MIN_AREA, VOC
from analytics._validation import ParameterNames, check_fraction, read_at_most
from analytics.exceptions import InvalidInputError

from .archives import extracted, is_hidden, layout_root
from .datasets import DEFAULT_IMAGE_SIZE, Target
from .images import _header, image_bytes, is_image_file, max_image_pixels, read_image, read_image_size
from .instances import Instance, Skip, choose, chosen_classes, instance_limit, instance_targets, skip_reason
from .results import ImportResult

#: The classes of palette indices 1..20 in VOC's ``SegmentationClass`` PNGs (0 is background).
VOC_CLASSES = (
    "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor",
)  # fmt: skip
BACKGROUND = 0
VOID = 255  # the border VOC draws around every object: neither object nor background
IMAGES, OBJECTS, CLASS_MASKS = "JPEGImages", "SegmentationObject", "SegmentationClass"
SPLITS = "ImageSets/Segmentation"
LABELMAP = "labelmap.txt"
SPLIT_NAME = re.compile(r"[A-Za-z0-9_.-]+")  # with no '..' (check_split): a name, never a path


@dataclass(frozen=True)
class _Files:
    """Where one image's files are: the actual paths, and the paths shown in messages and origins."""

    image_id: str
    photo: Path
    objects: Path
    classes: Path
    shown_photo: Path
    shown_objects: Path
    shown_classes: Path


def read_voc(
    path: str | os.PathLike,
    *,
    size: int = DEFAULT_IMAGE_SIZE,
    split: str | None = None,
    classes: Iterable[str] | None = None,
    min_area: float = DEFAULT_MIN_AREA,
    all_instances: bool = False,
    class_names: Sequence[str] | None = None,
    max_instances: int | None = None,
) -> ImportResult:
    """Read Pascal VOC instance masks as targets: one target per chosen instance (holding them all:
    stream a large import with :func:`stream_voc`).

    Parameters
    ----------
    path : path-like
        Folder or .zip holding ``JPEGImages/``, ``SegmentationObject/`` and ``SegmentationClass/``
        (at the top or below enclosing folders: :func:`analytics.data.archives.layout_root`).
    size : int, default=256
        Side of the stored square images.
    split : str or None
        Import the ids listed in ``ImageSets/Segmentation/<split>.txt`` (``train``, ``val``); None
        imports every ``SegmentationObject`` PNG.
    classes : iterable of str or None
        Class names to import (instances of others are skipped); None imports every class.
    min_area : float, default=0.01
        Instances covering less than this share of their image are skipped; below 0.2 % it also
        lowers the floor of every stored target's mask (:func:`analytics.data.read_coco`).
    all_instances : bool, default=False
        One target per instance; by default only the largest chosen instance of each image.
    class_names : sequence of str or None
        The names of class indices 1, 2, ...; None reads the folder's ``labelmap.txt`` if it has one,
        else :data:`VOC_CLASSES`.
    max_instances : int or None
        Refuse the import, before any photo is decoded, when it would make more targets than this;
        None: :func:`analytics.data.instances.instance_limit` (as for COCO).

    Returns
    -------
    result : ImportResult
        ``accepted``: :class:`Target` records with id ``<class>/<image id>-<instance index>``, an
        image of shape (size, size, 3), uint8 and a mask of shape (size, size), bool; ``rejected``:
        instances whose mask the fit refuses (below the floor, or nearly the whole image);
        ``skipped``: instances by reason.

    Raises
    ------
    InvalidInputError
        A bad file (one line naming it and the fix), ``classes`` naming no class, ``min_area``
        outside [0, 1], or more targets to make than ``max_instances``.
    """
    result = ImportResult()
    reading = stream_voc(path, result, size=size, split=split, classes=classes, min_area=min_area, all_instances=all_instances, class_names=class_names, max_instances=max_instances)
    with reading as targets:
        result.accepted = list(targets)
    return result


@contextmanager
def stream_voc(
    path: str | os.PathLike,
    result: ImportResult,
    *,
    size: int = DEFAULT_IMAGE_SIZE,
    split: str | None = None,
    classes: Iterable[str] | None = None,
    min_area: float = DEFAULT_MIN_AREA,
    all_instances: bool = False,
    class_names: Sequence[str] | None = None,
    max_instances: int | None = None,
    names: ParameterNames | None = None,
) -> Iterator[Iterator[Target]]:
    """:func:`read_voc` one photo at a time: on entering the block every mask is checked, the
    instances chosen (``result.skipped`` filled) and counted against the limit, no photo decoded; the
    block gets an iterator of :class:`Target` that decodes a photo only when advanced, rejections
    added to ``result`` as they are met (``result.accepted`` is left alone). Parameters and errors as
    :func:`read_voc`; ``names`` says how the limit's messages name ``max_instances``
    (:class:`~analytics._validation.ParameterNames`)."""
    min_area = check_fraction(min_area, "min_area", low_open=False)
    limit = instance_limit(max_instances, names=names)
    if split is not None:
        check_split(split)
    with extracted(Path(path)) as (folder, shown):
        root = layout_root(folder, VOC)
        shown_root = shown / root.relative_to(folder)
        by_index = _class_names(root, shown_root, class_names)
        chosen = chosen_classes(shown_root, classes, by_index.values(), noun="class")
        files = _files(root, shown_root, split)
        instances, skips = _candidates(files, by_index, chosen)
        picked = choose(shown_root, instances, skips, result, min_area=min_area, all_instances=all_instances, limit=limit, names=names)
        by_id = {entry.image_id: entry for entry in files}
        yield instance_targets(picked, lambda instance: _open(by_id[instance.image]), result, size=size, min_area=min_area)


# -- names and files ---------------------------------------------------------------------------
def check_split(split: object) -> str:
    """``split`` if it is a split's name: only letters, digits, ``_``, ``.`` and ``-`` (no path
    separator, no ``..``), so ``ImageSets/Segmentation/<split>.txt`` is a file of that folder and
    never a path that leads elsewhere on the server.

    Raises
    ------
    InvalidInputError
        Anything else, before any file is opened: one line naming the value and the rule.
    """
    if not isinstance(split, str) or not SPLIT_NAME.fullmatch(split) or ".." in split:
        raise InvalidInputError(
            f"split {split!r} refused: a split is a name such as train or val (letters, digits, '_', '.' and '-'; "
            f"no path separators, no '..'), read from {SPLITS}/<split>.txt in the VOC folder; give the name alone"
        )
    return split


def _class_names(root: Path, shown_root: Path, given: Sequence[str] | None) -> dict[int, str]:
    """Class index -> name: ``given`` (indices 1, 2, ...), else the labelmap, else the VOC classes."""
    source = "class_names"
    if given is None and (root / LABELMAP).is_file():
        given, source = _labelmap(root / LABELMAP, shown_root / LABELMAP), str(shown_root / LABELMAP)
    names = {index: name.strip() for index, name in enumerate(VOC_CLASSES if given is None else given, start=1)}
    if len(names) >= VOID:
        raise InvalidInputError(f"{source}: {len(names)} classes do not fit in indices 1..{VOID - 1} ({VOID} is the void border); keep at most {VOID - 1}")
    for index, name in names.items():
        if not name or "/" in name:
            raise InvalidInputError(f"{source}: class {index} {name!r} is empty or holds a '/', which class names cannot; rename it")
    repeated = sorted({name for name in names.values() if list(names.values()).count(name) > 1})
    if repeated:
        raise InvalidInputError(f"{source}: class names {', '.join(map(repr, repeated))} appear twice; give each index its own name")
    return names


def _labelmap(path: Path, shown: Path) -> list[str]:
    """The class names of a CVAT/Datumaro ``labelmap.txt`` after its first line, the background."""
    try:
        lines = read_at_most(path, "label map", "write one class name a line, background first", shown=shown).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidInputError(f"{shown}: not a readable text file ({err}); write one class name a line, background first") from err
    labels = [line.split(":", 1)[0].strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not labels or labels[0].lower() != "background":
        first = repr(labels[0]) if labels else "nothing"
        raise InvalidInputError(f"{shown}: the first label must be background (index {BACKGROUND}), as CVAT and Datumaro write it; got {first}; add a line 'background' at the top")
    return labels[1:]


def _files(root: Path, shown_root: Path, split: str | None) -> list[_Files]:
    """Each chosen image's three files, every one checked to exist before anything is decoded."""
    masks = {p.stem: p for p in sorted((root / OBJECTS).iterdir()) if p.suffix.lower() == ".png" and not is_hidden(p, root)}
    photos: dict[str, list[Path]] = {}
    for photo in sorted((root / IMAGES).iterdir()):
        if is_image_file(photo) and not is_hidden(photo, root):
            photos.setdefault(photo.stem, []).append(photo)
    ids = list(masks) if split is None else _split_ids(root, shown_root, split, masks)
    found = []
    for image_id in ids:
        objects = masks[image_id]
        shown_objects = shown_root / OBJECTS / objects.name
        matches = photos.get(image_id, [])
        if len(matches) != 1:
            named = f"several photos named {image_id} ({', '.join(p.name for p in matches)})" if matches else f"no photo {image_id}.jpg"
            raise InvalidInputError(f"{shown_objects}: {IMAGES}/ holds {named}; give each mask exactly one photo of its name")
        class_mask = root / CLASS_MASKS / objects.name
        if not class_mask.is_file():
            raise InvalidInputError(f"{shown_objects}: no {CLASS_MASKS}/{objects.name} beside it, where the class of each instance is read; add it")
        shown = shown_root / IMAGES / matches[0].name
        found.append(_Files(image_id, matches[0], objects, class_mask, shown, shown_objects, shown_root / CLASS_MASKS / objects.name))
    return found


def _split_ids(root: Path, shown_root: Path, split: str, masks: dict[str, Path]) -> list[str]:
    """The ids of ``ImageSets/Segmentation/<split>.txt`` (the first word of each line), each with a mask."""
    folder = root / SPLITS
    path, shown = folder / f"{check_split(split)}.txt", shown_root / SPLITS / f"{split}.txt"  # a name: a file of this folder
    if path.exists() and not path.resolve().is_relative_to(root.resolve()):
        raise InvalidInputError(f"{shown}: a symlink leading outside the VOC folder; copy the split file itself into {SPLITS}/")
    if not path.is_file():
        offered = sorted(p.stem for p in folder.glob("*.txt")) if folder.is_dir() else []
        raise InvalidInputError(f"{shown}: split {split!r} not found; splits there: {', '.join(offered) or 'none'}")
    try:
        lines = read_at_most(path, "split file", "list one image id a line, or import without a split", shown=shown).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidInputError(f"{shown}: not a readable text file ({err}); list one image id a line") from err
    ids = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        image_id = line.split()[0]
        if image_id not in masks:
            raise InvalidInputError(f"{shown}: line {number}: image {image_id!r} has no {OBJECTS}/{image_id}.png; add the mask or drop the line")
        ids.append(image_id)
    if not ids:
        raise InvalidInputError(f"{shown}: lists no image ids; write one id a line, or import without a split")
    return list(dict.fromkeys(ids))  # an id listed twice is one image


# -- masks -------------------------------------------------------------------------------------
def _read_indices(path: Path, shown: Path) -> np.ndarray:
    """The palette indices of a palette PNG, not its colours (VOC's masks store an index per pixel).

    Returns
    -------
    indices : ndarray of shape (height, width), uint8
    """
    limit = max_image_pixels()  # also Pillow's own limit, so opening it below warns of nothing
    _, pixels, declared, note = _header(path)  # from the file: nothing past the header is read yet
    if pixels is None:
        raise InvalidInputError(f"{shown}: not a readable PNG{f' ({note})' if note else ''}; export the masks again")
    if pixels > limit:
        raise InvalidInputError(f"{shown}: mask is {declared}, past the limit of {limit} pixels; shrink it or raise BACKDROP_MAX_IMAGE_PIXELS")
    data = image_bytes(path, "not a readable PNG{detail}; export the masks again")  # at most what its pixels take
    with Image.open(io.BytesIO(data.tobytes())) as image:  # the header read above: opening it succeeds
        if image.format != "PNG" or image.mode != "P":
            raise InvalidInputError(
                f"{shown}: a {image.format} image in mode {image.mode}, not a palette PNG; VOC masks hold an index per pixel: export them as indexed (palette) PNGs, not as colours or grey levels"
            )
        try:
            return np.asarray(image, dtype=np.uint8)
        except (OSError, SyntaxError, ValueError) as err:  # a header that reads but pixel data that does not
            raise InvalidInputError(f"{shown}: not a readable PNG ({err}); export the masks again") from err


def _photo_size(files: _Files) -> tuple[int, int]:
    """(height, width) of the photo, from its header alone."""
    width, height = read_image_size(files.photo)  # from its header alone; refused as read_image refuses it (unreadable, past the pixel limit)
    return height, width


def _instances(files: _Files, names: dict[int, str]) -> list[tuple[int, str, float]]:
    """Every instance of one image as ``(index, class, share of the image)``; its masks and photo size checked."""
    objects = _read_indices(files.objects, files.shown_objects)
    classes = _read_indices(files.classes, files.shown_classes)
    if classes.shape != objects.shape:
        raise InvalidInputError(
            f"{files.shown_classes}: is {classes.shape[1]}x{classes.shape[0]} but {OBJECTS}/{files.objects.name} is {objects.shape[1]}x{objects.shape[0]}; export both masks at the image's size"
        )
    height, width = _photo_size(files)
    if (height, width) != objects.shape:
        raise InvalidInputError(
            f"{files.shown_objects}: mask is {objects.shape[1]}x{objects.shape[0]} but its photo {files.shown_photo.name} is {width}x{height}; export the masks at the image's size"
        )
    found = []
    for index in np.unique(objects):
        if index in (BACKGROUND, VOID):
            continue
        pixels = objects == index
        votes = np.bincount(classes[pixels], minlength=256)
        votes[[BACKGROUND, VOID]] = 0  # an instance's class is what it lies on, never background or the border
        if not votes.any():
            raise InvalidInputError(f"{files.shown_classes}: instance {index} of {OBJECTS}/{files.objects.name} lies on background or void only; give its pixels their class")
        class_index = int(votes.argmax())  # the most common class; a tie goes to the lower index
        if class_index not in names:
            raise InvalidInputError(
                f"{files.shown_classes}: class index {class_index} under instance {index} has no name (known: 1..{len(names)}); add a {LABELMAP} naming every class, background first"
            )
        found.append((int(index), names[class_index], float(pixels.mean())))
    return found


def _candidates(files: list[_Files], names: dict[int, str], chosen: set[str] | None) -> tuple[list[Instance], list[Skip]]:
    """Every instance of ``files`` (every mask checked before any photo is decoded), those of classes
    not ``chosen`` as skips."""
    instances: list[Instance] = []
    skips: list[Skip] = []
    found = ((entry, *instance) for entry in files for instance in _instances(entry, names))
    for order, (entry, index, category, area) in enumerate(found):
        instance = Instance(entry.image_id, index, f"instance {index}", entry.image_id, entry.image_id, category, area, order)
        reason = skip_reason(category, chosen)
        if reason is None:
            instances.append(instance)
        else:
            skips.append((order, reason, instance.entry))
    return instances, skips


def _open(files: _Files) -> tuple[np.ndarray, Callable[[Instance], np.ndarray], Path]:
    """The decoded photo of one image, checked against its masks' size; each instance's mask is its
    index in ``SegmentationObject`` (:func:`~analytics.data.instances.instance_targets`)."""
    try:  # the file was found: a decoding failure is a bad input like a missing file
        photo = read_image(files.photo)
    except InvalidInputError as err:
        raise InvalidInputError(f"{files.shown_photo}: {str(err).removeprefix(f'{files.photo}: ')}") from err
    objects = _read_indices(files.objects, files.shown_objects)
    if photo.shape[:2] != objects.shape:  # its header said otherwise (checked before): a file that lies
        raise InvalidInputError(
            f"{files.shown_photo}: decodes to {photo.shape[1]}x{photo.shape[0]} though its header says {objects.shape[1]}x{objects.shape[0]}, its masks' size; save the photo again"
        )
    return photo, lambda instance: objects == instance.number, files.shown_photo
