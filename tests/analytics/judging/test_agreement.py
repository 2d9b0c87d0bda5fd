import itertools
import json

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from analytics.cli import main
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.judging import AGREEMENT_BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, LABELS, MIN_SHARED_MODELS, add_judgment, confusion, label_counts, latest_judgments, measure_agreement
from analytics.judging.agreement import fleiss_kappa, krippendorff_alpha, majority_vote, per_model_agreement
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
    payload = result.to_dict()
    assert payload["fleiss_kappa"]["value"] is None and payload["fleiss_kappa"]["ci_low"] is None
    assert payload["krippendorff_alpha"]["ordinal"]["value"] is None
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
    assert list(payload["cohen_kappa"]) == ["ana|bo"]
    assert payload["cohen_kappa"]["ana|bo"] == {"value": None, "n_models": 0, "ci_low": None, "ci_high": None, "below_minimum": True}


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
    assert printed["fleiss_kappa"]["value"] == pytest.approx(hand_fleiss(label_counts(data).to_numpy()))
    wide = data.pivot(index="model", columns="annotator", values="label")
    assert list(printed["cohen_kappa"]) == ["ana|bo"]
    assert printed["cohen_kappa"]["ana|bo"]["value"] == pytest.approx(cohen_kappa_score(wide["ana"], wide["bo"]))


