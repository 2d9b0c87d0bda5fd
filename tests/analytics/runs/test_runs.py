"""analytics.runs on finished tiny runs (tests/fixtures/runs.py): arrays, summaries, matrices,
drill-down, export and the ``matrices`` / ``runs`` commands."""

from __future__ import annotations

import json
from dataclasses import replace

import cv2
import numpy as np
import pandas as pd
import pytest

from analytics import runs
from analytics.cli import main
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.inference import engine, run_models
from analytics.runs import matrices as run_matrices_module
from analytics.runs.matrices import matrices_from_clouds
from analytics.runs.read import IMAGE_COLUMNS, RUN_COLUMNS, run_details
from analytics.variance import CUSTOM, DEFAULT_MATRIX_GRID, DEFAULT_SETTINGS, PRESETS, MatrixSettings, variance_matrix
from analytics.variance.accuracy import worst_case_accuracy
from analytics.workspace import model_keys, pin_legacy_keys
from tests.fixtures.models import TINY_SUITE, TINY_SUITE_N, insert_suite

N_TARGETS = 6
MEDIUM = MatrixSettings.of("medium")


def _image_rows(workspace, run_id) -> pd.DataFrame:
    rows = workspace.query("SELECT * FROM run_images WHERE run_id = ? ORDER BY target_id, position", (run_id,))
    return pd.DataFrame([dict(r) for r in rows])


def test_load_run_gives_rectangular_arrays_in_target_and_position_order(run_workspace, run_ids):
    data = runs.load_run(run_workspace, run_ids["tiny"])
    shape = (N_TARGETS, TINY_SUITE_N + 1)
    assert data.model == "tiny" and data.suite_id == TINY_SUITE and data.n == TINY_SUITE_N
    assert data.target_ids == sorted(data.target_ids) and len(data.target_ids) == N_TARGETS
    assert list(data.signals) == list(runs.SIGNALS)
    for array in (data.distances, data.correct, data.predicted, data.background_ids, *data.signals.values()):
        assert array.shape == shape
    assert data.distances.dtype == np.float64 and data.correct.dtype == bool
    rows = _image_rows(run_workspace, run_ids["tiny"])
    np.testing.assert_array_equal(data.signals["emb_max"].ravel(), rows["emb_max"])
    np.testing.assert_array_equal(data.correct.ravel(), rows["correct"].astype(bool))
    assert (data.distances[:, 0] == 0).all() and (data.background_ids[:, 0] == "").all()
    items = run_workspace.query("SELECT target_id, position, background_id, distance FROM suite_items WHERE suite_id = ?", (TINY_SUITE,))
    for item in items:
        t = data.target_ids.index(item["target_id"])
        assert data.background_ids[t, item["position"]] == item["background_id"]
        assert data.distances[t, item["position"]] == item["distance"]
    assert data.class_names == [t.split("/")[0] for t in data.target_ids]
    assert data.n_points == N_TARGETS * TINY_SUITE_N * (TINY_SUITE_N + 1)


def test_load_run_refuses_unknown_and_unfinished_runs(run_workspace, run_ids):
    with pytest.raises(NotFoundError, match="no run 'nope'"):
        runs.load_run(run_workspace, "nope")
    with run_workspace.transaction() as conn:
        conn.execute("UPDATE runs SET status = 'running' WHERE id = ?", (run_ids["tiny"],))
    with pytest.raises(InvalidInputError, match="'running'.*resume"):
        runs.load_run(run_workspace, run_ids["tiny"])


def test_targets_with_fewer_images_are_left_out(run_workspace, run_ids):
    short = runs.load_run(run_workspace, run_ids["tiny"]).target_ids[2]
    with run_workspace.transaction() as conn:
        conn.execute("DELETE FROM run_images WHERE run_id = ? AND target_id = ? AND position = ?", (run_ids["tiny"], short, TINY_SUITE_N))
    data = runs.load_run(run_workspace, run_ids["tiny"])
    assert data.excluded == (short,) and short not in data.target_ids
    assert data.distances.shape == (N_TARGETS - 1, TINY_SUITE_N + 1)


