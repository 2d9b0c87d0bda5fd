"""Sizes a COCO JSON declares are never trusted (:mod:`analytics.data.coco`): an image entry must match
its file's header, read without decoding, and the file must be within the pixel limit, before
pycocotools rasterises or decodes any mask; a 1 KB JSON declaring a 20,000,000-pixel side is refused
in one line without a large allocation (it used to take gigabytes, then crash inside pycocotools)."""

from __future__ import annotations

import tracemalloc
import zipfile

import numpy as np
import pytest
from PIL import Image
from pycocotools import mask as coco_mask

from analytics.data import images
from analytics.data.coco import read_coco
from analytics.exceptions import InvalidInputError
from tests.fixtures.coco import column_runs

HUGE = 20_000_000
SMALL = 10_000  # pixels: the fixture's masks are 2,400 and 1,296; anything larger is a declared size believed
SIZE = 36


@pytest.fixture
def rasterised(monkeypatch) -> list[tuple[int, int]]:
    """The (height, width) of every mask pycocotools is asked to make or measure; one past
    :data:`SMALL` fails the test before pycocotools sees it (the old import died there)."""
    sizes: list[tuple[int, int]] = []

    def record(height: int, width: int) -> None:
        sizes.append((height, width))
        if height * width > SMALL:
            pytest.fail(f"pycocotools asked for a {width}x{height} mask")

    def sized(rles):
        for rle in rles if isinstance(rles, list) else [rles]:
            record(*rle["size"])

    real = {name: getattr(coco_mask, name) for name in ("frPyObjects", "area", "merge", "decode")}
    monkeypatch.setattr(coco_mask, "frPyObjects", lambda objects, h, w: (record(h, w), real["frPyObjects"](objects, h, w))[1])
    for name in ("area", "merge", "decode"):
        monkeypatch.setattr(coco_mask, name, lambda rles, *rest, _real=real[name]: (sized(rles), _real(rles, *rest))[1])
    return sizes


@pytest.fixture
def pixel_limit(monkeypatch):
    """No ``$BACKDROP_MAX_IMAGE_PIXELS`` unless a test sets it; Pillow's limit restored afterwards."""
    monkeypatch.delenv(images.MAX_IMAGE_PIXELS_ENV_VAR, raising=False)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", Image.MAX_IMAGE_PIXELS)
    return monkeypatch


def declare_huge(data: dict, segmentation) -> None:
    """b.png (36x36, image 2) declared HUGE x HUGE, its annotation 5 drawn at that size."""
    image = next(i for i in data["images"] if i["id"] == 2)
    image.update(width=HUGE, height=HUGE)
    next(a for a in data["annotations"] if a["id"] == 5).update(segmentation=segmentation)


def compress(runs: list[int]) -> str:
    """COCO's compressed counts of ``runs`` (what pycocotools' ``rleToString`` writes), written out here
    to make an RLE of a size no array could hold."""
    out = []
    for number, run in enumerate(runs):
        value = run - runs[number - 2] if number > 2 else run
        more = True
        while more:
            chunk, value = value & 0x1F, value >> 5
            more = value != -1 if chunk & 0x10 else value != 0
            out.append(chr(chunk + 48 + (0x20 if more else 0)))
    return "".join(out)


HALF = HUGE * HUGE // 2
SEGMENTATIONS = {  # all inside the declared image, as a checker trusting the JSON would find them
    "polygon": [[0, 0, HUGE, 0, HUGE, HUGE, 0, HUGE // 2]],
    "RLE counts": {"size": [HUGE, HUGE], "counts": [HALF, HALF]},
    "compressed RLE": {"size": [HUGE, HUGE], "counts": compress([HALF, HALF])},
}


def test_compress_writes_cocos_counts():
    mask = np.zeros((9, 7), np.uint8, order="F")
    mask[2:7, 1:5] = 1
    mask[4, 6] = 1
    assert compress(column_runs(mask.astype(bool))) == coco_mask.encode(mask)["counts"].decode()


@pytest.mark.parametrize("kind", ["polygon", "RLE counts", "compressed RLE"])
def test_a_huge_declared_size_is_refused_from_the_header_before_any_mask_is_made(coco_export, rasterised, kind):
    coco_export.rewrite(lambda d: declare_huge(d, SEGMENTATIONS[kind]))
    assert coco_export.annotations.stat().st_size < 2000
    tracemalloc.start()
    try:
        with pytest.raises(InvalidInputError) as caught:
            read_coco(coco_export.annotations, coco_export.images, size=SIZE)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(coco_export.annotations))
    assert f"annotation 5: image {coco_export.images / 'b.png'} is 36x36 pixels but the JSON declares {HUGE}x{HUGE} for image 2" in message
    assert all(h * w <= SMALL for h, w in rasterised)  # a.png's masks may be made first; never one at the declared size
    assert (HUGE, HUGE) not in rasterised
    assert peak < 20 * 2**20  # bytes: no array at the declared size either


def test_a_huge_declared_size_in_a_zip_names_the_zip(coco_export, tmp_path, rasterised):
    coco_export.rewrite(lambda d: declare_huge(d, SEGMENTATIONS["polygon"]))
    archive = tmp_path / "images.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in coco_export.images.iterdir():
            zipped.write(path, path.name)
    with pytest.raises(InvalidInputError, match=rf"image {archive}/b.png is 36x36 pixels but the JSON declares {HUGE}x{HUGE}"):
        read_coco(coco_export.annotations, archive, size=SIZE)
    assert (HUGE, HUGE) not in rasterised


def test_an_rle_of_the_declared_size_but_not_the_files_is_refused_before_decoding(coco_export, rasterised):
    """b.png is 36x36; the JSON says 48x36 and its RLE agrees with the JSON: the file decides."""

    def taller(data: dict) -> None:
        next(i for i in data["images"] if i["id"] == 2).update(height=48)
        next(a for a in data["annotations"] if a["id"] == 5)["segmentation"] = {"size": [48, 36], "counts": [100, 200, 48 * 36 - 300]}

    coco_export.rewrite(taller)
    with pytest.raises(InvalidInputError, match=r"annotation 5: image .*b.png is 36x36 pixels but the JSON declares 36x48 for image 2"):
        read_coco(coco_export.annotations, coco_export.images, size=SIZE)
    assert (48, 36) not in rasterised


@pytest.mark.parametrize("limit", [2000, 1000])  # Pillow only warns up to twice its limit, then refuses itself
def test_an_image_past_the_pixel_limit_is_refused_from_its_header(coco_export, rasterised, pixel_limit, limit):
    pixel_limit.setenv(images.MAX_IMAGE_PIXELS_ENV_VAR, str(limit))  # a.png is 60x40 = 2,400 pixels
    pixel_limit.setattr(images.cv2, "imdecode", lambda *a: pytest.fail("decoded an image"))
    with pytest.raises(InvalidInputError) as caught:
        read_coco(coco_export.annotations, coco_export.images, size=SIZE)
    message = str(caught.value)
    assert "\n" not in message
    assert f"annotation 1: {coco_export.images / 'a.png'}: image is " in message
    assert ("60x40 pixels" in message or "2400 pixels" in message) and f"past the limit of {limit} pixels" in message
    assert rasterised == []  # a.png is the first image needed: nothing was made before its header was read
