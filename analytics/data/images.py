"""Reading images and masks from disk, and fitting them to the workspace's square image size.

Every reader raises :class:`InvalidInputError` naming the file and the fix; nothing here touches the
workspace.
"""

from __future__ import annotations

import functools
import io
import logging
import math
import os
import re
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import IO

import cv2
import numpy as np
from PIL import Image

from analytics._choices import MIN_MASK_SHARE
from analytics._validation import positive_limit
from analytics.exceptions import InvalidInputError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")

# A file that cannot be decoded raises one InvalidInputError naming it; OpenCV's own log lines
# ("[ WARN:0@0.1] global grfmt_png.cpp ...", "[ERROR:0@...]") would only repeat it in the terminal.
cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)
_log = logging.getLogger(__name__)
_STDERR_LOCK = threading.Lock()  # one decode at a time holds the process's stderr

#: Images (and PNG masks) with more pixels than this are refused from their header, before any
#: decoding: a 1 MB PNG can declare 20000 x 20000 pixels and take gigabytes to decode. 64 megapixels
#: (e.g. 9248 x 6936) decode to about 256 MB of RGBA. Raise it with ``$BACKDROP_MAX_IMAGE_PIXELS``
#: (a whole number of pixels), read at every call; Pillow's own decompression-bomb limit
#: (``PIL.Image.MAX_IMAGE_PIXELS``) is set to the same number.
MAX_IMAGE_PIXELS = 64_000_000
MAX_IMAGE_PIXELS_ENV_VAR = "BACKDROP_MAX_IMAGE_PIXELS"
#: What an image file may hold besides its pixels (EXIF, ICC profile, text chunks, thumbnails): an
#: image file larger than 8 bytes a pixel plus this is refused before it is read (:func:`image_bytes`).
MAX_IMAGE_EXTRA_BYTES = 64 << 20
_HEADER_LOCK = threading.Lock()  # warnings.catch_warnings is process-wide state

#: The smallest share of its image a target's object may cover (:data:`MIN_MASK_SHARE`, 0.2 %, from
#: :mod:`analytics._choices`), and the largest (98 %): a smaller object leaves the model next to
#: nothing of it to recognise, a larger one no background to replace. Instance imports (COCO, VOC)
#: lower the floor to their ``min_area`` where it is smaller.
MAX_MASK_SHARE = 0.98
#: What to do about a mask below the floor, for images with their own mask files.
REDRAW_FIX = "crop the image closer to the object or draw a larger mask"
#: The same for an instance import, whose ``min_area`` lowers the floor.
LOWER_FLOOR_FIX = "import with a smaller minimum area (min_area; the Data page's 'Smallest instance'), which lowers this floor"


def is_image_file(path: str | os.PathLike) -> bool:
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def max_image_pixels() -> int:
    """The pixel limit of :func:`read_image_rgba` and :func:`read_mask`: ``$BACKDROP_MAX_IMAGE_PIXELS``,
    else :data:`MAX_IMAGE_PIXELS`. Also sets Pillow's decompression-bomb limit to it.

    Raises
    ------
    InvalidInputError
        The environment variable is not a positive whole number.
    """
    limit = positive_limit(MAX_IMAGE_PIXELS_ENV_VAR, MAX_IMAGE_PIXELS, "pixels")
    Image.MAX_IMAGE_PIXELS = limit
    return limit


def read_image(path: str | os.PathLike) -> np.ndarray:
    """Read an RGB image.

    Returns
    -------
    image : ndarray of shape (height, width, 3), uint8
    """
    rgba = read_image_rgba(path)
    return rgba[..., :3].copy()


