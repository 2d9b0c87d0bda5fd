"""analytics.assessor.verdicts: the assessor's verdict the gate and the Repository page give, a
labelled model's from the other labelled models (leave-one-out)."""

from __future__ import annotations

import pandas as pd
import pytest

from analytics.assessor import fit_assessor, held_out_verdicts, predict
from analytics.assessor.verdicts import ASSESSOR_VERDICT_COLUMNS
from analytics.exceptions import InvalidInputError
from tests.analytics.assessor.test_assessor import synthetic


def test_a_labelled_models_verdict_comes_from_the_others_and_an_unlabelled_ones_from_every_label():
    features, labels = synthetic(30)
    truth = labels["model00"]
    labels["model00"] = "variant" if truth != "variant" else "invariant"  # a label its features contradict
    candidates = pd.concat([features.loc[["model00"]], features.loc[["model01"]].rename(index={"model01": "new"})])
    verdicts = held_out_verdicts(features, labels, candidates)
    assert list(verdicts.columns) == ASSESSOR_VERDICT_COLUMNS and list(verdicts.index) == ["model00", "new"]
    held_out = predict(fit_assessor(features.drop(index="model00"), labels.drop(index="model00")), features.loc[["model00"]])
    assert verdicts.at["model00", "label"] == held_out.at["model00", "label"] == truth  # not its own (wrong) label restated
    assert verdicts.at["model00", "trained_on"] == 29 and verdicts.at["new", "trained_on"] == 30
    shared = predict(fit_assessor(features, labels), candidates.loc[["new"]])
    assert verdicts.at["new", "label"] == shared.at["new", "label"]
    assert verdicts.at["new", "p_variant"] == pytest.approx(shared.at["new", "p_variant"])
    assert verdicts.at["new", "confidence"] == pytest.approx(shared.loc["new", ["p_invariant", "p_borderline", "p_variant"]].max())
    assert (verdicts["reason"] == "").all()


def test_a_labelled_model_whose_label_is_needed_to_train_gets_a_reason_not_a_verdict():
    features, labels = synthetic(12)
    labels[:] = ["invariant"] * 2 + ["variant"] * 10
    verdicts = held_out_verdicts(features, labels, features.iloc[[0, 5]])
    first, other = verdicts.index
    assert verdicts.at[first, "label"] == "" and pd.isna(verdicts.at[first, "confidence"]) and verdicts.at[first, "trained_on"] == 0
    assert "without its own label" in verdicts.at[first, "reason"] and "at least 2 per label" in verdicts.at[first, "reason"]
    assert verdicts.at[other, "label"] in ("invariant", "variant") and verdicts.at[other, "reason"] == ""


def test_no_verdict_at_all_when_no_assessor_can_be_trained():
    features, labels = synthetic(12)
    with pytest.raises(InvalidInputError, match="at least two labels"):
        held_out_verdicts(features, labels.replace({"borderline": "variant", "invariant": "variant"}), features)


def test_suite_verdicts_are_held_out_on_the_judged_suite(judged_workspace):
    from analytics.assessor import human_labels, suite_verdicts
    from analytics.assessor.features import features_table
    from analytics.judging import judgeable_runs
    from analytics.variance import MatrixSettings
    from tests.fixtures.judging import TINY_SUITE, UNJUDGED

    runs = judgeable_runs(judged_workspace, TINY_SUITE)
    labels = human_labels(judged_workspace, TINY_SUITE)
    features = features_table(judged_workspace, list(runs["id"]), settings=MatrixSettings.of("smooth"))
    verdicts = suite_verdicts(judged_workspace, TINY_SUITE, list(runs["id"]))
    assert list(verdicts.index) == list(runs["model"])
    judged = features.drop(index=UNJUDGED)
    assert verdicts.at[UNJUDGED, "label"] == predict(fit_assessor(judged, labels), features.loc[[UNJUDGED]]).at[UNJUDGED, "label"]
    assert verdicts.at[UNJUDGED, "trained_on"] == len(labels) == 8
    for model in labels.index:
        assert verdicts.at[model, "trained_on"] in (0, 7)
    with pytest.raises(InvalidInputError, match="0 model\\(s\\) judged on this suite; the assessor trains on at least 6"):
        suite_verdicts(judged_workspace, "no-such-suite", list(runs["id"]))
