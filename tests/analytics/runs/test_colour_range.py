"""Issue 47.11: the embedding signals' colour range is taken from the suite's own cells (1st to 99th
percentile, shared by every model of the suite), so embedding matrices no longer sit light green to
yellow everywhere; and which signals tell the models of a suite apart (``signal_differences``)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from analytics.exceptions import InvalidInputError
from analytics.runs import PROBABILITY_SIGNALS, SIGNALS, ColourScale, run_matrices, start_runs, suite_colour_scale, suite_signal_differences
from analytics.runs.colour_scale import NOISE_FLOOR, REFERENCE_BOTTOM_PERCENTILE, reference_bottoms, reference_tops
from analytics.runs.matrices import matrices_from_clouds
from analytics.runs.signal_differences import colour_use, signal_differences
from analytics.variance import MatrixSettings, VarianceMatrix
from analytics.variance.point_cloud import point_cloud
from analytics.workspace import content_id
from tests.fixtures.models import TINY_SUITE

EMBEDDING = [s for s in SIGNALS if s not in PROBABILITY_SIGNALS]


def floor_matrices(distances: np.ndarray, *, seed: int, trend: float) -> dict[str, VarianceMatrix]:
    """A model whose embedding statistics move with every image (noise of sd 0.5: |change| about 0.56 on
    any pair) and a little more with the background's distance (``trend`` x d); probabilities steady."""
    rng = np.random.default_rng(seed)
    signals = {s: 0.9 + rng.normal(0, 0.005, distances.shape) for s in PROBABILITY_SIGNALS}
    for signal in EMBEDDING:
        signals[signal] = 3.0 + trend * distances + rng.normal(0, 0.5, distances.shape)
    return matrices_from_clouds({s: point_cloud(distances, signals[s]) for s in SIGNALS}, settings=MatrixSettings())


def scale_of(runs: list[dict[str, VarianceMatrix]]) -> ColourScale:
    tops = reference_tops(runs)
    return ColourScale(tops=tops, rules={}, runs=(), settings={}, bottoms=reference_bottoms(runs, tops=tops))


def test_embedding_cells_above_a_floor_fill_the_colour_range_not_its_top_part():
    """Drawn from 0, two such models had no cell in the darkest tenth and most of them in the upper half
    of the colours (light green to yellow everywhere, as the issue saw)."""
    distances = np.random.default_rng(0).uniform(0.0, 1.0, (20, 13))
    distances[:, 0] = 0.0
    runs = [floor_matrices(distances, seed=1, trend=0.4), floor_matrices(distances, seed=2, trend=1.2)]
    scale = scale_of(runs)
    from_zero = colour_use(runs, dataclasses.replace(scale, bottoms={})).set_index("signal")
    used = colour_use(runs, scale).set_index("signal")
    for signal in EMBEDDING:
        assert from_zero.loc[signal, "bottom_tenth"] == 0.0 and from_zero.loc[signal, "spread"] < 0.75  # the old scale
        assert from_zero.loc[signal, "median"] > 0.5
        assert used.loc[signal, "bottom_tenth"] >= REFERENCE_BOTTOM_PERCENTILE / 100  # the darkest green is used
        assert used.loc[signal, "spread"] == pytest.approx(1.0, abs=0.01)  # 1st to 99th percentile span the range
        assert used.loc[signal, "top_colour"] <= 0.011  # the top is no more saturated than before
        assert scale.bottom(signal) > 0
    for signal in PROBABILITY_SIGNALS:  # probabilities keep their absolute range
        assert scale.colour_range(signal) == (0.0, 1.0)


def test_a_model_whose_cells_are_zero_keeps_the_bottom_at_zero():
    distances = np.random.default_rng(0).uniform(0.0, 1.0, (20, 13))
    distances[:, 0] = 0.0
    steady = {s: np.full(distances.shape, 2.0) for s in SIGNALS}  # every signal constant: cells 0
    runs = [floor_matrices(distances, seed=1, trend=0.4), matrices_from_clouds({s: point_cloud(distances, v) for s, v in steady.items()}, settings=MatrixSettings())]
    assert all(bottom == 0.0 for bottom in reference_bottoms(runs).values())
    with pytest.raises(InvalidInputError, match="percentile"):
        reference_bottoms(runs, percentile=100)


def test_rounding_noise_of_a_constant_signal_is_not_spread_over_the_colours():
    """A layer-normalised embedding's mean is constant: its cells are float noise (3.7e-8 on two tiny
    transformers ConvNeXts), which a percentile scale drew as a full green-to-yellow pattern."""
    distances = np.random.default_rng(0).uniform(0.0, 1.0, (20, 13))
    distances[:, 0] = 0.0
    noise = 1.0 + np.random.default_rng(1).normal(0, 1e-8, distances.shape)
    runs = [matrices_from_clouds({s: point_cloud(distances, noise) for s in SIGNALS}, settings=MatrixSettings())]
    assert 0 < runs[0]["emb_mean"].matrix.max() <= NOISE_FLOOR  # every cell is noise
    assert reference_tops(runs)["emb_mean"] == 1.0 and reference_bottoms(runs)["emb_mean"] == 0.0