def read_image_rgba(path: str | os.PathLike) -> np.ndarray:
    """Read an image with its alpha channel (opaque when it has none).

    Returns
    -------
    image : ndarray of shape (height, width, 4), uint8
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"{path}: file not found")
    unreadable = "not a readable image (corrupt or unsupported format{detail}); re-export it as PNG or JPEG"
    decoded = _read_checked(path, image_bytes(path, unreadable), cv2.IMREAD_UNCHANGED, unreadable)
    try:
        if decoded.dtype == np.uint16:
            decoded = (decoded // 257).astype(np.uint8)
        if decoded.ndim == 2:
            decoded = cv2.cvtColor(decoded, cv2.COLOR_GRAY2BGRA)
        elif decoded.shape[2] == 3:
            decoded = cv2.cvtColor(decoded, cv2.COLOR_BGR2BGRA)
        return cv2.cvtColor(decoded, cv2.COLOR_BGRA2RGBA)
    except (cv2.error, MemoryError) as err:
        raise _decode_failure(path, err) from None


def image_bytes(path: Path, unreadable: str) -> np.ndarray:
    """The bytes of the image file ``path``, read only once its header is: a header that Pillow
    cannot read or that declares more than :func:`max_image_pixels` is refused unread (as
    :func:`_read_checked` refuses it), and so is a file larger than its pixels can take (8 bytes a
    pixel, 16-bit RGBA stored raw, plus :data:`MAX_IMAGE_EXTRA_BYTES` of metadata): a small image
    followed by gigabytes (a sparse file) would otherwise be read whole into memory.

    Parameters
    ----------
    path : Path
        A regular file.
    unreadable : str
        The error message after ``'{path}: '`` for a file that is not an image, with a ``{detail}``
        field for ``'; <what the reader said>'``.

    Returns
    -------
    data : ndarray of shape (n_bytes,), uint8
    """
    limit = max_image_pixels()
    sides, pixels, shown, note = _header(path)
    if pixels is None:
        raise InvalidInputError(f"{path}: " + unreadable.format(detail=f"; {note}" if note else ""))
    if sides is None or pixels > limit:
        raise _too_large(path, pixels, shown, limit)
    most = 8 * pixels + MAX_IMAGE_EXTRA_BYTES
    size = path.stat().st_size
    data = np.fromfile(path, dtype=np.uint8, count=most + 1) if size <= most else None  # refused unread; never more than most + 1 bytes
    if data is None or data.size > most:
        size = max(size, 0 if data is None else data.size)
        raise InvalidInputError(
            f"{path}: the file is {size / 2**20:.1f} MiB, more than an image of {shown} takes (at most {most / 2**20:.1f} MiB); "
            "it holds something besides the image: re-export it as PNG or JPEG"
        )
    return data


def _read_checked(path: Path, data: np.ndarray, flags: int, unreadable: str) -> np.ndarray:
    """Check the size in the header of ``data`` (the file ``path``) against :func:`max_image_pixels`,
    then decode it.

    Parameters
    ----------
    path : Path
        The file, named in errors.
    data : ndarray of shape (n_bytes,), uint8
        Its contents.
    flags : int
        ``cv2.IMREAD_*`` flags.
    unreadable : str
        The error message after ``'{path}: '`` for a file that is not an image, with a ``{detail}``
        field for ``'; <what the decoder said>'``.

    Returns
    -------
    image : ndarray of shape (height, width) or (height, width, channels), uint8 or uint16
    """
    limit = max_image_pixels()
    pixels, shown, note = _header_size(data) if data.size else (None, "", "")
    if pixels is None:  # Pillow cannot read the header: its size is unknown, so it is not decoded
        raise InvalidInputError(f"{path}: " + unreadable.format(detail=f"; {note}" if note else ""))
    if pixels > limit:
        raise _too_large(path, pixels, shown, limit)
    try:
        decoded, note = _decode(data, flags)
    except (cv2.error, MemoryError) as err:
        raise _decode_failure(path, err) from None
    if decoded is None:
        raise InvalidInputError(f"{path}: " + unreadable.format(detail=f"; {note}" if note else ""))
    return decoded


def read_image_size(path: str | os.PathLike) -> tuple[int, int]:
    """(width, height) of an image file from its header alone: nothing is decoded, and a file past
    :func:`max_image_pixels` is refused as :func:`read_image` refuses it, so a size declared elsewhere
    (a COCO JSON) can be checked against the file before anything of that size is made.

    Raises
    ------
    InvalidInputError
        The file is missing, its header unreadable, or it holds more pixels than the limit (the
        message names the file, its size and the limit).
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"{path}: file not found")
    limit = max_image_pixels()
    sides, pixels, shown, note = _header(path)
    if pixels is None:
        raise InvalidInputError(
            f"{path}: not a readable image (corrupt or unsupported format{f'; {note}' if note else ''}); re-export it as PNG or JPEG"
        )
    if sides is None or pixels > limit:  # no sides: Pillow refused the size itself, past twice the limit
        raise _too_large(path, pixels, shown, limit)
    return sides