def test_summary_stores_mean_accuracies_and_details_give_them_per_target(run_workspace, run_ids):
    run_id = run_ids["bg-only"]
    data = runs.load_run(run_workspace, run_id)
    stored = json.loads(run_workspace.query_one("SELECT summary FROM runs WHERE id = ?", (run_id,))["summary"])
    assert stored["top_k"] == 3  # what run_models wrote is kept
    assert stored["accuracy"] == pytest.approx(data.correct.mean())
    assert stored["original_accuracy"] == pytest.approx(data.correct[:, 0].mean())
    assert stored["worst_case_accuracy"] == pytest.approx(worst_case_accuracy(data.correct))
    assert stored["stored_images"] == stored["expected_images"] == data.correct.size
    assert "per_target" not in stored  # issue 28.3: every listing would parse it
    details = run_details(run_workspace, run_id)
    assert set(details["per_target"]) == set(data.target_ids)
    for t, target in enumerate(data.target_ids):
        assert details["per_target"][target]["accuracy"] == pytest.approx(data.correct[t].mean())
        assert details["per_target"][target]["worst_case"] == bool(data.correct[t, 1:].all())
    mean_of_targets = np.mean([v["worst_case"] for v in details["per_target"].values()])
    assert details["worst_case_accuracy"] == pytest.approx(mean_of_targets)


def test_list_runs_shows_accuracies_and_summarises_engine_only_runs(tiny_model_workspace):
    (run_id,) = run_models(tiny_model_workspace, ["bg-only"], TINY_SUITE, device="cpu")  # engine only: no runs summary yet
    table = runs.list_runs(tiny_model_workspace)
    assert list(table.columns) == RUN_COLUMNS and table["id"].tolist() == [run_id]
    row = table.iloc[0]
    data = runs.load_run(tiny_model_workspace, run_id)
    assert row["status"] == "done" and row["images"] == row["expected_images"] == data.correct.size
    assert row["worst_case_accuracy"] == pytest.approx(worst_case_accuracy(data.correct))
    assert json.loads(tiny_model_workspace.query_one("SELECT summary FROM runs WHERE id = ?", (run_id,))["summary"])["version"] == 2
    assert runs.list_runs(tiny_model_workspace, model="fg-only").empty
    assert runs.list_runs(tiny_model_workspace, suite_id=TINY_SUITE)["id"].tolist() == [run_id]


def test_list_runs_of_finished_runs_reads_no_image_rows(run_workspace, run_ids, sql_trace):
    """Issue 28.3: the listing neither counts ``run_images`` nor parses per-target results; the one
    count is of each suite's distinct targets, for its label, on the ``suite_items`` key (issue 27.10)."""
    runs.list_runs(run_workspace)
    assert sql_trace and not [s.sql for s in sql_trace if "run_images" in s.sql]
    counts = [s.sql for s in sql_trace if "COUNT(" in s.sql]
    assert len(counts) == 1 and "COUNT(DISTINCT i.target_id) FROM suite_items i WHERE i.suite_id = s.id" in counts[0]


def test_list_runs_counts_the_images_of_an_unfinished_run_only(run_workspace, run_ids, sql_trace):
    with run_workspace.transaction() as conn:
        conn.execute("UPDATE runs SET status = 'failed' WHERE id = ?", (run_ids["tiny"],))
        conn.execute("DELETE FROM run_images WHERE run_id = ? AND position = 1", (run_ids["tiny"],))
    table = runs.list_runs(run_workspace).set_index("id")
    assert table.at[run_ids["tiny"], "images"] == 6 * TINY_SUITE_N and table.at[run_ids["tiny"], "expected_images"] == 6 * (TINY_SUITE_N + 1)
    assert (table.drop(index=run_ids["tiny"])["images"] == 6 * (TINY_SUITE_N + 1)).all()
    counts = [s.sql for s in sql_trace if "COUNT(*) FROM run_images" in s.sql]
    assert len(counts) == 1  # one query for the one unfinished run


def test_a_runs_snapshot_lists_once_and_filters_the_same(run_workspace, run_ids, sql_trace):
    plain = {(m, s): runs.list_runs(run_workspace, model=m, suite_id=s) for m in (None, "tiny", "nope") for s in (None, TINY_SUITE)}
    sql_trace.clear()
    with runs.runs_snapshot():
        for (m, s), expected in plain.items():
            pd.testing.assert_frame_equal(runs.list_runs(run_workspace, model=m, suite_id=s), expected, check_dtype=not expected.empty)
        runs.current_runs(run_workspace, suite_id=TINY_SUITE).drop(columns="model")  # callers get copies
        assert "model" in runs.list_runs(run_workspace).columns
    assert sum("FROM runs r" in s.sql for s in sql_trace) == 1
    runs.list_runs(run_workspace)
    assert sum("FROM runs r" in s.sql for s in sql_trace) == 2  # outside the block: listed afresh


