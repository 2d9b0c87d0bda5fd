import json

import numpy as np
import pandas as pd
import pytest

from analytics.assessor import ASSESSORS, SHAP_PERMUTATIONS, evaluate_assessors, feature_columns, fit_assessor, predict, shapley_values
from analytics.assessor.features import ACCURACY_COLUMNS, FEATURE_COLUMNS, WORST_CASE
from analytics.cli import main
from analytics.exceptions import InvalidInputError
from analytics.judging import LABELS

MATRIX_COLUMNS = ("mean", "std", "error_rate")


def synthetic(n_models=30, *, driver="mean", seed=0, extra_features=0):
    """Features where the label is a known step function of ``driver``; every other column is noise.

    Columns: ``mean``, ``std``, ``error_rate``, ``extra_features`` more noise columns ``f00`` …, and
    the three accuracy statistics."""
    rng = np.random.default_rng(seed)
    features = pd.DataFrame(
        {
            "mean": rng.uniform(0, 1, n_models),
            "std": rng.normal(size=n_models),
            "error_rate": rng.uniform(0, 1, n_models),
            **{f"f{i:02d}": rng.normal(size=n_models) for i in range(extra_features)},
            **{name: rng.uniform(0, 1, n_models) for name in ACCURACY_COLUMNS},
        },
        index=[f"model{i:02d}" for i in range(n_models)],
    )
    labels = pd.Series(np.asarray(LABELS, dtype=object)[np.digitize(features[driver], [1 / 3, 2 / 3])], index=features.index)
    return features, labels


@pytest.fixture(scope="module")
def report():
    features, labels = synthetic()
    return evaluate_assessors(features, labels, repeats=10, seed=0)


def test_forest_beats_chance_and_the_baseline(report):
    rf, baseline = report.scores["random_forest"], report.scores["worst_case_baseline"]
    chance = max(report.class_counts.values()) / report.n_models  # always guessing the commonest label
    assert len(rf.accuracy) == 10
    assert rf.accuracy_mean > chance + 0.3
    assert rf.kappa_mean > 0.5
    assert report.scores["adaboost"].accuracy_mean > chance + 0.3
    assert rf.accuracy_mean > baseline.accuracy_mean + 0.2


def test_report_is_json_ready_with_the_cli_keys(report):
    payload = report.to_dict()
    json.dumps(payload)
    for short in ("rf", "ada", "acc_rf", "acc_ada", "baseline"):
        for stat in ("accuracy_mean", "accuracy_std", "kappa_mean"):
            assert f"{short}_{stat}" in payload
    assert payload["n_models"] == 30
    assert payload["features"] == list(MATRIX_COLUMNS)
    assert payload["features_by_assessor"] == {
        "random_forest": list(MATRIX_COLUMNS),
        "adaboost": list(MATRIX_COLUMNS),
        "accuracy_forest": list(ACCURACY_COLUMNS),
        "accuracy_adaboost": list(ACCURACY_COLUMNS),
        "worst_case_baseline": [WORST_CASE],
    }
    assert list(report.table()["assessor"]) == [kind.title for kind in ASSESSORS.values()]


def test_feature_columns_keep_accuracy_statistics_out_of_the_matrix_assessors():
    columns = [*FEATURE_COLUMNS, *ACCURACY_COLUMNS]
    for kind in ("random_forest", "adaboost"):
        assert feature_columns(columns, kind) == FEATURE_COLUMNS
    for kind in ("accuracy_forest", "accuracy_adaboost"):
        assert feature_columns(columns, kind) == list(ACCURACY_COLUMNS)
    assert feature_columns(columns, "worst_case_baseline") == [WORST_CASE]
    with pytest.raises(InvalidInputError, match="kind must be one of"):
        feature_columns(columns, "oracle")


def test_accuracy_learners_are_the_matrix_learners_on_other_columns():
    for matrix, accuracy in (("random_forest", "accuracy_forest"), ("adaboost", "accuracy_adaboost")):
        assert ASSESSORS[matrix].make(3).get_params() == ASSESSORS[accuracy].make(3).get_params()
        assert type(ASSESSORS[matrix].make(3)) is type(ASSESSORS[accuracy].make(3))


def test_accuracy_learners_read_the_accuracy_statistics_only():
    features, labels = synthetic(driver="original_accuracy", seed=7)
    report = evaluate_assessors(features, labels, repeats=5)
    # the label is a step function of the original accuracy: the accuracy learners find it, the
    # matrix learners (noise columns) and the worst-case threshold cannot
    for name in ("accuracy_forest", "accuracy_adaboost"):
        assert report.scores[name].accuracy_mean > report.scores["random_forest"].accuracy_mean + 0.2
        assert report.scores[name].accuracy_mean > report.scores["worst_case_baseline"].accuracy_mean + 0.2
    learner = fit_assessor(features, labels, kind="accuracy_forest")
    assert learner.feature_names == ACCURACY_COLUMNS
    shuffled = np.random.default_rng(0).permutation(len(features))
    scrambled = features.assign(**{name: features[name].to_numpy()[shuffled] for name in MATRIX_COLUMNS})
    pd.testing.assert_frame_equal(predict(learner, features), predict(learner, scrambled))