def _too_large(path: Path, pixels: int, shown: str, limit: int) -> InvalidInputError:
    return InvalidInputError(
        f"{path}: image is {shown} ({pixels / 1e6:.1f} megapixels), past the limit of {limit} pixels "
        f"({limit / 1e6:.1f} megapixels); shrink it, or raise the limit with the environment variable "
        f"{MAX_IMAGE_PIXELS_ENV_VAR}={pixels}"
    )


def _header_size(data: np.ndarray) -> tuple[int | None, str, str]:
    """The number of pixels that the header of ``data`` declares, read by Pillow without decoding.

    Returns
    -------
    pixels : int or None
        None when Pillow cannot read the header.
    shown : str
        ``'<width>x<height> pixels'``, or ``'<n> pixels'`` when Pillow refused the size itself (past
        twice its limit, which :func:`max_image_pixels` sets, it names the count alone).
    note : str
        Why the header is unreadable (``''`` if it is readable or Pillow does not know the format).
    """
    return _header(io.BytesIO(data.tobytes()))[1:]


def _header(source: Path | IO[bytes]) -> tuple[tuple[int, int] | None, int | None, str, str]:
    """``(sides, pixels, shown, note)`` of the image ``source`` (a file, opened lazily, or its bytes):
    ``sides`` is (width, height), None when unknown; the rest as :func:`_header_size` returns them."""
    with _HEADER_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(source) as image:
                width, height = image.size
            return (width, height), width * height, f"{width}x{height} pixels", ""
        except Image.DecompressionBombError as err:
            found = re.search(r"\((\d+) pixels\)", str(err))
            if found:
                return None, int(found.group(1)), f"{found.group(1)} pixels", ""
            past = 2 * Image.MAX_IMAGE_PIXELS
            return None, past + 1, f"over {past} pixels", ""
        except Image.UnidentifiedImageError:
            return None, None, "", ""
        except Exception as err:  # noqa: BLE001 - a plugin's SyntaxError, OSError, struct.error ... on a broken header
            lines = str(err).strip().splitlines()
            return None, None, "", lines[0] if lines else type(err).__name__


def _decode_failure(path: Path, err: BaseException) -> InvalidInputError:
    """One line for OpenCV running out of memory (or failing otherwise) on the file ``path``."""
    if isinstance(err, MemoryError):
        reason = "out of memory"
    else:
        reason = (getattr(err, "err", "") or str(err)).strip().splitlines()
        reason = reason[-1] if reason else "OpenCV error"
    return InvalidInputError(
        f"{path}: could not decode the image ({reason}); it may be too large for the memory available: "
        f"shrink it, or lower {MAX_IMAGE_PIXELS_ENV_VAR} to refuse such files up front"
    )


