"""Synthesis of test images: paste the object onto a new background (Liao & Chen, Eq. 1), then
Laplacian-pyramid blending along the mask edge.

    y = m ⊗ x + (1 − m) ⊗ b

Blending (Burt & Adelson 1983) mixes the Laplacian pyramids of the hard paste's two sources with a
Gaussian pyramid of the mask, which hides the seam. It is applied only in a band around the mask
edge: inside the eroded mask the pixels stay exactly the object's, outside the dilated mask exactly
the background's, so no generative or global change reaches the object.

Half of the blend depends on the object only (hard mask, seam band, the mask's Gaussian pyramid,
the object's pixels in float); :class:`Cutout` computes it once per object and then pastes onto any
number of backgrounds, about a millisecond per 256 px composite. Only seam pixels are taken from
the blend.
"""

from __future__ import annotations

import cv2
import numpy as np

from analytics._validation import check_image_batch, check_mask_batch, check_positive_int
from analytics.exceptions import InvalidInputError


class Cutout:
    """An object ready to be pasted onto many backgrounds (the per-object half of the work).

    Parameters
    ----------
    image : ndarray of shape (height, width, 3), uint8
        The target image x.
    mask : ndarray of shape (height, width), bool or float in [0, 1]
        Its foreground mask m (1 = object).
    levels : int, default=4
        Pyramid levels of the blend (fewer on small images: the coarsest level keeps >= 4 px).
    band : int, default=3
        Half-width in pixels of the edge band where blending applies.

    Attributes
    ----------
    image, mask : ndarray
        As given (the mask as float32).
    levels : int
        Pyramid levels used.
    hard : ndarray of shape (height, width), uint8
        1 where the mask is over 0.5.
    binary : bool
        Whether the mask holds only 0 and 1 (then Eq. 1 is a masked copy).
    alpha : ndarray of shape (height, width, 1), float32
        The mask inside ``hard``, 0 outside: Eq. 1's weight.
    seam : ndarray of shape (height, width), uint8
        1 in the band around the outline where the blend replaces the paste.
    object : ndarray of shape (height, width, 3), float32
        The object's pixels inside ``hard``, 0 outside.
    weights : list of ndarray of shape (height_l, width_l, 3), float32
        The mask's Gaussian pyramid, level 0 first (``levels`` + 1 arrays).
    These are read by :mod:`analytics.inference.device_blend`, which pastes on an accelerator.

    Examples
    --------
    >>> x = np.full((8, 8, 3), 200, np.uint8); m = np.zeros((8, 8), bool); m[2:6, 2:6] = True
    >>> Cutout(x, m).paste(np.zeros((2, 8, 8, 3), np.uint8), blend=False)[:, 3, 3, 0]
    array([200, 200], dtype=uint8)
    """

    def __init__(self, image: np.ndarray, mask: np.ndarray, *, levels: int = 4, band: int = 3) -> None:
        image = check_image_batch(np.asarray(image)[None], "image")[0]
        mask = check_mask_batch(np.asarray(mask)[None], (1, *image.shape[:2]), "mask")[0]
        check_positive_int(levels, "levels")
        check_positive_int(band, "band")
        self.image, self.mask = image, mask
        self.levels = max(0, min(levels, int(np.log2(min(image.shape[:2]))) - 2))
        hard = (mask > 0.5).astype(np.uint8)
        self.hard = hard
        self.binary = bool(((mask == 0) | (mask == 1)).all())
        # A soft mask may fade far beyond the object; its tail outside the hard mask is the original
        # scene, so it weighs nothing there (the seam blend below softens the edge instead).
        self.alpha = np.where(hard > 0, mask, 0.0).astype(np.float32)[..., None]
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * band + 1, 2 * band + 1))
        self.seam = (cv2.dilate(hard, kernel) > cv2.erode(hard, kernel)).astype(np.uint8)
        self.object = np.where(hard[..., None] == 0, 0.0, image.astype(np.float32)).astype(np.float32)
        weights = [mask]
        for _ in range(self.levels):
            weights.append(cv2.pyrDown(weights[-1]))
        self.weights = [cv2.merge([w, w, w]) for w in weights]

    def paste(self, backgrounds: np.ndarray, *, blend: bool = True) -> np.ndarray:
        """The object on each background (Eq. 1), blended along its outline.

        Parameters
        ----------
        backgrounds : ndarray of shape (n, height, width, 3), uint8
            Scenes of the image's size.
        blend : bool, default=True
            Laplacian-pyramid blending in the seam band; False gives the hard paste of Eq. 1.

        Returns
        -------
        composites : ndarray of shape (n, height, width, 3), uint8
        """
        backgrounds = check_image_batch(backgrounds, "backgrounds")
        if backgrounds.shape[1:] != self.image.shape:
            raise InvalidInputError(f"backgrounds must have the image's shape {self.image.shape}; got {backgrounds.shape[1:]}")
        out = backgrounds.copy()
        for k, background in enumerate(backgrounds):
            self._paste_one(background, out[k])
            if blend:
                cv2.copyTo(self._pyramid_blend(background), self.seam, out[k])
        return out

    def _paste_one(self, background: np.ndarray, out: np.ndarray) -> None:
        """Eq. 1 into ``out``, which holds a copy of ``background``."""
        if self.binary:  # the usual case: a masked copy
            cv2.copyTo(self.image, self.hard, out)
            return
        m = self.alpha
        out[:] = (m * self.image + (1 - m) * background).round().astype(np.uint8)

    def _pyramid_blend(self, background: np.ndarray) -> np.ndarray:
        """Laplacian-pyramid blend of the object onto one background.

        Blending is linear, so blend(x, b) = b + collapse(G(m) * L(x - b)): one pyramid of the
        difference instead of one per source (half the work, same result). Outside the mask x is
        replaced by b first, so the original scene never leaks into the seam (it showed as a halo).

        The full-size steps after the first are OpenCV calls, which release the GIL while they
        run, so compositing threads overlap (numpy's masked assignment and rounding held it).
        """
        base = background.astype(np.float32)
        zeros = np.zeros(self.object.shape, np.float32)
        difference = cv2.subtract(self.object, base, dst=zeros, mask=self.hard)  # x - b inside, 0 outside
        diff = [difference]
        for _ in range(self.levels):
            diff.append(cv2.pyrDown(diff[-1]))
        acc = cv2.multiply(self.weights[-1], diff[-1])
        for level in range(self.levels - 1, -1, -1):
            size = (diff[level].shape[1], diff[level].shape[0])
            detail = cv2.subtract(diff[level], cv2.pyrUp(diff[level + 1], dstsize=size))
            acc = cv2.add(cv2.pyrUp(acc, dstsize=size), cv2.multiply(self.weights[level], detail))
        # Saturating and rounding half to even: clip(b + acc).round() (with a uint8 b OpenCV rounds ties otherwise).
        return cv2.add(base, acc, dtype=cv2.CV_8U)


