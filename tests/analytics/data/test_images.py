"""Reading images and masks, mask checks, fitting to a square, deterministic crops."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import warnings
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from analytics.data import check_mask_share, fit_square, images, is_image_file, read_image, read_image_rgba
from analytics.data.images import fit_target, read_image_size, read_mask, square_crops
from analytics.exceptions import InvalidInputError


def write_rgb(path, rgb: np.ndarray) -> None:
    cv2.imwrite(str(path), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))


def test_read_image_returns_rgb(tmp_path):
    rgb = np.zeros((4, 6, 3), np.uint8)
    rgb[..., 0] = 200  # red
    write_rgb(tmp_path / "red.png", rgb)
    image = read_image(tmp_path / "red.png")
    assert image.shape == (4, 6, 3) and image.dtype == np.uint8
    np.testing.assert_array_equal(image, rgb)


def test_grey_and_16_bit_images_become_8_bit_rgb(tmp_path):
    cv2.imwrite(str(tmp_path / "grey.png"), np.full((3, 3), 90, np.uint8))
    cv2.imwrite(str(tmp_path / "deep.png"), np.full((3, 3, 3), 65535, np.uint16))
    assert (read_image(tmp_path / "grey.png") == 90).all()
    deep = read_image(tmp_path / "deep.png")
    assert deep.dtype == np.uint8 and (deep == 255).all()


def test_alpha_is_kept_or_opaque(tmp_path):
    bgra = np.zeros((5, 5, 4), np.uint8)
    bgra[1:3, 1:3] = (0, 0, 255, 255)
    cv2.imwrite(str(tmp_path / "cut.png"), bgra)
    rgba = read_image_rgba(tmp_path / "cut.png")
    assert rgba[1, 1].tolist() == [255, 0, 0, 255] and rgba[0, 0, 3] == 0
    write_rgb(tmp_path / "plain.png", np.zeros((2, 2, 3), np.uint8))
    assert (read_image_rgba(tmp_path / "plain.png")[..., 3] == 255).all()


@pytest.mark.parametrize(
    "content, message",
    [(b"\x89PNG\r\n\x1a\n garbage", "not a readable image"), (b"", "not a readable image"), (None, "file not found")],
)
def test_unreadable_images_give_one_line_naming_the_file(tmp_path, content, message):
    path = tmp_path / "broken.png"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InvalidInputError, match=message) as info:
        read_image(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("high", [255, 1])
def test_png_masks_with_0_255_or_0_1_values(tmp_path, high):
    mask = np.zeros((4, 5), np.uint8)
    mask[1:3, 2:4] = high
    cv2.imwrite(str(tmp_path / "m.png"), mask)
    np.testing.assert_array_equal(read_mask(tmp_path / "m.png", (4, 5)), mask > 0)


def test_npy_masks_incl_channels(tmp_path):
    mask = np.zeros((4, 5, 3), np.float32)
    mask[0, 0, 1] = 1.0
    np.save(tmp_path / "m.npy", mask)
    read = read_mask(tmp_path / "m.npy", (4, 5))
    assert read.dtype == bool and read.sum() == 1 and read[0, 0]


def test_mask_of_another_size_names_file_and_sizes(tmp_path):
    cv2.imwrite(str(tmp_path / "m.png"), np.zeros((4, 5), np.uint8))
    with pytest.raises(InvalidInputError, match=r"m.png: mask is 5x4 but its image is 6x3") as info:
        read_mask(tmp_path / "m.png", (3, 6))
    assert "\n" not in str(info.value)


def test_unreadable_and_missing_masks(tmp_path):
    (tmp_path / "bad.npy").write_bytes(b"nope")
    with pytest.raises(InvalidInputError, match="bad.npy: not a readable .npy mask"):
        read_mask(tmp_path / "bad.npy", (2, 2))
    with pytest.raises(InvalidInputError, match="absent.png: mask file not found"):
        read_mask(tmp_path / "absent.png", (2, 2))


def test_empty_and_full_masks_are_refused():
    empty, full = np.zeros((20, 20), bool), np.ones((20, 20), bool)
    with pytest.raises(InvalidInputError, match=r"^a.png: mask is empty"):
        check_mask_share(empty, "a.png")
    with pytest.raises(InvalidInputError, match=r"^b.png: mask covers 100.0% .*inverted"):
        check_mask_share(full, "b.png")
    half = np.zeros((20, 20), bool)
    half[:10] = True
    check_mask_share(half, "c.png")


def test_a_mask_below_the_floor_is_refused_with_its_share_and_the_fix():
    """Issue 48: a 5-pixel object on 640 x 480 was refused as "mask is empty (0.00%)"; the message now
    gives its share, the floor (0.2 %) and what to do; a lower floor (an instance import's min_area) lets it through."""
    tiny = np.zeros((480, 640), bool)
    tiny[100, 100:105] = True
    with pytest.raises(InvalidInputError) as refused:
        check_mask_share(tiny, "a.png")
    assert str(refused.value) == (
        "a.png: mask covers 0.0016% of the image, smaller than 0.2% of the image (the smallest object a target may have); "
        "crop the image closer to the object or draw a larger mask"
    )
    check_mask_share(tiny, "a.png", min_share=0)
    image = np.zeros((480, 640, 3), np.uint8)
    with pytest.raises(InvalidInputError, match=r"^a.png: mask covers 0.0016% .* smaller than 0.2% of the image"):
        fit_target(image, tiny, 64, origin="a.png")
    # row 100 falls between the rows a nearest resize to 256 samples: the pixels the line touches are kept instead
    fitted = fit_target(image, tiny, 256, origin="a.png", min_share=0)[1]
    assert np.argwhere(fitted).tolist() == [[53, 53], [53, 54], [53, 55]]


@pytest.mark.parametrize("left", [0, 70, 180])
def test_fit_square_keeps_the_whole_object(left):
    image = np.random.default_rng(0).integers(0, 255, (100, 200, 3), dtype=np.uint8)
    mask = np.zeros((100, 200), bool)
    mask[30:60, left : left + 20] = True
    fitted, fitted_mask = fit_square(image, mask, 100)  # side = shorter side: a crop, no resizing
    assert fitted.shape == (100, 100, 3) and fitted_mask.shape == (100, 100)
    assert fitted_mask.sum() == mask.sum()
    rows, cols = np.nonzero(fitted_mask)
    np.testing.assert_array_equal(fitted[rows, cols], image[mask])


def test_fit_square_pads_when_the_object_is_wider_than_the_square():
    image = np.full((50, 200, 3), 9, np.uint8)
    mask = np.zeros((50, 200), bool)
    mask[10:40, 5:195] = True  # 190 px wide, the square would be 50
    fitted, fitted_mask = fit_square(image, mask, 200)
    assert fitted_mask.sum() == mask.sum()
    assert (fitted == 9).all()  # edge padding repeats the image


def test_fit_square_resizes_and_keeps_masks_boolean():
    image = np.zeros((300, 400, 3), np.uint8)
    mask = np.zeros((300, 400), bool)
    mask[100:200, 150:250] = True
    fitted, fitted_mask = fit_square(image, mask, 64)
    assert fitted.shape == (64, 64, 3) and fitted_mask.dtype == bool
    assert abs(fitted_mask.mean() - 100 * 100 / 300**2) < 0.02
    assert fit_square(image, None, 32)[1] is None


def test_square_crops_are_deterministic_distinct_and_inside():
    photo = np.zeros((1600, 2560, 3), np.uint8)
    crops = square_crops(photo, 8, seed=3)
    assert crops == square_crops(photo, 8, seed=3)
    assert crops != square_crops(photo, 8, seed=4)
    assert 5 <= len(crops) <= 8 and len(set(crops)) == len(crops)  # rejection sampling may stop short
    assert crops[0] == (0, 480, 1600)  # the overview: the centred square of the shorter side
    for top, left, side in crops:
        assert 0 <= top and top + side <= 1600 and 0 <= left and left + side <= 2560
    for a, b in itertools.combinations(crops[1:], 2):
        dy = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
        dx = max(0, min(a[1] + a[2], b[1] + b[2]) - max(a[1], b[1]))
        assert dy * dx / min(a[2], b[2]) ** 2 < 0.5
    assert all(0.45 * 1600 - 1 <= side <= 0.8 * 1600 for _, _, side in crops[1:])


def test_square_crops_of_a_nearly_square_photo_still_yield_details():
    # 1280x1024: every detail overlaps the 1024 px overview by more than half, so the overview
    # must not block them (it did: such photos gave a single crop whatever was asked)
    assert len(square_crops(np.zeros((1024, 1280, 3), np.uint8), 3, seed=0)) == 3
    assert square_crops(np.zeros((10, 10, 3), np.uint8), 1, seed=0) == [(0, 0, 10)]


def test_is_image_file():
    assert is_image_file("a/B.JPEG") and is_image_file("x.webp")
    assert not is_image_file("mask.npy") and not is_image_file("notes.txt")


def test_fit_square_without_a_mask_takes_the_centre():
    image = np.zeros((100, 300, 3), np.uint8)
    image[:, 100:200] = 255
    assert (fit_square(image, None, 100)[0] == 255).all()
    assert (fit_square(image.transpose(1, 0, 2), None, 100)[0] == 255).all()


def test_a_corrupt_png_gives_one_error_and_nothing_from_the_decoders_on_stderr(tmp_path):
    ok, data = cv2.imencode(".png", np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8))
    assert ok
    broken = bytearray(data.tobytes())
    broken[60:200] = bytes(140)  # zeroes inside the IDAT chunk: its CRC no longer matches
    (tmp_path / "crc.png").write_bytes(bytes(broken))
    (tmp_path / "short.png").write_bytes(data.tobytes()[:100])
    script = (
        "import sys\n"
        "from analytics.exceptions import InvalidInputError\n"
        "from analytics.data import read_image\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        read_image(name)\n"
        "    except InvalidInputError as err:\n"
        "        print(err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "crc.png"), str(tmp_path / "short.png")],
        capture_output=True, text=True, cwd=Path(__file__).parents[3], check=True,
    )
    assert done.stderr == ""  # no "[ERROR:0@...]" / "[ WARN:0@...] grfmt_png.cpp" / "libpng error" lines
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all("not a readable image" in line for line in lines)
    assert "crc.png" in lines[0] and "CRC error" in lines[0]  # what libpng said is kept, in Backdrop's message


