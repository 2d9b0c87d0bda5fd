"""Target sets (images + foreground masks + labels) and background pools, and their workspace tables.

Readers turn a folder into :class:`Target` / :class:`Background` records plus a list of rejected
files with the reason, streamed one file at a time (:func:`stream_targets`, :func:`stream_backgrounds`)
into ``store_targets`` (all or nothing) and ``store_backgrounds`` (in batches) of
:mod:`analytics.data.batched_writes`. All images are fitted to
the workspace's square ``image_size`` (default 256 px) so that any target can be composited onto any background.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from analytics._choices import MAX_PROPOSALS
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.team import require_permission
from analytics.workspace import Workspace

from .archives import LAYOUTS, POOL, extracted, is_hidden, layout_root
from .images import (
    IMAGE_SUFFIXES,
    check_mask_share,
    fit_square,
    fit_target,
    is_image_file,
    read_image,
    read_image_rgba,
    read_mask,
    resize_square,
    square_crops,
)
from .label_spaces import ClassMapping, as_mapping, in9_imagenet_indices
from .masking import propose_mask
from .naming import crop_id
from .results import ImportResult

DEFAULT_IMAGE_SIZE = 256


@dataclass(frozen=True)
class Target:
    """One target: an image with its object mask and class.

    image : ndarray of shape (size, size, 3), uint8
    mask : ndarray of shape (size, size), bool (True on the object)
    """

    id: str
    class_name: str
    image: np.ndarray = field(repr=False)
    mask: np.ndarray = field(repr=False)
    origin: str
    package: str = ""
    licence: str = ""


@dataclass(frozen=True)
class Background:
    """One background scene.

    image : ndarray of shape (size, size, 3), uint8
    crop : (top, left, side) in pixels of the source photo, or None
    """

    id: str
    image: np.ndarray = field(repr=False)
    origin: str
    crop: tuple[int, int, int] | None = None
    package: str = ""
    licence: str = ""


# -- workspace settings ----------------------------------------------------------------------
def image_size(workspace: Workspace) -> int:
    """The workspace's square image side in pixels."""
    return int(workspace.get_meta("image_size", str(DEFAULT_IMAGE_SIZE)))


# -- readers ---------------------------------------------------------------------------------
def read_targets(
    path: str | os.PathLike,
    *,
    layout: str,
    size: int = DEFAULT_IMAGE_SIZE,
    home: np.ndarray | None = None,
    classes: Iterable[str] | None = None,
    propose_masks: bool = False,
) -> ImportResult:
    """Read a target set from a folder (or a .zip of one).

    Parameters
    ----------
    path : path-like
        Folder or zip file; the layout may sit inside enclosing folders
        (:func:`analytics.data.archives.layout_root`).
    layout : {'folder', 'bgchallenge', 'cutouts'}
        ``folder``: ``images/<class>/*`` with ``masks/<class>/<same stem>.png`` (0/255 or 0/1);
        ``bgchallenge``: ``original/val/<class>/*.JPEG`` with ``fg_mask/val/<class>/<stem>.npy``;
        ``cutouts``: ``<class>/*.png`` RGBA cut-outs whose alpha is the mask, pasted on ``home``.
    size : int, default=256
        Side of the stored square images.
    home : ndarray of shape (height, width, 3), uint8, or None
        The background cut-outs are pasted on (``cutouts`` only); None gives a neutral grey.
    classes : iterable of str or None
        Allowed class names; a file of another class is rejected. None allows any.
    propose_masks : bool, default=False
        A photo without a mask (no mask file; a cut-out with no transparency) goes to
        ``result.proposed`` with a GrabCut mask (:func:`analytics.data.masking.propose_mask`)
        instead of being rejected (at most :data:`~analytics._choices.MAX_PROPOSALS` an import: they
        wait for review in memory; later mask-less photos are rejected, saying so).

    Returns
    -------
    result : ImportResult
        ``accepted`` holds :class:`Target` records, each with an image of shape (size, size, 3),
        uint8 and a mask of shape (size, size), bool.

    Raises
    ------
    InvalidInputError
        Unknown layout, no file of the layout (the message says what the folder holds and which
        layout it looks like), or a zip over :data:`MAX_ARCHIVE_BYTES` / :data:`MAX_ARCHIVE_MEMBERS`.
    """
    result = ImportResult()
    with stream_targets(path, result, layout=layout, size=size, home=home, classes=classes, propose_masks=propose_masks) as targets:
        result.accepted = list(targets)
    return result


