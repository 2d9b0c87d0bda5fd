"""Compositing: Eq. 1 (hard paste) and Laplacian-pyramid blending along the mask edge."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from analytics.data import Cutout, composite, foreground_only
from analytics.exceptions import InvalidInputError

SIZE = 64


def batch(n: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bright textured objects (discs of varying size) and dark textured backgrounds."""
    rng = np.random.default_rng(seed)
    images = rng.integers(170, 255, (n, SIZE, SIZE, 3), dtype=np.uint8)
    backgrounds = rng.integers(0, 60, (n, SIZE, SIZE, 3), dtype=np.uint8)
    yy, xx = np.mgrid[:SIZE, :SIZE]
    masks = np.stack([(yy - 32) ** 2 + (xx - 30 - i) ** 2 < (14 + 2 * i) ** 2 for i in range(n)])
    return images, masks, backgrounds


def band_masks(masks: np.ndarray, band: int) -> tuple[np.ndarray, np.ndarray]:
    """(inside the eroded mask, outside the dilated mask) with the blend's own kernel."""
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * band + 1, 2 * band + 1))
    inner = np.stack([cv2.erode(m.astype(np.uint8), kernel).astype(bool) for m in masks])
    outer = np.stack([~cv2.dilate(m.astype(np.uint8), kernel).astype(bool) for m in masks])
    return inner, outer


def seam_roughness(images: np.ndarray, masks: np.ndarray) -> float:
    """Mean gradient magnitude on the pixels along the mask edge."""
    edge = np.stack([cv2.morphologyEx(m.astype(np.uint8), cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8)).astype(bool) for m in masks])
    grey = images.astype(np.float32).mean(axis=-1)
    gy, gx = np.gradient(grey, axis=(1, 2))
    return float(np.hypot(gx, gy)[edge].mean())


def test_hard_paste_is_equation_1():
    images, masks, backgrounds = batch()
    out = composite(images, masks, backgrounds, blend=False)
    np.testing.assert_array_equal(out, np.where(masks[..., None], images, backgrounds))
    soft = masks * 0.75 + ~masks * 0.25  # semi-transparent object, a faint tail of the original scene
    alpha = (masks * 0.75)[..., None]  # the tail outside the object (m <= 0.5) weighs nothing
    expected = (alpha * images + (1 - alpha) * backgrounds).round().astype(np.uint8)
    np.testing.assert_array_equal(composite(images, soft, backgrounds, blend=False), expected)


@pytest.mark.parametrize("band", [2, 3, 5])
def test_blend_changes_only_the_seam(band):
    images, masks, backgrounds = batch()
    out = composite(images, masks, backgrounds, band=band)
    inner, outer = band_masks(masks, band)
    np.testing.assert_array_equal(out[inner], images[inner])  # the object's pixels stay the source's
    np.testing.assert_array_equal(out[outer], backgrounds[outer])
    assert not np.array_equal(out, composite(images, masks, backgrounds, blend=False))


def test_blend_makes_the_seam_smoother_than_a_hard_paste():
    images, masks, backgrounds = batch(4)
    hard = seam_roughness(composite(images, masks, backgrounds, blend=False), masks)
    blended = seam_roughness(composite(images, masks, backgrounds), masks)
    assert blended < 0.8 * hard


def test_batch_equals_one_image_at_a_time():
    images, masks, backgrounds = batch(4)
    together = composite(images, masks, backgrounds)
    alone = np.concatenate([composite(images[i : i + 1], masks[i : i + 1], backgrounds[i : i + 1]) for i in range(4)])
    np.testing.assert_array_equal(together, alone)


def test_a_cutout_pasted_on_many_backgrounds_equals_composite_row_by_row():
    images, masks, backgrounds = batch(4)
    for soft in (False, True):  # binary masks take the masked-copy path, soft ones the alpha mix
        mask = masks[0].astype(np.float32) * 0.8 + 0.1 if soft else masks[0]
        for blend in (True, False):
            pasted = Cutout(images[0], mask).paste(backgrounds, blend=blend)
            rows = composite(np.repeat(images[:1], 4, 0), np.repeat(mask[None], 4, 0), backgrounds, blend=blend)
            np.testing.assert_array_equal(pasted, rows)


def test_a_cutout_refuses_backgrounds_of_another_size():
    images, masks, backgrounds = batch(2)
    with pytest.raises(InvalidInputError, match="image's shape"):
        Cutout(images[0], masks[0]).paste(backgrounds[:, :8])


def test_inputs_are_not_changed_and_results_are_deterministic():
    images, masks, backgrounds = batch()
    copies = images.copy(), masks.copy(), backgrounds.copy()
    first = composite(images, masks, backgrounds)
    np.testing.assert_array_equal(first, composite(images, masks, backgrounds))
    for before, after in zip(copies, (images, masks, backgrounds)):
        np.testing.assert_array_equal(before, after)