def test_stderr_and_decoding_work_as_before_after_a_corrupt_image(tmp_path, capfd):
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    with pytest.raises(InvalidInputError, match="bad.png: not a readable image"):
        read_image(tmp_path / "bad.png")
    os.write(2, b"still here\n")  # file descriptor 2 is back where it was
    assert capfd.readouterr().err == "still here\n"
    rgb = np.full((5, 7, 3), (10, 20, 30), np.uint8)
    write_rgb(tmp_path / "good.png", rgb)
    np.testing.assert_array_equal(read_image(tmp_path / "good.png"), rgb)


def png_declaring(width: int, height: int) -> bytes:
    """A 100x100 PNG of zeros whose IHDR chunk (CRC fixed) declares ``width`` x ``height``: tiny on
    disk, gigabytes if decoded."""
    ok, data = cv2.imencode(".png", np.zeros((100, 100), np.uint8))
    assert ok
    png = bytearray(data.tobytes())
    assert png[12:16] == b"IHDR"
    png[16:24] = width.to_bytes(4, "big") + height.to_bytes(4, "big")
    png[29:33] = zlib.crc32(bytes(png[12:29])).to_bytes(4, "big")
    return bytes(png)


@pytest.fixture
def pixel_limit(monkeypatch):
    """No ``$BACKDROP_MAX_IMAGE_PIXELS`` unless a test sets it; Pillow's limit restored afterwards."""
    monkeypatch.delenv(images.MAX_IMAGE_PIXELS_ENV_VAR, raising=False)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", Image.MAX_IMAGE_PIXELS)
    return monkeypatch


