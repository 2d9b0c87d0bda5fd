"""Where an import's files are: a zip extracted safely, and the folder of a tree that holds a layout.

People zip a set in several ways: the layout's folders at the top (``images/``, ``masks/``), inside
one enclosing folder (``set/images/...``), or a class folder alone (``my_ball/*.png``). A zip is
extracted to a temporary folder as it is (no folder is stripped blindly), then :func:`layout_root`
finds the folder that holds the chosen layout: the top, or the first fitting folder down a chain of
folders that are each the only entry of their parent. When none fits, the error says what was looked
for, what the tree holds, and which layout it looks like instead, so an import never ends with
nothing accepted and no reason.
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from analytics._choices import COCO, LAYOUTS, VOC
from analytics.exceptions import InvalidInputError

from .images import IMAGE_SUFFIXES, is_image_file

POOL = "pool"  # layout_root's name for a background pool: photos directly in the folder
LAYOUT_PATTERNS = {
    "folder": "images/<class>/<photo> (with masks/<class>/<photo stem>.png)",
    "bgchallenge": "original/val/<class>/<photo> (with fg_mask/val/<class>/<photo stem>.npy)",
    "cutouts": "<class>/<cut-out>.png",
    COCO: "a COCO instances JSON (polygons or RLE; CVAT, Label Studio, FiftyOne, Roboflow) + its images folder or zip",
    VOC: "Pascal VOC: JPEGImages/<id>.jpg with palette PNGs SegmentationObject/<id>.png and SegmentationClass/<id>.png",
    POOL: f"{', '.join(IMAGE_SUFFIXES)} files directly in the folder",
}
# A zip is extracted to a temporary folder (removed after reading); larger archives are refused so a
# zip bomb cannot fill the disk. Raise these module constants to import a bigger archive.
MAX_ARCHIVE_BYTES = 2 << 30  # total uncompressed size: 2 GiB
MAX_ARCHIVE_MEMBERS = 100_000
MAX_ENCLOSING = 3  # enclosing folders looked through (a zip of /home/me/set holds three)


@contextmanager
def extracted(path: Path) -> Iterator[tuple[Path, Path]]:
    """``(folder, shown)``: a folder as itself, or a zip extracted to a temporary folder.

    The temporary folder is removed on exit; ``shown`` is the path that stands for the folder in
    messages and origins (the zip's own path, so ``set.zip/images/a/1.png``).
    """
    if path.is_dir():
        yield path, path
        return
    if not path.exists():  # a typo in the path, not a broken archive: say so
        raise InvalidInputError(f"{path}: no such folder or .zip file; check the path")
    if not (path.is_file() and zipfile.is_zipfile(path)):  # a file of another kind, or one named .zip that is none
        raise InvalidInputError(f"{path}: not a folder or a .zip archive (its bytes do not read as a zip); give a folder or re-create the .zip")
    with tempfile.TemporaryDirectory(prefix="backdrop-import-") as temporary:
        folder = Path(temporary)
        try:
            with zipfile.ZipFile(path) as archive:
                _check_archive(path, archive.infolist())
                archive.extractall(folder)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as err:
            raise InvalidInputError(f"{path}: cannot extract the zip ({err}); re-create the archive") from err
        try:
            yield folder, path
        except InvalidInputError as err:  # name the zip, not the temporary folder that is about to vanish
            raise InvalidInputError(str(err).replace(str(folder), str(path))) from err


def _check_archive(path: Path, members: list[zipfile.ZipInfo]) -> None:
    """Refuse members outside the archive and archives over the size or member-count limits."""
    for member in members:
        if member.filename.startswith("/") or ".." in Path(member.filename).parts:
            raise InvalidInputError(f"{path}: zip member {member.filename!r} points outside the archive; refusing it")
    if len(members) > MAX_ARCHIVE_MEMBERS:
        raise InvalidInputError(
            f"{path}: the zip holds {len(members)} entries, over the limit of {MAX_ARCHIVE_MEMBERS} "
            "(analytics.data.archives.MAX_ARCHIVE_MEMBERS); split it or import the extracted folder"
        )
    total = sum(member.file_size for member in members)
    if total > MAX_ARCHIVE_BYTES:
        raise InvalidInputError(
            f"{path}: the zip unpacks to {total / 2**20:.0f} MiB, over the limit of {MAX_ARCHIVE_BYTES / 2**20:.0f} MiB "
            "(analytics.data.archives.MAX_ARCHIVE_BYTES); split it or import the extracted folder"
        )


def layout_root(folder: Path, layout: str) -> Path:
    """The folder of ``folder``'s tree that holds ``layout`` (one of :data:`LAYOUTS`, :data:`VOC` or :data:`POOL`).

    ``folder`` itself when it fits, else the first fitting folder down the chain of folders that are
    each the only visible entry of their parent (at most :data:`MAX_ENCLOSING` deep): a set zipped
    with or without an enclosing folder reads the same. ``cutouts`` fits a folder with images one
    level down (``my_ball/*.png``: class ``my_ball``); ``voc`` a folder with ``JPEGImages/`` and PNGs in
    ``SegmentationObject/`` (the VOC2012 download holds it two folders down, ``VOCdevkit/VOC2012``).

    Raises
    ------
    InvalidInputError
        No folder of the chain fits: the message names the pattern looked for, what ``folder``
        holds and, when another layout fits, that layout.
    """
    found = _fitting(folder, layout)
    if found is not None:
        return found
    # VOC first: its JPEGImages/*.jpg also fit ``cutouts`` (images one level down), which would be a wrong hint
    others = [other for other in (VOC, *LAYOUTS, POOL) if other != layout and _fitting(folder, other) is not None]
    hint = f" It looks like {_layout_name(others[0], targets=layout != POOL)}: choose that instead." if others else ""
    what = "background photos" if layout == POOL else f"targets for layout {layout!r}"
    raise InvalidInputError(
        f"{folder}: no {what} found (looked for {LAYOUT_PATTERNS[layout]}, at the top or inside one enclosing folder); "
        f"it holds {_contents(folder)}.{hint}"
    )


def _fitting(folder: Path, layout: str) -> Path | None:
    candidate = folder
    for _ in range(MAX_ENCLOSING + 1):
        if _fits(candidate, layout):
            return candidate
        children = _visible(candidate)
        if len(children) != 1 or not children[0].is_dir():
            return None
        candidate = children[0]
    return None


def _fits(folder: Path, layout: str) -> bool:
    if layout == POOL:
        return any(is_image_file(p) for p in _visible(folder))
    if layout == VOC:
        objects = folder / "SegmentationObject"
        return (folder / "JPEGImages").is_dir() and objects.is_dir() and any(p.suffix.lower() == ".png" for p in _visible(objects))
    if layout == "cutouts":
        return any(is_image_file(p) for child in _visible(folder) if child.is_dir() for p in _visible(child))
    root = folder / "images" if layout == "folder" else folder / "original" / "val"
    return root.is_dir() and any(is_image_file(p) for child in _visible(root) if child.is_dir() for p in _visible(child))


HIDDEN_PREFIXES = (".", "__MACOSX")  # dot files and the resource forks macOS adds to a zip


def is_hidden(path: Path, root: Path) -> bool:
    """Whether ``path`` (under ``root``) is or lies in a hidden entry: never an image to import."""
    return any(part.startswith(HIDDEN_PREFIXES) for part in path.relative_to(root).parts)


def _visible(folder: Path) -> list[Path]:
    """Entries of ``folder`` that are not hidden (:func:`is_hidden`), sorted."""
    return sorted(p for p in folder.iterdir() if not p.name.startswith(HIDDEN_PREFIXES))


def _contents(folder: Path) -> str:
    """``my_ball/ (12 images), notes.txt``: the visible top entries (at most 5), folders with their image count."""
    entries = _visible(folder)
    if not entries:
        return "nothing"
    named = [f"{p.name}/ ({sum(map(is_image_file, p.rglob('*')))} images)" if p.is_dir() else p.name for p in entries[:5]]
    return ", ".join(named) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")


def _layout_name(layout: str, *, targets: bool) -> str:
    if layout == POOL:
        return "a background pool (photos without class folders)"
    return f"layout {layout!r}" if targets else f"a target set in layout {layout!r}"
