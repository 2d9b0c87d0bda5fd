"""XIMAGENET-12 scenarios (pixels on a tiny synthetic target), the robustness score (hand-computed and
against the paper's Table 3), the Table 1 regression on synthetic accuracies, and the evaluation on
the tiny workspace with real tiny models (shapes, correctness, cache reuse and resume)."""

from __future__ import annotations

import cv2
import numpy as np
import pandas as pd
import pytest

from analytics.exceptions import InvalidInputError, PermissionDeniedError
from analytics.robustness import ORIGINAL, SCENARIOS, class_accuracy, evaluate_scenarios, robustness_scores, scenario_accuracy, scenario_examples
from analytics.robustness import scenarios as sc
from analytics.robustness.scenario_stats import fit_regression, robustness_score, spread
from analytics.robustness.scenarios import HUE_RANGES, apply_scenario
from analytics.team import User

SIDE = 24


@pytest.fixture
def target() -> tuple[np.ndarray, np.ndarray]:
    """A 24 px image of saturated colours (every pixel's hue known) with a central 8x8 object."""
    rng = np.random.default_rng(3)
    hsv = np.stack([rng.integers(0, 180, (SIDE, SIDE)), rng.integers(200, 256, (SIDE, SIDE)), rng.integers(150, 256, (SIDE, SIDE))], axis=2)
    image = cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2RGB)
    mask = np.zeros((SIDE, SIDE), bool)
    mask[8:16, 8:16] = True
    return image, mask


def run(name: str, image: np.ndarray, mask: np.ndarray, **kwargs) -> np.ndarray:
    return apply_scenario(name, image, mask, seed=kwargs.pop("seed", 0), target=kwargs.pop("target_id", "t"), **kwargs)


def hue(image: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(image, cv2.COLOR_RGB2HSV)[..., 0].astype(int)


def hue_distance(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Circular distance on OpenCV's 0..179 hue circle."""
    d = np.abs(np.asarray(a) - np.asarray(b)) % 180
    return np.minimum(d, 180 - d)


BACKGROUNDS = np.stack([np.full((SIDE, SIDE, 3), v, np.uint8) for v in (10, 100, 240)])


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n != "blur_object"])
def test_every_background_scenario_keeps_the_object_and_is_deterministic(name, target):
    image, mask = target
    out = run(name, image, mask, backgrounds=BACKGROUNDS)
    assert out.shape == image.shape and out.dtype == np.uint8
    np.testing.assert_array_equal(out[mask], image[mask])  # every object pixel exact, random_background's too
    np.testing.assert_array_equal(out, run(name, image, mask, backgrounds=BACKGROUNDS))
    assert not np.array_equal(out[~mask], image[~mask])


def test_grey_background_has_equal_channels_from_opencv_luma(target):
    image, mask = target
    out = run("image_grey", image, mask)
    background = out[~mask]
    assert (background[:, 0] == background[:, 1]).all() and (background[:, 1] == background[:, 2]).all()
    np.testing.assert_array_equal(background[:, 0], cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)[~mask])


def test_blur_object_blurs_only_the_object_with_the_authors_kernel(target):
    image, mask = target
    out = run("blur_object", image, mask)
    np.testing.assert_array_equal(out[~mask], image[~mask])
    np.testing.assert_array_equal(out[mask], cv2.GaussianBlur(image, (15, 15), 3)[mask])  # their utils.blur(method='object')
    assert not np.array_equal(out[mask], cv2.GaussianBlur(image, (9, 9), 4)[mask])  # not the background blur's kernel
    assert not np.array_equal(out[mask], image[mask])


def test_blur_background_blurs_only_the_background(target):
    image, mask = target
    out = run("blur_background", image, mask)
    np.testing.assert_array_equal(out[mask], image[mask])
    np.testing.assert_array_equal(out[~mask], cv2.GaussianBlur(image, (9, 9), 4)[~mask])


def test_brightness_is_the_papers_unsharp_mask_on_the_background(target):
    image, mask = target
    out = run("image_bright", image, mask)
    expected = cv2.addWeighted(image, 1.5, cv2.GaussianBlur(image, (9, 9), 4), 0.9, 1.9)
    np.testing.assert_array_equal(out[~mask], expected[~mask])
    assert out[~mask].mean() > image[~mask].mean()


