import itertools
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from analytics.agreement import (
    confusion,
    fleiss_kappa,
    label_counts,
    majority_vote,
    measure_agreement,
    per_model_agreement,
)
from analytics.cli import main
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.judgments import LABELS, add_judgment, latest_judgments
from tests.fixtures.judgments import insert_suites

# Fleiss (1971) as reproduced on Wikipedia ("Fleiss' kappa", worked example): 10 subjects,
# 14 raters, 5 categories; the published result is kappa = 0.210.
TEXTBOOK = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)


def hand_fleiss(table) -> float:
    """Fleiss' formula written out term by term, with each subject's own number of raters."""
    rows = [list(map(float, row)) for row in table]
    total = sum(sum(row) for row in rows)
    p_j = [sum(row[j] for row in rows) / total for j in range(len(rows[0]))]
    p_i = [sum(n * (n - 1) for n in row) / (sum(row) * (sum(row) - 1)) for row in rows]
    p_bar = sum(p_i) / len(p_i)
    p_e = sum(p * p for p in p_j)
    return (p_bar - p_e) / (1 - p_e)


def judgments(rows):
    return pd.DataFrame(rows, columns=["annotator", "model", "label"])


def random_judgments(n_annotators, n_models, seed, *, skip=0.0):
    rng = np.random.default_rng(seed)
    rows = [
        (f"a{a}", f"m{m:02d}", LABELS[rng.integers(3)])
        for a in range(n_annotators)
        for m in range(n_models)
        if rng.random() >= skip
    ]
    return judgments(rows)


def test_fleiss_matches_the_textbook_example():
    assert fleiss_kappa(TEXTBOOK) == pytest.approx(hand_fleiss(TEXTBOOK))
    assert round(fleiss_kappa(TEXTBOOK), 3) == 0.210


@pytest.mark.parametrize("seed", range(4))
def test_fleiss_over_judgments_matches_statsmodels(seed):
    data = random_judgments(4, 15, seed)
    codes = data.pivot(index="model", columns="annotator", values="label").apply(lambda c: c.map(LABELS.index))
    expected = statsmodels_fleiss(aggregate_raters(codes.to_numpy(), n_cat=3)[0])
    assert measure_agreement(data).fleiss_kappa == pytest.approx(expected)


def test_fleiss_with_skipped_models_uses_each_models_own_rater_count():
    data = random_judgments(4, 20, seed=1, skip=0.3)
    counts = label_counts(data)
    assert counts.sum(axis=1).nunique() > 1  # the design really is incomplete
    result = measure_agreement(data)
    kept = counts[counts.sum(axis=1) >= 2]
    assert result.fleiss_kappa == pytest.approx(hand_fleiss(kept.to_numpy()))
    assert set(result.excluded_models) == set(counts.index[counts.sum(axis=1) < 2])


def test_models_judged_once_are_excluded_and_said_so():
    data = judgments(
        [
            ("ana", "m1", "variant"), ("bo", "m1", "variant"),
            ("ana", "m2", "invariant"), ("bo", "m2", "borderline"),
            ("ana", "m3", "variant"),
        ]  # fmt: skip
    )
    result = measure_agreement(data)
    assert result.fleiss_models == ("m1", "m2")
    assert result.excluded_models == ("m3",)
    assert any("m3" in note for note in result.notes)
    assert result.fleiss_kappa == pytest.approx(hand_fleiss(label_counts(data).loc[["m1", "m2"]].to_numpy()))


def test_fleiss_is_undefined_when_everyone_gives_one_label():
    data = judgments([(a, m, "variant") for a in ("ana", "bo") for m in ("m1", "m2")])
    result = measure_agreement(data)
    assert np.isnan(result.fleiss_kappa)
    assert result.to_dict()["fleiss_kappa"] is None
    assert any("undefined" in note for note in result.notes)


def test_cohen_pairs_use_models_both_judged():
    data = random_judgments(3, 12, seed=3, skip=0.25)
    result = measure_agreement(data)
    wide = data.pivot(index="model", columns="annotator", values="label")
    assert set(result.cohen_kappa) == set(itertools.combinations(["a0", "a1", "a2"], 2))
    for (first, second), kappa in result.cohen_kappa.items():
        both = wide[[first, second]].dropna()
        assert kappa == pytest.approx(cohen_kappa_score(both[first], both[second]))


