"""The demo catalogue, the asset cache and licences, the step runner, and a small real build."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torchvision

import analytics.demo.assets as assets
import analytics.demo.steps as steps
from analytics.commands.data import StepBars
from analytics.data import list_backgrounds, list_classes, list_targets
from analytics.demo import build_demo, fetch_packages, load_catalogue
from analytics.demo.assets import COMPLETE_MARKER, AssetError, licence_of
from analytics.demo.steps import CATALOGUE_PATH, DEMO_STEPS, DemoStep, crop_square
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace

IMAGENET = torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta["categories"]
RAW = json.loads(CATALOGUE_PATH.read_text())


# -- the catalogue ---------------------------------------------------------------------------
def test_catalogue_meets_the_demo_requirements():
    catalogue = load_catalogue()
    per_class = {name: sum(t.class_name == name for t in catalogue.targets) for name in catalogue.classes}
    assert len(catalogue.targets) >= 40 and len(catalogue.classes) >= 8
    assert min(per_class.values()) >= 3, per_class
    assert not any("cartoon" in t.stamp for t in catalogue.targets)
    assert all(t.stamp.startswith("usr/share/tuxpaint/stamps/") and 0 < t.scale <= 1 for t in catalogue.targets)


def test_catalogue_imagenet_indices_match_their_names():
    for name, spec in RAW["classes"].items():
        assert spec["imagenet"], name
        assert [IMAGENET[i] for i in spec["imagenet"]] == spec["imagenet_names"], name


def test_homes_crop_inside_their_photo_and_backgrounds_are_photos_of_known_packages():
    catalogue = load_catalogue()
    for home in catalogue.homes.values():
        top, left, side = home.crop
        assert 0 <= top < 1 and 0 <= left < 1 and 0 < side <= 1
        assert home.package in catalogue.packages
    assert {b.package for b in catalogue.backgrounds} <= set(catalogue.packages)
    assert len({b.name for b in catalogue.backgrounds}) == len(catalogue.backgrounds)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda raw: raw["targets"][0].update({"class": "unicorn"}), "unknown class 'unicorn'"),
        (lambda raw: raw["targets"][0].update({"home": "moon"}), "unknown home 'moon'"),
        (lambda raw: raw["targets"][1].update({"id": raw["targets"][0]["id"]}), "target ids must be unique"),
    ],
)
def test_a_broken_catalogue_is_refused(tmp_path, change, message):
    raw = json.loads(json.dumps(RAW))
    change(raw)
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(InvalidInputError, match=message):
        load_catalogue(path)


def test_crops_per_photo_grows_with_the_photo():
    catalogue = load_catalogue()
    small, large = np.zeros((300, 400, 3), np.uint8), np.zeros((4000, 6000, 3), np.uint8)
    assert catalogue.crops_per_photo(small) == catalogue.crop_rule["min"]
    assert catalogue.crops_per_photo(large) == catalogue.crop_rule["max"]


def test_crop_square():
    photo = np.arange(100 * 200).reshape(100, 200, 1).repeat(3, axis=2)
    square = crop_square(photo, (0.2, 0.5, 0.5))
    assert square.shape == (50, 50, 3) and square[0, 0, 0] == photo[20, 100, 0]
    assert crop_square(photo, (0.9, 0.9, 1.0)).shape == (100, 100, 3)  # clipped to stay inside


# -- assets and licences ---------------------------------------------------------------------
def test_missing_apt_says_how_to_use_your_own_folders(tmp_path, monkeypatch):
    monkeypatch.setattr(assets.shutil, "which", lambda tool: None)
    with pytest.raises(AssetError, match=r"apt-get and dpkg not found.*add-targets.*add-backgrounds") as info:
        fetch_packages(["mate-backgrounds"], cache_dir=tmp_path)
    assert "\n" not in str(info.value)


def test_fetched_packages_are_not_fetched_again(tmp_path, monkeypatch):
    (tmp_path / "some-pkg").mkdir()
    (tmp_path / "some-pkg" / COMPLETE_MARKER).write_text("x")
    monkeypatch.setattr(assets, "_run", lambda *a, **k: pytest.fail("nothing should be downloaded"))
    seen = []
    assert fetch_packages(["some-pkg"], cache_dir=tmp_path, progress=lambda done, total, package: seen.append(package)) == {"some-pkg": tmp_path / "some-pkg"}
    assert seen == ["some-pkg"]


def test_a_failed_download_is_an_asset_error(tmp_path, monkeypatch):
    class Failed:
        returncode, stdout, stderr = 100, "", "E: Unable to locate package nonexistent-pkg"

    monkeypatch.setattr(assets.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(assets, "_run", lambda *a, **k: Failed())
    with pytest.raises(AssetError, match=r"nonexistent-pkg.*Unable to locate package.*add-targets"):
        fetch_packages(["nonexistent-pkg"], cache_dir=tmp_path)
    assert not (tmp_path / "nonexistent-pkg").exists()


def test_licences_from_dep5_stanzas_and_wallpaper_metadata(tmp_path):
    doc = tmp_path / "usr" / "share" / "doc" / "pkg"
    doc.mkdir(parents=True)
    (doc / "copyright").write_text(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
        "Files: *\nCopyright: 2020 Someone\nLicense: GPL-2+\n\n"
        "Files: nature/Aqua.jpg\n       nature/Wood.jpg\nCopyright: 2008, A\n           2009, B\nLicense: CC-BY-4.0\n Long text.\n\n"
        "Files: 16.04/x_by_y.jpg\nCopyright: Y\nLicense: CC0-1.0\n\n"
        "License: GPL-2+\n Full text.\n"
    )
    assert licence_of(tmp_path, "pkg", "usr/share/backgrounds/nature/Wood.jpg") == "CC-BY-4.0 (2008, A; 2009, B)"
    assert licence_of(tmp_path, "pkg", "usr/share/backgrounds/other.jpg") == "GPL-2+ (2020 Someone)"
    assert licence_of(tmp_path, "pkg", "usr/share/backgrounds/x_by_y.jpg") == "CC0-1.0 (Y)"  # folder dropped on install
    images = tmp_path / "usr" / "share" / "wallpapers" / "Path" / "contents" / "images"
    images.mkdir(parents=True)
    (images.parents[1] / "metadata.json").write_text(json.dumps({"KPlugin": {"License": "LGPLv3", "Authors": [{"Name": "R. S."}]}}))
    assert licence_of(tmp_path, "pkg", "usr/share/wallpapers/Path/contents/images/2560x1600.jpg") == "LGPLv3 (R. S.)"
    assert licence_of(tmp_path, "other", "x.jpg") == ""


# -- the step runner -------------------------------------------------------------------------
def test_steps_run_in_order_once_and_resume(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    order = []

    def step(name, fail=False):
        def run(ws, context):
            order.append(name)
            if fail:
                raise RuntimeError(name)
            ws.set_meta(name, "done")

        return DemoStep(name, run, lambda ws: ws.get_meta(name) == "done")

    with pytest.raises(RuntimeError):
        build_demo(workspace, steps=[step("a"), step("b", fail=True)])
    report = build_demo(workspace, steps=[step("a"), step("b")])
    assert order == ["a", "b", "b"]
    assert report.steps_run == ("b",) and report.steps_skipped == ("a",)
    assert report.to_dict()["targets"] == 0


def test_demo_steps_are_named_and_ordered():
    assert [step.name for step in DEMO_STEPS[:3]] == ["assets", "targets", "backgrounds"]
    assert all(isinstance(step, tuple) and len(step) == 3 for step in DEMO_STEPS)


# -- a small build from the real packages ----------------------------------------------------
def _cache_ready() -> bool:
    catalogue = load_catalogue()
    return all(assets.is_fetched(p) for p in catalogue.packages)


@pytest.mark.skipif(not _cache_ready(), reason="demo assets not in the cache; run `python -m analytics fetch-assets`")
def test_small_demo_from_the_real_assets(tmp_path, monkeypatch):
    full = load_catalogue()
    classes = sorted({t.class_name for t in full.targets})[:2]
    targets = [next(t for t in full.targets if t.class_name == c) for c in classes]
    photos = [full.backgrounds[0], next(b for b in full.backgrounds if b.package == "mate-backgrounds")]
    small = replace(full, targets=targets, backgrounds=photos, classes={c: full.classes[c] for c in classes}, digest="small")
    monkeypatch.setattr(steps, "load_catalogue", lambda *a, **k: small)
    workspace = Workspace(tmp_path / "ws")
    workspace.set_meta("image_size", "64")

    data_steps = DEMO_STEPS[:3]  # the analysis steps (models, suites, runs) have their own tests
    # through the CLI's own progress bars (`python -m analytics demo`): a step that calls the callback
    # with its arguments out of order fails here, as it failed `bash backdrop.sh serve` once
    bars, seen = StepBars(), []

    def progress(done: int, total: int, step: str = "") -> None:
        seen.append((done, total, step))
        bars.update(done, total, step)

    try:
        report = build_demo(workspace, steps=data_steps, progress=progress)
    finally:
        bars.close()
    assert report.steps_run == ("assets", "targets", "backgrounds")
    assert all(isinstance(done, int) and isinstance(total, int) and isinstance(step, str) for done, total, step in seen)
    assert (2, 2, "targets") in seen and (len(photos), len(photos), "backgrounds") in seen
    assert report.targets == 2 and report.classes == 2 and report.backgrounds >= 4
    assert list_classes(workspace) == small.classes
    table = list_targets(workspace)
    assert all(p.startswith("tuxpaint-stamps-default") for p in table["package"])
    assert all("stamp: GPL" in licence and "home photo: " in licence for licence in table["licence"])
    pool = list_backgrounds(workspace)
    assert set(pool["package"]) == {photos[0].package, "mate-backgrounds"}
    assert all(licence for licence in pool["licence"]) and pool["id"].str.contains("@").all()

    again = build_demo(workspace, steps=data_steps)
    assert again.steps_run == () and again.backgrounds == report.backgrounds