def test_segmented_is_black_and_transparent_goes_over_the_matte(target):
    image, mask = target
    assert (run("segmented_image", image, mask)[~mask] == 0).all()
    assert (run("transparent_image", image, mask)[~mask] == sc.TRANSPARENT_MATTE).all()
    segmented, transparent = sc.segmented_rgba(image, mask), sc.transparent_rgba(image, mask)
    assert (segmented[..., 3] == 255).all() and (segmented[~mask, :3] == 0).all()
    assert (transparent[~mask, 3] == 0).all() and (transparent[mask, 3] == 255).all()
    np.testing.assert_array_equal(transparent[..., :3], image)  # the authors' file keeps the RGB under alpha 0
    np.testing.assert_array_equal(sc.flatten_rgba(transparent, (0, 0, 0)), run("segmented_image", image, mask))


@pytest.mark.parametrize("name", sorted(HUE_RANGES))
@pytest.mark.parametrize("seed", range(6))
def test_hue_scenarios_put_one_hue_from_the_stated_range_on_the_background(name, seed, target):
    image, mask = target
    out = run(name, image, mask, seed=seed)
    np.testing.assert_array_equal(out[mask], image[mask])
    hues = hue(out)[~mask]
    allowed = np.concatenate([np.arange(low, high + 1) for low, high in HUE_RANGES[name]])
    nearest = hue_distance(hues[:, None], allowed[None, :]).min(axis=1)
    assert nearest.max() <= 2  # HSV -> RGB -> HSV rounds the hue by a step or two
    assert hue_distance(hues, np.median(hues)).max() <= 4  # one hue for the whole background


def test_hue_draws_cover_both_red_ranges(target):
    image, mask = target
    medians = [int(np.median(hue(run("image_r", image, mask, seed=s))[~mask])) for s in range(40)]
    assert any(h <= 31 for h in medians) and any(h >= 148 for h in medians)


def test_rainbow_rotates_every_background_hue_by_one_shift(target):
    image, mask = target
    out = run("image_rainbow", image, mask, seed=1)
    np.testing.assert_array_equal(out[mask], image[mask])
    shift = (hue(out)[~mask] - hue(image)[~mask]) % 180
    centre = int(np.median(shift))
    assert 0 <= centre <= sc.RAINBOW_MAX_SHIFT + 2 and hue_distance(shift, centre).max() <= 3


def test_random_background_draws_a_pool_background_by_seed_and_target(target):
    image, mask = target
    far = cv2.dilate(mask.astype(np.uint8), np.ones((9, 9), np.uint8)) == 0
    drawn = set()
    for target_id in "abcdefgh":
        out = run("random_background", image, mask, target_id=target_id, backgrounds=BACKGROUNDS)
        values = np.unique(out[far])
        assert len(values) == 1 and values[0] in (10, 100, 240)
        drawn.add(int(values[0]))
    assert len(drawn) > 1
    with pytest.raises(InvalidInputError, match="at least one background"):
        run("random_background", image, mask)


def test_random_background_keeps_every_object_pixel_and_blends_outside(target):
    image, mask = target
    out = run("random_background", image, mask, backgrounds=BACKGROUNDS)
    np.testing.assert_array_equal(out[mask], image[mask])  # the seam band's inner half too
    chosen = BACKGROUNDS[[int(v) for v in (10, 100, 240)].index(int(out[0, 0, 0]))]
    hard = np.where(mask[..., None], image, chosen)
    ring = (cv2.dilate(mask.astype(np.uint8), np.ones((7, 7), np.uint8)) > 0) & ~mask
    assert not np.array_equal(out[ring], hard[ring])  # blended just outside the outline
    np.testing.assert_array_equal(out[~ring & ~mask], hard[~ring & ~mask])


def test_unknown_scenario_and_bad_mask_are_refused(target):
    image, mask = target
    with pytest.raises(InvalidInputError, match="scenario"):
        run("sepia", image, mask)
    with pytest.raises(InvalidInputError):
        run("image_grey", image, mask[:-1])


