"""The layouts people zip (issue 27.2): with or without enclosing folders, and a reason whenever
nothing is accepted. Real PNG/JPEG files written by OpenCV (the helpers of ``test_datasets``)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from analytics.data import read_backgrounds
from analytics.data.datasets import read_targets
from analytics.exceptions import InvalidInputError

from .test_datasets import SIZE, cutout, scene, write_image, write_mask


def zipped(tmp_path: Path, files: dict[str, Path], name: str = "upload.zip") -> Path:
    """A zip holding ``files`` (member name -> file on disk), as an archiver would write it."""
    archive = tmp_path / name
    with zipfile.ZipFile(archive, "w") as out:
        for member, source in files.items():
            out.write(source, member)
    return archive


def photos(tmp_path: Path, n: int = 2, suffix: str = ".jpg") -> list[Path]:
    out = []
    for i in range(n):
        image, _ = scene(i, shape=(60, 80))
        write_image(path := tmp_path / "src" / f"photo{i}{suffix}", image)
        out.append(path)
    return out


def masks(tmp_path: Path, n: int = 2) -> list[Path]:
    out = []
    for i in range(n):
        write_mask(path := tmp_path / "src" / f"photo{i}.png", scene(i, shape=(60, 80))[1])
        out.append(path)
    return out


def cutouts(tmp_path: Path, n: int = 2) -> list[Path]:
    out = []
    for i in range(n):
        cutout(path := tmp_path / "src" / f"ball{i}.png")
        out.append(path)
    return out


@pytest.mark.parametrize("prefix", ["", "my-set/", "Users/me/my-set/"])
def test_a_cutouts_zip_of_one_class_folder_is_read_with_or_without_enclosing_folders(tmp_path, prefix):
    archive = zipped(tmp_path, {f"{prefix}my_ball/{p.name}": p for p in cutouts(tmp_path)})
    result = read_targets(archive, layout="cutouts", size=SIZE)
    assert [t.id for t in result.accepted] == ["my_ball/ball0", "my_ball/ball1"] and not result.rejected
    assert result.accepted[0].origin == str(archive / f"{prefix}my_ball/ball0.png")


@pytest.mark.parametrize("prefix", ["", "my-set/"])
def test_a_folder_layout_zip_is_read_with_or_without_an_enclosing_folder(tmp_path, prefix):
    files = {f"{prefix}images/my_ball/{p.name}": p for p in photos(tmp_path)}
    files |= {f"{prefix}masks/my_ball/{p.name}": p for p in masks(tmp_path)}
    files["__MACOSX/._images"] = files[f"{prefix}images/my_ball/photo0.jpg"]  # macOS' resource forks are passed over
    result = read_targets(zipped(tmp_path, files), layout="folder", size=SIZE)
    assert [t.id for t in result.accepted] == ["my_ball/photo0", "my_ball/photo1"] and not result.rejected
    assert result.accepted[0].mask.any()


def test_photos_without_masks_are_each_rejected_with_the_reason(tmp_path):
    """`images/my_ball/*.jpg` alone: the folder is found (once "expected a folder images/<class>/")."""
    result = read_targets(zipped(tmp_path, {f"images/my_ball/{p.name}": p for p in photos(tmp_path)}), layout="folder", size=SIZE)
    assert not result.accepted and len(result.rejected) == 2
    assert all("no mask found" in r.reason for r in result.rejected)


@pytest.mark.parametrize("prefix", ["", "pool/"])
def test_a_background_zip_is_read_with_or_without_an_enclosing_folder(tmp_path, prefix):
    result = read_backgrounds(zipped(tmp_path, {f"{prefix}{p.name}": p for p in photos(tmp_path)}), size=SIZE)
    assert [b.id for b in result.accepted] == ["photo0", "photo1"]


def test_a_zip_of_another_layout_says_which_it_looks_like(tmp_path):
    archive = zipped(tmp_path, {f"my_ball/{p.name}": p for p in cutouts(tmp_path)})
    with pytest.raises(InvalidInputError, match=(
        r"upload.zip: no targets for layout 'folder' found \(looked for images/<class>/<photo>.*it holds my_ball/ \(2 images\)\. "
        r"It looks like layout 'cutouts'"
    )):
        read_targets(archive, layout="folder", size=SIZE)
    with pytest.raises(InvalidInputError, match="It looks like a target set in layout 'cutouts'"):
        balls, cones = cutouts(tmp_path)
        read_backgrounds(zipped(tmp_path, {"set/ball/b.png": balls, "set/cone/c.png": cones}, "set.zip"), size=SIZE)


def test_a_zip_without_any_image_says_what_it_holds(tmp_path):
    (notes := tmp_path / "notes.txt").write_text("no images here")
    with pytest.raises(InvalidInputError, match=r"no targets for layout 'cutouts' found \(looked for <class>/<cut-out>.png.*it holds notes.txt\.$"):
        read_targets(zipped(tmp_path, {"notes.txt": notes}), layout="cutouts", size=SIZE)


def test_photos_without_masks_get_grabcut_proposals_to_review(tmp_path):
    """Issue 27.4: with ``propose_masks`` photos without a mask (a folder layout without masks/, or
    opaque JPEGs in class folders) come back with a GrabCut mask instead of "no mask found"."""
    from analytics.data import propose_mask

    for layout, prefix in (("folder", "images/my_ball/"), ("cutouts", "my_ball/")):
        archive = zipped(tmp_path, {f"{prefix}{p.name}": p for p in photos(tmp_path)}, f"{layout}.zip")
        result = read_targets(archive, layout=layout, size=SIZE, propose_masks=True)
        assert not result.accepted and not result.rejected
        assert [t.id for t in result.proposed] == ["my_ball/photo0", "my_ball/photo1"]
        for target in result.proposed:
            assert target.mask.dtype == bool and 0.05 < target.mask.mean() < 0.9
            assert target.image[target.mask].mean() > 2 * target.image[~target.mask].mean()  # the bright object, not the noise
            assert target.origin.startswith(str(archive))
    with pytest.raises(InvalidInputError, match="margin must be at most 0.4"):
        propose_mask(result.proposed[0].image, margin=0.45)


def test_proposals_waiting_for_review_are_bounded(tmp_path, monkeypatch):
    """Issue 48: proposals wait for review in the server's memory, so one import proposes a bounded number."""
    import analytics.data.datasets

    monkeypatch.setattr(analytics.data.datasets, "MAX_PROPOSALS", 1)
    archive = zipped(tmp_path, {f"images/my_ball/{p.name}": p for p in photos(tmp_path)}, "folder.zip")
    result = read_targets(archive, layout="folder", size=SIZE, propose_masks=True)
    assert [t.id for t in result.proposed] == ["my_ball/photo0"]
    assert len(result.rejected) == 1 and "already proposes 1 masks for review; import at most 1 photos without masks" in result.rejected[0].reason