def _decode(data: np.ndarray, flags: int) -> tuple[np.ndarray | None, str]:
    """``cv2.imdecode`` with what the codec libraries print themselves kept off the terminal.

    libpng reports trouble straight to file descriptor 2 ("libpng error: IDAT: CRC error"), beyond
    OpenCV's log level, so descriptor 2 points at a temporary file during the decode. (Another
    thread writing to stderr in those milliseconds is captured too and logged at DEBUG level.)

    Parameters
    ----------
    data : ndarray of shape (n_bytes,), uint8
        The encoded file.
    flags : int
        ``cv2.IMREAD_*`` flags.

    Returns
    -------
    image : ndarray or None
        The decoded image, None when the data cannot be decoded.
    note : str
        The first line the decoder printed (``''`` if none).
    """
    with _STDERR_LOCK:
        sink = _stderr_sink(os.getpid())
        sink.seek(0)
        sink.truncate()
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            image = cv2.imdecode(data, flags)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        printed = sink.read().decode(errors="replace").strip()
    if printed:
        _log.debug("image decoder said: %s", printed)
    return image, printed.splitlines()[0] if printed else ""


@functools.cache
def _stderr_sink(pid: int) -> IO[bytes]:
    """One anonymous temporary file per process ``pid`` (a forked child must not share the parent's
    file offset); creating one per decode costs about as much as decoding a small PNG."""
    return tempfile.TemporaryFile()


def read_mask(path: str | os.PathLike, shape: tuple[int, int]) -> np.ndarray:
    """Read a foreground mask (PNG with 0/255 or 0/1 values, or a ``.npy`` array) of ``shape``.

    Returns
    -------
    mask : ndarray of shape (height, width), bool
        True on the object.
    """
    path = Path(path)
    if path.suffix.lower() == ".npy":
        try:
            _check_npy_header(path)  # np.load makes an array of the shape its header claims, before reading the data
            raw = np.load(path, allow_pickle=False)
        except InvalidInputError:
            raise
        except (ValueError, OSError) as err:
            raise InvalidInputError(f"{path}: not a readable .npy mask ({err})") from err
        if raw.ndim == 3:
            raw = raw.max(axis=-1)
    else:
        if not path.is_file():
            raise InvalidInputError(f"{path}: mask file not found")
        unreadable = "not a readable mask image{detail}; save it as a PNG with 0/255 values"
        raw = _read_checked(path, image_bytes(path, unreadable), cv2.IMREAD_GRAYSCALE, unreadable)
    if raw.ndim != 2:
        raise InvalidInputError(f"{path}: a mask must be 2-D; got shape {raw.shape}")
    if raw.shape != tuple(shape):
        raise InvalidInputError(
            f"{path}: mask is {raw.shape[1]}x{raw.shape[0]} but its image is {shape[1]}x{shape[0]}; "
            "export the mask at the image's size"
        )
    threshold = 0.5 if raw.max() <= 1 else 127
    return raw > threshold


def _check_npy_header(path: Path) -> None:
    """Refuse a ``.npy`` mask whose header claims more than :func:`max_image_pixels` (or four values
    a pixel), or more data than the file holds: read from the header, before :func:`numpy.load`
    allocates an array of that shape.

    Raises
    ------
    ValueError
        The header is not a ``.npy`` header (the caller names the file).
    """
    with path.open("rb") as file:
        version = np.lib.format.read_magic(file)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(file)
        start = file.tell()
    limit, pixels, values = max_image_pixels(), math.prod(shape[:2]), math.prod(shape)
    if pixels > limit or values > 4 * limit:
        raise InvalidInputError(
            f"{path}: the .npy mask's header claims shape {shape} ({pixels / 1e6:.1f} megapixels), past the limit of {limit} pixels; "
            f"save the mask at its image's size, or raise the limit with the environment variable {MAX_IMAGE_PIXELS_ENV_VAR}"
        )
    held = path.stat().st_size - start
    if values * dtype.itemsize > held:
        raise InvalidInputError(f"{path}: the .npy mask's header claims shape {shape} of {dtype} ({values * dtype.itemsize} bytes) but the file holds {held}; save the mask again")