def test_a_version_1_summary_is_upgraded_without_loading_the_run(run_workspace, run_ids, sql_trace):
    run_id = run_ids["tiny"]
    summary = json.loads(run_workspace.query_one("SELECT summary FROM runs WHERE id = ?", (run_id,))["summary"])
    old = {key: value for key, value in summary.items() if key not in ("stored_images", "expected_images")}
    old.update(version=1, per_target={"x": {"accuracy": 1.0, "worst_case": True}})
    with run_workspace.transaction() as conn:
        conn.execute("UPDATE runs SET summary = ? WHERE id = ?", (json.dumps(old), run_id))
    sql_trace.clear()
    row = runs.list_runs(run_workspace).set_index("id").loc[run_id]
    assert row["images"] == 6 * (TINY_SUITE_N + 1) and row["accuracy"] == pytest.approx(summary["accuracy"])
    assert not [s.sql for s in sql_trace if "LEFT JOIN targets" in s.sql]  # no load_run (image_table)
    upgraded = json.loads(run_workspace.query_one("SELECT summary FROM runs WHERE id = ?", (run_id,))["summary"])
    assert upgraded["version"] == 2 and "per_target" not in upgraded
    sql_trace.clear()
    runs.list_runs(run_workspace)
    assert not [s.sql for s in sql_trace if "run_images" in s.sql]


def test_point_clouds_hold_every_ordered_pair(run_workspace, run_ids):
    data = runs.load_run(run_workspace, run_ids["tiny"])
    clouds = runs.run_point_clouds(run_workspace, run_ids["tiny"])
    assert list(clouds) == list(runs.SIGNALS)
    cloud = clouds["true_prob"]
    assert len(cloud) == data.n_points
    t, (j, k) = cloud.targets, cloud.pairs.T
    np.testing.assert_array_equal(cloud.points, np.column_stack([data.distances[t, j], data.distances[t, k]]))
    np.testing.assert_allclose(cloud.values, np.abs(data.signals["true_prob"][t, j] - data.signals["true_prob"][t, k]))


def test_max_probability_matrix_from_a_run(run_workspace, run_ids):
    """Issue 26.3: the authors' confidence signal (max softmax probability) is a matrix signal beside the true-class one."""
    run_id = run_ids["tiny"]
    data = runs.load_run(run_workspace, run_id)
    np.testing.assert_array_equal(data.signals["max_prob"].ravel(), _image_rows(run_workspace, run_id)["max_prob"])
    assert (data.signals["max_prob"] >= data.signals["true_prob"] - 1e-12).all()
    matrices = runs.run_matrices(run_workspace, run_id, settings=MEDIUM)
    cloud = runs.run_point_clouds(run_workspace, run_id)["max_prob"]
    expected = variance_matrix(cloud.points, cloud.values, **MEDIUM.key(), d_max=matrices["true_prob"].d_max)
    np.testing.assert_allclose(matrices["max_prob"].matrix, expected.matrix)
    assert not np.allclose(matrices["max_prob"].matrix, matrices["true_prob"].matrix)  # wrong predictions make them differ
    assert "max_prob" in runs.PROBABILITY_SIGNALS  # fixed colour top 1, error-rate threshold 0.15


def test_foreground_only_model_gives_zero_matrices_and_background_only_does_not(run_workspace, run_ids):
    foreground = runs.run_matrices(run_workspace, run_ids["fg-only"])
    background = runs.run_matrices(run_workspace, run_ids["bg-only"])
    assert list(foreground) == list(background) == list(runs.SIGNALS)
    for signal in runs.SIGNALS:
        assert foreground[signal].matrix.shape == (DEFAULT_MATRIX_GRID, DEFAULT_MATRIX_GRID)
        assert np.abs(foreground[signal].matrix).max() < 1e-6, signal
        assert background[signal].matrix.min() > 1e-3, signal  # every cell sees the background change


def test_matrices_share_axes_and_follow_the_settings(run_workspace, run_ids):
    run_id = run_ids["tiny"]
    smooth = runs.run_matrices(run_workspace, run_id)
    fine = runs.run_matrices(run_workspace, run_id, settings=MatrixSettings.of("fine", grid=16))
    d_max = runs.load_run(run_workspace, run_id).distances.max()
    for matrices in (smooth, fine):
        assert [m.d_max for m in matrices.values()] == pytest.approx([d_max] * len(runs.SIGNALS))
    assert (fine["true_prob"].window, fine["true_prob"].sigma, fine["true_prob"].grid) == (*PRESETS["fine"], 16)
    assert not np.allclose(smooth["true_prob"].matrix[:16, :16], fine["true_prob"].matrix)


