"""Backgrounds free of the object under test: classifier screening, own-photo crops, suites, the Data page table.

Fixtures: ``tests/fixtures/screening.py`` (a pool with a pure-red "zebra" and crops of the targets'
own photos; ``red-is-zebra``, a fake ImageNet classifier that sees zebras in red pixels).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from analytics.data import (
    Background,
    Target,
    list_backgrounds,
    list_classes,
    list_targets,
    load_backgrounds,
    on_home,
    paste_cutout,
    read_image,
    read_image_rgba,
    set_class_mapping,
    source_photo,
    store_backgrounds,
    store_targets,
)
from analytics.data.images import resize_square, square_crops
from analytics.data.label_spaces import in9_imagenet_indices
from analytics.demo import is_fetched
from analytics.demo.assets import package_root
from analytics.exceptions import NotFoundError
from analytics.keywords import ClassifierPatchBackend, KeywordTable, compute_keywords, save_keyword_table, view_cache
from analytics.models import load_model
from analytics.suites import DEFAULT_SCREENING_THRESHOLD, build_suite, exclusion_summary, own_photo_backgrounds, screen_pool, screening, screening_gaps, screening_warning
from analytics.suites.screening import pool_exclusions
from analytics.workspace import Workspace
from tests.fixtures.screening import FAKE_CLASSIFIER, OWN_PHOTOS, RED_BACKGROUND, ZEBRA

TARGETS = ["apple/0", "zebra/away", "zebra/home"]


# -- own photos ----------------------------------------------------------------------------------
def test_source_photo_is_the_home_of_a_cut_out():
    assert source_photo(on_home("stamps:/a/zebra.png", "wallpapers:/x/fog.jpg")) == "wallpapers:/x/fog.jpg"
    assert source_photo("photos/cat.jpg") == "photos/cat.jpg"  # a target photo is its own source


def test_own_photo_crops_are_found_by_origin(screening_data):
    pool = list_backgrounds(screening_data)["id"].tolist()
    own = own_photo_backgrounds(screening_data, TARGETS, pool)
    assert {target: set(found) for target, found in own.items()} == OWN_PHOTOS


# -- classifier screening ------------------------------------------------------------------------
def test_screening_finds_the_pasted_object_on_one_patch(screening_workspace):
    """The red square fills one 3x3 cell only: the whole view alone would miss it."""
    result = screen_pool(screening_workspace)
    assert result.model == FAKE_CLASSIFIER and result.classes == ["apple", "zebra"] and result.unscreened == []
    zebra = result.scores[:, result.classes.index("zebra")]
    assert zebra[result.pool_ids.index(RED_BACKGROUND)] > DEFAULT_SCREENING_THRESHOLD
    assert result.excluded("zebra") == [RED_BACKGROUND] and result.excluded("apple") == []
    assert screen_pool(screening_workspace, grid=1).excluded("zebra") == []  # the whole image alone


def test_screening_is_cached_per_background(screening_workspace, monkeypatch):
    first = screen_pool(screening_workspace)
    monkeypatch.setattr(view_cache, "iter_view_probabilities", lambda *a, **k: pytest.fail("a cached background was screened again"))
    again = screen_pool(screening_workspace)
    np.testing.assert_array_equal(again.scores, first.scores)

    calls = []
    def counting(model, chunks, **kwargs):
        for images in chunks:
            calls.append(len(images))
            yield np.zeros((len(images), 10, 1000), np.float32)

    monkeypatch.setattr(view_cache, "iter_view_probabilities", counting)
    store_backgrounds(screening_workspace, [Background("new", np.zeros((64, 64, 3), np.uint8), origin="photos:/new.jpg")])
    screen_pool(screening_workspace)
    assert calls == [1]  # only the new background


def test_pool_keywords_and_screening_share_one_forward_pass(screening_workspace, monkeypatch):
    """Issue 28.5: screening ran the keywords' 10-view forward over the pool a second time. After the
    classifier-patch keywords of the pool, screening with the keyword model runs no network and
    gives exactly the scores of screening alone; the keyword table is exactly the backend's scores."""
    alone = screen_pool(screening_workspace)
    with screening_workspace.transaction() as conn:
        conn.execute("DELETE FROM cache")
    model = load_model(screening_workspace, FAKE_CLASSIFIER)
    backend = ClassifierPatchBackend(model, exclude_classes=list_classes(screening_workspace))
    table = compute_keywords(screening_workspace, backend=backend, item_kind="background", batch_size=5)
    np.testing.assert_array_equal(table.scores, backend.scores(load_backgrounds(screening_workspace, table.ids)))
    monkeypatch.setattr(view_cache, "iter_view_probabilities", lambda *a, **k: pytest.fail("screening ran the network again"))
    monkeypatch.setattr(screening, "load_model", lambda *a, **k: pytest.fail("screening loaded the model again"))
    shared = screen_pool(screening_workspace)
    assert shared.pool_ids == alone.pool_ids and shared.excluded("zebra") == [RED_BACKGROUND]
    np.testing.assert_array_equal(shared.scores, alone.scores)