def test_a_huge_image_is_refused_from_its_header_without_decoding(tmp_path, pixel_limit):
    path = tmp_path / "bomb.png"
    path.write_bytes(png_declaring(20000, 20000))
    assert path.stat().st_size < 1000
    pixel_limit.setattr(images.cv2, "imdecode", lambda *a: pytest.fail("decoded an image past the limit"))
    for read in (read_image, lambda p: read_mask(p, (20000, 20000))):
        with pytest.raises(InvalidInputError) as info:
            read(path)
        message = str(info.value)
        assert "\n" not in message  # Pillow gives the pixel count alone past twice the limit
        assert re.match(rf"{re.escape(str(path))}: image is (20000x20000|400000000) pixels \(400.0 megapixels\)", message)
        assert f"limit of {images.MAX_IMAGE_PIXELS} pixels" in message
        assert "BACKDROP_MAX_IMAGE_PIXELS=400000000" in message
    assert Image.MAX_IMAGE_PIXELS == images.MAX_IMAGE_PIXELS  # Pillow's own limit is the same


@pytest.mark.parametrize("limit", [6000, 4000])  # Pillow only warns up to twice its limit, then refuses itself
def test_the_environment_variable_sets_the_limit(tmp_path, pixel_limit, limit):
    write_rgb(tmp_path / "photo.png", np.zeros((100, 100, 3), np.uint8))
    pixel_limit.setenv("BACKDROP_MAX_IMAGE_PIXELS", str(limit))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no DecompressionBombWarning escapes
        with pytest.raises(InvalidInputError, match=rf"photo.png: image is (100x100 pixels|10000 pixels) .* limit of {limit} pixels") as info:
            read_image(tmp_path / "photo.png")
    assert "\n" not in str(info.value) and "BACKDROP_MAX_IMAGE_PIXELS=10000" in str(info.value)
    assert Image.MAX_IMAGE_PIXELS == limit
    pixel_limit.setenv("BACKDROP_MAX_IMAGE_PIXELS", "10000")
    assert read_image(tmp_path / "photo.png").shape == (100, 100, 3)
    (tmp_path / "bomb.png").write_bytes(png_declaring(20000, 20000))
    pixel_limit.setenv("BACKDROP_MAX_IMAGE_PIXELS", "400000000")  # raised past it: decoded, found broken
    with pytest.raises(InvalidInputError, match="bomb.png: not a readable image"):
        read_image(tmp_path / "bomb.png")