@contextmanager
def stream_targets(
    path: str | os.PathLike,
    result: ImportResult,
    *,
    layout: str,
    size: int = DEFAULT_IMAGE_SIZE,
    home: np.ndarray | None = None,
    classes: Iterable[str] | None = None,
    propose_masks: bool = False,
) -> Iterator[Iterator[Target]]:
    """:func:`read_targets` one file at a time: the block gets an iterator of :class:`Target` that decodes
    a file only when advanced; rejected files and proposed masks go to ``result`` as they are met
    (``accepted`` is left alone). A zip stays extracted while the block runs. As :func:`read_targets`."""
    if layout not in LAYOUTS:
        raise InvalidInputError(f"layout must be one of {', '.join(LAYOUTS)}; got {layout!r}")
    with extracted(Path(path)) as (folder, shown):
        root = layout_root(folder, layout)
        allowed = None if classes is None else set(classes)
        yield _targets(root, layout, size, home, allowed, propose_masks, result, _renamer(folder, shown))


def _targets(
    path: Path, layout: str, size: int, home: np.ndarray | None, allowed: set[str] | None, propose: bool, result: ImportResult, shown: Callable[[str], str]
) -> Iterator[Target]:
    """The accepted targets of a layout, one decoded at a time; rejections and proposals go to
    ``result``, every path written as ``shown`` gives it (a zip's temporary folder as the zip)."""

    def reject(file: Path, reason: str) -> None:
        result.reject(shown(str(file)), shown(reason))

    pairs = _target_files(path, layout, reject, propose)
    seen: dict[str, str] = {}
    for class_name, image_path, mask_path in pairs:
        if allowed is not None and class_name not in allowed:
            reject(image_path, f"unknown class {class_name!r}; known: {', '.join(sorted(allowed))}")
            continue
        target_id = f"{class_name}/{image_path.stem}"
        if target_id in seen:
            reject(image_path, f"duplicate id {target_id!r} (also {seen[target_id]}); rename one file")
            continue
        origin = shown(str(image_path))
        try:
            rgba = read_image_rgba(image_path) if layout == "cutouts" else None
            if mask_path is None and (rgba is None or (propose and (rgba[..., 3] == 255).all())):  # a photo without a mask
                if len(result.proposed) >= MAX_PROPOSALS:  # proposals wait for review in memory: bounded
                    reject(image_path, f"no mask, and this import already proposes {MAX_PROPOSALS} masks for review; import at most {MAX_PROPOSALS} "
                           "photos without masks at a time, or give this one a mask file")  # fmt: skip
                    continue
                image = fit_square(read_image(image_path), None, size)[0]
                mask = propose_mask(image, origin=origin)
                seen[target_id] = origin
                result.proposed.append(Target(target_id, class_name, image, mask, origin=origin))
                continue
            if rgba is not None:
                image, mask = paste_cutout(rgba, home, size=size)
                check_mask_share(mask, str(image_path))
            else:
                image = read_image(image_path)
                image, mask = fit_target(image, read_mask(mask_path, image.shape[:2]), size, origin=str(image_path), mask_origin=str(mask_path))
        except InvalidInputError as err:
            reject(image_path, str(err))
            continue
        seen[target_id] = origin
        yield Target(target_id, class_name, image, mask, origin=origin)


def _target_files(path: Path, layout: str, reject: Callable[[Path, str], None], propose: bool) -> list[tuple[str, Path, Path | None]]:
    """(class, image file, mask file) triples of a layout; a missing mask is rejected on the way, or
    (``propose``) left None for GrabCut."""
    if layout == "cutouts":
        return [(p.parent.name, p, None) for p in sorted(path.glob("*/*")) if is_image_file(p) and not is_hidden(p, path)]
    if layout == "folder":
        image_root, mask_root, mask_suffixes = path / "images", path / "masks", (".png", ".npy")
    else:
        image_root, mask_root, mask_suffixes = path / "original" / "val", path / "fg_mask" / "val", (".npy",)
    triples = []  # layout_root made sure image_root holds class folders of images
    for image_path in sorted(p for p in image_root.glob("*/*") if is_image_file(p) and not is_hidden(p, image_root)):
        candidates = [mask_root / image_path.parent.name / (image_path.stem + s) for s in mask_suffixes]
        mask_path = next((c for c in candidates if c.is_file()), None)
        if mask_path is None and not propose:
            reject(
                image_path,
                f"no mask found (looked for {candidates[0].relative_to(path)}); add one, or import again with "
                "'Propose GrabCut masks' ticked to review a mask for each photo",
            )
            continue
        triples.append((image_path.parent.name, image_path, mask_path))
    return triples


