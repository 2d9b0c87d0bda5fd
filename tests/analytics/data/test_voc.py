"""Pascal VOC instance masks as targets (:mod:`analytics.data.voc`): a VOC folder written by hand
(two photos; palette PNGs with instances, a void border and a tiny instance), imported pixel for
pixel, each instance's class the majority under it, skips counted by reason, through the library and
the CLI; and every bad input refused in one line with nothing imported."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from analytics.data import LAYOUT_PATTERNS, TARGET_LAYOUTS, fit_square, list_targets, load_targets, read_image
from analytics.data.instances import NOT_LARGEST, OTHER_CATEGORY, TOO_SMALL
from analytics.data.voc import VOC_CLASSES, read_voc
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace
from tests.analytics.data.test_coco import SIZE, stored, workspace  # noqa: F401 (the fixture)
from tests.analytics.test_cli_data import run, snapshot

# the first photo is 36x36, test_coco's SIZE: stored as it is, so its masks compare with no fitting at all
FIRST, SECOND = "2007_000001", "2007_000002"
PERSON, CAT, DOG, BOTTLE, AEROPLANE = (VOC_CLASSES.index(name) + 1 for name in ("person", "cat", "dog", "bottle", "aeroplane"))
VOID = 255


def voc_palette() -> list[int]:
    """VOC's own colour map (index -> RGB by bit interleaving), so the PNGs look like VOC's."""
    palette = []
    for index in range(256):
        red = green = blue = 0
        value = index
        for shift in range(7, -1, -1):
            red |= (value & 1) << shift
            green |= ((value >> 1) & 1) << shift
            blue |= ((value >> 2) & 1) << shift
            value >>= 3
        palette += [red, green, blue]
    return palette


def save_palette_png(path: Path, indices: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(indices.astype(np.uint8))
    image.putpalette(voc_palette())  # an 'L' image given a palette becomes 'P' with the same indices
    assert image.mode == "P"
    image.save(path)


def with_border(indices: np.ndarray, region: tuple[slice, slice], value: int) -> np.ndarray:
    """Paint ``region`` with ``value`` inside a one-pixel void ring, as VOC draws every object."""
    rows, cols = region
    ring = (slice(rows.start - 1, rows.stop + 1), slice(cols.start - 1, cols.stop + 1))
    indices[ring] = VOID
    indices[region] = value
    return indices


@dataclass
class VocFolder:
    root: Path
    photos: dict[str, np.ndarray]  # image id -> RGB as decoded from the JPEG (what an import reads)
    masks: dict[tuple[str, int], np.ndarray]  # (image id, instance) -> (height, width) bool, drawn by hand


def write_voc(root: Path) -> VocFolder:
    """FIRST (36x36): a person (instance 1, 224 px), a cat (instance 2, 140 px, a few dog pixels
    under it) and a bottle of 4 px (0.3 %); SECOND (48 wide, 36 high): an aeroplane. Every instance
    sits in a void ring; masks are drawn by slices, independent of the import."""
    rng = np.random.default_rng(3)
    regions = {
        (FIRST, 1): ((slice(4, 20), slice(4, 18)), PERSON),
        (FIRST, 2): ((slice(22, 32), slice(20, 34)), CAT),
        (FIRST, 3): ((slice(2, 4), slice(30, 32)), BOTTLE),
        (SECOND, 1): ((slice(8, 28), slice(12, 40)), AEROPLANE),
    }
    shapes = {FIRST: (36, 36), SECOND: (36, 48)}
    photos, masks = {}, {}
    for image_id, shape in shapes.items():
        objects, classes = np.zeros(shape, np.uint8), np.zeros(shape, np.uint8)
        for (owner, instance), (region, class_index) in regions.items():
            if owner == image_id:
                with_border(objects, region, instance)
                with_border(classes, region, class_index)
                masks[image_id, instance] = np.zeros(shape, bool)
                masks[image_id, instance][region] = True
        if image_id == FIRST:
            classes[22:24, 20:34] = DOG  # 28 of the cat's 140 pixels are labelled dog: the majority still says cat
        save_palette_png(root / "SegmentationObject" / f"{image_id}.png", objects)
        save_palette_png(root / "SegmentationClass" / f"{image_id}.png", classes)
        photo = rng.integers(0, 255, (*shape, 3), dtype=np.uint8)
        (root / "JPEGImages").mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(root / "JPEGImages" / f"{image_id}.jpg"), cv2.cvtColor(photo, cv2.COLOR_RGB2BGR))
        photos[image_id] = read_image(root / "JPEGImages" / f"{image_id}.jpg")
    (root / "JPEGImages" / "2007_000099.jpg").write_bytes((root / "JPEGImages" / f"{FIRST}.jpg").read_bytes())  # a photo without masks is ignored
    return VocFolder(root, photos, masks)


@pytest.fixture
def voc(tmp_path) -> VocFolder:
    return write_voc(tmp_path / "VOC2012")


def test_voc_is_a_target_layout_with_its_pattern():
    assert "voc" in TARGET_LAYOUTS and "coco" in TARGET_LAYOUTS
    assert "SegmentationObject" in LAYOUT_PATTERNS["voc"]


def test_the_largest_instance_of_each_image_is_imported_pixel_exact(voc, workspace):
    result = read_voc(voc.root, size=SIZE)
    assert [t.id for t in result.accepted] == [f"person/{FIRST}-1", f"aeroplane/{SECOND}-1"]
    assert result.rejected == []
    assert result.skipped == {NOT_LARGEST: [f"instance 2 ({FIRST})"], TOO_SMALL: [f"instance 3 ({FIRST})"]}
    assert [t.origin for t in result.accepted] == [str(voc.root / "JPEGImages" / f"{i}.jpg") for i in (FIRST, SECOND)]
    back = stored(workspace, result)
    image, mask = back[f"person/{FIRST}-1"]  # square at the stored size: no fitting
    assert np.array_equal(mask, voc.masks[FIRST, 1]) and np.array_equal(image, voc.photos[FIRST])
    assert mask.sum() == 16 * 14  # the void ring around it is not object
    image, mask = back[f"aeroplane/{SECOND}-1"]  # 48x36: cropped and resized by the folder import's fit
    want_image, want_mask = fit_square(voc.photos[SECOND], voc.masks[SECOND, 1], SIZE)
    assert np.array_equal(mask, want_mask) and np.array_equal(image, want_image)


def test_all_instances_with_the_majority_class(voc, workspace):
    result = read_voc(voc.root, size=SIZE, all_instances=True)
    assert [t.id for t in result.accepted] == [f"person/{FIRST}-1", f"cat/{FIRST}-2", f"aeroplane/{SECOND}-1"]
    assert result.skipped == {TOO_SMALL: [f"instance 3 ({FIRST})"]}
    _, mask = stored(workspace, result)[f"cat/{FIRST}-2"]
    assert np.array_equal(mask, voc.masks[FIRST, 2])


def test_a_smaller_minimum_area_keeps_the_tiny_instance(voc):
    result = read_voc(voc.root, size=SIZE, all_instances=True, min_area=0)
    bottle = next(t for t in result.accepted if t.id == f"bottle/{FIRST}-3")
    assert np.array_equal(bottle.mask, voc.masks[FIRST, 3])
    with pytest.raises(InvalidInputError, match=r"min_area must be in \[0, 1\]; got 1.5"):
        read_voc(voc.root, min_area=1.5)


def test_the_class_filter_limits_the_classes(voc):
    result = read_voc(voc.root, size=SIZE, classes=["cat"])
    assert [t.id for t in result.accepted] == [f"cat/{FIRST}-2"]
    assert result.skipped[OTHER_CATEGORY] == [f"instance 1 ({FIRST})", f"instance 3 ({FIRST})", f"instance 1 ({SECOND})"]
    with pytest.raises(InvalidInputError, match=r"no class named 'unicorn'; its classes are aeroplane, bicycle"):
        read_voc(voc.root, classes=["unicorn"])


def test_a_labelmap_names_the_classes(voc):
    names = ["background", *(f"thing{i}" for i in range(1, 21))]
    (voc.root / "labelmap.txt").write_text("# label:color_rgb:parts:actions\n" + "".join(f"{n}:0,0,{i}::\n" for i, n in enumerate(names)))
    assert [t.class_name for t in read_voc(voc.root, size=SIZE).accepted] == [f"thing{PERSON}", f"thing{AEROPLANE}"]
    assert [t.class_name for t in read_voc(voc.root, size=SIZE, class_names=VOC_CLASSES).accepted] == ["person", "aeroplane"]
    (voc.root / "labelmap.txt").write_text("aeroplane\nbicycle\n")
    with pytest.raises(InvalidInputError, match=r"labelmap.txt: the first label must be background .*got 'aeroplane'"):
        read_voc(voc.root)


def test_a_split_picks_the_images(voc):
    splits = voc.root / "ImageSets" / "Segmentation"
    splits.mkdir(parents=True)
    (splits / "val.txt").write_text(f"{SECOND}\n")
    assert [t.id for t in read_voc(voc.root, size=SIZE, split="val").accepted] == [f"aeroplane/{SECOND}-1"]
    with pytest.raises(InvalidInputError, match=r"Segmentation/train.txt: split 'train' not found; splits there: val$"):
        read_voc(voc.root, split="train")
    (splits / "val.txt").write_text(f"{SECOND}\n2007_000404\n")
    with pytest.raises(InvalidInputError, match=r"val.txt: line 2: image '2007_000404' has no SegmentationObject/2007_000404.png"):
        read_voc(voc.root, split="val")


SPLIT_RULE = (
    "refused: a split is a name such as train or val (letters, digits, '_', '.' and '-'; no path separators, no '..'), "
    "read from ImageSets/Segmentation/<split>.txt in the VOC folder; give the name alone"
)


@pytest.mark.parametrize("split", ["../../secret", "{secret}", "ImageSets/../../secret", "a/b", "..", "", "val\n", "v al", "a\\b"])
def test_a_split_is_a_name_never_a_path(voc, tmp_path, monkeypatch, split):
    """A split names a file of ImageSets/Segmentation: anything that could name another file on the
    server is refused before any file is opened, and no word of that file is shown."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET line\n")
    split = split.format(secret=tmp_path / "secret")  # an absolute path, '.txt' added by the reader
    splits = voc.root / "ImageSets" / "Segmentation"
    splits.mkdir(parents=True)
    (splits / "val.txt").write_text(f"{SECOND}\n")
    monkeypatch.setattr("analytics.data.voc.extracted", lambda path: pytest.fail(f"{path} opened for split {split!r}"))
    with pytest.raises(InvalidInputError) as caught:
        read_voc(voc.root, split=split)
    assert str(caught.value) == f"split {split!r} {SPLIT_RULE}" and "TOPSECRET" not in str(caught.value)


