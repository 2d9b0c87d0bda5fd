"""Masks proposed for photos that come without one: GrabCut from a centred box.

An import of ordinary photos (no mask files, no transparency) can ask for a proposed mask per photo
(:func:`analytics.data.read_targets` with ``propose_masks=True``): the photo is fitted to the
workspace's square first, then OpenCV GrabCut runs from a box centred on it, ``margin`` of the side
in from each edge (objects in snapshots sit near the centre). A person reviews the proposals (the
Data page's grid: accept, redraw with another margin, or drop) before they are stored.
"""

from __future__ import annotations

import numpy as np

from analytics._validation import check_fraction, check_positive_int
from analytics.exceptions import InvalidInputError

from .images import check_mask_share, grabcut_mask

DEFAULT_MARGIN = 0.1  # of the side, from each edge: the box covers the central 80 %
MAX_MARGIN = 0.4  # a wider margin leaves a box of under a fifth of the side


def centred_box(size: int, margin: float) -> tuple[int, int, int, int]:
    """``(x, y, width, height)`` of the box ``margin`` of ``size`` in from each edge of a square."""
    inset = round(size * margin)
    return inset, inset, size - 2 * inset, size - 2 * inset


def propose_mask(image: np.ndarray, *, margin: float = DEFAULT_MARGIN, iterations: int = 5, origin: str = "image") -> np.ndarray:
    """GrabCut's foreground in a square image, from a box ``margin`` in from each edge.

    Parameters
    ----------
    image : ndarray of shape (size, size, 3), uint8
    margin : float in (0, 0.4], default=0.1
    iterations : int, default=5
    origin : str
        The file named when the result is refused.

    Returns
    -------
    mask : ndarray of shape (size, size), bool

    Raises
    ------
    InvalidInputError
        A bad margin, or a mask that is empty or covers nearly the whole image (try another margin).
    """
    margin = check_fraction(margin, "margin")
    if margin > MAX_MARGIN:
        raise InvalidInputError(f"margin must be at most {MAX_MARGIN} of the side; got {margin}")
    iterations = check_positive_int(iterations, "iterations")
    mask = grabcut_mask(image, centred_box(image.shape[0], margin), iterations=iterations)
    try:
        check_mask_share(mask, origin)
    except InvalidInputError:
        found, change = ("no object", "a smaller margin (a larger box)") if mask.mean() < 0.5 else ("no background", "a larger margin")
        raise InvalidInputError(
            f"{origin}: GrabCut from a box {margin:.0%} in from each edge found {found} ({mask.mean():.1%} of the image); "
            f"redraw it with {change}, or drop the photo"
        ) from None
    return mask
