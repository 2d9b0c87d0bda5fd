"""Target sets in the three layouts (folders and zips), background pools, workspace tables, GrabCut."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path

import cv2
import numpy as np
import pytest

import analytics.workspace.store as store_module
from analytics.data import (
    Target,
    archives,
    grabcut_mask,
    list_backgrounds,
    list_classes,
    list_targets,
    load_backgrounds,
    load_targets,
    paste_cutout,
    read_backgrounds,
    store_backgrounds,
    store_targets,
)
from analytics.data.datasets import add_classes, read_targets
from analytics.exceptions import InvalidInputError, NotFoundError, PermissionDeniedError, WorkspaceError
from analytics.team import DATA_ROOTS_ENV_VAR, resolve_server_path
from analytics.team.server import TEAM_ENV_VAR
from analytics.workspace import Workspace

SIZE = 48


def scene(seed: int, shape=(60, 80)) -> tuple[np.ndarray, np.ndarray]:
    """A textured image with a bright rectangle, and the rectangle's mask."""
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 90, (*shape, 3), dtype=np.uint8)
    mask = np.zeros(shape, bool)
    mask[15:45, 20 + seed % 10 : 50 + seed % 10] = True
    image[mask] = (230, 200, 40)
    return image, mask


def write_image(path: Path, rgb: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))


def write_mask(path: Path, mask: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".npy":
        np.save(path, mask.astype(np.uint8))
    else:
        cv2.imwrite(str(path), mask.astype(np.uint8) * 255)


def folder_layout(root: Path, classes=("cat", "dog"), per_class: int = 2) -> Path:
    for c, name in enumerate(classes):
        for i in range(per_class):
            image, mask = scene(10 * c + i)
            write_image(root / "images" / name / f"{name}{i}.png", image)
            write_mask(root / "masks" / name / f"{name}{i}.png", mask)
    return root


def bgchallenge_layout(root: Path) -> Path:
    for c, name in enumerate(("01_dog", "02_bird")):
        for i in range(2):
            image, mask = scene(10 * c + i)
            write_image(root / "original" / "val" / name / f"n0{c}_{i}.JPEG", image)
            write_mask(root / "fg_mask" / "val" / name / f"n0{c}_{i}.npy", mask)
    return root


def cutout(path: Path, size=(40, 30)) -> None:
    rgba = np.zeros((*size, 4), np.uint8)
    rgba[5:-5, 5:-5] = (40, 90, 250, 255)
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), cv2.cvtColor(rgba, cv2.COLOR_RGBA2BGRA))


def test_folder_layout(tmp_path):
    result = read_targets(folder_layout(tmp_path / "set"), layout="folder", size=SIZE)
    assert not result.rejected
    assert [t.id for t in result.accepted] == ["cat/cat0", "cat/cat1", "dog/dog0", "dog/dog1"]
    for target in result.accepted:
        assert target.image.shape == (SIZE, SIZE, 3) and target.image.dtype == np.uint8
        assert target.mask.shape == (SIZE, SIZE) and target.mask.dtype == bool
        assert target.class_name == target.id.split("/")[0]
        # the object is kept: its colour fills the mask
        assert np.abs(target.image[target.mask].astype(int) - (230, 200, 40)).mean() < 20


def test_bgchallenge_layout(tmp_path):
    result = read_targets(bgchallenge_layout(tmp_path / "bg"), layout="bgchallenge", size=SIZE)
    assert not result.rejected
    assert sorted({t.class_name for t in result.accepted}) == ["01_dog", "02_bird"]
    assert len(result.accepted) == 4 and all(t.mask.any() for t in result.accepted)