def test_the_suite_scale_stores_its_bottoms_and_a_scale_frozen_without_them_keeps_zero(tiny_model_workspace):
    workspace = tiny_model_workspace
    ids = start_runs(workspace, ["tiny", "bg-only"], TINY_SUITE, device="cpu")
    runs = [run_matrices(workspace, r) for r in ids]
    live = suite_colour_scale(workspace, TINY_SUITE)
    for signal in EMBEDDING:
        cells = np.concatenate([run[signal].matrix.ravel() for run in runs])
        expected = np.percentile(cells, REFERENCE_BOTTOM_PERCENTILE)
        assert live.bottom(signal) == pytest.approx(expected if expected < live.tops[signal] else 0.0, rel=1e-3, abs=1e-9)
        assert "1st to 99th percentile" in live.rules[signal]
        assert live.as_dict()["signals"][signal]["zmin"] == live.bottom(signal)
    assert any(live.bottom(signal) > 0 for signal in EMBEDDING)
    frozen = suite_colour_scale(workspace, TINY_SUITE, freeze=True)
    assert frozen.bottoms == pytest.approx(live.bottoms) and frozen.tops == pytest.approx(live.tops)

    key = f"colour_scale/{TINY_SUITE}/{content_id(MatrixSettings.of('medium').key())}"  # frozen before bottoms existed
    old = {"tops": live.tops, "rules": live.rules, "runs": list(ids), "settings": MatrixSettings.of("medium").as_dict(), "frozen": "2026-01-01"}
    workspace.set_meta(key, json.dumps(old))
    stored = suite_colour_scale(workspace, TINY_SUITE, settings=MatrixSettings.of("medium"))
    assert stored.frozen == "2026-01-01" and all(stored.colour_range(s) == (0.0, live.tops[s]) for s in SIGNALS)


def test_with_a_background_blind_model_the_bottom_stays_zero(run_workspace):
    """fg-only's matrices are 0, so the suite's 1st percentile is 0: the scale is the one drawn before."""
    scale = suite_colour_scale(run_workspace, TINY_SUITE)
    assert all(scale.bottom(signal) == 0.0 for signal in SIGNALS)


def test_two_tiny_convnexts_fill_the_embedding_colours(tmp_path, tiny_workspace):
    """The issue's models were transformers ConvNeXts: on two tiny ones over the tiny suite the old scale
    left the darkest tenth of the colours empty (cells from 16-25 % of the top up); the suite's own range
    fills it, and the constant mean of their layer-normalised embedding is drawn green, not as noise."""
    pytest.importorskip("transformers")
    from analytics.models.libraries import register_transformers
    from benchmarks._tiny import CLASSES, insert_suite
    from tests.analytics.models.test_transformers import save_convnext

    for seed in (0, 1):
        register_transformers(tiny_workspace, f"convnext-{seed}", folder=save_convnext(tmp_path / f"cx{seed}", labels=dict(enumerate(CLASSES)), seed=seed))
    insert_suite(tiny_workspace)
    ids = start_runs(tiny_workspace, ["convnext-0", "convnext-1"], TINY_SUITE, device="cpu")
    runs = [run_matrices(tiny_workspace, r) for r in ids]
    scale = suite_colour_scale(tiny_workspace, TINY_SUITE)
    from_zero = colour_use(runs, dataclasses.replace(scale, bottoms={})).set_index("signal")
    used = colour_use(runs, scale).set_index("signal")
    for signal in ("emb_topk_mean", "emb_max"):
        assert from_zero.loc[signal, "bottom_tenth"] == 0.0 and from_zero.loc[signal, "spread"] < 0.85
        assert used.loc[signal, "bottom_tenth"] >= 0.01 and used.loc[signal, "spread"] == pytest.approx(1.0, abs=0.01)
    assert scale.colour_range("emb_mean") == (0.0, 1.0) and "rounding noise" in scale.rules["emb_mean"]
    assert used.loc["emb_mean", "median"] < 1e-6  # green everywhere
    ranking = suite_signal_differences(tiny_workspace, ids, scale, signals=("true_prob", "emb_topk_mean", "emb_max", "emb_mean"))
    assert ranking["signal"].iloc[-1] == "emb_mean" and ranking["difference"].iloc[-1] < 1e-6  # noise tells no models apart


def constant(value: float, *, grid: int = 8) -> VarianceMatrix:
    return VarianceMatrix(matrix=np.full((grid, grid), value), edges=np.linspace(0, 1, grid + 1), window=32, sigma=10.0, k=32)


def test_signal_differences_name_the_signal_whose_matrices_differ_first():
    scale = ColourScale(tops={"true_prob": 1.0, "emb_max": 4.0, "emb_mean": 2.0}, rules={}, runs=(), settings={}, bottoms={"emb_max": 2.0})
    a = {"true_prob": constant(0.2), "emb_max": constant(3.0), "emb_mean": constant(1.0)}
    b = {"true_prob": constant(0.2), "emb_max": constant(3.0), "emb_mean": constant(1.5)}  # only emb_mean differs
    table = signal_differences({"a": a, "b": b}, scale)
    assert table["signal"].tolist()[0] == "emb_mean"
    assert table.set_index("signal")["difference"].to_dict() == pytest.approx({"emb_mean": 0.25, "true_prob": 0.0, "emb_max": 0.0})
    assert table["pair"].iloc[0] == ("a", "b")

    c = {"true_prob": constant(0.9), "emb_max": constant(10.0), "emb_mean": constant(1.0)}  # emb_max clipped at the top: 1 on the range
    table = signal_differences({"a": a, "b": b, "c": c}, scale).set_index("signal")
    assert table.index[0] == "true_prob" and table.loc["true_prob", "difference"] == pytest.approx((0.7 + 0.7 + 0.0) / 3)
    assert table.loc["emb_max", "largest"] == pytest.approx(0.5) and table.loc["true_prob", "pair"] in {("a", "c"), ("b", "c")}
    with pytest.raises(InvalidInputError, match="at least two"):
        signal_differences({"a": a}, scale)