def test_matrices_of_one_class_come_from_its_targets_only(run_workspace, run_ids):
    run_id = run_ids["bg-only"]
    data = runs.load_run(run_workspace, run_id)
    discs = runs.run_of_classes(data, ["disc"])
    assert discs.class_names == ["disc"] * len(discs.target_ids) and 0 < len(discs.target_ids) < len(data.target_ids)
    assert discs.distances.shape == (len(discs.target_ids), data.distances.shape[1])
    clouds = runs.run_point_clouds(run_workspace, run_id, data=discs)
    expected = matrices_from_clouds(clouds, settings=MEDIUM)
    got = runs.run_matrices(run_workspace, run_id, settings=MEDIUM, classes=["disc"])
    whole = runs.run_matrices(run_workspace, run_id, settings=MEDIUM)
    np.testing.assert_array_equal(got["true_prob"].matrix, expected["true_prob"].matrix)
    assert not np.allclose(got["true_prob"].matrix, whole["true_prob"].matrix)  # cached apart from the whole run's
    with pytest.raises(InvalidInputError, match="circle not among the classes .* its classes are disc, square"):
        runs.run_of_classes(data, ["circle"])
    with pytest.raises(InvalidInputError, match="none given"):
        runs.run_of_classes(data, [])


def test_run_accuracies_are_the_stored_summarys_and_those_of_a_class_subset(run_workspace, run_ids):
    run_id = run_ids["bg-only"]
    data = runs.load_run(run_workspace, run_id)
    row = runs.list_runs(run_workspace).set_index("id").loc[run_id]
    whole = runs.run_accuracies(data)
    assert whole == pytest.approx({key: row[key] for key in ("accuracy", "original_accuracy", "worst_case_accuracy")})
    discs = runs.run_of_classes(data, ["disc"])
    subset = runs.run_accuracies(data, classes=["disc"])
    assert subset == pytest.approx({"accuracy": discs.correct.mean(), "original_accuracy": discs.correct[:, 0].mean(),
                                    "worst_case_accuracy": worst_case_accuracy(discs.correct)})  # fmt: skip
    only_composites = np.ones_like(data.correct)
    only_composites[:, 0] = False  # wrong on every original, right on every composite: the original is not a background
    crafted = runs.run_accuracies(replace(data, correct=only_composites), classes=["disc"])
    assert (crafted["worst_case_accuracy"], crafted["original_accuracy"]) == (1.0, 0.0)
    with pytest.raises(InvalidInputError, match="circle not among the classes"):
        runs.run_accuracies(data, classes=["circle"])


def test_matrix_cache_hit_returns_equal_arrays_without_recomputing(run_workspace, run_ids, monkeypatch):
    assert runs.cached_matrices(run_workspace, run_ids["tiny"], settings=MEDIUM) is None
    first = runs.run_matrices(run_workspace, run_ids["tiny"], settings=MEDIUM)
    looked_up = runs.cached_matrices(run_workspace, run_ids["tiny"], settings=MEDIUM)
    np.testing.assert_array_equal(looked_up["emb_max"].matrix, first["emb_max"].matrix)

    def fail(*args, **kwargs):
        raise AssertionError("recomputed a cached matrix")

    monkeypatch.setattr(run_matrices_module, "cloud_matrices", fail)
    second = runs.run_matrices(run_workspace, run_ids["tiny"], settings=MEDIUM)
    for signal in runs.SIGNALS:
        np.testing.assert_array_equal(first[signal].matrix, second[signal].matrix)
        np.testing.assert_array_equal(first[signal].edges, second[signal].edges)
        assert (second[signal].window, second[signal].sigma, second[signal].k) == (first[signal].window, first[signal].sigma, first[signal].k)
    with pytest.raises(AssertionError, match="recomputed"):  # other settings miss the cache
        runs.run_matrices(run_workspace, run_ids["tiny"], settings=MatrixSettings.of("medium", k=5))


def test_matrix_settings_apply_presets_and_overrides():
    assert MatrixSettings.of().as_dict() == {"preset": "smooth", "grid": DEFAULT_MATRIX_GRID, "window": 32, "sigma": 10.0, "k": 32, "window_shape": "circle"}
    assert MatrixSettings.of() == MatrixSettings() == DEFAULT_SETTINGS
    assert MatrixSettings.of("smooth", sigma=3).preset == CUSTOM
    assert MatrixSettings.of(CUSTOM, window=16, sigma=5).window == 16
    with pytest.raises(InvalidInputError, match="needs both window and sigma"):
        MatrixSettings.of(CUSTOM, window=16)
    with pytest.raises(InvalidInputError, match="preset must be one of"):
        MatrixSettings.of("blurry")
    with pytest.raises(InvalidInputError, match=r"unknown matrix setting\(s\) 'sigm'; settings are preset, grid, window, sigma, k, window_shape"):
        MatrixSettings.of("fine", sigm=3)
    with pytest.raises(InvalidInputError, match="preset 'fine' is window 32, sigma 2"):
        MatrixSettings("fine", window=16)
    with pytest.raises(InvalidInputError, match="grid must be"):
        MatrixSettings.of(grid=0)
    square = MatrixSettings.of("medium", window_shape="square")
    assert square.preset == "medium" and square.window_shape == "square"
    assert square.key() == {"grid": DEFAULT_MATRIX_GRID, "window": 16, "sigma": 5.0, "k": 32, "window_shape": "square"}
    assert square.key() != MatrixSettings.of("medium").key()  # cache keys and colour scales follow the shape
    with pytest.raises(InvalidInputError, match="window_shape must be one of"):
        MatrixSettings.of(window_shape="hexagon")