def test_small_images_and_empty_batches():
    images, masks, backgrounds = batch()
    small = composite(images[:, :8, :8], masks[:, :8, :8], backgrounds[:, :8, :8], levels=6)
    assert small.shape == (3, 8, 8, 3)
    assert composite(images[:0], masks[:0], backgrounds[:0]).shape == (0, SIZE, SIZE, 3)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda i, m, b: (i, m, b[:2]), "backgrounds must have the images' shape"),
        (lambda i, m, b: (i.astype(np.float32), m, b), "images must be uint8"),
        (lambda i, m, b: (i[..., 0], m, b), r"images must have shape \(n, height, width, 3\)"),
        (lambda i, m, b: (i, m[:, :10], b), "masks must have shape"),
        (lambda i, m, b: (i, m * 2.0, b), r"masks must hold values in \[0, 1\]"),
    ],
)
def test_bad_inputs_are_refused(change, message):
    with pytest.raises(InvalidInputError, match=message):
        composite(*change(*batch()))


def test_bad_options_are_refused():
    with pytest.raises(InvalidInputError, match="levels must be an integer >= 1"):
        composite(*batch(), levels=0)
    with pytest.raises(InvalidInputError, match="band must be an integer >= 1"):
        composite(*batch(), band=1.5)


def test_foreground_only():
    images, masks, _ = batch()
    out = foreground_only(images, masks, fill=7)
    np.testing.assert_array_equal(out[masks], images[masks])
    assert (out[~masks] == 7).all()


@pytest.mark.parametrize("blend", [True, False])
def test_a_soft_mask_fading_far_beyond_the_object_lets_no_original_scene_through(blend):
    size, radius = 96, 24
    yy, xx = np.mgrid[:size, :size]
    disk = (yy - size / 2) ** 2 + (xx - size / 2) ** 2 <= radius**2
    image = np.zeros((size, size, 3), np.uint8)
    image[...] = (255, 0, 0)  # the original scene: pure red
    image[disk] = (128, 128, 128)  # the object: grey
    soft = cv2.GaussianBlur(disk.astype(np.float32), (0, 0), sigmaX=6)  # fades ~15 px beyond the disk
    assert soft[~cv2.dilate(disk.astype(np.uint8), np.ones((11, 11), np.uint8)).astype(bool)].max() > 0.01
    backgrounds = np.zeros((1, size, size, 3), np.uint8)
    backgrounds[..., 2] = 255  # the new scene: pure blue
    out = Cutout(image, soft).paste(backgrounds, blend=blend)[0].astype(int)
    reddish = (out[..., 0] > out[..., 1] + 30) & (out[..., 0] > 60)
    assert not reddish.any(), f"{reddish.sum()} pixels carry the original red scene"


def laplacian_pyramid(image: np.ndarray, levels: int) -> list[np.ndarray]:
    gaussian = [image]
    for _ in range(levels):
        gaussian.append(cv2.pyrDown(gaussian[-1]))
    sizes = [(g.shape[1], g.shape[0]) for g in gaussian]
    return [g - cv2.pyrUp(gaussian[k + 1], dstsize=sizes[k]) for k, g in enumerate(gaussian[:-1])] + [gaussian[-1]]


@pytest.mark.parametrize("soft", [False, True])
def test_the_seam_is_the_two_pyramid_blend_of_burt_and_adelson(soft):
    """Backdrop blends one pyramid of the difference; the textbook form blends the two sources'
    pyramids: L = G(m) L(x) + (1 - G(m)) L(b), collapsed (x is b outside the mask)."""
    images, masks, backgrounds = batch(3, seed=4)
    for image, mask, background in zip(images, masks, backgrounds):
        weights = cv2.GaussianBlur(mask.astype(np.float32), (9, 9), 3) if soft else mask.astype(np.float32)
        cutout = Cutout(image, weights)
        inside = (weights > 0.5)[..., None]
        x, b = np.where(inside, image, background).astype(np.float32), background.astype(np.float32)
        m = [weights]
        for _ in range(cutout.levels):
            m.append(cv2.pyrDown(m[-1]))
        blended = [mk[..., None] * lx + (1 - mk[..., None]) * lb for mk, lx, lb in zip(m, laplacian_pyramid(x, cutout.levels), laplacian_pyramid(b, cutout.levels))]
        out = blended[-1]
        for level in range(cutout.levels - 1, -1, -1):
            out = cv2.pyrUp(out, dstsize=(blended[level].shape[1], blended[level].shape[0])) + blended[level]
        textbook = np.clip(out, 0, 255).round().astype(np.uint8)
        seam = cutout.seam.astype(bool)
        pasted = cutout.paste(background[None])[0]
        assert seam.sum() > 50
        assert np.abs(pasted[seam].astype(int) - textbook[seam]).max() <= 1  # float rounding of two equal sums
