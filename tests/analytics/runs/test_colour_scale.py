"""Tests of analytics.runs.colour_scale: one fixed colour range per signal, the same for every model of a
suite, frozen once judging starts."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from analytics.cli import main
from analytics.exceptions import InvalidInputError
from analytics.judging import add_judgment
from analytics.runs import PROBABILITY_SIGNALS, SIGNALS, colour_scale, render_matrix, run_matrices, start_runs, suite_colour_scale
from analytics.runs import matrices as matrices_module
from analytics.runs.colour_scale import QUANTILE_LEVELS, REFERENCE_PERCENTILE, pooled_percentile, reference_tops
from analytics.runs.matrices import matrices_from_clouds
from analytics.variance import MatrixSettings
from analytics.variance.point_cloud import point_cloud
from analytics.workspace import content_id
from tests.fixtures.models import TINY_SUITE

FINE = MatrixSettings.of("fine")


def synthetic_matrices(distances: np.ndarray, *, variant: bool, seed: int) -> dict:
    """The matrices of a synthetic model on a suite with ``distances`` (n_targets, n + 1), one per signal.

    Invariant: every signal stays put up to small noise. Variant: the true-class probability drops from
    0.9 to 0.2, the max probability to 0.3 (an unsure other class wins) and the embedding signals jump by 2
    where the background is far (d > 0.5).
    """
    rng = np.random.default_rng(seed)
    far = distances > 0.5
    base = np.where(far, 0.2, 0.9) if variant else np.full(distances.shape, 0.9)
    signals = {"true_prob": base + rng.normal(0, 0.005, distances.shape)}
    signals["max_prob"] = np.where(far & variant, 0.3, 0.9) + rng.normal(0, 0.005, distances.shape)
    for signal, level in (("emb_topk_mean", 3.0), ("emb_max", 5.0), ("emb_mean", 1.0)):
        jump = 2.0 * far if variant else 0.0
        signals[signal] = level + jump + rng.normal(0, 0.01, distances.shape)
    clouds = {signal: point_cloud(distances, signals[signal]) for signal in SIGNALS}
    return matrices_from_clouds(clouds, settings=MatrixSettings())  # the smooth preset


def test_reference_tops_fix_probability_and_take_the_percentile_of_embedding_cells():
    distances = np.random.default_rng(0).uniform(0.0, 1.0, (30, 9))
    distances[:, 0] = 0.0
    runs = [synthetic_matrices(distances, variant=v, seed=s) for s, v in enumerate((False, True))]
    tops = reference_tops(runs)
    assert list(tops) == list(SIGNALS) and tops["true_prob"] == 1.0
    assert tops["max_prob"] == 1.0
    for signal in [s for s in SIGNALS if s not in PROBABILITY_SIGNALS]:
        cells = np.concatenate([run[signal].matrix.ravel() for run in runs])
        assert tops[signal] == pytest.approx(np.percentile(cells, REFERENCE_PERCENTILE), rel=1e-4)  # pooled from stored quantiles
        assert reference_tops(runs, percentile=100)[signal] == pytest.approx(cells.max())
        assert reference_tops(runs[:1])[signal] == pytest.approx(np.percentile(runs[0][signal].matrix, REFERENCE_PERCENTILE))  # one run: exact


def test_pooled_percentile_of_stored_quantiles_matches_the_pooled_cells():
    rng = np.random.default_rng(3)
    runs = [rng.gamma(shape, scale, 128 * 128) for shape, scale in ((2.0, 1.0), (0.5, 4.0), (5.0, 0.2))]
    quantiles = [np.percentile(cells, QUANTILE_LEVELS) for cells in runs]
    for percentile in (50.0, 90.0, 99.0, 99.9):
        pooled = np.percentile(np.concatenate(runs), percentile)
        assert pooled_percentile(quantiles, percentile) == pytest.approx(pooled, rel=2e-3)


@pytest.fixture
def interp_sizes(monkeypatch) -> list[int]:
    """The number of points of every ``np.interp`` call made from here on (``clear()`` it to start again)."""
    sizes, interp = [], np.interp

    def counted(x, *args, **kwargs):
        sizes.append(np.size(x))
        return interp(x, *args, **kwargs)

    monkeypatch.setattr(colour_scale.np, "interp", counted)
    return sizes


def test_pooled_percentile_of_many_runs_never_evaluates_all_candidates_at_once(interp_sizes):
    """Issue 28: at 250 runs the pooled distribution at every candidate was runs x candidates
    numbers (1.3 GB, ~8 s a signal); it is evaluated a chunk of candidates at a time, same answer."""
    rng = np.random.default_rng(4)
    quantiles = [np.percentile(rng.gamma(2.0, rng.uniform(0.5, 2.0), 4096), QUANTILE_LEVELS) for _ in range(60)]
    whole = {}
    for percentile in (50.0, 99.0):
        own = [np.interp(percentile, QUANTILE_LEVELS, q) for q in quantiles]
        values = np.unique(np.concatenate([[min(own), max(own)], *(q[(q > min(own)) & (q < max(own))] for q in quantiles)]))
        cdf = np.maximum.accumulate(np.mean([np.interp(values, q, QUANTILE_LEVELS) for q in quantiles], axis=0))
        whole[percentile] = (len(values), float(np.interp(percentile, cdf, values)))
    assert whole[99.0][0] > colour_scale._CDF_CHUNK  # enough candidates to need chunks
    interp_sizes.clear()
    for percentile, (_, expected) in whole.items():
        assert pooled_percentile(quantiles, percentile) == expected  # to the bit
    assert max(interp_sizes) <= colour_scale._CDF_CHUNK


def test_pooled_percentile_evaluates_a_few_stretches_of_candidates_not_all_up_to_the_answer(interp_sizes, monkeypatch):
    """Issue 28: walking the candidates in order up to the percentile took ~0.6 s a signal at 250
    runs (2 s for a suite's scale); evenly spaced probes narrow them to the answer in a few
    evaluations, with the same answer to the bit."""
    rng = np.random.default_rng(5)
    quantiles = [np.percentile(rng.gamma(2.0, rng.uniform(0.5, 2.0), 4096), QUANTILE_LEVELS) for _ in range(40)]
    expected = {p: pooled_percentile(quantiles, p) for p in (50.0, 99.0, 99.9)}  # chunk 4,096: one or two stretches
    monkeypatch.setattr(colour_scale, "_CDF_CHUNK", 32)
    for percentile, answer in expected.items():
        interp_sizes.clear()
        assert pooled_percentile(quantiles, percentile) == answer
        evaluations = sum(size > 1 for size in interp_sizes) / len(quantiles)
        assert evaluations <= 5  # walked in chunks of 32 up to the answer: hundreds (301 at 99 %)
        assert max(interp_sizes) <= 32


def test_each_run_stores_its_cell_quantiles_and_the_scale_only_combines_them(tiny_model_workspace, monkeypatch):
    """Issue 28.1: the run's job stores the quantiles; the page's scale computes no matrix, and a run
    finished before that (no stored quantiles) is computed and stored once."""
    workspace = tiny_model_workspace
    ids = start_runs(workspace, ["fg-only", "tiny"], TINY_SUITE, device="cpu")
    stored = workspace.query("SELECT run_id, signals FROM run_cell_quantiles")
    assert sorted(row["run_id"] for row in stored) == sorted(ids) and all(set(SIGNALS) <= set(json.loads(r["signals"])) for r in stored)
    expected = reference_tops([run_matrices(workspace, r) for r in ids])
    computed = []

    def no_matrices(*args, **kwargs):
        computed.append(args[1])
        return run_matrices(*args, **kwargs)

    monkeypatch.setattr(colour_scale, "run_matrices", no_matrices)
    assert suite_colour_scale(workspace, TINY_SUITE).tops == pytest.approx(expected)
    assert computed == []
    with workspace.transaction() as conn:  # as for a run finished before this change
        conn.execute("DELETE FROM run_cell_quantiles WHERE run_id = ?", (ids[1],))
    assert suite_colour_scale(workspace, TINY_SUITE).tops == pytest.approx(expected)
    assert suite_colour_scale(workspace, TINY_SUITE).tops == pytest.approx(expected)
    assert computed == [ids[1]]  # computed and stored once


def test_square_era_caches_are_not_shown_for_the_circle(tiny_model_workspace):
    """Issue 41: the circle became the default window. Matrices, cell quantiles and frozen scales
    stored under the settings' old key (no window shape: squares) match no setting, so a run made
    before recomputes on demand and nothing drawn from the square is shown for the circle."""
    workspace = tiny_model_workspace
    ids = start_runs(workspace, ["fg-only", "tiny"], TINY_SUITE, device="cpu")
    settings = MatrixSettings()
    old_key = {name: value for name, value in settings.key().items() if name != "window_shape"}
    run = workspace.query_one("SELECT status, finished FROM runs WHERE id = ?", (ids[1],))
    stale = np.full(len(SIGNALS) * settings.grid**2 + 1, 7.0)
    workspace.cache_put(matrices_module._CACHE_PREFIX + content_id(ids[1], run["status"], run["finished"], old_key, list(SIGNALS)), stale)
    frozen = {"tops": dict.fromkeys(SIGNALS, 99.0), "rules": {}, "runs": ids, "settings": old_key, "frozen": "2020-01-01"}
    workspace.set_meta(f"colour_scale/{TINY_SUITE}/{content_id(old_key)}", json.dumps(frozen))
    with workspace.transaction() as conn:  # the run's job stored the circle's quantiles; forget them, keep a stale row
        conn.execute("DELETE FROM run_cell_quantiles WHERE run_id = ?", (ids[1],))
        conn.execute(
            "INSERT INTO run_cell_quantiles(run_id, settings_id, finished, signals, hash) VALUES (?, ?, ?, ?, ?)",
            (ids[1], content_id(old_key), run["finished"], json.dumps(list(SIGNALS)), workspace.put_array(np.full((len(SIGNALS), len(QUANTILE_LEVELS)), 99.0))),
        )
    matrices = run_matrices(workspace, ids[1])
    assert all(m.window_shape == "circle" and m.matrix.max() < 7.0 for m in matrices.values())
    scale = suite_colour_scale(workspace, TINY_SUITE, freeze=True)
    assert scale.settings["window_shape"] == "circle" and max(scale.tops.values()) < 99.0
    assert scale.tops == suite_colour_scale(workspace, TINY_SUITE).tops
    square = suite_colour_scale(workspace, TINY_SUITE, settings=MatrixSettings.of(window_shape="square"))
    assert square.frozen is None and square.settings["window_shape"] == "square"  # its own scale, not the circle's


def test_reference_tops_rejects_no_runs_and_bad_percentiles():
    with pytest.raises(InvalidInputError, match="at least one run"):
        reference_tops([])
    distances = np.array([[0.0, 0.3, 0.6]])
    with pytest.raises(InvalidInputError, match="percentile"):
        reference_tops([synthetic_matrices(distances, variant=False, seed=0)], percentile=0)


def test_scale_is_frozen_when_judging_starts_and_ignores_later_runs(tiny_model_workspace):
    workspace = tiny_model_workspace
    first = start_runs(workspace, ["fg-only", "tiny"], TINY_SUITE, device="cpu")
    live = suite_colour_scale(workspace, TINY_SUITE)
    assert live.frozen is None and live.runs == tuple(sorted(first))
    frozen = suite_colour_scale(workspace, TINY_SUITE, freeze=True)
    assert frozen.frozen is not None and frozen.tops == live.tops

    (later,) = start_runs(workspace, ["bg-only"], TINY_SUITE, device="cpu")  # a run added after judging started
    again = suite_colour_scale(workspace, TINY_SUITE, freeze=True)
    assert again.tops == frozen.tops and again.runs == frozen.runs and again.frozen == frozen.frozen
    # the new run would have moved a live scale: the fine preset was never frozen
    fine = suite_colour_scale(workspace, TINY_SUITE, settings=FINE)
    assert fine.frozen is None and later in fine.runs
    without_later = reference_tops([run_matrices(workspace, r, settings=FINE) for r in first])
    assert any(fine.tops[s] != pytest.approx(without_later[s]) for s in SIGNALS if s not in PROBABILITY_SIGNALS)


def test_a_judgment_freezes_the_scale(tiny_model_workspace):
    (run_id,) = start_runs(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu")
    assert suite_colour_scale(tiny_model_workspace, TINY_SUITE, settings=MatrixSettings.of("medium")).frozen is None
    add_judgment(tiny_model_workspace, annotator="ana", model="tiny", label="variant", run_id=run_id, suite_id=TINY_SUITE)
    assert suite_colour_scale(tiny_model_workspace, TINY_SUITE, settings=MatrixSettings.of("medium")).frozen is not None


def test_suite_without_finished_runs_explains(tiny_model_workspace):
    with pytest.raises(InvalidInputError, match="no current finished run"):
        suite_colour_scale(tiny_model_workspace, TINY_SUITE)


def test_cli_matrices_reports_and_draws_the_suite_scale(run_workspace, run_ids, tmp_path, capsys):
    ws, run_id = str(run_workspace.root), run_ids["bg-only"]
    assert main(["matrices", "--workspace", ws, "--run", run_id, "--out", str(tmp_path / "a"), "--json"]) == 0
    reported = json.loads(capsys.readouterr().out)["colour_scale"]
    scale = suite_colour_scale(run_workspace, TINY_SUITE)
    assert reported["autoscale"] is False and reported["suite"] == TINY_SUITE
    assert {s: v["zmax"] for s, v in reported["signals"].items()} == pytest.approx(scale.tops)
    assert all(v["zmin"] == 0.0 and v["rule"] for v in reported["signals"].values())
    matrix = run_matrices(run_workspace, run_id)["true_prob"].matrix
    png = cv2.imread(str(tmp_path / "a" / "true_prob.png"))[..., ::-1]
    assert (png == render_matrix(matrix, zmin=0.0, zmax=1.0)).all()  # drawn on the reported scale
    assert main(["matrices", "--workspace", ws, "--run", run_id, "--out", str(tmp_path / "b"), "--autoscale", "--json"]) == 0
    own = json.loads(capsys.readouterr().out)["colour_scale"]
    assert own["autoscale"] is True and own["signals"]["true_prob"]["zmax"] == pytest.approx(matrix.max())
    assert main(["matrices", "--workspace", ws, "--run", "nope", "--out", str(tmp_path / "c")]) == 2
    assert "no run 'nope'" in capsys.readouterr().err