def test_cohen_is_none_in_json_for_pairs_without_shared_models():
    data = judgments([("ana", "m1", "variant"), ("bo", "m2", "variant"), ("ana", "m3", "invariant")])
    payload = measure_agreement(data).to_dict()
    json.dumps(payload)  # JSON-ready: no NaN, no tuples as keys
    assert payload["cohen_kappa"] == {"ana|bo": None}


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (["invariant", "invariant", "variant"], "invariant"),
        (["invariant", "variant"], "variant"),
        (["invariant", "borderline"], "borderline"),
        (["borderline", "variant"], "variant"),
        (["invariant", "borderline", "variant"], "variant"),
        (["borderline"], "borderline"),
    ],
)
def test_majority_vote_breaks_ties_towards_caution(labels, expected):
    data = judgments([(f"a{i}", "m", label) for i, label in enumerate(labels)])
    assert majority_vote(data)["m"] == expected


def test_per_model_table_counts_and_shares():
    data = judgments([("a", "m1", "variant"), ("b", "m1", "variant"), ("c", "m1", "borderline"), ("a", "m2", "invariant")])
    table = per_model_agreement(data).set_index("model")
    assert table.loc["m1", ["invariant", "borderline", "variant", "n_judgments"]].tolist() == [0, 1, 2, 3]
    assert table.loc["m1", "majority"] == "variant"
    assert table.loc["m1", "agreement"] == pytest.approx(2 / 3)
    assert table.loc["m2", "agreement"] == 1.0


def test_confusion_between_two_annotators():
    data = judgments(
        [("a", "m1", "variant"), ("b", "m1", "borderline"), ("a", "m2", "variant"), ("b", "m2", "variant"), ("a", "m3", "invariant")]
    )
    matrix = confusion(data, "a", "b")
    assert matrix.loc["variant", "borderline"] == 1
    assert matrix.loc["variant", "variant"] == 1
    assert matrix.to_numpy().sum() == 2  # m3 was judged by a only
    with pytest.raises(NotFoundError, match="annotator 'zed' has no judgments"):
        confusion(data, "a", "zed")


def test_history_with_duplicates_is_refused():
    data = judgments([("a", "m1", "variant"), ("a", "m1", "invariant")])
    with pytest.raises(InvalidInputError, match="latest_judgments"):
        measure_agreement(data)


def test_agreement_on_stored_judgments_counts_only_the_latest(models_workspace):
    for annotator, label in [("ana", "invariant"), ("bo", "variant"), ("ana", "variant")]:
        add_judgment(models_workspace, annotator=annotator, model="model0", label=label)
    result = measure_agreement(latest_judgments(models_workspace))
    assert result.per_model.set_index("model").loc["model0", "variant"] == 2
    assert result.majority["model0"] == "variant"


def test_cli_agreement_reports_kappas(models_workspace, capsys):
    for annotator, labels in {"ana": ["variant", "invariant", "borderline"], "bo": ["variant", "invariant", "variant"]}.items():
        for model, label in zip(["model0", "model1", "model2"], labels):
            add_judgment(models_workspace, annotator=annotator, model=model, label=label)
    assert main(["agreement", "--workspace", str(models_workspace.root), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    data = latest_judgments(models_workspace)
    assert printed["annotators"] == ["ana", "bo"]
    assert printed["models"] == ["model0", "model1", "model2"]
    assert printed["fleiss_kappa"] == pytest.approx(hand_fleiss(label_counts(data).to_numpy()))
    wide = data.pivot(index="model", columns="annotator", values="label")
    assert printed["cohen_kappa"] == {"ana|bo": pytest.approx(cohen_kappa_score(wide["ana"], wide["bo"]))}


def test_cli_agreement_on_an_empty_workspace_is_well_formed(models_workspace, capsys):
    assert main(["agreement", "--workspace", str(models_workspace.root), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["fleiss_kappa"] is None and printed["annotators"] == [] and printed["cohen_kappa"] == {}


def test_cli_agreement_counts_the_judgments_of_one_suite(models_workspace, capsys):
    insert_suites(models_workspace, ["suite-a", "suite-b"])
    for annotator in ("ana", "bo"):
        add_judgment(models_workspace, annotator=annotator, model="model0", label="variant", suite_id="suite-a")
    add_judgment(models_workspace, annotator="ana", model="model1", label="invariant", suite_id="suite-b")
    assert main(["agreement", "--workspace", str(models_workspace.root), "--suite", "suite-b", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["suite"], printed["annotators"], printed["models"]) == ("suite-b", ["ana"], ["model1"])
    assert main(["agreement", "--workspace", str(models_workspace.root), "--suite", "nope", "--json"]) == 2
    assert "no suite 'nope'" in capsys.readouterr().err