def test_matrix_functions_refuse_anything_but_matrix_settings(run_workspace, run_ids):
    with pytest.raises(InvalidInputError, match="settings must be a MatrixSettings"):
        runs.run_matrices(run_workspace, run_ids["tiny"], settings={"preset": "fine"})


def _fullest_cell(matrix, cloud) -> tuple[int, int]:
    counts = {(r, c): matrix.points_in_cell(cloud.points, r, c).size for r in range(matrix.grid) for c in range(matrix.grid)}
    return max(counts, key=counts.get)


def test_cell_pairs_lie_in_the_clicked_cell(run_workspace, run_ids):
    run_id = run_ids["bg-only"]
    matrix = runs.run_matrices(run_workspace, run_id, settings=MatrixSettings.of(grid=8))["true_prob"]
    cloud = runs.run_point_clouds(run_workspace, run_id)["true_prob"]
    row, col = _fullest_cell(matrix, cloud)
    pairs = runs.cell_pairs(run_workspace, run_id, "true_prob", matrix, int(row), int(col), limit=50)
    e = matrix.edges
    assert not pairs.empty and not pairs.attrs["nearest"]
    assert ((pairs["distance_j"] >= e[col]) & (pairs["distance_j"] <= e[col + 1])).all()
    assert ((pairs["distance_k"] >= e[row]) & (pairs["distance_k"] <= e[row + 1])).all()
    np.testing.assert_allclose(pairs["value"], np.abs(pairs["signal_j"] - pairs["signal_k"]))
    assert pairs["value"].is_monotonic_decreasing
    unordered = {(t, min(j, k), max(j, k)) for t, j, k in zip(pairs["target_id"], pairs["j"], pairs["k"])}
    assert len(unordered) == len(pairs)  # a pair and its mirror are listed once
    inside = matrix.points_in_cell(cloud.points, int(row), int(col))
    assert pairs.attrs["n_points"] == len(inside) >= len(pairs)
    assert pairs.attrs["raw_mean"] == pytest.approx(cloud.values[inside].mean())  # issue 47.3: beside the RBF-smoothed cell value
    assert (pairs.loc[pairs["j"] == 0, "background_j"] == "").all()
    assert len(runs.cell_pairs(run_workspace, run_id, "true_prob", matrix, int(row), int(col), limit=1)) == 1


def test_cell_pairs_of_an_empty_cell_fall_back_to_the_nearest_points(run_workspace, run_ids):
    run_id = run_ids["bg-only"]
    matrix = runs.run_matrices(run_workspace, run_id, settings=MatrixSettings.of(grid=64))["emb_mean"]
    cloud = runs.run_point_clouds(run_workspace, run_id)["emb_mean"]
    empty = next((r, c) for r in range(64) for c in range(64) if matrix.points_in_cell(cloud.points, r, c).size == 0)
    assert runs.cell_pairs(run_workspace, run_id, "emb_mean", matrix, *empty).empty
    nearest = runs.cell_pairs(run_workspace, run_id, "emb_mean", matrix, *empty, nearest=True, limit=3)
    assert nearest.attrs["nearest"] and nearest.attrs["n_points"] == 0 and len(nearest) == 3 and np.isnan(nearest.attrs["raw_mean"])
    with pytest.raises(InvalidInputError, match="signal must be one of"):
        runs.cell_pairs(run_workspace, run_id, "logits", matrix, 0, 0)


def test_compose_images_gives_the_original_and_composites(run_workspace):
    target = "disc/0"
    images = runs.compose_images(run_workspace, target, ["", "bg03"])
    assert images.shape == (2, 64, 64, 3) and images.dtype == np.uint8
    original = run_workspace.get_array(run_workspace.query_one("SELECT image_hash FROM targets WHERE id = ?", (target,))["image_hash"])
    np.testing.assert_array_equal(images[0], original)
    assert not np.array_equal(images[1], original)