def test_same_seed_same_report():
    features, labels = synthetic(18, seed=2)
    first = evaluate_assessors(features, labels, repeats=3, seed=5)
    second = evaluate_assessors(features, labels, repeats=3, seed=5)
    assert first.to_dict() == second.to_dict()


def test_baseline_reads_worst_case_accuracy_only():
    features, labels = synthetic(driver=WORST_CASE, seed=1)
    baseline = fit_assessor(features, labels, kind="worst_case_baseline")
    assert baseline.feature_names == (WORST_CASE,)
    shuffled = np.random.default_rng(0).permutation(len(features))
    scrambled = features.assign(**{name: features[name].to_numpy()[shuffled] for name in ("mean", "std", "error_rate")})
    pd.testing.assert_frame_equal(predict(baseline, features), predict(baseline, scrambled))
    # with the label a function of worst-case accuracy, the baseline's thresholds find it
    assert evaluate_assessors(features, labels, repeats=5).scores["worst_case_baseline"].accuracy_mean > 0.8


def test_matrix_assessors_read_no_accuracy_statistic():
    features, labels = synthetic()
    for kind in ("random_forest", "adaboost"):
        assert fit_assessor(features, labels, kind=kind).feature_names == MATRIX_COLUMNS


def test_predict_gives_a_label_and_probabilities():
    features, labels = synthetic()
    predictions = predict(fit_assessor(features, labels, seed=1), features)
    assert list(predictions.columns) == ["label", *(f"p_{label}" for label in LABELS)]
    probabilities = predictions.drop(columns="label").to_numpy()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0)
    assert (predictions["label"].to_numpy() == np.asarray(LABELS, dtype=object)[probabilities.argmax(axis=1)]).all()
    with pytest.raises(InvalidInputError, match=r"lack the columns \['mean'\]"):
        predict(fit_assessor(features, labels), features.drop(columns="mean"))


def test_shapley_values_of_the_driving_feature_dominate():
    features, labels = synthetic()
    forest = fit_assessor(features, labels)
    explanation = shapley_values(forest, features)
    magnitude = explanation.values.abs().mean()
    assert magnitude.idxmax() == "mean"
    assert magnitude["mean"] > 3 * magnitude.drop("mean").max()
    # Shapley values are additive: base value + contributions = probability of the explained label
    predicted = predict(forest, features)
    explained_probability = [predicted.loc[model, f"p_{label}"] for model, label in explanation.target.items()]
    np.testing.assert_allclose(explanation.values.sum(axis=1) + explanation.base_value, explained_probability, atol=1e-6)
    assert (explanation.target == predicted["label"]).all()


def test_explain_a_chosen_label_and_adaboost_by_exact_shapley():
    features, labels = synthetic(12, seed=3)
    ada = fit_assessor(features, labels, kind="adaboost")
    explanation = shapley_values(ada, features.head(3), target="variant")
    assert set(explanation.target) == {"variant"}
    probability = predict(ada, features.head(3))["p_variant"]
    np.testing.assert_allclose(explanation.values.sum(axis=1) + explanation.base_value, probability, atol=1e-6)
    assert explanation.method == "exact enumeration of coalitions"
    with pytest.raises(InvalidInputError, match="target must be one of"):
        shapley_values(ada, features.head(1), target="sideways")


def test_adaboost_is_explained_on_48_matrix_features():
    features, labels = synthetic(30, seed=8, extra_features=45)
    ada = fit_assessor(features, labels, kind="adaboost")
    assert len(ada.feature_names) == 48
    models = features.head(3)
    explanation = shapley_values(ada, models)
    assert explanation.values.shape == (3, 48) and list(explanation.values.columns) == list(ada.feature_names)
    assert np.isfinite(explanation.values.to_numpy()).all() and np.isfinite(explanation.base_value.to_numpy()).all()
    assert f"{SHAP_PERMUTATIONS} antithetic permutations" in explanation.method
    # permutation sampling still adds up: base value + Σ values = the explained probability
    predicted = predict(ada, models)
    probability = [predicted.loc[model, f"p_{label}"] for model, label in explanation.target.items()]
    np.testing.assert_allclose(explanation.values.sum(axis=1) + explanation.base_value, probability, atol=1e-6)
    # the label is a function of `mean`: it carries the largest contribution on average
    assert explanation.values.abs().mean().idxmax() == "mean"
    # deterministic, and numpy's global generator is left as it was
    state = np.random.get_state()[1].copy()
    again = shapley_values(ada, models)
    np.testing.assert_array_equal(np.random.get_state()[1], state)
    pd.testing.assert_frame_equal(explanation.values, again.values)