def test_cutouts_on_a_home_photo_are_not_squashed(tmp_path):
    cutout(tmp_path / "cuts" / "ball" / "b1.png")
    home = np.zeros((100, 300, 3), np.uint8)
    home[:, 100:200] = 200  # only the centre third is light: a squashed home would show dark corners
    result = read_targets(tmp_path / "cuts", layout="cutouts", size=SIZE, home=home)
    (target,) = result.accepted
    assert target.id == "ball/b1"
    near = cv2.dilate(target.mask.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)
    assert (target.image[~near] == 200).all()
    # no dark halo: edge pixels mix the object's colour and the home's, never darker than both
    low, high = np.minimum((40, 90, 250), 200), np.maximum((40, 90, 250), 200)
    edge = target.image[near].astype(int)
    assert ((edge >= low - 2) & (edge <= high + 2)).all()
    assert np.abs(target.image[cv2.erode(target.mask.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)].astype(int) - (40, 90, 250)).max() <= 2
    grey = read_targets(tmp_path / "cuts", layout="cutouts", size=SIZE).accepted[0]
    assert (grey.image[~cv2.dilate(grey.mask.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)] == 127).all()


def test_a_zip_reads_like_its_folder(tmp_path):
    folder = folder_layout(tmp_path / "set")
    archive = shutil.make_archive(str(tmp_path / "set"), "zip", root_dir=tmp_path, base_dir="set")
    from_zip = read_targets(archive, layout="folder", size=SIZE)
    from_folder = read_targets(folder, layout="folder", size=SIZE)
    assert [t.id for t in from_zip.accepted] == [t.id for t in from_folder.accepted]
    for a, b in zip(from_zip.accepted, from_folder.accepted):
        np.testing.assert_array_equal(a.image, b.image)


@pytest.fixture
def data_root(tmp_path, monkeypatch) -> Path:
    """A team server's data root (``$BACKDROP_DATA_ROOTS``); ``tmp_path / "private"`` lies outside it."""
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv(DATA_ROOTS_ENV_VAR, str(root))
    monkeypatch.setenv(TEAM_ENV_VAR, "1")
    return root


def link_a_mask_file_out(folder: Path, outside: Path) -> Path:
    (folder / "masks" / "cat" / "cat0.png").rename(outside / "cat0.png")
    (folder / "masks" / "cat" / "cat0.png").symlink_to(outside / "cat0.png")
    return folder / "masks" / "cat" / "cat0.png"


def link_a_class_folder_out(folder: Path, outside: Path) -> Path:
    classes = folder / "original" / "val" if (folder / "original").is_dir() else folder
    cutout(outside / "c1.png")
    (classes / "03_cat").symlink_to(outside, target_is_directory=True)
    return classes / "03_cat"


@pytest.mark.parametrize(
    ("layout", "make", "link"),
    [
        ("folder", folder_layout, link_a_mask_file_out),
        ("bgchallenge", bgchallenge_layout, link_a_class_folder_out),
        ("cutouts", lambda root: (cutout(root / "ball" / "b1.png"), root)[1], link_a_class_folder_out),
    ],
)
def test_an_import_with_a_link_out_of_the_data_root_is_refused_and_imports_nothing(tmp_path, data_root, layout, make, link):
    (tmp_path / "private").mkdir()
    link = link(make(data_root / "set"), tmp_path / "private")
    workspace = small_workspace(tmp_path)
    with pytest.raises(PermissionDeniedError) as refused:  # the page reads read_targets(resolve_server_path(...))
        read_targets(resolve_server_path(workspace, "set"), layout=layout, size=SIZE)
    message = str(refused.value)
    assert "\n" not in message and f"{link} is a symlink to {(tmp_path / 'private').resolve()}" in message
    assert list_targets(workspace).empty and not list(workspace.arrays_dir.rglob("*.npy"))


def test_links_that_stay_inside_the_data_root_are_read(tmp_path, data_root):
    folder = folder_layout(data_root / "set")
    shutil.move(folder / "images" / "dog", data_root / "dogs")
    (folder / "images" / "dog").symlink_to(data_root / "dogs", target_is_directory=True)
    (folder / "masks" / "cat" / "cat1.png").rename(data_root / "cat1-mask.png")
    (folder / "masks" / "cat" / "cat1.png").symlink_to(data_root / "cat1-mask.png")
    result = read_targets(resolve_server_path(small_workspace(tmp_path), "set"), layout="folder", size=SIZE)
    assert [t.id for t in result.accepted] == ["cat/cat0", "cat/cat1", "dog/dog0", "dog/dog1"] and not result.rejected