def check_mask_share(mask: np.ndarray, origin: str, *, min_share: float = MIN_MASK_SHARE, fix: str = REDRAW_FIX) -> None:
    """Refuse a mask that is empty, smaller than ``min_share`` of the image, or covers (nearly) the whole image.

    Parameters
    ----------
    mask : ndarray of shape (height, width), bool
    origin : str
        The file or record named in the error.
    min_share : float, default=MIN_MASK_SHARE
        The floor (0.2 %); an instance import passes its smaller ``min_area``. A mask without a
        single object pixel is refused whatever the floor.
    fix : str, default=REDRAW_FIX
        What the error tells the user to do about a mask below the floor.
    """
    share = float(mask.mean())
    if not mask.any():
        raise InvalidInputError(f"{origin}: mask is empty (no object pixel); draw the object or use GrabCut")
    if share < min_share:
        raise InvalidInputError(
            f"{origin}: mask covers {percent(share)} of the image, smaller than {percent(min_share)} of the image "
            f"(the smallest object a target may have); {fix}"
        )
    if share > MAX_MASK_SHARE:
        raise InvalidInputError(
            f"{origin}: mask covers {share:.1%} of the image, leaving no background to replace; check it is not inverted"
        )


def percent(share: float) -> str:
    """A share as a percentage with two significant digits, never rounded to nothing: ``0.0016%``, ``0.2%``, ``45%``."""
    return np.format_float_positional(share * 100, precision=2, unique=True, fractional=False, trim="-") + "%"


def fit_target(
    image: np.ndarray, mask: np.ndarray, size: int, *, origin: str, mask_origin: str | None = None,
    min_share: float = MIN_MASK_SHARE, fix: str = REDRAW_FIX,
) -> tuple[np.ndarray, np.ndarray]:
    """An image with its object mask as a target is stored: the mask checked (:func:`check_mask_share`,
    naming ``mask_origin``), both fitted to a square (:func:`fit_square`), the fitted mask checked
    again (naming ``origin``). The one path of every import of an image with a mask (``folder``,
    ``bgchallenge``, COCO and VOC instances).

    Parameters
    ----------
    image : ndarray of shape (height, width, 3), uint8
    mask : ndarray of shape (height, width), bool
    size : int
        Side of the output in pixels.
    origin : str
        The image file (or record) named in an error.
    mask_origin : str or None
        The mask file (or annotation) named when the mask itself is refused; None: ``origin``.
    min_share, fix : float, str
        The floor and the advice of :func:`check_mask_share`.

    Returns
    -------
    image : ndarray of shape (size, size, 3), uint8
    mask : ndarray of shape (size, size), bool
    """
    check_mask_share(mask, origin if mask_origin is None else mask_origin, min_share=min_share, fix=fix)
    image, mask = fit_square(image, mask, size)
    check_mask_share(mask, origin, min_share=min_share, fix=fix)
    return image, mask


def fit_square(image: np.ndarray, mask: np.ndarray | None, size: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Crop an image (and its mask) to a square that keeps the whole object, then resize to ``size``.

    The square has the image's shorter side and is centred on the object; if the object does not
    fit in it, the image is padded (edge pixels repeated) to a square instead.

    Parameters
    ----------
    image : ndarray of shape (height, width, 3), uint8
    mask : ndarray of shape (height, width), bool, or None
    size : int
        Side of the output in pixels.

    Returns
    -------
    image : ndarray of shape (size, size, 3), uint8
    mask : ndarray of shape (size, size), bool, or None
    """
    height, width = image.shape[:2]
    side = min(height, width)
    if mask is not None and mask.any():
        rows, cols = np.nonzero(mask)
        top, bottom, left, right = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
        centre_y, centre_x = (top + bottom) // 2, (left + right) // 2
    else:  # no object: an empty box at the centre, so the crop is centred (not the top-left corner)
        centre_y, centre_x = height // 2, width // 2
        top, bottom, left, right = centre_y, centre_y, centre_x, centre_x
    if bottom - top <= side and right - left <= side:
        y0 = int(np.clip(centre_y - side // 2, max(0, bottom - side), min(top, height - side)))
        x0 = int(np.clip(centre_x - side // 2, max(0, right - side), min(left, width - side)))
        image = image[y0 : y0 + side, x0 : x0 + side]
        mask = None if mask is None else mask[y0 : y0 + side, x0 : x0 + side]
    else:
        side = max(height, width)
        pad = ((side - height) // 2, side - height - (side - height) // 2), ((side - width) // 2, side - width - (side - width) // 2)
        image = np.pad(image, (*pad, (0, 0)), mode="edge")
        mask = None if mask is None else np.pad(mask, pad, mode="constant")
    return resize_square(image, mask, size)


def resize_square(image: np.ndarray, mask: np.ndarray | None, size: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Resize a square image (area interpolation when shrinking) and its mask (nearest; where that
    leaves no object pixel, every pixel the object touches).

    Parameters
    ----------
    image : ndarray of shape (side, side, 3), uint8
    mask : ndarray of shape (side, side), bool, or None
    size : int
        Side of the output in pixels.

    Returns
    -------
    image : ndarray of shape (size, size, 3), uint8
    mask : ndarray of shape (size, size), bool, or None
    """
    shrink = image.shape[0] > size
    image = cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_CUBIC)
    if mask is not None:
        resized = cv2.resize(mask.astype(np.uint8), (size, size), interpolation=cv2.INTER_NEAREST).astype(bool)
        if shrink and not resized.any() and mask.any():
            # an object thinner than the sampling step falls between the sampled pixels: keep every
            # pixel it touches instead, so a tiny instance the import's floor lets in is not lost
            resized = cv2.resize(mask.astype(np.float32), (size, size), interpolation=cv2.INTER_AREA) > 0
        mask = resized
    return image, mask