def test_screening_first_then_pool_keywords_run_no_second_pass(screening_workspace, monkeypatch):
    """Issue 28.5, the other order: screening before the keywords left the keywords a forward pass of
    their own. After screening, the pool's classifier-patch keywords run no network, and their table
    is exactly the one computed with nothing cached."""
    model = load_model(screening_workspace, FAKE_CLASSIFIER)
    backend = ClassifierPatchBackend(model, exclude_classes=list_classes(screening_workspace))
    alone = compute_keywords(screening_workspace, backend=backend, item_kind="background", batch_size=5)
    with screening_workspace.transaction() as conn:
        conn.execute("DELETE FROM cache")
        conn.execute("DELETE FROM keyword_tables")
    screen_pool(screening_workspace)
    monkeypatch.setattr(view_cache, "iter_view_probabilities", lambda *a, **k: pytest.fail("the keywords ran the network again"))
    shared = compute_keywords(screening_workspace, backend=backend, item_kind="background", batch_size=5)
    assert shared.ids == alone.ids
    np.testing.assert_array_equal(shared.scores, alone.scores)


def test_screening_holds_class_scores_not_every_view_of_the_pool(screening_workspace):
    """Issue 28.5: screening held (pool, 10 views, 1000 outputs) floats (800 MB at 20,000
    backgrounds). Its traced memory peak must not grow with the pool by more than a few images' views."""
    import tracemalloc

    rng = np.random.default_rng(5)
    store_backgrounds(screening_workspace, [Background(f"more{i:02d}", rng.integers(0, 255, (64, 64, 3), np.uint8), origin=f"p:/{i}") for i in range(48)])
    pool = list_backgrounds(screening_workspace)["id"].tolist()
    screen_pool(screening_workspace)  # fill the cache: the peaks below read it

    def peak(ids):
        tracemalloc.start()
        try:
            screen_pool(screening_workspace, pool_ids=ids, compute=False)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    views_bytes = 10 * 1000 * 4  # one image's views, float32
    assert peak(pool) - peak(pool[:12]) < 8 * views_bytes  # the old code held 48 more


def test_cache_only_screening_raises_until_screened(screening_workspace):
    with pytest.raises(NotFoundError, match="not screened"):
        screen_pool(screening_workspace, compute=False)
    screen_pool(screening_workspace)
    assert screen_pool(screening_workspace, compute=False).excluded("zebra") == [RED_BACKGROUND]


def test_without_an_imagenet_classifier_only_own_photos_are_excluded(screening_data):
    pool = list_backgrounds(screening_data)["id"].tolist()
    result = pool_exclusions(screening_data, TARGETS, pool)
    assert {target: set(found) for target, found in result.excluded.items()} == OWN_PHOTOS
    assert result.record["model"] is None and "no ImageNet classifier" in result.record["note"]


def test_an_in9_only_class_is_screened_with_its_official_imagenet_indices(screening_workspace):
    """Issue 28: a class named after an IN-9 class (the IN-9 import layout) is mapped to IN-9 only;
    it is screened with the official map's ImageNet indices, not skipped."""
    set_class_mapping(screening_workspace, "apple", in9="primate")
    pool = list_backgrounds(screening_workspace)["id"].tolist()
    record = pool_exclusions(screening_workspace, TARGETS, pool).record
    assert record["model"] == FAKE_CLASSIFIER and record["unscreened"] == []
    assert screening_warning(record) == "" and screening_gaps(screening_workspace) == ""
    assert screen_pool(screening_workspace).classes == ["apple", "zebra"]
    assert len(in9_imagenet_indices("primate")) == 20


def test_skipped_screening_warns_without_a_classifier(screening_data):
    suite = build_suite(screening_data, method="random", n=6, seed=0, realism_threshold=0.0)  # no classifier registered
    skipped = [w for w in suite.warnings if w.startswith("pool screening skipped")]
    assert skipped == [screening_warning(suite.params["pool_screening"])]
    assert "apple, zebra" in skipped[0] and "no ImageNet classifier" in skipped[0] and "add-model" in skipped[0]
    assert screening_gaps(screening_data) == skipped[0]