# -- robustness score ------------------------------------------------------------------------------
def test_spread_and_both_scores_on_a_hand_computed_example():
    assert spread([0.9, 0.8, 0.5], 1.0) == pytest.approx(0.30 / 3)
    assert spread([0.9, 0.8, 0.5], 1.0, ddof=1) == pytest.approx(0.30 / 2)
    score = robustness_score([0.9, 0.8, 0.5], [0.7, 0.9], 1.0)
    assert score.external == pytest.approx(0.10) and score.internal == pytest.approx(0.05)
    assert score.score_paper == pytest.approx(1 - (np.sqrt(0.05) + np.sqrt(0.10)))
    assert score.external_table3 == pytest.approx(0.15) and score.internal_table3 == pytest.approx(0.10)
    assert score.score_table3 == pytest.approx(0.75)


def test_table3_arithmetic_reproduces_the_papers_densenet_row():
    """Table 2's DenseNet121 accuracies (ImageNet-trained / scenario-trained) give Table 3's row."""
    external = [0.9377, 0.8892, 0.8739, 0.8733, 0.9323, 0.8821, 0.2641, 0.6967]
    internal = [0.9079, 0.8657, 0.8892, 0.8996, 0.9044, 0.8737, 0.6958, 0.9160]
    v_e, v_i = spread(external, 0.974, ddof=1), spread(internal, 0.8622, ddof=1)  # μ: the listed drops' best accuracy
    assert v_e == pytest.approx(0.0885, abs=5e-4) and v_i == pytest.approx(0.0052, abs=5e-4)
    assert 1 - (v_e + v_i) == pytest.approx(0.9062, abs=1e-3)


def test_robustness_scores_from_predictions():
    rows = []
    for scenario, correct in ((ORIGINAL, [1, 1, 1, 1]), ("image_grey", [1, 1, 0, 1]), ("blur_object", [1, 0, 0, 1])):
        rows += [("m", scenario, f"t{i}", "ab"[i % 2], "", 0.5, bool(c)) for i, c in enumerate(correct)]
    table = robustness_scores(pd.DataFrame(rows, columns=sc.SCENARIO_PREDICTION_COLUMNS))
    row = table.loc["m"]
    # scenarios 0.75 and 0.5 around μ = 1; classes a: 2/4, b: 3/4
    assert row["external"] == pytest.approx((0.0625 + 0.25) / 2) and row["internal"] == pytest.approx((0.25 + 0.0625) / 2)
    assert row["score_table3"] == pytest.approx(1 - 2 * 0.3125) and row["n_scenarios"] == 2


def test_the_default_score_spans_table_3s_eight_scenarios():
    """Rainbow, brightness and transparent are evaluated but, as in Table 3, not scored unless asked."""
    accuracy = dict(zip(SCENARIOS, (0.9, 0.8, 0.95, 0.85, 0.9, 0.7, 0.2, 0.75, 0.5, 0.6, 0.3)))
    rows = [("m", ORIGINAL, f"t{i}", "ab"[i % 2], "", 0.5, True) for i in range(20)]
    for scenario, share in accuracy.items():
        rows += [("m", scenario, f"t{i}", "ab"[i % 2], "", 0.5, i < share * 20) for i in range(20)]
    predictions = pd.DataFrame(rows, columns=sc.SCENARIO_PREDICTION_COLUMNS)

    def by_hand(names):
        chosen = predictions[predictions["scenario"].isin(names)]
        return robustness_score([accuracy[n] for n in sorted(names)], chosen.groupby("class")["correct"].mean().to_numpy(), 1.0)

    default, everything = robustness_scores(predictions).loc["m"], robustness_scores(predictions, scenario_set="all").loc["m"]
    assert len(sc.TABLE3_SCENARIOS) == 8 and not {"image_rainbow", "image_bright", "transparent_image"} & set(sc.TABLE3_SCENARIOS)
    assert default["n_scenarios"] == 8 and everything["n_scenarios"] == 11
    assert default["score_table3"] == pytest.approx(by_hand(sc.TABLE3_SCENARIOS).score_table3)
    assert everything["score_table3"] == pytest.approx(by_hand(list(SCENARIOS)).score_table3)
    assert default["score_table3"] != pytest.approx(everything["score_table3"])
    only_extra = predictions[predictions["scenario"].isin([ORIGINAL, "image_rainbow", "image_bright"])]
    with pytest.raises(InvalidInputError, match="scenario_set='all'"):
        robustness_scores(only_extra)
    assert robustness_scores(only_extra, scenario_set="all").loc["m", "n_scenarios"] == 2