def test_a_split_file_linked_outside_the_folder_is_refused(voc, tmp_path):
    (tmp_path / "secret.txt").write_text("TOPSECRET line\n")
    splits = voc.root / "ImageSets" / "Segmentation"
    splits.mkdir(parents=True)
    (splits / "val.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(InvalidInputError, match=r"Segmentation/val.txt: a symlink leading outside the VOC folder") as caught:
        read_voc(voc.root, split="val")
    assert "TOPSECRET" not in str(caught.value)


def test_a_zip_of_the_voc_download_below_its_enclosing_folders(voc, tmp_path):
    archive = tmp_path / "voc.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted(voc.root.rglob("*")):
            zipped.write(path, f"VOCdevkit/VOC2012/{path.relative_to(voc.root).as_posix()}")
    result = read_voc(archive, size=SIZE)
    assert [t.origin for t in result.accepted] == [str(archive / "VOCdevkit/VOC2012/JPEGImages" / f"{i}.jpg") for i in (FIRST, SECOND)]
    assert np.array_equal(result.accepted[0].mask, voc.masks[FIRST, 1])


def test_a_voc_folder_read_as_another_layout_names_voc(voc):
    from analytics.data.datasets import read_targets

    with pytest.raises(InvalidInputError, match=r"It looks like layout 'voc': choose that instead"):
        read_targets(voc.root, layout="folder")


def _no_photo(root: Path) -> Path:
    (root / "JPEGImages" / f"{SECOND}.jpg").unlink()
    return root / "SegmentationObject" / f"{SECOND}.png"


def _no_class_mask(root: Path) -> Path:
    (root / "SegmentationClass" / f"{SECOND}.png").unlink()
    return root / "SegmentationObject" / f"{SECOND}.png"


def _masks_of_different_sizes(root: Path) -> Path:
    save_palette_png(root / "SegmentationClass" / f"{SECOND}.png", np.zeros((36, 40), np.uint8))
    return root / "SegmentationClass" / f"{SECOND}.png"


def _photo_of_another_size(root: Path) -> Path:
    cv2.imwrite(str(root / "JPEGImages" / f"{SECOND}.jpg"), np.zeros((30, 48, 3), np.uint8))
    return root / "SegmentationObject" / f"{SECOND}.png"


def _colour_png(root: Path) -> Path:
    path = root / "SegmentationObject" / f"{SECOND}.png"
    Image.open(path).convert("RGB").save(path)  # the same picture in colours: the indices are lost
    return path


def _grey_png(root: Path) -> Path:
    path = root / "SegmentationClass" / f"{SECOND}.png"
    Image.open(path).convert("L").save(path)  # grey levels of the colours, not the class indices
    return path


def _unnamed_class(root: Path) -> Path:
    path = root / "SegmentationClass" / f"{SECOND}.png"
    classes = np.asarray(Image.open(path)).copy()
    classes[classes == AEROPLANE] = 21
    save_palette_png(path, classes)
    return path


#: How a VOC folder is spoiled -> (what the one line says, after the file it names).
BAD_VOC = {
    "mask without a photo": (_no_photo, "JPEGImages/ holds no photo 2007_000002.jpg"),
    "mask without a class mask": (_no_class_mask, "no SegmentationClass/2007_000002.png beside it"),
    "masks of different sizes": (_masks_of_different_sizes, "is 40x36 but SegmentationObject/2007_000002.png is 48x36"),
    "photo of another size": (_photo_of_another_size, "mask is 48x36 but its photo 2007_000002.jpg is 48x30"),
    "colour PNG": (_colour_png, "a PNG image in mode RGB, not a palette PNG"),
    "grey PNG": (_grey_png, "a PNG image in mode L, not a palette PNG"),
    "class without a name": (_unnamed_class, "class index 21 under instance 1 has no name (known: 1..20)"),
}


@pytest.mark.parametrize("how", sorted(BAD_VOC))
def test_bad_input_is_one_line_naming_the_file(voc, how):
    spoil, says = BAD_VOC[how]
    named = spoil(voc.root)
    with pytest.raises(InvalidInputError) as caught:
        read_voc(voc.root, size=SIZE)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{named}: ") and says in message
    assert message.count(str(named)) == 1  # said once, not wrapped in a second error about the same file


# -- the CLI -------------------------------------------------------------------------------------
def voc_args(voc: VocFolder, workspace: Workspace, *extra: str) -> list[str]:
    return ["add-targets", "--layout", "voc", "--path", str(voc.root), "--workspace", str(workspace.root), "--json", *extra]


def test_add_targets_from_a_voc_folder(capsys, tiny_workspace, voc):
    code, out, err = run(capsys, *voc_args(voc, tiny_workspace, "--all-instances", "--licence", "CC-BY-4.0"))
    assert code == 0, err
    assert out["added"] == 3 and out["rejected"] == []
    assert set(out["new_classes"]) == {"person", "cat", "aeroplane"}
    assert out["skipped"] == {TOO_SMALL: {"count": 1, "examples": [f"instance 3 ({FIRST})"]}}
    targets = list_targets(tiny_workspace).set_index("id")
    assert targets.at[f"cat/{FIRST}-2", "origin"] == str(voc.root / "JPEGImages" / f"{FIRST}.jpg")
    assert targets.at[f"cat/{FIRST}-2", "licence"] == "CC-BY-4.0"
    _, (mask,) = load_targets(tiny_workspace, [f"cat/{FIRST}-2"])
    assert np.array_equal(mask, fit_square(voc.photos[FIRST], voc.masks[FIRST, 2], 64)[1])  # the tiny workspace stores 64x64


def test_a_split_and_a_class_from_the_cli(capsys, tiny_workspace, voc):
    (voc.root / "ImageSets" / "Segmentation").mkdir(parents=True)
    (voc.root / "ImageSets" / "Segmentation" / "train.txt").write_text(f"{FIRST}\n")
    code, out, err = run(capsys, *voc_args(voc, tiny_workspace, "--split", "train", "--classes", "person,bottle", "--min-area", "0"))
    assert code == 0, err
    assert out["added"] == 1 and set(out["skipped"]) == {OTHER_CATEGORY, NOT_LARGEST}
    assert f"person/{FIRST}-1" in set(list_targets(tiny_workspace)["id"])


@pytest.mark.parametrize("split", ["../../secret", "/etc/secret"])
def test_a_split_path_from_the_cli_is_one_line_and_imports_nothing(capsys, tiny_workspace, voc, tmp_path, split):
    (tmp_path / "secret.txt").write_text("TOPSECRET line\n")
    before = snapshot(tiny_workspace)
    code, _, err = run(capsys, *voc_args(voc, tiny_workspace, "--split", split))
    assert code == 2 and err == f"error: split {split!r} {SPLIT_RULE}\n"
    assert snapshot(tiny_workspace) == before


def test_everything_skipped_is_one_line_with_the_counts(capsys, tiny_workspace, voc):
    before = snapshot(tiny_workspace)
    code, _, err = run(capsys, *voc_args(voc, tiny_workspace, "--min-area", "0.9"))
    assert code == 2 and err.count("\n") == 1
    assert "no targets to add, every instance was skipped (4 smaller than the minimum area)" in err
    assert snapshot(tiny_workspace) == before


@pytest.mark.parametrize("how", sorted(BAD_VOC))
def test_bad_input_exits_2_with_one_line_and_imports_nothing(capsys, tiny_workspace, voc, how):
    before = snapshot(tiny_workspace)
    spoil, says = BAD_VOC[how]
    named = spoil(voc.root)
    code, _, err = run(capsys, *voc_args(voc, tiny_workspace))
    assert code == 2 and err.count("\n") == 1 and str(named) in err and says in err
    assert snapshot(tiny_workspace) == before


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--layout", "folder", "--path", "x", "--split", "val"], "--split only go with --layout voc; got --layout folder"),
        (["--layout", "voc", "--path", "x", "--images", "y"], "--images only go with --layout coco; got --layout voc"),
        (["--layout", "voc"], "--layout voc reads --path, a folder or .zip"),
        (["--layout", "cutouts", "--path", "x", "--classes", "a"], "--classes only go with --layout coco or voc"),
    ],
)
def test_sources_must_fit_the_layout(capsys, tiny_workspace, argv, message):
    before = snapshot(tiny_workspace)
    code, _, err = run(capsys, "add-targets", *argv, "--workspace", str(tiny_workspace.root))
    assert code == 2 and message in err
    assert snapshot(tiny_workspace) == before