def test_skipped_screening_warns_for_a_class_without_imagenet_indices(screening_workspace):
    assert screening_gaps(screening_workspace) == ""
    set_class_mapping(screening_workspace, "apple", label="apple")  # no ImageNet indices, no IN-9 class
    gaps = screening_gaps(screening_workspace)
    assert gaps.startswith("pool screening skipped for apple: they have no ImageNet indices") and "set-class" in gaps
    suite = build_suite(screening_workspace, method="random", n=6, seed=0, realism_threshold=0.0)
    assert gaps in suite.warnings and suite.params["pool_screening"]["unscreened"] == ["apple"]


def test_skipped_screening_of_every_class_blames_the_mappings_not_the_classifier(screening_workspace):
    """A classifier registered but no class of the suite with ImageNet indices (a COCO export's own class
    names, examples/own_models.ipynb): the warning names the missing mappings, not a missing classifier."""
    for name in ("apple", "zebra"):
        set_class_mapping(screening_workspace, name, label=name)  # no ImageNet indices, no IN-9 class
    suite = build_suite(screening_workspace, method="random", n=6, seed=0, realism_threshold=0.0)
    skipped = [w for w in suite.warnings if w.startswith("pool screening skipped")]
    assert skipped == [screening_gaps(screening_workspace)] == [screening_warning(suite.params["pool_screening"])]
    assert skipped[0].startswith("pool screening skipped for apple, zebra: they have no ImageNet indices") and "set-class" in skipped[0]


def test_the_cli_warns_on_stderr_when_screening_is_skipped(screening_data, capsys):
    from analytics.cli import main

    assert main(["suite", "--workspace", str(screening_data.root), "--method", "random", "--n", "4", "--realism-threshold", "0", "--json"]) == 0
    captured = capsys.readouterr()
    assert "warning: pool screening skipped for apple, zebra" in captured.err
    assert any(w.startswith("pool screening skipped") for w in json.loads(captured.out)["warnings"])


# -- suites --------------------------------------------------------------------------------------
def test_suites_exclude_class_objects_and_own_photos_and_count_them(screening_workspace):
    """zebra/home may use exactly 9 of the 12 backgrounds: with n = 9 it gets exactly those."""
    suite = build_suite(screening_workspace, method="random", n=9, seed=0, realism_threshold=0.0)
    used = suite.items.groupby("target_id")["background_id"].apply(set).to_dict()
    pool = set(list_backgrounds(screening_workspace)["id"])
    assert used["zebra/home"] == pool - {RED_BACKGROUND, "home@0", "home@1"}
    assert RED_BACKGROUND not in used["zebra/away"] and "apple@0" not in used["apple/0"]
    record = suite.params["pool_screening"]
    assert record["model"] == FAKE_CLASSIFIER and record["threshold"] == DEFAULT_SCREENING_THRESHOLD
    assert record["classes"] == {"apple": {"classifier": 0, "own_photo": 1}, "zebra": {"classifier": 1, "own_photo": 2}}
    assert record["own_photo_pairs"] == 3


def test_every_sampler_respects_the_exclusions(screening_workspace):
    """Distance- and keyword-based samplers see the restricted pool (context rows and columns renumbered)."""
    ids = {"target": list_targets(screening_workspace)["id"].tolist(), "background": list_backgrounds(screening_workspace)["id"].tolist()}
    for kind, items in ids.items():
        present = np.ones((len(items), 2), bool)
        table = KeywordTable(items, ["sky", "meadow"], present.astype(np.float32), present, backend="precomputed")
        save_keyword_table(screening_workspace, table, name=f"all-{kind}", item_kind=kind)
    for method in ("random", "nearest", "interval", "keyword"):
        suite = build_suite(screening_workspace, method=method, n=6, seed=1, realism_threshold=0.0)
        for target, background in suite.items[["target_id", "background_id"]].itertuples(index=False):
            assert background not in OWN_PHOTOS[target] and not (target.startswith("zebra") and background == RED_BACKGROUND), method


def test_a_target_left_with_too_few_backgrounds_gets_all_and_a_warning(screening_workspace):
    suite = build_suite(screening_workspace, method="random", n=10, seed=0, realism_threshold=0.0)
    counts = suite.items.groupby("target_id").size().to_dict()
    assert counts == {"apple/0": 10, "zebra/away": 10, "zebra/home": 9}
    assert any("zebra/home" in w and "9 of 10" in w for w in suite.warnings)