def test_the_size_of_an_image_is_read_from_its_header_alone(tmp_path, pixel_limit):
    write_rgb(tmp_path / "photo.png", np.zeros((30, 50, 3), np.uint8))
    (tmp_path / "bomb.png").write_bytes(png_declaring(20000, 20000))
    pixel_limit.setattr(images.cv2, "imdecode", lambda *a: pytest.fail("decoded an image to read its size"))
    assert read_image_size(tmp_path / "photo.png") == (50, 30)  # (width, height)
    with pytest.raises(InvalidInputError, match=rf"bomb.png: image is .* limit of {images.MAX_IMAGE_PIXELS} pixels") as info:
        read_image_size(tmp_path / "bomb.png")
    assert "\n" not in str(info.value)
    pixel_limit.setenv("BACKDROP_MAX_IMAGE_PIXELS", "700")  # past twice Pillow's limit: it names the count alone
    with pytest.raises(InvalidInputError, match=r"photo.png: image is 1500 pixels .* limit of 700 pixels"):
        read_image_size(tmp_path / "photo.png")
    pixel_limit.setenv("BACKDROP_MAX_IMAGE_PIXELS", "400000000")
    assert read_image_size(tmp_path / "bomb.png") == (20000, 20000)  # its pixel data is broken: never read
    (tmp_path / "notes.png").write_text("not a png")
    with pytest.raises(InvalidInputError, match="notes.png: not a readable image"):
        read_image_size(tmp_path / "notes.png")
    with pytest.raises(InvalidInputError, match="gone.png: file not found"):
        read_image_size(tmp_path / "gone.png")


@pytest.mark.parametrize("value", ["lots", "0", "-5"])
def test_a_bad_limit_in_the_environment_is_named(tmp_path, pixel_limit, value):
    write_rgb(tmp_path / "photo.png", np.zeros((4, 4, 3), np.uint8))
    pixel_limit.setenv("BACKDROP_MAX_IMAGE_PIXELS", value)
    with pytest.raises(InvalidInputError, match="BACKDROP_MAX_IMAGE_PIXELS must be a positive whole number"):
        read_image(tmp_path / "photo.png")


def test_a_header_pillow_cannot_read_is_not_decoded(tmp_path, pixel_limit):
    png = bytearray(png_declaring(100, 100))
    png[29] ^= 0xFF  # IHDR's CRC no longer matches
    (tmp_path / "ihdr.png").write_bytes(bytes(png))
    pixel_limit.setattr(images.cv2, "imdecode", lambda *a: pytest.fail("decoded an image of unknown size"))
    with pytest.raises(InvalidInputError, match="ihdr.png: not a readable image") as info:
        read_image(tmp_path / "ihdr.png")
    assert "\n" not in str(info.value)
    with pytest.raises(InvalidInputError, match="ihdr.png: not a readable mask image"):
        read_mask(tmp_path / "ihdr.png", (100, 100))


@pytest.mark.parametrize(
    "failure",
    [MemoryError(), cv2.error("OpenCV(5.0.0) grfmt_png.cpp:42: error: (-4:Insufficient memory) Failed to allocate 1600000000 bytes\n")],
)
def test_decoder_failures_become_one_line_naming_the_file(tmp_path, pixel_limit, failure):
    write_rgb(tmp_path / "photo.png", np.zeros((4, 4, 3), np.uint8))

    def fail(*args):
        raise failure

    pixel_limit.setattr(images.cv2, "imdecode", fail)
    for read in (read_image, lambda p: read_mask(p, (4, 4))):
        with pytest.raises(InvalidInputError, match=r"photo.png: could not decode the image \((out of memory|.*Insufficient memory)") as info:
            read(tmp_path / "photo.png")
        assert "\n" not in str(info.value) and "BACKDROP_MAX_IMAGE_PIXELS" in str(info.value)
    os.write(2, b"")  # descriptor 2 is back after the failure
