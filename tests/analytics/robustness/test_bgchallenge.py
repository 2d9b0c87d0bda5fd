"""The Backgrounds Challenge: variants pixel by pixel, pairings, metrics, adversarial search, release reader, CLI."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from analytics.cli import main
from analytics.data import custom_label_space
from analytics.exceptions import InvalidInputError, NotFoundError, PermissionDeniedError
from analytics.models import register_torchscript
from analytics.robustness.bgchallenge import (
    CATEGORIES,
    category_counts,
    challenge_data,
    evaluate_release,
    evaluate_variants,
    gaps,
    image_categories,
    only_bg_t,
    plan_variant,
    prediction_matrix,
    read_release,
    render,
    search_backgrounds,
    variant_accuracy,
    workspace_data,
)
from analytics.robustness.bgchallenge.adversarial import score_search
from analytics.robustness.bgchallenge.evaluation import release_data
from analytics.robustness.bgchallenge.metrics import CHALLENGE_PREDICTION_COLUMNS
from analytics.robustness.bgchallenge.variants import no_fg, only_bg_b, only_fg, pair_backgrounds
from analytics.team import User
from tests.fixtures.models import CORNER_BOXES, RegionNet, save_torchscript, write_labels

H, W = 12, 16


def synthetic(n_per_class: int = 3, classes: tuple[str, ...] = ("a", "b", "c")):
    """Targets whose pixel (r, c) of image k holds (k, r, c); object: rows 4..7, cols 6..9 (box rows 4-8, cols 6-10)."""
    n = n_per_class * len(classes)
    k, r, c = np.meshgrid(np.arange(n), np.arange(H), np.arange(W), indexing="ij")
    images = np.stack([k, r + 100, c + 200], axis=-1).astype(np.uint8)
    masks = np.zeros((n, H, W), bool)
    masks[:, 4:8, 6:10] = True
    masks[:, 4, 6] = False  # not a rectangle: the box is wider than the mask somewhere
    ids = [f"t{i}" for i in range(n)]
    labels = [name for name in classes for _ in range(n_per_class)]
    return challenge_data(ids, labels, images, masks)


def test_only_fg_and_no_fg_are_exact():
    data = synthetic()
    fg, nofg = only_fg(data.images, data.masks), no_fg(data.images, data.masks)
    inside = data.masks[..., None].repeat(3, axis=-1)
    assert (fg[~inside] == 0).all() and (fg[inside] == data.images[inside]).all()
    assert (nofg[inside] == 0).all() and (nofg[~inside] == data.images[~inside]).all()


def test_only_bg_b_blackens_the_whole_box():
    data = synthetic()
    out = only_bg_b(data.images, data.masks)
    assert (out[:, 4:8, 6:10] == 0).all()  # (4, 6) lies outside the mask but inside the box
    outside = np.ones((H, W), bool)
    outside[4:8, 6:10] = False
    assert (out[:, outside] == data.images[:, outside]).all()


def test_only_bg_t_tiles_the_largest_strip_and_removes_the_object():
    data = synthetic()
    out = only_bg_t(data.images, data.masks)
    # strips: top 4 rows x 16, bottom 4 x 16, left 6 cols x 12, right 6 x 12 -> left (72) beats rows (64)
    box = out[:, 4:8, 6:10]
    assert (box[..., 1] >= 100 + 4).all() and (box[..., 1] < 100 + 8).all()  # rows unchanged (vertical strip)
    assert np.array_equal(box[0, 0, :, 2], 200 + (np.arange(6, 10) % 6))  # columns repeat the strip 0..5
    assert not np.isin(box[..., 2], 200 + np.arange(6, 10)).any()  # no object column survives
    outside = np.ones((H, W), bool)
    outside[4:8, 6:10] = False
    assert (out[:, outside] == data.images[:, outside]).all()


def test_only_bg_t_uses_a_horizontal_strip_when_larger():
    images = np.zeros((1, 10, 10, 3), np.uint8)
    images[0, :, :, 0] = np.arange(10)[:, None]
    mask = np.zeros((1, 10, 10), bool)
    mask[0, 6:9, 1:9] = True  # top strip rows 0..5 is largest
    out = only_bg_t(images, mask)
    assert np.array_equal(out[0, 6:9, 4, 0], [0, 1, 2])  # rows 6, 7, 8 tile rows 0, 1, 2


def test_only_bg_t_without_a_strip_is_black():
    images = np.full((1, 6, 6, 3), 90, np.uint8)
    masks = np.zeros((1, 6, 6), bool)
    masks[0, 0, 0] = masks[0, 5, 5] = True  # the box covers the whole image
    assert (only_bg_t(images, masks) == 0).all()


@pytest.mark.parametrize("variant", ["mixed_same", "mixed_rand", "mixed_next"])
def test_mixed_pairings_are_reproducible_and_respect_the_class_rule(variant):
    data = synthetic()
    first = pair_backgrounds(data.classes, variant, seed=3, class_order=data.class_order)
    assert np.array_equal(first, pair_backgrounds(data.classes, variant, seed=3, class_order=data.class_order))
    classes = np.asarray(data.classes)
    assert (first >= 0).all() and (first != np.arange(len(first))).all()
    if variant == "mixed_same":
        assert (classes[first] == classes).all()
    elif variant == "mixed_next":
        following = {"a": "b", "b": "c", "c": "a"}
        assert all(classes[j] == following[c] for j, c in zip(first, classes))
    draws = {tuple(pair_backgrounds(data.classes, variant, seed=s, class_order=data.class_order)) for s in range(6)}
    assert len(draws) > 1  # the seed matters


def test_mixed_rand_draws_the_own_class_as_often_as_any_other():
    """The paper's "random background of a random class": the own class is one of C equally likely
    classes, so its share of the pairings is 1/C (binomial: within 4 standard deviations)."""
    n_classes, per_class, seeds = 9, 20, 20
    classes = [f"c{k}" for k in range(n_classes) for _ in range(per_class)]
    order = sorted(set(classes))
    labels = np.asarray(classes)
    same = [labels[pair_backgrounds(classes, "mixed_rand", seed=s, class_order=order)] == labels for s in range(seeds)]
    draws = n_classes * per_class * seeds
    expected = 1 / n_classes
    assert abs(np.mean(same) - expected) < 4 * np.sqrt(expected * (1 - expected) / draws)
    drawn = [labels[pair_backgrounds(classes, "mixed_rand", seed=s, class_order=order)] for s in range(seeds)]
    share = pd.Series(np.concatenate(drawn)).value_counts(normalize=True)
    assert share.max() - share.min() < 8 * np.sqrt(expected * (1 - expected) / draws)  # every class about as likely


def test_mixed_rand_never_pairs_a_target_with_itself():
    classes = ["a", "b", "b", "c"]  # 'a' is alone: drawing its own class is redrawn among the others
    pairs = np.stack([pair_backgrounds(classes, "mixed_rand", seed=s, class_order=["a", "b", "c"]) for s in range(50)])
    assert (pairs >= 0).all() and (pairs != np.arange(4)).all()
    assert (np.asarray(classes)[pairs[:, 1]] == "b").any()  # the own class does occur


def test_mixed_images_paste_the_object_on_the_partners_tiled_background():
    data = synthetic()
    plan = plan_variant(data, "mixed_rand", seed=1)
    images = render(data, plan)
    tiled = only_bg_t(data.images, data.masks)
    for k, (i, j) in enumerate(zip(plan.sources, plan.backgrounds)):
        assert (images[k][data.masks[i]] == data.images[i][data.masks[i]]).all()
        assert (images[k][~data.masks[i]] == tiled[j][~data.masks[i]]).all()
        assert (images[k][..., 0][~data.masks[i]] == j).all()  # provenance: the background's pixels carry its index
    blended = render(data, plan, blend=True)
    assert blended.shape == images.shape


def test_mixed_same_drops_a_class_of_one_target():
    data = challenge_data(["x", "y", "z"], ["a", "a", "b"], synthetic().images[:3], synthetic().masks[:3])
    plan = plan_variant(data, "mixed_same", seed=0)
    assert list(plan.sources) == [0, 1] and list(plan.backgrounds) == [1, 0]


def test_challenge_data_rejects_an_empty_mask():
    data = synthetic()
    masks = data.masks.copy()
    masks[2] = False
    with pytest.raises(InvalidInputError, match="t2"):
        challenge_data(data.ids, data.classes, data.images, masks)


# -- metrics -------------------------------------------------------------------------------------
def predictions(rows: list[tuple[str, str, bool]]) -> pd.DataFrame:
    """(variant, source, correct) -> a prediction table."""
    records = [
        {"variant": v, "source_id": s, "background_id": s, "class_name": "a", "background_class": "a", "predicted": 0,
         "predicted_class": "a", "correct": ok, "to_background": False}
        for v, s, ok in rows
    ]  # fmt: skip
    return pd.DataFrame(records, columns=list(CHALLENGE_PREDICTION_COLUMNS))


def test_bg_gap_and_same_minus_next():
    table = predictions(
        [("mixed_same", f"s{i}", i < 3) for i in range(4)] + [("mixed_rand", f"s{i}", i < 1) for i in range(4)] + [("mixed_next", f"s{i}", i < 2) for i in range(4)]
    )
    assert gaps(table) == pytest.approx({"bg_gap": 0.75 - 0.25, "same_minus_next": 0.75 - 0.5})
    accuracy = variant_accuracy(table).set_index("name")
    assert accuracy.loc["Mixed-Same", "n"] == 4 and np.isnan(accuracy.loc["Original", "accuracy"])


def test_image_categories_follow_table_3():
    # (full, foreground = Mixed-Rand, background = Only-BG-T) per source
    cases = {"irr1": (1, 1, 0), "irr2": (0, 0, 1), "req": (1, 0, 1), "both": (1, 0, 0), "fools": (0, 1, 0), "bothfools": (0, 1, 1)}
    rows = [(v, s, bool(flag)) for s, flags in cases.items() for v, flag in zip(("original", "mixed_rand", "only_bg_t"), flags)]
    categories = image_categories(predictions(rows)).set_index("source_id")["category"]
    assert categories.to_dict() == {
        "irr1": "BG Irrelevant", "irr2": "BG Irrelevant", "req": "BG Required", "both": "BG+FG Required",
        "fools": "BG Fools", "bothfools": "BG+FG Fools",
    }  # fmt: skip
    counts = category_counts(image_categories(predictions(rows)))
    assert list(counts) == list(CATEGORIES) and counts["BG Irrelevant"] == 2 and sum(counts.values()) == 6


# -- models in a workspace -----------------------------------------------------------------------
class ColourNet(nn.Module):
    """Class 1 ('square') when the centre pixel is blue (a square's object) or the corner pixel
    (0, 0) bright red (the planted background), else class 0 ('disc'); thresholds in normalised units."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        red_corner = x[:, 0, 0, 0] - x[:, 1, 0, 0]
        blue_centre = x[:, 2, 32, 32] - x[:, 1, 32, 32]
        square = torch.maximum(red_corner, blue_centre) - 3.0
        logits = torch.stack([torch.zeros_like(square), square], dim=1)
        return logits, logits


@pytest.fixture
def colour_workspace(tiny_workspace, tmp_path):
    labels = custom_label_space(write_labels(tmp_path / "labels.txt"))
    path = tmp_path / "colour.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch 2.14 deprecates tracing; users still ship TorchScript
        torch.jit.trace(ColourNet().eval(), torch.zeros(1, 3, 64, 64)).save(str(path))
    register_torchscript(tiny_workspace, "colour", checkpoint=path, label_space=labels, input_size=64)
    register_torchscript(tiny_workspace, "bg-only", checkpoint=save_torchscript(RegionNet(CORNER_BOXES), tmp_path / "bg.pt", seed=2), label_space=labels, input_size=64)
    return tiny_workspace


def planted(workspace):
    """Workspace targets with green discs, blue squares and one square's scene bright red: its
    tiled background flips every disc to 'square', nothing else fools ``ColourNet``."""
    data = workspace_data(workspace)
    images = data.images.copy()
    for i, name in enumerate(data.classes):
        images[i][data.masks[i]] = (0, 255, 0) if name == "disc" else (0, 0, 255)
    red = data.classes.index("square")
    images[red][~data.masks[red]] = (255, 0, 0)
    return challenge_data(data.ids, data.classes, images, data.masks), red


def test_adversarial_search_finds_the_planted_background(colour_workspace):
    data, red = planted(colour_workspace)
    calls = []
    result = search_backgrounds(colour_workspace, "colour", data, device="cpu", batch_size=2, progress=lambda d, n: calls.append(d))
    discs = np.asarray(data.classes) == "disc"
    assert result.fooled_to_background[discs].all()
    assert not result.fooled_to_background[~discs].any() and not result.fooled_any[~discs].any()  # squares stay squares
    assert result.asr[red] == 1.0 and np.nansum(result.asr) == 1.0
    top = result.most_fooling(per_class=1).set_index("class_name")
    assert top.loc["square", "background_id"] == data.ids[red]
    assert calls == list(range(1, len(data.ids) + 1))
    assert (result.predictions >= 0).all()  # the official search: every Only-BG-T image, the foreground's own included
    assert result.summary()["pool_size"] == len(data.ids)
    again = search_backgrounds(colour_workspace, "colour", data, device="cpu", progress=lambda d, n: None)  # from the cache
    assert np.array_equal(again.predictions, result.predictions)
    others = search_backgrounds(colour_workspace, "colour", data, device="cpu", include_own=False)  # Backdrop's former search
    assert (np.diag(others.predictions) == -1).all() and others.summary()["pool_size"] == len(data.ids) - 1
    off_diagonal = ~np.eye(len(data.ids), dtype=bool)
    assert np.array_equal(others.predictions[off_diagonal], result.predictions[off_diagonal])


def test_score_search_both_readings():
    data = challenge_data(["x", "y", "z"], ["a", "b", "c"], synthetic().images[:3], synthetic().masks[:3])
    predictions = np.array([[-1, 2, 2], [-1, -1, 1], [0, 0, -1]])  # outputs 0,1,2 = classes a,b,c
    result = score_search(predictions, data, {"a": [0], "b": [1], "c": [2]})
    assert list(result.fooled_to_background) == [True, False, True]  # x -> c on z's background; y stays b; z -> a on x's
    assert list(result.fooled_any) == [True, False, True]
    assert list(result.asr) == pytest.approx([1.0, 0.0, 0.5])  # x's background: z flipped, y not tried


def test_evaluate_variants_resumes_from_the_cache(colour_workspace):
    data = workspace_data(colour_workspace)
    table = evaluate_variants(colour_workspace, "bg-only", data, seed=0, device="cpu")
    assert set(table["variant"]) >= {"original", "mixed_same", "only_bg_t"}
    mixed = table[table["variant"] == "mixed_rand"]
    assert (mixed["source_id"] != mixed["background_id"]).all()
    n_cached = len(colour_workspace.query("SELECT key FROM cache WHERE key LIKE 'bgchallenge/%'"))
    assert n_cached == table["variant"].nunique()
    again = evaluate_variants(colour_workspace, "bg-only", data, seed=0, device="cpu")
    pd.testing.assert_frame_equal(table, again)
    assert len(colour_workspace.query("SELECT key FROM cache WHERE key LIKE 'bgchallenge/%'")) == n_cached


def test_an_interrupted_evaluation_resumes(colour_workspace):
    data = workspace_data(colour_workspace)

    def stop_after_original(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate_variants(colour_workspace, "bg-only", data, seed=5, device="cpu", progress=stop_after_original)
    assert len(colour_workspace.query("SELECT key FROM cache WHERE key LIKE 'bgchallenge/%'")) == 1  # Original's chunk kept
    seen = []
    evaluate_variants(colour_workspace, "bg-only", data, seed=5, device="cpu", progress=lambda d, n: seen.append(d))
    assert seen[0] == len(data.ids) and len(colour_workspace.query("SELECT key FROM cache WHERE key LIKE 'bgchallenge/%'")) == 8


def test_a_viewer_may_read_cached_predictions_but_not_run_the_model(colour_workspace):
    viewer = colour_workspace.acting_as(User("vic", "viewer", False, "", ""))
    data = workspace_data(colour_workspace)
    cached_rows = colour_workspace.query_one("SELECT COUNT(*) AS n FROM cache")["n"]
    for evaluate in (lambda: evaluate_variants(viewer, "colour", data), lambda: search_backgrounds(viewer, "colour", data)):
        with pytest.raises(PermissionDeniedError, match=r"vic \(viewer\) may not run models over suites: that needs the role admin or analyst"):
            evaluate()
    assert colour_workspace.query_one("SELECT COUNT(*) AS n FROM cache")["n"] == cached_rows
    assert evaluate_variants(viewer, "colour", data, cached_only=True) is None  # reading is allowed: nothing cached yet


def test_prediction_matrix_without_cache(colour_workspace):
    from analytics.models import load_model

    data, red = planted(colour_workspace)
    matrix = prediction_matrix(load_model(colour_workspace, "colour", device="cpu"), data, batch_size=3)
    assert (matrix[:, red][np.arange(len(data.ids)) != red] == 1).all()


# -- a published release ---------------------------------------------------------------------------
def make_release(root):
    """A made-up release in the published layout: 3 variants x 2 IN-9 class folders x 2 images, and their masks."""
    import cv2

    rng = np.random.default_rng(0)
    for variant in ("original", "mixed_rand", "only_bg_t"):
        for folder in ("00_dog", "01_bird"):
            (root / variant / "val" / folder).mkdir(parents=True)
            for k in range(2):
                cv2.imwrite(str(root / variant / "val" / folder / f"n0{k}.JPEG"), rng.integers(0, 255, (40, 40, 3), dtype=np.uint8))
    for folder in ("00_dog", "01_bird"):
        (root / "fg_mask" / "val" / folder).mkdir(parents=True)
        for k in range(2):
            mask = np.zeros((40, 40), np.uint8)
            mask[10:30, 10:30] = 1
            np.save(root / "fg_mask" / "val" / folder / f"n0{k}.npy", mask)
    return root


def test_read_release_and_generate_from_it(tmp_path):
    release = read_release(make_release(tmp_path / "bg_challenge"))
    assert set(release.files) == {"original", "mixed_rand", "only_bg_t"}
    assert release.classes["original"] == ["dog", "dog", "bird", "bird"]  # folder order 00_dog, 01_bird
    data = release_data(release, size=32)
    assert data.images.shape == (4, 32, 32, 3) and data.masks[:, 8:24, 8:24].all() and not data.masks[:, :4].any()
    with pytest.raises(NotFoundError, match="no IN-9 release"):
        read_release(tmp_path / "nothing")


def test_evaluate_release_maps_in9_folders(tiny_workspace, tmp_path):
    from tests.fixtures.models import TinyNet

    labels = tmp_path / "in9.txt"
    labels.write_text("dog\nbird\n")
    register_torchscript(tiny_workspace, "in9ish", checkpoint=save_torchscript(TinyNet(), tmp_path / "t.pt"), label_space=custom_label_space(labels), input_size=64)
    release = read_release(make_release(tmp_path / "bg_challenge"))
    table = evaluate_release(tiny_workspace, "in9ish", release, device="cpu")
    assert len(table) == 12 and set(table["class_name"]) == {"dog", "bird"}
    assert (table["correct"] == (table["predicted_class"] == table["class_name"])).all()
    assert len(image_categories(table)) == 4  # matched by file name across the three variants


def test_class_outputs_reads_an_in9_mapping_file(tmp_path):
    from types import SimpleNamespace

    from analytics.data import ClassMapping, imagenet_label_space
    from analytics.robustness.bgchallenge.evaluation import model_class_outputs

    model = SimpleNamespace(spec=SimpleNamespace(label_space=imagenet_label_space()))
    mapping = tmp_path / "made_up_in_to_in9.json"
    mapping.write_text(json.dumps({"5": 0, "7": 1, "8": -1}))
    assert model_class_outputs(model, {"dog": ClassMapping(in9="dog")}, in9_mapping=mapping) == {"dog": [5]}
    built_in = model_class_outputs(model, {"dog": ClassMapping(in9="dog")})["dog"]
    assert built_in == [*range(151, 171), *range(173, 269)]  # the challenge's in_to_in9.json, built in
    assert model_class_outputs(model, {"dog": ClassMapping(in9="dog")}, in9_mapping="wordnet")["dog"] == list(range(151, 269))
    assert model_class_outputs(model, {"x": ClassMapping((3,))}, in9_mapping=mapping) == {"x": [3]}  # ImageNet mappings win


# -- CLI -------------------------------------------------------------------------------------------
def test_cli_json_and_csv(colour_workspace, tmp_path, capsys):
    csv = tmp_path / "out.csv"
    code = main(["bgchallenge", "--workspace", str(colour_workspace.root), "--models", "bg-only,colour", "--seed", "1", "--adversarial", "--json", "--csv", str(csv)])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["models"]) == {"bg-only", "colour"}
    first = result["models"]["bg-only"]
    assert set(first["accuracy"]) == {"Original", "Only-BG-B", "Only-BG-T", "No-FG", "Only-FG", "Mixed-Same", "Mixed-Rand", "Mixed-Next"}
    assert first["bg_gap"] == pytest.approx(first["accuracy"]["Mixed-Same"] - first["accuracy"]["Mixed-Rand"])
    assert "fooled_to_background_share" in first["adversarial"]
    n = result["source"]["targets"]
    assert first["adversarial"]["pool_size"] == n  # the official search includes each foreground's own background
    assert main(["bgchallenge", "--workspace", str(colour_workspace.root), "--models", "colour", "--adversarial", "--adversarial-exclude-own", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["models"]["colour"]["adversarial"]["pool_size"] == n - 1
    rows = pd.read_csv(csv)
    assert set(rows["model"]) == {"bg-only", "colour"} and set(rows["variant"]) >= {"original", "mixed_next"}


def test_cli_unknown_model_exits_2(tiny_workspace, capsys):
    assert main(["bgchallenge", "--workspace", str(tiny_workspace.root), "--models", "nope", "--json"]) == 2
    assert "nope" in capsys.readouterr().err