# -- the Data page table -------------------------------------------------------------------------
def test_exclusion_summary_reads_the_cache_unless_asked_to_screen(screening_workspace, monkeypatch):
    monkeypatch.setattr(screening, "load_model", lambda *a, **k: pytest.fail("a page render loaded the classifier"))
    before = exclusion_summary(screening_workspace)
    monkeypatch.undo()
    assert list(before.columns) == ["class", "excluded_by_classifier", "excluded_as_own_photo"]
    assert before["excluded_by_classifier"].isna().all()  # not screened yet, nothing run
    assert before.set_index("class")["excluded_as_own_photo"].to_dict() == {"apple": 1, "zebra": 2}
    after = exclusion_summary(screening_workspace, compute=True).set_index("class")
    assert after["excluded_by_classifier"].to_dict() == {"apple": 0, "zebra": 1}


# -- real assets ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_real_zebra_stamp_in_a_background_is_excluded_from_zebra_suites(tmp_path):
    """EfficientNet-Lite0 on Debian photos: a Tux Paint zebra pasted into a meadow is screened out,
    the zebra's home-photo crops too; the clean meadow crops stay."""
    packages = ("tuxpaint-stamps-default", "mate-backgrounds")
    if not all(is_fetched(p) for p in packages):
        pytest.skip("demo assets not in the cache; run `python -m analytics fetch-assets`")
    from analytics.models import register_efficientnet_lite

    stamps, mate = package_root(packages[0]), package_root(packages[1])
    stamp_path = "usr/share/tuxpaint/stamps/animals/mammals/equines/zebra.png"
    photos = {name: f"usr/share/backgrounds/mate/nature/{name}.jpg" for name in ("Dune", "GreenMeadow", "Garden")}
    workspace = Workspace(tmp_path / "ws")
    stamp = read_image_rgba(stamps / stamp_path)
    image, mask = paste_cutout(stamp, read_image(mate / photos["Dune"]), size=256)
    origin = on_home(f"tuxpaint-stamps-default:/{stamp_path}", f"mate-backgrounds:/{photos['Dune']}")
    store_targets(workspace, [Target("zebra/zebra", "zebra", image, mask, origin=origin)], classes={"zebra": [ZEBRA]})
    backgrounds = []
    for name in ("Dune", "GreenMeadow"):
        photo = read_image(mate / photos[name])
        for top, left, side in square_crops(photo, 2, seed=0):
            crop = resize_square(photo[top : top + side, left : left + side], None, 256)[0]
            backgrounds.append(Background(f"{name}@{top},{left}", crop, origin=f"mate-backgrounds:/{photos[name]}"))
    with_zebra, _ = paste_cutout(stamp, read_image(mate / photos["Garden"]), size=256, scale=0.5)
    backgrounds.append(Background("Garden+zebra", with_zebra, origin=f"mate-backgrounds:/{photos['Garden']}"))
    store_backgrounds(workspace, backgrounds)
    register_efficientnet_lite(workspace, 0)

    suite = build_suite(workspace, method="random", n=2, seed=0, realism_threshold=0.0)
    assert set(suite.items["background_id"]) == {b.id for b in backgrounds if b.id.startswith("GreenMeadow")}
    assert suite.params["pool_screening"]["classes"] == {"zebra": {"classifier": 1, "own_photo": 2}}


def test_cli_cut_outs_record_their_home_photo(tmp_path, capsys):
    """``add-targets --layout cutouts --home`` names the home in the origin: its crops are own photos."""
    import cv2

    from analytics.cli import main

    rng = np.random.default_rng(0)
    photos, cutouts = tmp_path / "photos", tmp_path / "cutouts" / "zebra"
    photos.mkdir()
    cutouts.mkdir(parents=True)
    for name in ("home", "other"):
        cv2.imwrite(str(photos / f"{name}.png"), rng.integers(0, 255, (160, 200, 3), dtype=np.uint8))
    rgba = np.zeros((40, 40, 4), np.uint8)
    rgba[10:30, 10:30] = 255
    cv2.imwrite(str(cutouts / "stripes.png"), rgba)
    root = str(tmp_path / "ws")
    assert main(["add-backgrounds", "--workspace", root, "--path", str(photos), "--crops", "2", "--json"]) == 0
    home = str(photos / "home.png")
    assert main(["add-targets", "--workspace", root, "--path", str(tmp_path / "cutouts"), "--layout", "cutouts", "--home", home, "--json"]) == 0
    capsys.readouterr()
    workspace = Workspace(root, create=False)
    pool = list_backgrounds(workspace)["id"].tolist()
    own = own_photo_backgrounds(workspace, ["zebra/stripes"], pool)["zebra/stripes"]
    assert len(pool) == 4 and own == {b for b in pool if b.startswith("home@")} and len(own) == 2
