"""Attribution methods and mask metrics on constructed models whose right answer is known."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch
from captum.attr import GuidedBackprop as CaptumGuidedBackprop

from analytics.cli import main
from analytics.data import list_targets, load_targets
from analytics.exceptions import InvalidInputError
from analytics.saliency import METHODS, binarize, explain
from analytics.saliency._base import AttributionMethod, normalize_maps
from analytics.saliency._model import explainer
from analytics.saliency.guided_backprop import GuidedBackprop
from analytics.saliency.metrics import alignment, faithfulness
from analytics.saliency.vanilla_gradient import Saliency
from tests.fixtures.saliency import N_CLASSES, SIDE, FunctionalReLUNet, ReLU6Net

# Small settings so every method runs in well under a second on the 32 px fixtures.
FAST = {
    "integrated_gradients": {"n_steps": 16},
    "occlusion": {"window": 6, "stride": 3, "perturbations_per_eval": 64},
    "rise": {"n_masks": 200, "cells": 4},
}
ACCURATE_RISE = {"n_masks": 1000}  # enough masks for RISE's Monte-Carlo estimate to find a 12 px square
GRADIENT_METHODS = ["saliency", "integrated_gradients", "input_x_gradient", "guided_backprop"]
CAM_METHODS = ["gradcam", "gradcam_plus_plus"]


def build(key: str, net: torch.nn.Module, **settings) -> AttributionMethod:
    return METHODS[key](net, layer=getattr(net, "gate", None), **(FAST.get(key, {}) | settings))


def test_registry_keys_and_metadata():
    assert list(METHODS) == [
        "saliency",
        "integrated_gradients",
        "input_x_gradient",
        "guided_backprop",
        "gradcam",
        "occlusion",
        "gradcam_plus_plus",
        "rise",
    ]
    for key, cls in METHODS.items():
        assert cls.key == key and cls.name and cls.reference
        assert cls.needs_layer == (key in CAM_METHODS)
        assert cls.needs_gradients == (key not in ("occlusion", "rise"))


# -- known answers -------------------------------------------------------------------------
@pytest.mark.parametrize("key", GRADIENT_METHODS + CAM_METHODS)
def test_object_only_model_is_explained_on_the_object(region_case, key):
    maps = build(key, region_case.object_net).attribute(region_case.inputs, 0)
    scores = alignment(maps, region_case.masks)
    # pixel gradients are exactly zero off the region; CAMs bleed one upsampled cell at its edge
    assert scores.inside_share == pytest.approx(np.ones(2), abs=1e-6 if key in GRADIENT_METHODS else 0.1)
    assert (scores.pointing_game == 1).all()


@pytest.mark.parametrize("key", GRADIENT_METHODS + CAM_METHODS)
def test_background_only_model_is_explained_off_the_object(region_case, key):
    maps = build(key, region_case.background_net).attribute(region_case.inputs, 0)
    scores = alignment(maps, region_case.masks)
    assert scores.inside_share == pytest.approx(np.zeros(2), abs=1e-6 if key in GRADIENT_METHODS else 0.05)
    assert (scores.pointing_game == 0).all()


@pytest.mark.parametrize("key", list(METHODS))
def test_every_method_puts_more_weight_where_the_model_reads(region_case, key):
    region = region_case.region
    for net, sign in ((region_case.object_net, 1), (region_case.background_net, -1)):
        maps = build(key, net, **(ACCURATE_RISE if key == "rise" else {})).attribute(region_case.inputs, 0)
        inside, outside = maps[:, region].mean(1), maps[:, ~region].mean(1)
        assert (sign * (inside - outside) > 0).all(), (key, inside, outside)


def test_occlusion_and_rise_point_at_the_object(region_case):
    for key in ("occlusion", "rise"):
        maps = build(key, region_case.object_net, **(ACCURATE_RISE if key == "rise" else {})).attribute(region_case.inputs, 0)
        assert (alignment(maps, region_case.masks).pointing_game == 1).all(), key


# -- shared contract of every method -------------------------------------------------------
@pytest.mark.parametrize("key", list(METHODS))
def test_shape_finite_and_repeatable(region_case, key):
    method = build(key, region_case.object_net)
    first = method.attribute(region_case.inputs, torch.tensor([0, 1]))
    again = build(key, region_case.object_net).attribute(region_case.inputs, torch.tensor([0, 1]))
    assert first.shape == (2, SIDE, SIDE) and first.dtype == torch.float32
    assert torch.isfinite(first).all()
    torch.testing.assert_close(first, again)
    assert not first.requires_grad


@pytest.mark.parametrize("key", list(METHODS))
def test_bad_inputs_raise(region_case, key):
    method = build(key, region_case.object_net)
    with pytest.raises(InvalidInputError, match=r"inputs must have shape \(n, 3, H, W\)"):
        method.attribute(region_case.inputs[0], 0)
    with pytest.raises(InvalidInputError, match="inputs must be a float tensor"):
        method.attribute((region_case.inputs * 255).to(torch.uint8), 0)
    with pytest.raises(InvalidInputError, match=rf"target must index the model's {N_CLASSES} outputs.*\[{N_CLASSES}\]"):
        method.attribute(region_case.inputs, torch.tensor([0, N_CLASSES]))
    with pytest.raises(InvalidInputError, match="target must be an int or 2 ints"):
        method.attribute(region_case.inputs, [0, 1, 2])


@pytest.mark.parametrize("key", list(METHODS))
def test_runs_inside_inference_mode(region_case, key):
    expected = build(key, region_case.object_net).attribute(region_case.inputs, 0)
    with torch.inference_mode():
        inputs = region_case.inputs.clone()  # an inference tensor
        maps = build(key, region_case.object_net).attribute(inputs, 0)
    torch.testing.assert_close(maps, expected)


def test_rise_seed_changes_the_masks(region_case):
    one = build("rise", region_case.object_net, n_masks=50, seed=1).attribute(region_case.inputs, 0)
    two = build("rise", region_case.object_net, n_masks=50, seed=2).attribute(region_case.inputs, 0)
    assert not torch.allclose(one, two)


@pytest.mark.parametrize(
    ("key", "settings", "message"),
    [
        ("integrated_gradients", {"n_steps": 1}, r"n_steps must be an integer in \[2, 1024\]; got 1"),
        ("rise", {"p": 1.5}, r"p must be a number in \[0.05, 0.95\]; got 1.5"),
        ("occlusion", {"window": 2.5}, "window must be an integer"),
        ("occlusion", {"window": 4, "stride": 6}, "stride must be at most window=4 px"),
        ("saliency", {"reduce": "mean"}, "reduce must be one of 'sum', 'abs_sum', 'max_abs', 'l2'; got 'mean'"),
        ("saliency", {"normalize": "zscore"}, "normalize must be one of"),
    ],
)
def test_bad_settings_raise(region_case, key, settings, message):
    with pytest.raises(InvalidInputError, match=message):
        build(key, region_case.object_net, **settings)


def test_occlusion_window_larger_than_input_raises(region_case):
    with pytest.raises(InvalidInputError, match=f"window must be at most the input side {SIDE} px; got 64"):
        build("occlusion", region_case.object_net, window=64).attribute(region_case.inputs, 0)


def test_cam_methods_need_a_layer(region_case):
    for key in CAM_METHODS:
        with pytest.raises(InvalidInputError, match="needs layer"):
            METHODS[key](region_case.object_net)


def test_forward_func_must_return_logits(region_case):
    method = Saliency(lambda x: (region_case.object_net(x), None))
    with pytest.raises(InvalidInputError, match=r"forward_func must return logits of shape \(n, n_outputs\); got tuple"):
        method.attribute(region_case.inputs, 0)


# -- channel reduction and normalisation ---------------------------------------------------
def test_reduce_settings_follow_their_definitions(region_case):
    raw = {r: Saliency(region_case.object_net, reduce=r).attribute(region_case.inputs, 0) for r in ("sum", "abs_sum", "max_abs", "l2")}
    assert (raw["abs_sum"] >= raw["sum"].abs() - 1e-7).all()
    assert (raw["abs_sum"] >= raw["max_abs"] - 1e-7).all() and (raw["l2"] >= raw["max_abs"] - 1e-7).all()
    assert (raw["l2"] <= raw["abs_sum"] + 1e-7).all()


def test_normalize_maps():
    maps = torch.tensor([[[-2.0, 0.0], [1.0, 4.0]], [[3.0, 3.0], [3.0, 3.0]]])
    minmax = normalize_maps(maps, "minmax")
    torch.testing.assert_close(minmax[0], torch.tensor([[0.0, 1 / 3], [0.5, 1.0]]))
    assert (minmax[1] == 0).all()  # a constant map carries no ranking
    torch.testing.assert_close(normalize_maps(maps, "max_abs")[0], maps[0] / 4)
    ramp = torch.arange(1.0, 101.0).view(1, 10, 10)  # 99th percentile of 1..100 is 99
    scaled = normalize_maps(ramp, "percentile99")
    assert scaled[0, -1, -1] == 1 and scaled[0, 4, 8] == pytest.approx(49 / 99)
    sparse = torch.zeros(1, 20, 10)
    sparse[0, 0, :2] = torch.tensor([50.0, 100.0])  # 2 of 200 pixels: the percentile is 0, use the max
    torch.testing.assert_close(normalize_maps(sparse, "percentile99"), sparse / 100)


# -- guided backprop and ReLU6 -------------------------------------------------------------
def test_guided_backprop_hooks_relu6_modules_that_captum_skips():
    net = ReLU6Net().eval()
    inputs = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(3)) * 4 - 2
    plain = Saliency(net, reduce="sum").attribute(inputs, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        captum_only = CaptumGuidedBackprop(net).attribute(inputs.clone().requires_grad_(), target=1).sum(1)
    guided = GuidedBackprop(net, reduce="sum").attribute(inputs, 1)
    torch.testing.assert_close(captum_only, plain)  # captum's class leaves ReLU6 nets unguided
    assert not torch.allclose(guided, plain, atol=1e-5)


def test_guided_backprop_refuses_nets_without_relu_modules():
    with pytest.raises(InvalidInputError, match="found no nn.ReLU or nn.ReLU6 module"):
        GuidedBackprop(FunctionalReLUNet())
    with pytest.raises(InvalidInputError, match="needs forward_func to be a torch.nn.Module"):
        GuidedBackprop(lambda x: x.mean((2, 3)))


# -- mask metrics on hand-made maps --------------------------------------------------------
def test_alignment_on_hand_made_maps():
    masks = np.zeros((2, 4, 4), bool)
    masks[:, :2, :] = True  # top half is the object (8 px)
    maps = np.zeros((2, 4, 4))
    maps[0, 0, :2] = 3.0  # 2 px, inside
    maps[0, 3, 3] = 1.0  # 1 px, outside
    maps[1, 2:, :] = -1.0  # negative everywhere off the object...
    maps[1, 3, 0] = 2.0  # ...but the peak is off the object
    scores = alignment(maps, masks, threshold=3 / 16)  # top 3 pixels
    # image 0: B = {3 px: 2 inside, 1 outside}
    assert scores.precision[0] == pytest.approx(2 / 3) and scores.recall[0] == pytest.approx(2 / 8)
    assert scores.iou[0] == pytest.approx(2 / 9)
    assert scores.f1[0] == pytest.approx(2 * (2 / 3) * (2 / 8) / (2 / 3 + 2 / 8))
    assert scores.pointing_game[0] == 1 and scores.inside_share[0] == pytest.approx(6 / 7)
    # image 1: the only positive pixel is outside; minimum pixels never count as salient
    assert scores.pointing_game[1] == 0 and scores.inside_share[1] == 0
    assert binarize(maps, threshold=3 / 16)[1].sum() == 9  # ties at the cut (zeros above the minimum -1) kept
    assert scores.threshold == pytest.approx(3 / 16) and scores.threshold_mode == "top_fraction"


def test_alignment_value_threshold_and_undefined_scores():
    masks = np.zeros((2, 2, 2), bool)
    masks[:, 0, 0] = True
    maps = np.array([[[0.9, 0.6], [0.1, 0.0]], [[0.0, 0.0], [0.0, 0.0]]])
    scores = alignment(maps, masks, threshold=0.5, threshold_mode="value")
    assert scores.precision[0] == 0.5 and scores.recall[0] == 1 and scores.iou[0] == 0.5
    assert np.isnan(scores.pointing_game[1]) and np.isnan(scores.inside_share[1]) and np.isnan(scores.precision[1])
    assert scores.summary()["pointing_game"] == 1.0  # NaNs are left out of the means


def test_alignment_bad_input_raises():
    with pytest.raises(InvalidInputError, match=r"masks must have shape \(1, 4, 4\)"):
        alignment(np.zeros((1, 4, 4)), np.zeros((1, 3, 3), bool))
    with pytest.raises(InvalidInputError, match=r"threshold must be in \(0, 1\]; got 1.5"):
        alignment(np.ones((1, 4, 4)), np.ones((1, 4, 4), bool), threshold=1.5)
    with pytest.raises(InvalidInputError, match="maps hold 1 NaN"):
        alignment(np.full((1, 1, 1), np.nan), np.ones((1, 1, 1), bool))


def test_faithfulness_prefers_the_true_map(region_case):
    net, inputs = region_case.object_net, region_case.inputs
    right = torch.as_tensor(region_case.masks, dtype=torch.float32)
    for baseline in ("blank", "blur"):
        good = faithfulness(net, inputs, right, 0, n_steps=8, baseline=baseline)
        bad = faithfulness(net, inputs, 1 - right, 0, n_steps=8, baseline=baseline)
        assert (good.insertion_auc > bad.insertion_auc).all() and (good.deletion_auc < bad.deletion_auc).all()
        assert good.insertion_curve.shape == (2, 9) and good.fractions[[0, -1]].tolist() == [0, 1]
        # all pixels inserted = the input itself = no pixel deleted
        np.testing.assert_allclose(good.insertion_curve[:, -1], good.deletion_curve[:, 0], rtol=1e-5)


def test_faithfulness_of_a_constant_model_is_its_probability():
    class Constant(torch.nn.Module):
        def forward(self, x):
            return torch.zeros(len(x), 4) + x.sum() * 0  # ignores the pixels

    scores = faithfulness(Constant(), torch.rand(3, 3, 8, 8), torch.rand(3, 8, 8), 2, n_steps=5, batch_size=4)
    np.testing.assert_allclose(scores.insertion_auc, 0.25, rtol=1e-6)
    np.testing.assert_allclose(scores.deletion_auc, 0.25, rtol=1e-6)


def test_faithfulness_bad_input_raises(region_case):
    with pytest.raises(InvalidInputError, match=r"maps must have shape \(2, 32, 32\) to match the inputs"):
        faithfulness(region_case.object_net, region_case.inputs, torch.zeros(2, 16, 16), 0)
    with pytest.raises(InvalidInputError, match="baseline must be one of 'blank', 'blur'; got 'noise'"):
        faithfulness(region_case.object_net, region_case.inputs, torch.zeros(2, SIDE, SIDE), 0, baseline="noise")


# -- a loaded model on workspace images ----------------------------------------------------
def test_explain_on_workspace_targets(tiny_workspace, fake_loaded_model):
    table = list_targets(tiny_workspace)
    images, masks = load_targets(tiny_workspace, table["id"].tolist())
    square = (table["class_name"] == "square").to_numpy()
    true_outputs = [[0, 1] if s else [2] for s in square]  # 'square' counts as two outputs
    result = explain(fake_loaded_model, images, masks, true_outputs, method="gradcam", faithfulness_steps=4, batch_size=4)
    n = len(table)
    assert result.maps.shape == masks.shape and result.maps.min() >= 0 and result.maps.max() <= 1
    assert result.alignment.iou.shape == (n,) and result.faithfulness.insertion_auc.shape == (n,)
    assert set(result.target_output[~square]) == {2}
    # of a class's outputs the more probable one is explained; the class's probability sums them
    assert set(result.target_output[square]) == {0}  # RegionNet favours output 0 on bright objects
    assert (result.true_probability[square] > result.target_probability[square]).all()
    summary = result.summary()
    assert set(summary) >= {"iou", "pointing_game", "inside_share", "insertion_auc", "deletion_auc"}


def test_explainer_gives_integrated_gradients_the_black_baseline(fake_loaded_model):
    method = explainer(fake_loaded_model, "integrated_gradients", n_steps=4)
    assert torch.equal(method.baseline, torch.zeros(1, 3, SIDE, SIDE))  # preprocess maps black to 0
    with pytest.raises(InvalidInputError, match="saliency has no setting n_steps"):
        explainer(fake_loaded_model, "saliency", n_steps=4)
    with pytest.raises(InvalidInputError, match="method must be one of"):
        explainer(fake_loaded_model, "lime")


def test_explain_needs_true_outputs_for_every_image(tiny_workspace, fake_loaded_model):
    images, masks = load_targets(tiny_workspace, ["disc/0", "disc/1"])
    with pytest.raises(InvalidInputError, match=r"true_outputs must give .* \(2 images\); got 2 lists, 1 empty"):
        explain(fake_loaded_model, images, masks, [[0], []], method="saliency")


# -- command line --------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["gradcam", "guided_backprop"])
def test_cli_prints_the_aggregates(tiny_cnn_workspace, capsys, method):
    code = main(
        ["saliency", "--workspace", str(tiny_cnn_workspace.root), "--model", "tiny-cnn", "--method", method,
         "--targets", "3", "--steps", "4", "--device", "cpu", "--json"]
    )  # fmt: skip
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result) == ["method", "iou", "pointing_game", "inside_share", "insertion_auc", "deletion_auc"]
    assert result["method"] == method
    assert 0 <= result["inside_share"] <= 1 and 0 <= result["insertion_auc"] <= 1 and 0 <= result["pointing_game"] <= 1


def test_cli_reads_method_settings(tiny_cnn_workspace, capsys):
    args = ["saliency", "--workspace", str(tiny_cnn_workspace.root), "--model", "tiny-cnn", "--targets", "2", "--steps", "2", "--json"]
    assert main([*args, "--method", "rise", "--set", "n_masks=8", "--set", "p=0.4"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "rise"
    assert main([*args, "--method", "rise", "--set", "n_steps=8"]) == 2
    assert "--set must be NAME=VALUE with NAME one of n_masks, cells, p, seed, batch_size" in capsys.readouterr().err
    assert main([*args, "--method", "lime"]) == 2
    assert "--method must be one of 'saliency'" in capsys.readouterr().err