def test_render_matrix_runs_green_to_yellow_with_origin_bottom_left():
    matrix = np.zeros((4, 4))
    matrix[0, 3] = 1.0  # row 0 = smallest d_ik: the bottom row of the image
    image = runs.render_matrix(matrix, scale=2)
    assert image.shape == (8, 8, 3) and image.dtype == np.uint8
    assert tuple(image[-1, -1]) == runs.VARIANCE_COLOURS[-1][1]  # bottom right: the high cell
    assert tuple(image[0, 0]) == runs.VARIANCE_COLOURS[0][1]


def test_export_writes_matrices_pngs_and_the_image_table(run_workspace, run_ids, tmp_path):
    result = runs.export_run(run_workspace, run_ids["bg-only"], tmp_path / "out")
    matrices = runs.run_matrices(run_workspace, run_ids["bg-only"])
    assert set(result["matrices"]) == set(runs.SIGNALS)
    for signal, info in result["matrices"].items():
        np.testing.assert_array_equal(np.load(info["path"]), matrices[signal].matrix)
        png = cv2.imread(info["png"])
        assert png is not None and png.shape == (DEFAULT_MATRIX_GRID * 8, DEFAULT_MATRIX_GRID * 8, 3)
        assert info["shape"] == [DEFAULT_MATRIX_GRID, DEFAULT_MATRIX_GRID] and info["mean"] == pytest.approx(matrices[signal].matrix.mean())
    table = pd.read_csv(result["table"], keep_default_na=False)
    assert list(table.columns) == IMAGE_COLUMNS and len(table) == N_TARGETS * (TINY_SUITE_N + 1)
    assert result["points"] == N_TARGETS * TINY_SUITE_N * (TINY_SUITE_N + 1)


def test_missing_distances_explain_how_to_get_a_point_cloud(tiny_model_workspace):
    insert_suite(tiny_model_workspace, "no-distances", n=2)
    with tiny_model_workspace.transaction() as conn:
        conn.execute("UPDATE suite_items SET distance = NULL WHERE suite_id = 'no-distances'")
    (run_id,) = runs.start_runs(tiny_model_workspace, ["tiny"], "no-distances", device="cpu")
    assert np.isnan(runs.load_run(tiny_model_workspace, run_id).distances[:, 1:]).all()
    with pytest.raises(InvalidInputError, match="no semantic distance.*build the suite again"):
        runs.run_matrices(tiny_model_workspace, run_id)


