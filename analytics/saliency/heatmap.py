"""How a saliency map is drawn over its image: one heat map shared by the pages and the report."""

from __future__ import annotations

import cv2
import numpy as np

#: OpenCV colour map of saliency (blue = low, red = high).
HEAT_MAP = cv2.COLORMAP_JET
#: Weight of the heat map when blended over the image.
OVERLAY_ALPHA = 0.5


def heat_colours(values: np.ndarray) -> np.ndarray:
    """RGB colours of :data:`HEAT_MAP` for ``values`` in [0, 1].

    Parameters
    ----------
    values : ndarray of shape (h, w), float in [0, 1]
        Any shape OpenCV's ``applyColorMap`` takes as one image (2-D in practice).

    Returns
    -------
    colours : ndarray of shape values.shape + (3,), uint8, RGB
    """
    return np.ascontiguousarray(cv2.applyColorMap(np.uint8(values * 255), HEAT_MAP)[..., ::-1])


def heat_overlay(image: np.ndarray, saliency: np.ndarray, *, alpha: float = OVERLAY_ALPHA) -> np.ndarray:
    """The heat map of ``saliency`` blended over ``image``.

    Parameters
    ----------
    image : ndarray of shape (h, w, 3), uint8, RGB
    saliency : ndarray of shape (h', w'), float
        Clipped to [0, 1]; resized (bilinear) to (h, w) when its size differs.
    alpha : float, default=0.5
        Weight of the heat map.

    Returns
    -------
    ndarray of shape (h, w, 3), uint8
    """
    values = np.clip(saliency, 0, 1).astype(np.float32)
    if values.shape != image.shape[:2]:
        values = cv2.resize(values, image.shape[1::-1], interpolation=cv2.INTER_LINEAR)
    return cv2.addWeighted(np.ascontiguousarray(image), 1 - alpha, heat_colours(values), alpha, 0)