def composite(
    images: np.ndarray,
    masks: np.ndarray,
    backgrounds: np.ndarray,
    *,
    blend: bool = True,
    levels: int = 4,
    band: int = 3,
) -> np.ndarray:
    """Composite each object onto its background (one :class:`Cutout` per row).

    Parameters
    ----------
    images : ndarray of shape (n, height, width, 3), uint8
        The target images x_i.
    masks : ndarray of shape (n, height, width), bool or float in [0, 1]
        Foreground masks m_i (1 = object).
    backgrounds : ndarray of shape (n, height, width, 3), uint8
        The scenes b_j, one per image.
    blend : bool, default=True
        Laplacian-pyramid blending along the mask edge; False gives the hard paste of Eq. 1.
    levels : int, default=4
        Pyramid levels of the blend.
    band : int, default=3
        Half-width in pixels of the edge band where blending applies.

    Returns
    -------
    composites : ndarray of shape (n, height, width, 3), uint8

    Examples
    --------
    >>> x = np.full((1, 8, 8, 3), 200, np.uint8); b = np.zeros_like(x)
    >>> m = np.zeros((1, 8, 8), bool); m[0, 2:6, 2:6] = True
    >>> composite(x, m, b, blend=False)[0, 3, 3, 0], composite(x, m, b, blend=False)[0, 0, 0, 0]
    (np.uint8(200), np.uint8(0))
    """
    images = check_image_batch(images)
    backgrounds = check_image_batch(backgrounds, "backgrounds")
    if backgrounds.shape != images.shape:
        raise InvalidInputError(f"backgrounds must have the images' shape {images.shape}; got {backgrounds.shape}")
    masks = check_mask_batch(masks, images.shape[:3])
    check_positive_int(levels, "levels")
    check_positive_int(band, "band")
    out = np.empty_like(images)
    for i in range(len(images)):
        out[i] = Cutout(images[i], masks[i], levels=levels, band=band).paste(backgrounds[i : i + 1], blend=blend)[0]
    return out


def foreground_only(images: np.ndarray, masks: np.ndarray, *, fill: int = 0) -> np.ndarray:
    """m ⊗ x: the object on a constant background (used to pick the top-k embedding neurons).

    Parameters
    ----------
    images : ndarray of shape (n, height, width, 3), uint8
    masks : ndarray of shape (n, height, width), bool or float in [0, 1]
        A pixel is kept where its mask is over 0.5.
    fill : int, default=0
        Value of every other pixel.

    Returns
    -------
    objects : ndarray of shape (n, height, width, 3), uint8
    """
    images = check_image_batch(images)
    masks = check_mask_batch(masks, images.shape[:3])
    out = np.full_like(images, fill)
    keep = masks > 0.5
    out[keep] = images[keep]
    return out