def test_assess_command_reports_the_accuracy_learner_and_the_features(judged_workspace, capsys):
    argv = ["assess", "--workspace", str(judged_workspace.root), "--labels", "human", "--repeats", "3", "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    for short in ("rf", "ada", "acc_rf", "acc_ada", "baseline"):
        assert 0 <= result[f"{short}_accuracy_mean"] <= 1 and result[f"{short}_accuracy_std"] >= 0
    assert result["features"] == FEATURE_COLUMNS
    assert not set(ACCURACY_COLUMNS) & set(result["features"])
    assert result["features_by_assessor"]["random_forest"] == FEATURE_COLUMNS
    assert result["features_by_assessor"]["accuracy_forest"] == list(ACCURACY_COLUMNS)
    assert result["features_by_assessor"]["accuracy_adaboost"] == list(ACCURACY_COLUMNS)
    assert result["features_by_assessor"]["worst_case_baseline"] == [WORST_CASE]


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        (["invariant"] * 3 + ["variant"] * 2, r"needs at least 6 judged models .* got 5"),
        (["invariant"] * 7 + ["variant"], r"at least 2 per label .*variant: 1"),
        (["variant"] * 8, "at least two labels"),
    ],
)
def test_too_few_judged_models_are_refused(labels, match):
    features, _ = synthetic(len(labels), seed=4)
    labels = pd.Series(labels, index=features.index, dtype=object)
    with pytest.raises(InvalidInputError, match=match):
        evaluate_assessors(features, labels)
    with pytest.raises(InvalidInputError, match=match):
        fit_assessor(features, labels)


def test_three_labels_need_enough_models_for_both_splits():
    features, _ = synthetic(6, seed=5)
    labels = pd.Series(["invariant", "invariant", "borderline", "borderline", "variant", "variant"], index=features.index)
    # 6 models: the test third (2 models) cannot hold three labels
    with pytest.raises(InvalidInputError, match="needs at least 7 judged models"):
        evaluate_assessors(features, labels)


def test_only_models_with_features_and_labels_are_used():
    features, labels = synthetic(20, seed=6)
    extra = pd.Series(["variant"], index=["unmeasured"])
    report = evaluate_assessors(features.iloc[:18], pd.concat([labels, extra]), repeats=2)
    assert report.n_models == 18
    assert "unmeasured" not in report.models


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda f: f.drop(columns=WORST_CASE), "worst_case_accuracy"),
        (lambda f: f.drop(columns="original_accuracy"), r"lack the accuracy columns \['original_accuracy'\]"),
        (lambda f: f[list(ACCURACY_COLUMNS)], "at least one matrix feature"),
        (lambda f: f.assign(std=np.nan), "NaN or infinite"),
        (lambda f: f.assign(std="high"), "must be numeric"),
    ],
)
def test_bad_features_are_refused(change, match):
    features, labels = synthetic(12)
    with pytest.raises(InvalidInputError, match=match):
        evaluate_assessors(change(features), labels)


def test_bad_labels_and_settings_are_refused():
    features, labels = synthetic(12)
    with pytest.raises(InvalidInputError, match="unknown values"):
        evaluate_assessors(features, labels.replace("variant", "wobbly"))
    with pytest.raises(InvalidInputError, match="test_size must be in"):
        evaluate_assessors(features, labels, test_size=1.0)
    with pytest.raises(InvalidInputError, match="repeats must be an integer"):
        evaluate_assessors(features, labels, repeats=0)


def _balanced_two_labels(n_models=12):
    """Two labels, alternating: on identical feature rows a stump is exactly as good as chance."""
    features, _ = synthetic(n_models)
    return features, pd.Series(["invariant", "variant"] * (n_models // 2), index=features.index)


def test_fits_refused_on_identical_rows_are_skipped_and_counted():
    features, labels = _balanced_two_labels()
    features[list(ACCURACY_COLUMNS)] = 0.5  # every model has the same accuracy statistics
    report = evaluate_assessors(features, labels, repeats=3, seed=0)
    ada = report.scores["accuracy_adaboost"]
    assert (ada.failed, ada.accuracy, ada.failure.startswith("BaseClassifier in AdaBoostClassifier")) == (3, (), True)
    assert np.isnan(ada.accuracy_mean) and report.scores["random_forest"].failed == 0
    assert len(report.scores["random_forest"].accuracy) == 3
    payload = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert payload["fits_failed"] == report.fits_failed >= 3 and payload["fits_failed_by_assessor"]["accuracy_adaboost"] == 3
    assert payload["acc_ada_accuracy_mean"] is None and "worse than random" in payload["fit_errors"]["accuracy_adaboost"]
    with pytest.raises(InvalidInputError, match="AdaBoost · accuracy statistics cannot be fitted.*worse than random"):
        fit_assessor(features.iloc[:8], labels.iloc[:8], kind="accuracy_adaboost")  # 4 + 4: error exactly 1/2


def test_when_no_fit_succeeds_the_message_says_why(monkeypatch):
    from sklearn.ensemble import AdaBoostClassifier

    features, labels = _balanced_two_labels()
    features[:] = 0.5  # no column varies
    monkeypatch.setattr(ASSESSORS["random_forest"], "make", classmethod(lambda cls, seed: AdaBoostClassifier()))
    monkeypatch.setattr(ASSESSORS["worst_case_baseline"], "make", classmethod(lambda cls, seed: AdaBoostClassifier()))
    with pytest.raises(InvalidInputError, match="no assessor could be fitted on any of the 2 splits of 12 judged models"):
        evaluate_assessors(features, labels, repeats=2)