def square_crops(image: np.ndarray, n_crops: int, *, seed: int) -> list[tuple[int, int, int]]:
    """Deterministic distinct square crops of a (large) photo.

    The first crop is the centred square of the whole shorter side (the overview); the others are
    details with sides between 45 % and 80 % of the shorter side that overlap each other at most
    half, so one 2560x1600 photo yields several different scenes. The same ``seed`` gives the same
    crops. (Details are not tested against the overview: they all lie mostly inside it, and their
    smaller side already makes them different views.)

    Parameters
    ----------
    image : ndarray of shape (height, width, 3), uint8
    n_crops : int
    seed : int

    Returns
    -------
    crops : list of (top, left, side) in pixels, at most ``n_crops`` long
    """
    height, width = image.shape[:2]
    short = min(height, width)
    rng = np.random.default_rng(seed)
    crops: list[tuple[int, int, int]] = [((height - short) // 2, (width - short) // 2, short)]
    for _ in range(n_crops * 40):
        if len(crops) >= n_crops:
            break
        side = int(short * rng.uniform(0.45, 0.8))
        top, left = int(rng.integers(0, height - side + 1)), int(rng.integers(0, width - side + 1))
        if all(_overlap((top, left, side), other) < 0.5 for other in crops[1:]):
            crops.append((top, left, side))
    return crops


def _overlap(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """Intersection over the smaller square's area."""
    dy = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    dx = max(0, min(a[1] + a[2], b[1] + b[2]) - max(a[1], b[1]))
    return dy * dx / min(a[2], b[2]) ** 2


def grabcut_mask(image: np.ndarray, box: tuple[int, int, int, int] | None = None, *, iterations: int = 5) -> np.ndarray:
    """A foreground mask from OpenCV GrabCut, for images that come without one.

    Parameters
    ----------
    image : ndarray of shape (height, width, 3), uint8
    box : (x, y, width, height) or None
        Rectangle around the object; None uses the image minus a 5 % border.
    iterations : int, default=5

    Returns
    -------
    mask : ndarray of shape (height, width), bool
    """
    height, width = image.shape[:2]
    if box is None:
        box = (int(width * 0.05), int(height * 0.05), int(width * 0.9), int(height * 0.9))
    labels = np.zeros((height, width), np.uint8)
    background, foreground = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
    bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    cv2.grabCut(bgr, labels, box, background, foreground, iterations, cv2.GC_INIT_WITH_RECT)
    return (labels == cv2.GC_FGD) | (labels == cv2.GC_PR_FGD)