def test_a_symlink_in_a_zip_is_extracted_as_a_plain_file_never_followed(tmp_path):
    secret = tmp_path / "private" / "photo.png"
    write_image(secret, scene(0)[0])
    archive = tmp_path / "pool.zip"
    with zipfile.ZipFile(archive, "w") as pool:
        write_image(tmp_path / "p0.jpg", scene(1, (60, 60))[0])
        pool.write(tmp_path / "p0.jpg", "pool/p0.jpg")
        member = zipfile.ZipInfo("pool/p1.png")
        member.external_attr = (stat.S_IFLNK | 0o777) << 16
        pool.writestr(member, str(secret))
    result = read_backgrounds(archive, size=SIZE)
    assert [b.id for b in result.accepted] == ["p0"]
    assert [Path(r.file).name for r in result.rejected] == ["p1.png"]


@pytest.fixture
def temp_root(tmp_path, monkeypatch) -> Path:
    """The folder :mod:`tempfile` uses during the test (so leftovers can be seen)."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_a_zip_is_extracted_to_a_folder_that_is_removed_afterwards(tmp_path, temp_root):
    folder_layout(tmp_path / "set")
    (tmp_path / "set" / "images" / "cat" / "broken.png").write_bytes(b"not a png")
    (tmp_path / "set" / "masks" / "cat" / "broken.png").write_bytes(b"not a png")
    archive = Path(shutil.make_archive(str(tmp_path / "set"), "zip", root_dir=tmp_path, base_dir="set"))
    result = read_targets(archive, layout="folder", size=SIZE)
    assert len(result.accepted) == 4 and list(temp_root.iterdir()) == []
    # origins and reasons name the zip, not the vanished temporary folder
    assert str(archive / "set" / "images" / "cat" / "cat0.png") in {t.origin for t in result.accepted}
    (rejected,) = result.rejected
    assert rejected.file == str(archive / "set" / "images" / "cat" / "broken.png") and str(temp_root) not in rejected.reason
    with pytest.raises(InvalidInputError, match=f"{archive}: no targets for layout 'bgchallenge' found"):
        read_targets(archive, layout="bgchallenge", size=SIZE)
    backgrounds = Path(shutil.make_archive(str(tmp_path / "pool"), "zip", root_dir=tmp_path / "set" / "images", base_dir="cat"))
    assert read_backgrounds(backgrounds, size=SIZE).accepted and list(temp_root.iterdir()) == []


@pytest.mark.parametrize("limit, value, message", [("MAX_ARCHIVE_BYTES", 1000, r"unpacks to \d+ MiB, over the limit of 0 MiB"),
                                                    ("MAX_ARCHIVE_MEMBERS", 3, "holds 5 entries, over the limit of 3")])
def test_a_zip_over_the_limits_is_refused_before_extraction(tmp_path, temp_root, monkeypatch, limit, value, message):
    monkeypatch.setattr(archives, limit, value)
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bomb:
        for i in range(5):
            bomb.writestr(f"pool/zeros{i}.png", bytes(1 << 20))  # 1 MiB each, a few KiB compressed
    with pytest.raises(InvalidInputError, match=f"{archive}: the zip {message}.*analytics.data.archives.{limit}"):
        read_backgrounds(archive, size=SIZE)
    assert list(temp_root.iterdir()) == []


def test_the_default_zip_limits_are_documented_constants():
    assert archives.MAX_ARCHIVE_BYTES == 2 << 30 and archives.MAX_ARCHIVE_MEMBERS == 100_000


def test_unknown_layout_and_missing_folders(tmp_path):
    with pytest.raises(InvalidInputError, match="layout must be one of"):
        read_targets(folder_layout(tmp_path / "set"), layout="coco")
    with pytest.raises(InvalidInputError, match=r"no targets for layout 'bgchallenge' found \(looked for original/val/<class>/<photo>.*It looks like layout .folder."):
        read_targets(tmp_path / "set", layout="bgchallenge")
    with pytest.raises(InvalidInputError, match="nowhere: no such folder or .zip file; check the path"):
        read_targets(tmp_path / "nowhere", layout="folder")
    (tmp_path / "random.zip").write_bytes(bytes(range(256)) * 8)  # named .zip, but no archive
    with pytest.raises(InvalidInputError, match=r"random.zip: not a folder or a .zip archive .*re-create the .zip"):
        read_targets(tmp_path / "random.zip", layout="folder")


def bad_inputs(root: Path) -> dict[str, str]:
    """One good target and one file per bad input; returns file name -> expected reason."""
    folder_layout(root, classes=("cat",), per_class=1)
    image, mask = scene(5)
    cases = {
        "corrupt.png": "not a readable image",
        "small_mask.png": "mask is 40x30 but its image is 80x60",
        "empty_mask.png": "mask is empty",
        "full_mask.png": "leaving no background",
        "no_mask.png": "no mask found",
        "cat0.png": "duplicate id 'cat/cat0'",  # cat0.jpg comes first and is kept
    }
    (root / "images" / "cat").joinpath("corrupt.png").write_bytes(b"\x89PNG broken")
    write_mask(root / "masks" / "cat" / "corrupt.png", mask)
    write_image(root / "images" / "cat" / "small_mask.png", image)
    write_mask(root / "masks" / "cat" / "small_mask.png", np.ones((30, 40), bool))
    write_image(root / "images" / "cat" / "empty_mask.png", image)
    write_mask(root / "masks" / "cat" / "empty_mask.png", np.zeros_like(mask))
    write_image(root / "images" / "cat" / "full_mask.png", image)
    write_mask(root / "masks" / "cat" / "full_mask.png", np.ones_like(mask))
    write_image(root / "images" / "cat" / "no_mask.png", image)
    write_image(root / "images" / "cat" / "cat0.jpg", image)
    write_mask(root / "masks" / "cat" / "cat0.jpg".replace(".jpg", ".png"), mask)
    write_image(root / "images" / "owl" / "o1.png", image)
    write_mask(root / "masks" / "owl" / "o1.png", mask)
    cases["o1.png"] = "unknown class 'owl'; known: cat"
    return cases


def test_each_bad_input_is_rejected_with_one_line_naming_the_file(tmp_path):
    cases = bad_inputs(tmp_path / "set")
    result = read_targets(tmp_path / "set", layout="folder", size=SIZE, classes=["cat"])
    assert [t.id for t in result.accepted] == ["cat/cat0"]
    reasons = {Path(r.file).name: r.reason for r in result.rejected}
    assert set(reasons) == set(cases)
    for name, expected in cases.items():
        assert expected in reasons[name], (name, reasons[name])
        assert "\n" not in reasons[name]
    # where the fault is in the mask, the reason names the mask file
    assert "masks/cat/empty_mask.png" in reasons["empty_mask.png"]
    assert "masks/cat/small_mask.png" in reasons["small_mask.png"]


def test_fully_transparent_cutouts_are_rejected(tmp_path):
    path = tmp_path / "cuts" / "ghost" / "g.png"
    path.parent.mkdir(parents=True)
    cv2.imwrite(str(path), np.zeros((20, 20, 4), np.uint8))
    result = read_targets(tmp_path / "cuts", layout="cutouts", size=SIZE)
    assert not result.accepted and "fully transparent" in result.rejected[0].reason


def test_paste_cutout_scale_and_mask():
    rgba = np.zeros((10, 20, 4), np.uint8)
    rgba[..., 3] = 255
    image, mask = paste_cutout(rgba, None, size=100, scale=0.5)
    rows, cols = np.nonzero(mask)
    assert cols.max() - cols.min() + 1 == 50 and rows.max() - rows.min() + 1 == 25


def photos(folder: Path, shapes=((400, 600), (300, 300))) -> Path:
    rng = np.random.default_rng(1)
    for i, shape in enumerate(shapes):
        write_image(folder / f"p{i}.jpg", rng.integers(0, 255, (*shape, 3), dtype=np.uint8))
    return folder


def test_background_pool_with_crops(tmp_path):
    folder = photos(tmp_path / "pool")
    single = read_backgrounds(folder, size=SIZE)
    assert [b.id for b in single.accepted] == ["p0", "p1"]
    many = read_backgrounds(folder, size=SIZE, crops_per_photo=lambda photo: 4 if photo.shape[1] > 500 else 1)
    ids = [b.id for b in many.accepted]
    assert len(ids) == len(set(ids)) and sum(i.startswith("p0@") for i in ids) >= 3 and "p1" in ids
    assert all(b.image.shape == (SIZE, SIZE, 3) for b in many.accepted)
    again = read_backgrounds(folder, size=SIZE, crops_per_photo=lambda photo: 4 if photo.shape[1] > 500 else 1)
    assert ids == [b.id for b in again.accepted]  # deterministic


def test_background_pool_rejections(tmp_path):
    folder = photos(tmp_path / "pool", shapes=((400, 600), (10, 10)))
    write_image(folder / "p0.png", np.zeros((100, 100, 3), np.uint8))  # same id as p0.jpg
    (folder / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    result = read_backgrounds(folder, size=SIZE)
    reasons = {Path(r.file).name: r.reason for r in result.rejected}
    assert [b.id for b in result.accepted] == ["p0"]
    assert "not a readable image" in reasons["broken.jpg"]
    assert "smaller than half the image size" in reasons["p1.jpg"]
    assert "duplicate id 'p0'" in reasons["p0.png"]


def test_zero_backgrounds_is_an_error_naming_the_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no photos here")
    with pytest.raises(InvalidInputError, match=r"empty: no background photos found") as info:
        read_backgrounds(tmp_path / "empty")
    assert "\n" not in str(info.value)


def small_workspace(tmp_path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.set_meta("image_size", str(SIZE))
    return workspace


def test_targets_round_trip_and_are_idempotent(tmp_path):
    workspace = small_workspace(tmp_path)
    targets = read_targets(folder_layout(tmp_path / "set"), layout="folder", size=SIZE).accepted
    assert store_targets(workspace, targets, classes={"cat": [281], "dog": []}) == 4
    assert store_targets(workspace, targets) == 0
    assert list_classes(workspace) == {"cat": [281], "dog": []}
    table = list_targets(workspace)
    assert list(table["id"]) == [t.id for t in targets]
    assert list(list_targets(workspace, class_name="dog")["id"]) == ["dog/dog0", "dog/dog1"]
    images, masks = load_targets(workspace, ["dog/dog1", "cat/cat0"])
    np.testing.assert_array_equal(images[0], targets[3].image)
    np.testing.assert_array_equal(masks[1], targets[0].mask)
    with pytest.raises(NotFoundError, match="1 targets not in workspace .*: nope"):
        load_targets(workspace, ["nope"])


def test_a_refused_target_batch_writes_nothing(tmp_path):
    workspace = small_workspace(tmp_path)
    good, mask = scene(1, (SIZE, SIZE))
    targets = [Target("a/1", "a", good, mask, origin="a1"), Target("b/1", "b", good, mask, origin="b1.png")]
    with pytest.raises(InvalidInputError, match="b1.png: unknown class 'b'"):
        store_targets(workspace, targets, classes={"a": []})
    with pytest.raises(InvalidInputError, match="the workspace stores 48x48x3"):
        store_targets(workspace, [Target("a/2", "a", good[:10], mask[:10], origin="a2")], classes={"a": []})
    assert list_targets(workspace).empty and not list_classes(workspace)
    assert not list(workspace.arrays_dir.rglob("*.npy"))


def test_backgrounds_round_trip(tmp_path):
    workspace = small_workspace(tmp_path)
    pool = read_backgrounds(photos(tmp_path / "pool"), size=SIZE, crops_per_photo=3).accepted
    assert store_backgrounds(workspace, pool) == len(pool)
    assert store_backgrounds(workspace, pool) == 0
    table = list_backgrounds(workspace)
    assert list(table["id"]) == sorted(b.id for b in pool)
    np.testing.assert_array_equal(load_backgrounds(workspace, [pool[1].id])[0], pool[1].image)
    assert all(crop.startswith("[") for crop in table["crop"])


def test_a_full_disk_during_an_import_keeps_the_workspace_as_it_was(tmp_path, monkeypatch):
    workspace = small_workspace(tmp_path)
    pool = read_backgrounds(photos(tmp_path / "pool"), size=SIZE, crops_per_photo=3).accepted
    store_backgrounds(workspace, pool[:1])
    before = {p.name for p in workspace.arrays_dir.rglob("*.npy")}
    renames, replace = [], os.replace

    def third_fails(source, destination):  # the disk fills up at the third array this import writes
        renames.append(destination)
        if len(renames) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        replace(source, destination)

    monkeypatch.setattr(store_module.os, "replace", third_fails)
    with pytest.raises(WorkspaceError) as refused:
        store_backgrounds(workspace, pool)
    monkeypatch.undo()
    message = str(refused.value)
    # arrays are written on several threads: the others may go on after the third one fails
    assert "\n" not in message and message == f"cannot write {renames[2]}: no space left on device; free space on that disk or move the workspace"
    assert {p.name for p in workspace.arrays_dir.rglob("*.npy")} == before  # no orphan; pool[0]'s array stays
    assert not list(workspace.arrays_dir.rglob("*.tmp"))
    assert list(list_backgrounds(workspace)["id"]) == [pool[0].id]
    np.testing.assert_array_equal(load_backgrounds(workspace, [pool[0].id])[0], pool[0].image)
    assert store_backgrounds(workspace, pool) == len(pool) - 1  # with space again the same import succeeds


def test_a_full_disk_keeps_the_committed_batches_and_the_same_import_resumes(tmp_path, monkeypatch):
    """Issue 28.5: backgrounds commit in batches. The disk fills at the third array: the first batch
    stays, the failing one leaves no array and no temporary file, and the same import adds the rest."""
    workspace = small_workspace(tmp_path)
    pool = read_backgrounds(photos(tmp_path / "pool"), size=SIZE, crops_per_photo=3).accepted
    renames, replace = [], os.replace

    def third_fails(source, destination):
        renames.append(destination)
        if len(renames) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        replace(source, destination)

    monkeypatch.setattr(store_module.os, "replace", third_fails)
    with pytest.raises(WorkspaceError, match="no space left on device"):
        store_backgrounds(workspace, iter(pool), batch_size=2)
    monkeypatch.undo()
    stored = list_backgrounds(workspace)
    assert list(stored["id"]) == sorted(b.id for b in pool[:2])
    assert sorted(p.stem for p in workspace.arrays_dir.rglob("*.npy")) == sorted(stored["image_hash"])
    assert not list(workspace.arrays_dir.rglob("*.tmp"))
    assert store_backgrounds(workspace, iter(pool), batch_size=2) == len(pool) - 2


def test_add_classes_inside_a_transaction(tmp_path):
    workspace = small_workspace(tmp_path)
    with pytest.raises(RuntimeError):
        with workspace.transaction() as conn:
            add_classes(workspace, {"x": [1]}, conn=conn)
            raise RuntimeError
    assert not list_classes(workspace)


def test_grabcut_finds_an_object_on_a_plain_background():
    rng = np.random.default_rng(0)
    image = rng.integers(20, 60, (80, 80, 3), dtype=np.uint8)
    yy, xx = np.mgrid[:80, :80]
    disc = (yy - 40) ** 2 + (xx - 42) ** 2 < 20**2
    image[disc] = rng.integers(200, 255, (disc.sum(), 3), dtype=np.uint8)
    mask = grabcut_mask(image, (15, 15, 55, 55))
    iou = (mask & disc).sum() / (mask | disc).sum()
    assert mask.dtype == bool and mask.shape == (80, 80) and iou > 0.8
    assert (grabcut_mask(image) & disc).sum() / disc.sum() > 0.8  # border initialisation