HOME_SEPARATOR = " on "
"""A cut-out pasted on a home photo records ``origin = "<cut-out> on <home photo origin>"`` (the demo
and the ``cutouts`` import), so that no crop of its home becomes its background (``analytics.suites.screening``)."""


def on_home(origin: str, home: str) -> str:
    """The origin of a cut-out ``origin`` pasted on the photo whose origin is ``home``."""
    return f"{origin}{HOME_SEPARATOR}{home}"


def source_photo(origin: str) -> str:
    """The photo a target was cut from: the home of an :func:`on_home` origin, else ``origin`` itself."""
    _, separator, home = origin.rpartition(HOME_SEPARATOR)
    return home if separator else origin


def paste_cutout(rgba: np.ndarray, home: np.ndarray | None, *, size: int, scale: float = 0.7) -> tuple[np.ndarray, np.ndarray]:
    """Paste an RGBA cut-out, centred and scaled to ``scale`` of the side, on a home background.

    Parameters
    ----------
    rgba : ndarray of shape (height, width, 4), uint8
    home : ndarray of shape (home_height, home_width, 3), uint8, or None (neutral grey)
        Centre-cropped to a square and resized to ``size``.
    size : int
        Side of the output in pixels.
    scale : float, default=0.7

    Returns
    -------
    image : ndarray of shape (size, size, 3), uint8
    mask : ndarray of shape (size, size), bool (alpha > 127)
    """
    alpha = rgba[..., 3]
    if (alpha > 127).mean() < 0.002:
        raise InvalidInputError("cut-out is fully transparent: its alpha channel marks no object")
    rows, cols = np.nonzero(alpha > 127)
    rgba = rgba[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
    height, width = rgba.shape[:2]
    factor = scale * size / max(height, width)
    new_h, new_w = max(1, round(height * factor)), max(1, round(width * factor))
    # Resize with premultiplied alpha: resizing straight RGBA bleeds the colour of transparent
    # pixels (often black) into the edge and leaves a dark halo around the object.
    alpha = rgba[..., 3].astype(np.float32) / 255
    premultiplied = rgba[..., :3].astype(np.float32) * alpha[..., None]
    interpolation = cv2.INTER_AREA if factor < 1 else cv2.INTER_CUBIC
    premultiplied = cv2.resize(premultiplied, (new_w, new_h), interpolation=interpolation)
    alpha = np.clip(cv2.resize(alpha, (new_w, new_h), interpolation=interpolation), 0, 1)
    premultiplied = np.clip(premultiplied, 0, 255 * alpha[..., None])  # cubic overshoot
    # fit_square centre-crops a non-square home photo; resizing it straight to a square would squash it
    canvas = np.full((size, size, 3), 127, np.uint8) if home is None else fit_square(home, None, size)[0].copy()
    top, left = (size - new_h) // 2 + int(size * 0.05), (size - new_w) // 2
    top = min(top, size - new_h)
    region = canvas[top : top + new_h, left : left + new_w].astype(np.float32)
    canvas[top : top + new_h, left : left + new_w] = (premultiplied + (1 - alpha[..., None]) * region).round().astype(np.uint8)
    mask = np.zeros((size, size), bool)
    mask[top : top + new_h, left : left + new_w] = alpha > 0.5
    return canvas, mask


def read_backgrounds(
    path: str | os.PathLike,
    *,
    size: int = DEFAULT_IMAGE_SIZE,
    crops_per_photo: int | Callable[[np.ndarray], int] = 1,
    seed: int = 0,
    files: Sequence[str | os.PathLike] | None = None,
) -> ImportResult:
    """Read a background pool: a flat folder of photos (BG-20k layout), or a .zip of one (either
    possibly inside enclosing folders, :func:`analytics.data.archives.layout_root`); holds every
    accepted image (stream a large pool: :func:`stream_backgrounds`).

    Parameters
    ----------
    path : path-like
        Folder or zip file.
    size : int, default=256
        Side of the stored square images.
    crops_per_photo : int or callable, default=1
        Distinct square crops per photo (see :func:`analytics.data.images.square_crops`); a callable gets
        the photo (ndarray of shape (height, width, 3), uint8) and returns the count (e.g. more crops
        from larger photos).
    seed : int, default=0
        Seed of the crops.
    files : sequence of paths or None
        Read exactly these files instead of listing ``path``.

    Returns
    -------
    result : ImportResult
        ``accepted`` holds :class:`Background` records, each with an image of shape
        (size, size, 3), uint8.

    Raises
    ------
    InvalidInputError
        The folder (or ``files``) holds no image file at all, or a zip over
        :data:`MAX_ARCHIVE_BYTES` / :data:`MAX_ARCHIVE_MEMBERS`.
    """
    result = ImportResult()
    with stream_backgrounds(path, result, size=size, crops_per_photo=crops_per_photo, seed=seed, files=files) as backgrounds:
        result.accepted = list(backgrounds)
    return result


@contextmanager
def stream_backgrounds(
    path: str | os.PathLike,
    result: ImportResult,
    *,
    size: int = DEFAULT_IMAGE_SIZE,
    crops_per_photo: int | Callable[[np.ndarray], int] = 1,
    seed: int = 0,
    files: Sequence[str | os.PathLike] | None = None,
) -> Iterator[Iterator[Background]]:
    """:func:`read_backgrounds` one photo at a time: the block gets an iterator of :class:`Background`
    that decodes a photo only when advanced, and rejected files are added to ``result.rejected`` as
    they are met (``result.accepted`` is left alone). A zip stays extracted while the block runs.
    Parameters and errors as :func:`read_backgrounds` (the no-photo error on entering the block)."""
    source = Path(path)
    with extracted(source) as (folder, shown):
        paths = [Path(f) for f in files] if files is not None else sorted(p for p in layout_root(folder, POOL).iterdir() if is_image_file(p))
        if not paths:
            raise InvalidInputError(
                f"{source}: no background photos found (looked for {', '.join(IMAGE_SUFFIXES)} files directly in the folder); "
                "add photos or pick another folder"
            )
        yield _backgrounds(paths, size, crops_per_photo, seed, result, _renamer(folder, shown))


def _backgrounds(
    paths: list[Path], size: int, crops_per_photo: int | Callable[[np.ndarray], int], seed: int, result: ImportResult, shown: Callable[[str], str]
) -> Iterator[Background]:
    seen: dict[str, str] = {}
    for photo_path in paths:
        if photo_path.stem in seen:
            result.reject(shown(str(photo_path)), f"duplicate id {photo_path.stem!r} (also {shown(seen[photo_path.stem])}); rename one file")
            continue
        try:
            photo = read_image(photo_path)
        except InvalidInputError as err:
            result.reject(shown(str(photo_path)), shown(str(err)))
            continue
        if min(photo.shape[:2]) < size // 2:
            result.reject(shown(str(photo_path)), f"photo is {photo.shape[1]}x{photo.shape[0]}, smaller than half the image size {size}; use a larger photo")
            continue
        seen[photo_path.stem] = str(photo_path)
        count = crops_per_photo(photo) if callable(crops_per_photo) else crops_per_photo
        for top, left, side in square_crops(photo, count, seed=seed):
            image, _ = resize_square(photo[top : top + side, left : left + side], None, size)
            bg_id = crop_id(photo_path.stem, top, left, side) if count > 1 else photo_path.stem
            yield Background(bg_id, image, shown(str(photo_path)), crop=(top, left, side))


def _renamer(folder: Path, shown: Path) -> Callable[[str], str]:
    """Text with the path of a temporary ``folder`` written as ``shown`` (identity for folders)."""
    old, new = str(folder), str(shown)
    return (lambda text: text) if folder == shown else (lambda text: text.replace(old, new))


# -- workspace tables ------------------------------------------------------------------------
def add_classes(workspace: Workspace, classes: Mapping[str, ClassMapping | Sequence[int]], *, conn=None) -> None:
    """Register classes with their mappings (see :mod:`analytics.data.classes`), or just ImageNet-1k indices.

    An empty mapping (``ClassMapping()`` or ``[]``) registers an unmapped class.
    """
    require_permission(workspace, "import_data")
    mappings = {name: as_mapping(value) for name, value in classes.items()}
    rows = [(name, json.dumps(list(m.imagenet)), m.in9, m.label) for name, m in mappings.items()]
    sql = "INSERT OR REPLACE INTO classes(name, imagenet_indices, in9, label) VALUES (?, ?, ?, ?)"
    if conn is not None:
        conn.executemany(sql, rows)
        return
    with workspace.transaction() as own:
        own.executemany(sql, rows)


def list_classes(workspace: Workspace) -> dict[str, list[int]]:
    """Class name -> ImageNet-1k indices, sorted by name (full mappings: ``classes.list_class_mappings``).

    A class mapped only to an IN-9 class (the IN-9 import layout's ``00_dog`` folders) gets that
    class's indices in the official ImageNet -> IN-9 map, so pool screening and the keyword
    backends' class exclusion see it like any ImageNet class.
    """
    rows = workspace.query("SELECT name, imagenet_indices, in9 FROM classes ORDER BY name")
    return {row["name"]: json.loads(row["imagenet_indices"]) or list(in9_imagenet_indices(row["in9"] or "")) for row in rows}


def list_targets(workspace: Workspace, *, class_name: str | None = None) -> pd.DataFrame:
    """Targets as a table, sorted by id.

    Returns
    -------
    targets : DataFrame
        One row per target; columns ``id``, ``class_name``, ``image_hash``, ``mask_hash``,
        ``origin``, ``package``, ``licence`` (all str).
    """
    sql = "SELECT id, class_name, image_hash, mask_hash, origin, package, licence FROM targets"
    params: tuple = ()
    if class_name is not None:
        sql, params = sql + " WHERE class_name = ?", (class_name,)
    rows = workspace.query(sql + " ORDER BY id", params)
    return pd.DataFrame([dict(r) for r in rows], columns=["id", "class_name", "image_hash", "mask_hash", "origin", "package", "licence"])


def list_backgrounds(workspace: Workspace) -> pd.DataFrame:
    """Backgrounds as a table, sorted by id.

    Returns
    -------
    backgrounds : DataFrame
        One row per background; columns ``id``, ``image_hash``, ``origin``, ``crop`` (JSON
        ``[top, left, side]`` or ``''``), ``package``, ``licence`` (all str).
    """
    rows = workspace.query("SELECT id, image_hash, origin, crop, package, licence FROM backgrounds ORDER BY id")
    return pd.DataFrame([dict(r) for r in rows], columns=["id", "image_hash", "origin", "crop", "package", "licence"])


def load_targets(workspace: Workspace, ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Images and masks of targets, in the order of ``ids``.

    Returns
    -------
    images : ndarray of shape (len(ids), size, size, 3), uint8
    masks : ndarray of shape (len(ids), size, size), bool
    """
    rows = _rows_by_id(workspace, "targets", "image_hash, mask_hash", ids)
    size = image_size(workspace)
    images = np.empty((len(ids), size, size, 3), np.uint8)
    masks = np.empty((len(ids), size, size), bool)
    for i, row in enumerate(rows):
        images[i] = workspace.get_array(row["image_hash"])
        masks[i] = workspace.get_array(row["mask_hash"])
    return images, masks


def load_backgrounds(workspace: Workspace, ids: Sequence[str]) -> np.ndarray:
    """Background images in the order of ``ids``.

    Returns
    -------
    images : ndarray of shape (len(ids), size, size, 3), uint8
    """
    rows = _rows_by_id(workspace, "backgrounds", "image_hash", ids)
    size = image_size(workspace)
    images = np.empty((len(ids), size, size, 3), np.uint8)
    for i, row in enumerate(rows):
        images[i] = workspace.get_array(row["image_hash"])
    return images


def _rows_by_id(workspace: Workspace, table: str, columns: str, ids: Sequence[str]) -> list:
    found = {}
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), 500):  # SQLite caps the number of ? placeholders
        chunk = unique[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for row in workspace.query(f"SELECT id, {columns} FROM {table} WHERE id IN ({marks})", chunk):
            found[row["id"]] = row
    missing = [i for i in unique if i not in found]
    if missing:
        raise NotFoundError(f"{len(missing)} {table} not in workspace {workspace.root}: {', '.join(missing[:5])}")
    return [found[i] for i in ids]