# -- regression -------------------------------------------------------------------------------------
def test_regression_recovers_known_coefficients():
    rng = np.random.default_rng(0)
    effects = {
        "model": {"resnet": 0.0, "vit": -0.05, "dense": 0.02},
        "scenario": {ORIGINAL: 0.0, "blur_object": -0.07, "segmented_image": -0.3, "random_background": -0.7},
        "class": {f"c{k}": e for k, e in enumerate((0.0, 0.13, -0.05, 0.04, 0.1))},
    }
    cells = pd.DataFrame(
        [
            (m, s, c, 0.9 + em + es + ec + rng.normal(0, 0.005))
            for m, em in effects["model"].items()
            for s, es in effects["scenario"].items()
            for c, ec in effects["class"].items()
        ],
        columns=["model", "scenario", "class", "accuracy"],
    )
    fit = fit_regression(cells)
    estimates = fit.table.set_index("Variable")["Estimate"]
    assert fit.baseline == {"model": "resnet", "scenario": ORIGINAL, "class": "c0"}
    assert estimates["Intercept"] == pytest.approx(0.9, abs=0.01)
    labels = {"model": "Model Name", "scenario": "Image Scenario", "class": "Image Class"}
    for factor, levels in effects.items():
        for level, effect in list(levels.items())[1:]:
            assert estimates[f"{labels[factor]}[{level}]"] == pytest.approx(effect, abs=0.01)
    assert len(fit.table) == 1 + 2 + 3 + 4 and fit.n_cells == 60
    assert list(fit.table.columns) == ["Variable", "Estimate", "Standard error", "t", "CI low", "CI high", "P value", "P value summary"]
    assert fit.table.set_index("Variable").loc["Image Scenario[random_background]", "P value summary"] == "****"
    assert set(fit.anova.index) >= {"Model Name", "Image Scenario", "Image Class"}
    other = fit_regression(cells, baseline_model="vit").table.set_index("Variable")["Estimate"]
    assert other["Model Name[resnet]"] == pytest.approx(0.05, abs=0.01)
    with pytest.raises(InvalidInputError, match="more cells"):
        fit_regression(cells.head(5))


# -- evaluation on the tiny workspace ----------------------------------------------------------------
CHOSEN = ["image_grey", "blur_object", "random_background"]


def test_evaluation_shapes_correctness_and_cache(tiny_model_workspace, monkeypatch):
    calls = []
    predictions = evaluate_scenarios(tiny_model_workspace, ["tiny", "fg-only"], scenarios=CHOSEN, batch_size=4, progress=lambda d, t: calls.append((d, t)))
    n = 2 * 4 * 6
    assert len(predictions) == n and list(predictions.columns) == sc.SCENARIO_PREDICTION_COLUMNS
    assert calls[-1] == (n, n)
    assert predictions["correct"].equals(predictions["predicted"] == predictions["class"])  # custom labels named like the classes
    # fg-only reads only the object's centre, which the background scenarios keep
    fg = predictions[predictions["model"] == "fg-only"].pivot(index="target", columns="scenario", values="true_prob")
    assert np.allclose(fg[["image_grey", "random_background"]].to_numpy(), fg[[ORIGINAL]].to_numpy())
    accuracy = scenario_accuracy(predictions)
    assert accuracy.shape == (4, 2) and accuracy.index[0] == ORIGINAL
    assert len(class_accuracy(predictions)) == 2 * 4 * 2
    assert list(robustness_scores(predictions).index) == ["tiny", "fg-only"]

    def refuse(*args, **kwargs):
        raise AssertionError("a cached evaluation loaded a model")

    monkeypatch.setattr(sc, "load_model", refuse)
    pd.testing.assert_frame_equal(evaluate_scenarios(tiny_model_workspace, ["tiny", "fg-only"], scenarios=CHOSEN), predictions)