def test_cli_agreement_on_an_empty_workspace_is_well_formed(models_workspace, capsys):
    assert main(["agreement", "--workspace", str(models_workspace.root), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["fleiss_kappa"]["value"] is None and printed["annotators"] == [] and printed["cohen_kappa"] == {}
    assert printed["krippendorff_alpha"]["ordinal"]["n_models"] == 0 and printed["majority_agreement"] == {}


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


# -- Krippendorff's alpha, agreement with the majority, sample size and bootstrap intervals ----------
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers, 12 units,
# values 1-5 (missing as NaN); the published results are nominal 0.743 and ordinal 0.815.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
]
#: Three annotators on four models; worked by hand in test_agreement_with_the_majority_by_hand.
MAJORITY_CASE = [
    ("ana", "m1", "invariant"), ("bo", "m1", "invariant"), ("cy", "m1", "variant"),
    ("ana", "m2", "variant"), ("bo", "m2", "variant"), ("cy", "m2", "variant"),
    ("ana", "m3", "borderline"), ("bo", "m3", "variant"), ("cy", "m3", "variant"),
    ("ana", "m4", "invariant"),
]  # fmt: skip


def reliability_data(data):
    """Annotators × models codes (0 invariant, 1 borderline, 2 variant; NaN = not judged), the package's input."""
    return data.pivot(index="annotator", columns="model", values="label").apply(lambda c: c.map(LABELS.index, na_action="ignore")).to_numpy(dtype=float)


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_alpha_reproduces_krippendorffs_published_example(level):
    table = np.array(KRIPPENDORFF_2011)
    counts = np.array([[np.sum(table[:, unit] == value) for value in range(1, 6)] for unit in range(table.shape[1])])
    assert krippendorff_alpha(counts, level=level) == pytest.approx(krippendorff.alpha(reliability_data=table, level_of_measurement=level))
    assert round(krippendorff_alpha(counts, level=level), 3) == {"nominal": 0.743, "ordinal": 0.815}[level]


def test_alpha_over_judgments_matches_the_package():
    data = judgments(
        [
            ("ana", "m1", "invariant"), ("bo", "m1", "invariant"), ("cy", "m1", "borderline"),
            ("ana", "m2", "variant"), ("bo", "m2", "borderline"),
            ("ana", "m3", "variant"), ("bo", "m3", "variant"), ("cy", "m3", "variant"),
            ("ana", "m4", "invariant"), ("cy", "m4", "variant"),
            ("bo", "m5", "borderline"), ("cy", "m5", "borderline"),
            ("ana", "m6", "invariant"),
        ]  # fmt: skip
    )
    result = measure_agreement(data, resamples=0)
    for level in ("ordinal", "nominal"):
        expected = krippendorff.alpha(reliability_data=reliability_data(data), value_domain=[0, 1, 2], level_of_measurement=level)
        assert result.alpha[level].value == pytest.approx(expected)
        assert result.alpha[level].n_models == 5  # m6 was judged once
    # ordinal: invariant vs variant (m4) weighs more than invariant vs borderline, so the levels differ
    assert result.alpha["ordinal"].value != pytest.approx(result.alpha["nominal"].value)


def test_alpha_is_undefined_without_pairable_values():
    assert np.isnan(krippendorff_alpha(np.array([[1, 0, 0], [0, 0, 1]])))
    with pytest.raises(InvalidInputError, match="level must be one of"):
        krippendorff_alpha(np.array([[1, 1, 0]]), level="interval")


def test_agreement_with_the_majority_by_hand():
    # ana: m1 others {inv, var} tie -> variant (no), all -> invariant (yes); m2 yes/yes; m3 others variant (no), all variant (no).
    # bo:  m1 no/yes; m2 yes/yes; m3 others {borderline, variant} tie -> variant (yes), all variant (yes).
    # cy:  m1 others invariant (no), all invariant (no); m2 yes/yes; m3 yes/yes.  m4 was judged by ana only.
    shares = measure_agreement(judgments(MAJORITY_CASE), resamples=0).with_majority
    expected = {"ana": (1 / 3, 2 / 3), "bo": (2 / 3, 1.0), "cy": (2 / 3, 2 / 3)}
    for name, (others, everyone) in expected.items():
        assert shares[name]["with_others"].value == pytest.approx(others)
        assert shares[name]["with_all"].value == pytest.approx(everyone)
        assert shares[name]["with_others"].n_models == 3


def test_small_samples_are_flagged_with_their_size():
    few = measure_agreement(judgments(MAJORITY_CASE))
    assert few.fleiss.n_models == 3 and few.fleiss.below_minimum
    assert few.cohen[("ana", "bo")].n_models == 3
    assert any(f"fewer than {MIN_SHARED_MODELS}" in warning for warning in few.warnings)
    assert few.to_dict()["warnings"] == list(few.warnings)
    enough = measure_agreement(random_judgments(2, MIN_SHARED_MODELS, seed=0), resamples=0)
    assert enough.fleiss.n_models == MIN_SHARED_MODELS and not enough.fleiss.below_minimum
    assert enough.warnings == ()


def test_bootstrap_interval_resamples_models_with_the_documented_seed():
    data = random_judgments(3, 25, seed=5)
    result = measure_agreement(data)
    counts = label_counts(data).to_numpy()
    chosen = np.random.default_rng(BOOTSTRAP_SEED).integers(len(counts), size=(AGREEMENT_BOOTSTRAP_RESAMPLES, len(counts)))
    draws = [hand_fleiss(counts[rows]) for rows in chosen]
    assert (result.fleiss.low, result.fleiss.high) == pytest.approx(tuple(np.percentile(draws, [2.5, 97.5])))


def test_bootstrap_intervals_hold_the_estimate_and_repeat_with_the_seed():
    data = random_judgments(3, 40, seed=2, skip=0.1)
    first, again, other = measure_agreement(data), measure_agreement(data), measure_agreement(data, seed=1)
    estimates = [first.fleiss, *first.alpha.values(), *first.cohen.values(), *(e for s in first.with_majority.values() for e in s.values())]
    for estimate in estimates:
        assert estimate.low <= estimate.value <= estimate.high
        assert estimate.low < estimate.high  # 40 models of random labels: not a degenerate interval
    assert first.to_dict() == again.to_dict()
    assert (other.fleiss.low, other.fleiss.high) != (first.fleiss.low, first.fleiss.high)
    assert first.to_dict()["bootstrap"] == {"resamples": AGREEMENT_BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED, "confidence": 0.95}


def test_intervals_that_cannot_be_computed_are_null():
    one_model = measure_agreement(judgments([("ana", "m1", "variant"), ("bo", "m1", "invariant")]))
    assert one_model.fleiss.n_models == 1 and np.isnan(one_model.fleiss.low)
    no_boot = measure_agreement(random_judgments(2, 12, seed=0), resamples=0)
    assert np.isnan(no_boot.fleiss.low) and not np.isnan(no_boot.fleiss.value)
    with pytest.raises(InvalidInputError, match="resamples"):
        measure_agreement(random_judgments(2, 3, seed=0), resamples=-1)
    with pytest.raises(InvalidInputError, match="seed"):
        measure_agreement(random_judgments(2, 3, seed=0), seed="zero")


def test_json_has_no_nan(models_workspace, capsys):
    # undefined κ and α (one label throughout), a pair sharing no model, an annotator with no shared model
    for annotator, model in [("ana", "model0"), ("bo", "model0"), ("ana", "model1"), ("bo", "model1"), ("cy", "model2")]:
        add_judgment(models_workspace, annotator=annotator, model=model, label="variant")
    assert main(["agreement", "--workspace", str(models_workspace.root), "--json"]) == 0
    out = capsys.readouterr().out

    def refuse(constant):
        raise AssertionError(f"{constant} in JSON")

    printed = json.loads(out, parse_constant=refuse)
    assert printed["fleiss_kappa"] == {"value": None, "n_models": 2, "ci_low": None, "ci_high": None, "below_minimum": True}
    assert printed["cohen_kappa"]["ana|cy"]["value"] is None and printed["cohen_kappa"]["ana|cy"]["n_models"] == 0
    assert printed["majority_agreement"]["cy"]["with_others"] == {"value": None, "n_models": 0, "ci_low": None, "ci_high": None, "below_minimum": True}
    assert printed["majority_agreement"]["ana"]["with_others"]["value"] == 1.0
    assert printed["min_shared_models"] == MIN_SHARED_MODELS


def test_cli_agreement_resamples_and_seed(models_workspace, capsys):
    for annotator, labels in {"ana": ["variant", "invariant", "borderline"], "bo": ["variant", "invariant", "variant"]}.items():
        for model, label in zip(["model0", "model1", "model2"], labels):
            add_judgment(models_workspace, annotator=annotator, model=model, label=label)
    root = str(models_workspace.root)
    assert main(["agreement", "--workspace", root, "--resamples", "0", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["bootstrap"]["resamples"] == 0 and printed["fleiss_kappa"]["ci_low"] is None
    assert main(["agreement", "--workspace", root, "--resamples", "200", "--seed", "3", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = measure_agreement(latest_judgments(models_workspace), resamples=200, seed=3).fleiss
    assert printed["fleiss_kappa"]["ci_low"] == pytest.approx(expected.low) and printed["bootstrap"]["seed"] == 3
    assert main(["agreement", "--workspace", root, "--resamples", "-5", "--json"]) == 2
    assert "resamples" in capsys.readouterr().err
