import json

import numpy as np
import pandas as pd
import pytest

from analytics.assessor import (
    ASSESSORS,
    WORST_CASE,
    evaluate_assessors,
    explain,
    fit_assessor,
    predict,
)
from analytics.exceptions import InvalidInputError
from analytics.judgments import LABELS


def synthetic(n_models=30, *, driver="mean", seed=0):
    """Features where the label is a known step function of ``driver``; every other column is noise."""
    rng = np.random.default_rng(seed)
    features = pd.DataFrame(
        {
            "mean": rng.uniform(0, 1, n_models),
            "std": rng.normal(size=n_models),
            "error_rate": rng.uniform(0, 1, n_models),
            WORST_CASE: rng.uniform(0, 1, n_models),
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
    for key in ("rf_accuracy_mean", "rf_accuracy_std", "ada_accuracy_mean", "baseline_accuracy_mean", "n_models"):
        assert key in payload
    assert payload["n_models"] == 30
    assert WORST_CASE not in payload["features"]
    assert list(report.table()["assessor"]) == [kind.title for kind in ASSESSORS.values()]


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


def test_forest_does_not_read_worst_case_accuracy():
    features, labels = synthetic()
    forest = fit_assessor(features, labels)
    assert WORST_CASE not in forest.feature_names


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
    explanation = explain(forest, features)
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
    explanation = explain(ada, features.head(3), target="variant")
    assert set(explanation.target) == {"variant"}
    probability = predict(ada, features.head(3))["p_variant"]
    np.testing.assert_allclose(explanation.values.sum(axis=1) + explanation.base_value, probability, atol=1e-6)
    with pytest.raises(InvalidInputError, match="target must be one of"):
        explain(ada, features.head(1), target="sideways")


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