def test_cli_matrices_and_runs(run_workspace, run_ids, tmp_path, capsys):
    ws = str(run_workspace.root)
    out = tmp_path / "cli"
    assert main(["matrices", "--workspace", ws, "--run", run_ids["tiny"], "--out", str(out), "--preset", "fine", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {"run", "matrices", "points"} <= set(result) and result["run"] == run_ids["tiny"]
    assert set(result["matrices"]) == set(runs.SIGNALS)
    for info in result["matrices"].values():
        assert {"path", "shape", "mean"} <= set(info) and np.load(info["path"]).shape == tuple(info["shape"])
    assert result["settings"]["window"] == PRESETS["fine"][0]
    assert main(["runs", "--workspace", ws, "--model", "tiny", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in listed] == [run_ids["tiny"]] and listed[0]["status"] == "done"
    assert main(["matrices", "--workspace", ws, "--run", "nope", "--out", str(out)]) == 2
    assert "no run 'nope'" in capsys.readouterr().err


def test_cli_matrices_of_some_classes(run_workspace, run_ids, tmp_path, capsys):
    ws, run_id = str(run_workspace.root), run_ids["bg-only"]
    assert main(["matrices", "--workspace", ws, "--run", run_id, "--out", str(tmp_path / "disc"), "--classes", "disc", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    narrowed = runs.run_matrices(run_workspace, run_id, classes=["disc"])
    whole = runs.run_matrices(run_workspace, run_id)
    assert result["classes"] == ["disc"] and result["points"] == N_TARGETS // 2 * TINY_SUITE_N * (TINY_SUITE_N + 1)
    for signal, info in result["matrices"].items():
        np.testing.assert_array_equal(np.load(info["path"]), narrowed[signal].matrix)
    assert any(not np.array_equal(narrowed[s].matrix, whole[s].matrix) for s in runs.SIGNALS)
    table = pd.read_csv(result["table"], keep_default_na=False)
    assert set(table["class_name"]) == {"disc"} and len(table) == N_TARGETS // 2 * (TINY_SUITE_N + 1)
    out = tmp_path / "bad"
    for flags in (["--classes", "disc,zebra"], ["--classes", "zebra", "--autoscale"]):
        assert main(["matrices", "--workspace", ws, "--run", run_id, "--out", str(out), *flags]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "zebra not among the classes" in err and "its classes are disc, square" in err
    assert not out.exists()  # refused before anything was written


# -- stale runs (re-registered weights, remapped classes) and reuse without rewriting ----------------
def test_replacing_a_model_makes_its_runs_stale_and_gives_new_runs(run_workspace, run_ids, tiny_model_files, capsys):
    from analytics.data import custom_label_space, list_class_mappings
    from analytics.models import get_model_spec, register_torchscript

    old = run_ids["tiny"]
    listed = runs.list_runs(run_workspace, model="tiny")
    assert not listed["stale"].any() and listed["model_key"].iloc[0] == model_keys(run_workspace).keys["tiny"]
    classes = list_class_mappings(run_workspace)  # the key of the outputs tiny scores the suite's classes as
    assert listed["classes_key"].iloc[0] == get_model_spec(run_workspace, "tiny").label_space.outputs_key(classes, {"disc", "square"})
    labels = custom_label_space(tiny_model_files["labels"])
    register_torchscript(run_workspace, "tiny", checkpoint=tiny_model_files["bg-only"], label_space=labels, input_size=64, replace=True)

    assert runs.list_runs(run_workspace, model="tiny").set_index("id").at[old, "stale"]
    assert old not in set(runs.current_runs(run_workspace)["id"])
    (new,) = runs.start_runs(run_workspace, ["tiny"], TINY_SUITE, device="cpu")
    assert new != old
    table = runs.list_runs(run_workspace, model="tiny").set_index("id")
    assert table.at[old, "stale"] and not table.at[new, "stale"]
    assert runs.current_runs(run_workspace, model="tiny")["id"].tolist() == [new]
    assert main(["runs", "--workspace", str(run_workspace.root), "--model", "tiny", "--json"]) == 0
    assert {r["id"]: r["stale"] for r in json.loads(capsys.readouterr().out)} == {old: True, new: False}


def test_reregistering_the_same_weights_keeps_the_runs_current(run_workspace, run_ids, tiny_model_files):
    from analytics.data import custom_label_space
    from analytics.models import register_torchscript

    labels = custom_label_space(tiny_model_files["labels"])
    register_torchscript(run_workspace, "tiny", checkpoint=tiny_model_files["tiny"], label_space=labels, input_size=64, replace=True)
    assert not runs.list_runs(run_workspace)["stale"].any()
    assert runs.start_runs(run_workspace, ["tiny"], TINY_SUITE, device="cpu") == [run_ids["tiny"]]


def test_remapping_a_class_makes_the_runs_of_its_suites_stale(run_workspace, run_ids):
    with run_workspace.transaction() as conn:
        conn.execute("UPDATE classes SET label = 'round thing' WHERE name = 'disc'")
    assert runs.list_runs(run_workspace)["stale"].all()
    assert runs.current_runs(run_workspace).empty


def test_a_mapping_no_model_scores_with_keeps_runs_current_and_reused(run_workspace, run_ids):
    """Issue 47.7: an ImageNet index for a class (to screen the background pool) changes nothing a
    custom-label model scores, so its runs stay current and are reused; a label that moves the class's
    output makes them stale, and the Data page's check names exactly those runs."""
    from analytics.data import ClassMapping, set_class_mapping

    assert len(runs.runs_of_class(run_workspace, "disc", ClassMapping((852,)))) == 0  # what the Data page asks before saving
    set_class_mapping(run_workspace, "disc", imagenet=[852])
    assert not runs.list_runs(run_workspace)["stale"].any()
    assert runs.start_runs(run_workspace, list(run_ids), TINY_SUITE, device="cpu") == list(run_ids.values())
    assert len(runs.runs_of_class(run_workspace, "disc", ClassMapping((852,), label="round thing"))) == len(run_ids)
    set_class_mapping(run_workspace, "disc", label="round thing")
    assert runs.list_runs(run_workspace)["stale"].all()


def test_runs_without_keys_follow_the_registration_time_and_are_reused(run_workspace, run_ids):
    with run_workspace.transaction() as conn:  # as migrated from a workspace without the columns
        conn.execute("UPDATE runs SET model_key = '', classes_key = '', created = '2000-01-01T00:00:00+00:00'")
        conn.execute("UPDATE models SET added = '1999-01-01T00:00:00+00:00' WHERE name != 'tiny'")
    stale = runs.list_runs(run_workspace).set_index("model")["stale"]
    assert stale.to_dict() == {"tiny": True, "fg-only": False, "bg-only": False}  # tiny registered after its run
    # a current run from before the keys has an id without them: its id is reused (and its keys pinned)
    with run_workspace.transaction() as conn:
        conn.execute("DELETE FROM runs WHERE model != 'fg-only'")
    from analytics.models import get_model_spec
    from analytics.workspace import content_id

    legacy = content_id("run", get_model_spec(run_workspace, "fg-only").content_key(), TINY_SUITE, 3)  # the id before keys
    with run_workspace.transaction() as conn:
        columns = "model, suite_id, status, device, summary, created, finished, model_key, classes_key"
        conn.execute(f"INSERT INTO runs(id, {columns}) SELECT ?, {columns} FROM runs WHERE id = ?", (legacy, run_ids["fg-only"]))
        conn.execute("UPDATE run_images SET run_id = ? WHERE run_id = ?", (legacy, run_ids["fg-only"]))
        conn.execute("DELETE FROM runs WHERE id = ?", (run_ids["fg-only"],))
    assert runs.start_runs(run_workspace, ["fg-only"], TINY_SUITE, device="cpu") == [legacy]
    row = run_workspace.query_one("SELECT model_key, classes_key FROM runs WHERE id = ?", (legacy,))
    assert row["model_key"] == model_keys(run_workspace).keys["fg-only"] and row["classes_key"]


def test_pin_legacy_keys_keeps_old_runs_stale_after_a_replacement(run_workspace, run_ids):
    with run_workspace.transaction() as conn:
        conn.execute("UPDATE runs SET model_key = '', classes_key = ''")
    pin_legacy_keys(run_workspace)
    assert (runs.list_runs(run_workspace)["model_key"] != "").all()
    with run_workspace.transaction() as conn:  # replaced within the same second as the runs: only the pinned key can tell
        conn.execute("UPDATE models SET spec = json_set(spec, '$.origin', 'other') WHERE name = 'tiny'")
    assert runs.list_runs(run_workspace).set_index("model")["stale"].to_dict() == {"tiny": True, "fg-only": False, "bg-only": False}


def test_running_again_changes_nothing_when_there_is_nothing_to_do(run_workspace, run_ids, monkeypatch):
    before = runs.list_runs(run_workspace).set_index("id")[["finished", "accuracy"]]
    summaries = {row["id"]: row["summary"] for row in run_workspace.query("SELECT id, summary FROM runs")}
    monkeypatch.setattr(engine, "now", lambda: "2999-01-01T00:00:00+00:00")  # any rewrite would show
    assert runs.start_runs(run_workspace, list(run_ids), TINY_SUITE, device="cpu") == list(run_ids.values())
    after = runs.list_runs(run_workspace).set_index("id")[["finished", "accuracy"]]
    pd.testing.assert_frame_equal(before.sort_index(), after.sort_index())
    assert {row["id"]: row["summary"] for row in run_workspace.query("SELECT id, summary FROM runs")} == summaries


def test_matrix_difference_subtracts_cell_by_cell_and_refuses_other_grids(run_workspace, run_ids):
    background = runs.run_matrices(run_workspace, run_ids["bg-only"])["true_prob"]
    foreground = runs.run_matrices(run_workspace, run_ids["fg-only"])["true_prob"]
    difference = runs.matrix_difference(background, foreground)
    np.testing.assert_array_equal(difference.matrix, background.matrix - foreground.matrix)
    np.testing.assert_array_equal(difference.edges, background.edges)
    assert not runs.matrix_difference(background, background).matrix.any()
    coarse = runs.run_matrices(run_workspace, run_ids["fg-only"], settings=MatrixSettings.of("smooth", grid=16))["true_prob"]
    with pytest.raises(InvalidInputError, match="different grids"):
        runs.matrix_difference(background, coarse)


def test_signal_peaks_match_the_loaded_arrays_without_the_excluded_targets(run_workspace, run_ids):
    run_id = run_ids["bg-only"]
    data = runs.load_run(run_workspace, run_id)
    short = data.target_ids[1]
    with run_workspace.transaction() as conn:  # the short target holds the run's largest emb_max, then loses an image
        conn.execute("UPDATE run_images SET emb_max = 1e6 WHERE run_id = ? AND target_id = ? AND position = 0", (run_id, short))
        conn.execute("DELETE FROM run_images WHERE run_id = ? AND target_id = ? AND position = ?", (run_id, short, TINY_SUITE_N))
    data = runs.load_run(run_workspace, run_id)
    peaks = runs.signal_peaks(run_workspace, run_id, ["emb_max", "emb_mean", "true_prob"])
    assert peaks == {signal: float(np.abs(data.signals[signal]).max()) for signal in peaks}
    assert peaks["emb_max"] < 1e6
    with pytest.raises(InvalidInputError, match="'predicted'"):
        runs.signal_peaks(run_workspace, run_id, ["predicted"])
