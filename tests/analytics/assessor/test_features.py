"""analytics.assessor's feature table on finished tiny runs (tests/fixtures/runs.py): both feature sets."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from analytics.assessor import DEFAULT_FEATURE_SET, FEATURE_SETS, describe_feature, features_table
from analytics.assessor import features as features_module
from analytics.assessor.feature_sets import matrix_feature_columns
from analytics.assessor.features import ACCURACY_COLUMNS, FEATURE_COLUMNS, run_features
from analytics.exceptions import InvalidInputError
from analytics.runs import SIGNALS, complete_runs, load_run, run_matrices, subsample_matrices
from analytics.runs import read as runs_read
from analytics.runs.matrices import correct_rows, subsample_targets
from analytics.variance import AUTHORS_FEATURE_NAMES, DEFAULT_ERROR_THRESHOLD, FEATURE_NAMES, cloud_matrices, signal_point_clouds
from analytics.variance.accuracy import worst_case_accuracy
from analytics.variance.authors import authors_error_rate


def test_features_cover_every_signal_and_accuracy(run_workspace, run_ids):
    features = run_features(run_workspace, run_ids["bg-only"])
    assert DEFAULT_FEATURE_SET == "authors"
    assert list(features) == [*FEATURE_COLUMNS, *ACCURACY_COLUMNS]
    assert len(FEATURE_COLUMNS) == len(SIGNALS) * (len(AUTHORS_FEATURE_NAMES) + 1)  # + sstv
    matrices = run_matrices(run_workspace, run_ids["bg-only"], targets="correct")  # the authors' set reads the correct targets
    assert features["emb_max.mean"] == pytest.approx(matrices["emb_max"].matrix.mean())
    assert features["max_prob.s_mean"] == pytest.approx(np.mean(matrices["max_prob"].matrix ** 2))
    assert run_features(run_workspace, run_ids["bg-only"], threshold=-1.0)["emb_mean.error_rate"] == 1.0
    table = features_table(run_workspace, list(run_ids.values()))
    assert table.index.tolist() == list(run_ids) and table.loc["fg-only", "true_prob.mean"] == pytest.approx(0.0, abs=1e-9)
    assert table.loc["bg-only", "true_prob.mean"] > 0
    with pytest.raises(InvalidInputError, match="one run per model"):
        features_table(run_workspace, [run_ids["tiny"], run_ids["tiny"]])


def test_sensitivity_compares_the_matrix_with_a_subsample_of_targets(run_workspace, run_ids):
    run_id = run_ids["bg-only"]
    full, part = run_matrices(run_workspace, run_id), subsample_matrices(run_workspace, run_id)
    assert [m.d_max for m in part.values()] == pytest.approx([m.d_max for m in full.values()])  # same axes
    features = run_features(run_workspace, run_id, targets="all")
    for signal in SIGNALS:
        expected = np.abs(full[signal].matrix - part[signal].matrix).sum()
        assert features[f"{signal}.sstv"] == pytest.approx(expected)
    assert any(features[f"{signal}.sstv"] > 0 for signal in SIGNALS)  # a 90 % subsample of the targets changes the matrix
    np.testing.assert_array_equal(subsample_matrices(run_workspace, run_id)["true_prob"].matrix, part["true_prob"].matrix)  # seeded
    data = load_run(run_workspace, run_id)
    kept = subsample_targets(len(data.target_ids))
    clouds = signal_point_clouds(data.distances[kept], {signal: data.signals[signal][kept] for signal in SIGNALS})
    expected = cloud_matrices(clouds, d_max=full["true_prob"].d_max)
    np.testing.assert_allclose(part["true_prob"].matrix, expected["true_prob"].matrix, rtol=0, atol=1e-12)  # those targets


def test_sensitivity_subsample_is_the_authors_draw():
    """Issue 41: ML4ML's datamat.py draws with np.random.seed(2) then np.random.choice; so does sstv's subsample."""
    state = np.random.get_state()
    try:
        np.random.seed(2)
        theirs = np.random.choice(range(60), int(60 * 0.9), replace=False)
        np.random.seed(123)
        before = np.random.random()
        np.random.seed(123)
        kept = subsample_targets(60)
        assert np.random.random() == before  # the global state is untouched
    finally:
        np.random.set_state(state)
    assert kept.size == 54
    np.testing.assert_array_equal(kept, np.sort(theirs))
    assert subsample_targets(1).tolist() == [0]  # at least one target


def test_authors_features_read_the_correctly_classified_targets_matrices(run_workspace, run_ids):
    """Issue 41: ML4ML's assessor reads the matrices of the correctly classified examples only (their
    correct split, judged on the untransformed image); every target is one option away."""
    run_id = run_ids["bg-only"]
    data = load_run(run_workspace, run_id)
    rows = correct_rows(data)
    assert 0 < rows.size < len(data.target_ids) and rows.tolist() == np.flatnonzero(data.correct[:, 0]).tolist()
    every, correct = run_matrices(run_workspace, run_id), run_matrices(run_workspace, run_id, targets="correct")
    d_max = every["true_prob"].d_max
    expected = cloud_matrices(signal_point_clouds(data.distances[rows], {s: data.signals[s][rows] for s in SIGNALS}), d_max=d_max)
    # their sensitivity: draw 90 % of every example first, then keep the correct ones among them
    kept = subsample_targets(len(data.target_ids))
    kept = kept[data.correct[kept, 0]]
    part = cloud_matrices(signal_point_clouds(data.distances[kept], {s: data.signals[s][kept] for s in SIGNALS}), d_max=d_max)
    features, all_targets = run_features(run_workspace, run_id), run_features(run_workspace, run_id, targets="all")
    backdrop = run_features(run_workspace, run_id, feature_set="backdrop")
    for signal in SIGNALS:
        np.testing.assert_allclose(correct[signal].matrix, expected[signal].matrix, rtol=0, atol=1e-12)
        assert correct[signal].d_max == d_max  # the axes of every target
        assert features[f"{signal}.mean"] == pytest.approx(correct[signal].matrix.mean())
        assert features[f"{signal}.sstv"] == pytest.approx(np.abs(expected[signal].matrix - part[signal].matrix).sum())
        assert all_targets[f"{signal}.mean"] == pytest.approx(every[signal].matrix.mean())
        assert backdrop[f"{signal}.mean"] == pytest.approx(every[signal].matrix.mean())  # Backdrop's set: every target
    assert features["true_prob.mean"] != pytest.approx(all_targets["true_prob.mean"])
    assert features["accuracy"] == all_targets["accuracy"]  # the accuracies count every target either way
    with pytest.raises(InvalidInputError, match="targets must be one of 'all', 'correct'"):
        run_features(run_workspace, run_id, targets="wrong")


def test_a_run_without_correct_targets_reads_every_target(run_workspace, run_ids):
    data = load_run(run_workspace, run_ids["tiny"])
    assert correct_rows(replace(data, correct=np.zeros_like(data.correct))) is None
    # ten targets, the only correct one outside the sensitivity's draw: nothing to compare with either
    ten = replace(data, correct=np.zeros((10, data.correct.shape[1]), bool))
    ten.correct[np.setdiff1d(np.arange(10), subsample_targets(10)), 0] = True
    assert correct_rows(ten) is None
    ten.correct[subsample_targets(10)[0], 0] = True
    assert correct_rows(ten).size == 2


def test_fallbacks_where_the_authors_draw_holds_no_correct_target(run_workspace, run_ids):
    """Issue 48 pins two departures from ML4ML (docs/method.md, differences table, 'correct targets
    outside the draw'). n = 17: their draw (seed 2, 15 of 17) leaves out targets 8 and 15; with only
    those correct, theirs measures {8, 15} and gets NaN for sstv (an empty subsample), Backdrop reads
    every target for both. n = 1: int(0.9) = 0, their draw is empty; Backdrop keeps target 0, so sstv is 0."""
    data = load_run(run_workspace, run_ids["tiny"])
    assert sorted(set(range(17)) - set(subsample_targets(17).tolist())) == [8, 15]
    assert np.random.RandomState(2).choice(range(17), int(17 * 0.9), replace=False).size == 15
    seventeen = replace(data, correct=np.zeros((17, data.correct.shape[1]), bool))
    seventeen.correct[[8, 15], 0] = True
    assert correct_rows(seventeen) is None  # every target, not theirs {8, 15}
    seventeen.correct[0, 0] = True
    assert correct_rows(seventeen).tolist() == [0, 8, 15]  # one correct target in the draw: the correct split again

    assert np.random.RandomState(2).choice(range(1), int(1 * 0.9), replace=False).size == 0  # theirs: empty
    assert subsample_targets(1).tolist() == [0]
    one = replace(data, correct=np.ones((1, data.correct.shape[1]), bool))
    assert correct_rows(one).tolist() == [0]  # the subsample is the whole run: sstv = 0


def test_features_of_a_completed_run_read_stored_numbers_not_every_image(run_workspace, run_ids, monkeypatch):
    # Issue 28: the assessor over 250 paper-scale runs read every image of each (minutes); the run's job
    # now stores what the features need, and they must equal what the images give.
    run_id = run_ids["bg-only"]
    data = load_run(run_workspace, run_id)
    matrices = run_matrices(run_workspace, run_id, targets="correct")
    complete_runs(run_workspace, [run_id])

    def every_image(*args, **kwargs):
        raise AssertionError("the features read every image of the run")

    monkeypatch.setattr(runs_read, "image_table", every_image)
    features = run_features(run_workspace, run_id)
    assert features["accuracy"] == pytest.approx(data.correct.mean())
    assert features["original_accuracy"] == pytest.approx(data.correct[:, 0].mean())
    assert features["worst_case_accuracy"] == pytest.approx(worst_case_accuracy(data.correct))
    for signal in ("emb_max", "emb_mean", "emb_topk_mean"):  # thresholds scaled by the signal's largest magnitude
        cut = DEFAULT_ERROR_THRESHOLD * np.abs(data.signals[signal]).max()
        assert features[f"{signal}.error_rate"] == pytest.approx(authors_error_rate(matrices[signal].matrix, threshold=cut))
    assert features["true_prob.error_rate"] == pytest.approx(authors_error_rate(matrices["true_prob"].matrix, threshold=DEFAULT_ERROR_THRESHOLD))


def test_features_are_cached_until_the_run_changes(run_workspace, run_ids, monkeypatch):
    run_id = run_ids["tiny"]
    first = run_features(run_workspace, run_id)

    def recomputed(*args, **kwargs):
        raise AssertionError("computed again")

    monkeypatch.setattr(features_module, "_features", recomputed)
    assert run_features(run_workspace, run_id) == first  # read back: same values, same order
    assert list(run_features(run_workspace, run_id)) == list(first)
    with pytest.raises(AssertionError, match="computed again"):
        run_features(run_workspace, run_id, threshold=0.3)  # other settings: their own entry
    with run_workspace.transaction() as conn:  # a resumed run finishes anew
        conn.execute("UPDATE runs SET finished = '2099-01-01T00:00:00' WHERE id = ?", (run_id,))
    with pytest.raises(AssertionError, match="computed again"):
        run_features(run_workspace, run_id)


def test_backdrop_set_and_crops_are_named_alternatives(run_workspace, run_ids):
    backdrop = run_features(run_workspace, run_ids["bg-only"], feature_set="backdrop")
    assert list(backdrop) == [*matrix_feature_columns("backdrop"), *ACCURACY_COLUMNS]
    assert len(matrix_feature_columns("backdrop")) == len(SIGNALS) * len(FEATURE_NAMES)
    assert "true_prob.sstv" not in backdrop and "true_prob.gradient_vertical_max" in backdrop
    cropped = features_table(run_workspace, [run_ids["bg-only"]], crops=(8,))
    assert "true_prob.mean_crop8" in cropped.columns and "true_prob.sstv_crop8" not in cropped.columns
    matrix = run_matrices(run_workspace, run_ids["bg-only"], targets="correct")["true_prob"].matrix
    assert cropped.loc["bg-only", "true_prob.mean_crop8"] == pytest.approx(matrix[8:-8, 8:-8].mean())
    with pytest.raises(InvalidInputError, match="feature_set"):
        run_features(run_workspace, run_ids["bg-only"], feature_set="paper")
    with pytest.raises(InvalidInputError, match="authors' feature set"):
        matrix_feature_columns("backdrop", crops=(2,))


@pytest.mark.parametrize("feature_set", list(FEATURE_SETS))
def test_every_feature_column_has_a_plain_label_and_meaning(feature_set):
    for column in [*matrix_feature_columns(feature_set, crops=(4,) if feature_set == "authors" else ()), *ACCURACY_COLUMNS]:
        label, meaning = describe_feature(column, feature_set)
        assert label != column and "_" not in label and meaning, column
    assert describe_feature("max_prob.sstv") == (
        "Max probability (confidence): sensitivity to a subsample",
        "Summed change of the matrix when rebuilt from a random 90 % of the images: how stable it is.",
    )
    assert describe_feature("true_prob.gradient_vertical_wstd")[0] == "True-class probability: vertical gradient, spread per line"