def test_interrupted_evaluation_resumes_per_model_and_scenario(tiny_model_workspace, monkeypatch):
    first = evaluate_scenarios(tiny_model_workspace, ["tiny"], scenarios=CHOSEN, seed=5)
    keys = [row["key"] for row in tiny_model_workspace.query("SELECT key FROM cache WHERE key LIKE 'scenarios/%'")]
    assert len(keys) == 4
    with tiny_model_workspace.transaction() as conn:
        conn.execute("DELETE FROM cache WHERE key = ?", (keys[0],))
    done = []
    original = sc._predict
    monkeypatch.setattr(sc, "_predict", lambda *args: done.append(args[3]) or original(*args))
    again = evaluate_scenarios(tiny_model_workspace, ["tiny"], scenarios=CHOSEN, seed=5)
    assert len(done) == 1
    pd.testing.assert_frame_equal(again, first)
    other_seed = evaluate_scenarios(tiny_model_workspace, ["tiny"], scenarios=["image_grey", "random_background"], seed=6)
    assert done[1:] == ["random_background"] and len(other_seed) == 3 * 6  # only seeded scenarios depend on the seed


def test_examples_match_what_the_models_see(tiny_model_workspace):
    examples = scenario_examples(tiny_model_workspace, "disc/0", scenarios=CHOSEN, seed=2)
    assert list(examples) == [ORIGINAL, *CHOSEN]
    again = scenario_examples(tiny_model_workspace, "disc/0", scenarios=CHOSEN, seed=2)
    for name in examples:
        np.testing.assert_array_equal(examples[name], again[name])
        assert examples[name].shape == (64, 64, 3)


def test_evaluation_refuses_bad_input(tiny_model_workspace):
    with pytest.raises(InvalidInputError, match="at least one"):
        evaluate_scenarios(tiny_model_workspace, [])
    with pytest.raises(InvalidInputError, match="scenario"):
        evaluate_scenarios(tiny_model_workspace, ["tiny"], scenarios=["sepia"])


# -- command line -------------------------------------------------------------------------------------
def test_cli_prints_accuracy_robustness_and_regression(tiny_model_workspace, tmp_path, capsys):
    import json

    from analytics.cli import main

    csv = tmp_path / "predictions.csv"
    argv = ["scenarios", "--workspace", str(tiny_model_workspace.root), "--models", "tiny,bg-only", "--scenarios", "image_grey,segmented_image", "--csv", str(csv), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["scenarios"] == [ORIGINAL, "image_grey", "segmented_image"] and set(result["accuracy"][ORIGINAL]) == {"tiny", "bg-only"}
    assert set(result["robustness"]) == {"tiny", "bg-only"} and result["robustness_scenarios"] == "table3"
    terms = [row["Variable"] for row in result["regression"]["terms"]]
    assert terms[0] == "Intercept" and "Model Name[bg-only]" in terms and "Image Scenario[segmented_image]" in terms
    assert len(pd.read_csv(csv)) == 2 * 3 * 6
    extra = ["scenarios", "--workspace", str(tiny_model_workspace.root), "--models", "tiny", "--scenarios", "image_rainbow,image_bright", "--json"]
    assert main(extra) == 0
    outside_table3 = json.loads(capsys.readouterr().out)
    assert outside_table3["robustness"] is None and "scenario_set='all'" in outside_table3["robustness_note"]
    assert main([*extra, "--score-over", "all"]) == 0
    assert json.loads(capsys.readouterr().out)["robustness"]["tiny"]["n_scenarios"] == 2
    assert main(["scenarios", "--workspace", str(tiny_model_workspace.root), "--models", "tiny", "--scenarios", "sepia"]) == 2
    assert "scenario must be one of" in capsys.readouterr().err


def test_a_viewer_may_not_evaluate_scenarios(tiny_model_workspace):
    viewer = tiny_model_workspace.acting_as(User("vic", "viewer", False, "", ""))
    with pytest.raises(PermissionDeniedError, match="may not run models over suites: that needs the role admin or analyst"):
        evaluate_scenarios(viewer, ["tiny"], scenarios=CHOSEN)
