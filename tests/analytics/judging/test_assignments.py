"""Assignments, judging plans and blind names (analytics/judging/assignments.py), queues and progress
(analytics/judging/queues.py), and the team-mode checks of :func:`analytics.judging.judgments.add_judgment`."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from analytics.exceptions import InvalidInputError, NotFoundError, PermissionDeniedError
from analytics.judging import add_judgment, annotator_progress, assign, blind_name, get_plan, judging_progress, latest_judgments, measure_agreement, set_plan, unassign
from analytics.judging.assignments import list_assignments
from analytics.judging.queues import queue
from analytics.team import active_user, add_user, disable_user
from analytics.workspace import Workspace
from tests.fixtures.judging import JUDGING_MODELS, TINY_SUITE, judge, run_ids_by_model
from tests.fixtures.team import TEAM_PASSWORD


@pytest.fixture
def team(judging_workspace, fast_hashing):
    """``judging_workspace`` with accounts: lead ``lee`` (analyst), annotators ``ann`` and ``bob``, viewer ``vic``."""
    for name, role in (("lee", "analyst"), ("ann", "annotator"), ("bob", "annotator"), ("vic", "viewer")):
        add_user(judging_workspace, name, role, TEAM_PASSWORD)
    return judging_workspace


def as_user(workspace, name):
    return workspace.acting_as(active_user(workspace, name))


def test_blind_name_is_stable_neutral_per_suite_and_keyed_per_workspace(judging_workspace, tmp_path):
    alias = blind_name(judging_workspace, TINY_SUITE, "bg-only")
    assert alias == blind_name(judging_workspace, TINY_SUITE, "bg-only")
    assert alias.startswith("Model ") and len(alias) == len("Model 7F3A0C") and "bg" not in alias
    assert len({blind_name(judging_workspace, TINY_SUITE, m) for m in JUDGING_MODELS}) == len(JUDGING_MODELS)
    assert blind_name(judging_workspace, "other-suite", "bg-only") != alias
    unkeyed = hashlib.sha256(f"backdrop-blind\0{TINY_SUITE}\0bg-only".encode()).hexdigest()[:6].upper()
    assert alias != f"Model {unkeyed}"  # a secret key: names cannot be hashed and matched to aliases
    assert blind_name(Workspace(tmp_path / "other"), TINY_SUITE, "bg-only") != alias


def test_assign_queue_and_progress(team):
    lead = as_user(team, "lee")
    made = assign(lead, TINY_SUITE, ["tiny", "net1"], ["ann", "bob"])
    assert {(a.model, a.annotator, a.assigned_by) for a in made} == {(m, n, "lee") for m in ("tiny", "net1") for n in ("ann", "bob")}
    first = next(a for a in made if (a.model, a.annotator) == ("tiny", "ann"))
    assert assign(lead, TINY_SUITE, ["tiny"], ["ann"]) == [first]  # assigned again: kept as it was
    assert len(list_assignments(team, TINY_SUITE)) == 4
    assert {item.model for item in queue(team, "ann", TINY_SUITE)} == {"tiny", "net1"}
    assert queue(team, "vic", TINY_SUITE) == []

    judge(team, "ann", {"tiny": "variant"})
    items = queue(team, "ann", TINY_SUITE)
    assert [item.model for item in items] == ["net1"]
    assert items[0].alias == blind_name(team, TINY_SUITE, "net1") and items[0].run_id == run_ids_by_model(team)["net1"]
    assert [item.model for item in queue(team, "bob", TINY_SUITE)] == ["tiny", "net1"]  # the begun model first: annotators overlap

    table = judging_progress(team, TINY_SUITE).set_index("model")
    assert set(table.index) == set(JUDGING_MODELS)
    assert (table.at["tiny", "judged"], table.at["tiny", "wanted"], table.at["net1", "judged"]) == (1, 2, 0)
    assert table.at["net2", "wanted"] == 0 and not table["complete"].any()
    people = annotator_progress(team, TINY_SUITE).set_index("annotator")
    assert people.loc["ann"].tolist() == [1, 2] and people.loc["bob"].tolist() == [0, 2]

    assert unassign(lead, TINY_SUITE, ["net1"], ["ann"]) == 1
    assert queue(team, "ann", TINY_SUITE) == []


def test_everyone_plan_queues_every_model_with_k_wanted(team):
    set_plan(as_user(team, "lee"), TINY_SUITE, 2)
    assert get_plan(team, TINY_SUITE).judgments_wanted == 2
    assert len(queue(team, "bob", TINY_SUITE)) == len(JUDGING_MODELS)
    judge(team, "ann", {"tiny": "variant"})
    judge(team, "bob", {"tiny": "variant", "net1": "invariant"})
    table = judging_progress(team, TINY_SUITE).set_index("model")
    assert bool(table.at["tiny", "complete"]) and not table.at["net1", "complete"] and (table["wanted"] == 2).all()
    assert queue(team, "ann", TINY_SUITE)[0].model == "net1"  # one judgment short of k: before the models with none
    people = annotator_progress(team, TINY_SUITE).set_index("annotator")
    assert set(people.index) == {"ann", "bob", "lee"}  # accounts that may judge; the viewer is not one
    assert people.at["bob", "done"] == 2 and people.at["bob", "assigned"] == len(JUDGING_MODELS)


# Each annotator's label for the first three models they are given (one row per annotator): some disagreement, so κ is defined.
OVERLAP_LABELS = {
    "ann": ("invariant", "variant", "borderline"),
    "bob": ("invariant", "variant", "invariant"),
    "cat": ("borderline", "variant", "borderline"),
}


@pytest.mark.parametrize("turns", ["in turn", "one after another"])
@pytest.mark.parametrize("scheme", ["everyone plan", "assignments"])
def test_first_judgments_of_different_annotators_land_on_the_same_models(judging_workspace, scheme, turns):
    """Three annotators, k = 3, each judging the head of their queue three times: all judge the same three
    models, whether they take turns or one finishes before the next starts, so agreement is measurable."""
    if scheme == "everyone plan":
        set_plan(judging_workspace, TINY_SUITE, 3)
    else:
        assign(judging_workspace, TINY_SUITE, list(JUDGING_MODELS), list(OVERLAP_LABELS))
    order = [(name, i) for i in range(3) for name in OVERLAP_LABELS]  # ann, bob, cat, ann, ...
    if turns == "one after another":
        order = sorted(order)
    judged: dict[str, list[str]] = {name: [] for name in OVERLAP_LABELS}
    for name, i in order:
        head = queue(judging_workspace, name, TINY_SUITE)[0]
        judge(judging_workspace, name, {head.model: OVERLAP_LABELS[name][i]})
        judged[name].append(head.model)
    assert judged["ann"] == judged["bob"] == judged["cat"]
    table = judging_progress(judging_workspace, TINY_SUITE).set_index("model")
    assert int(table["complete"].sum()) == 3 and set(table.index[table["complete"]]) == set(judged["ann"])
    agreement = measure_agreement(latest_judgments(judging_workspace, TINY_SUITE), resamples=0)
    assert agreement.fleiss.n_models == 3 and np.isfinite(agreement.fleiss.value)
    if scheme == "everyone plan":  # a fourth annotator starts on a model still short of k
        assert queue(judging_workspace, "dan", TINY_SUITE)[0].model not in judged["ann"]


BAD_CALLS = [  # (call, error); one test for all: each runs on the same (costly) workspace
    (lambda ws: assign(ws, "no-suite", ["tiny"], ["ann"]), NotFoundError),
    (lambda ws: assign(ws, TINY_SUITE, ["no-model"], ["ann"]), NotFoundError),
    (lambda ws: assign(ws, TINY_SUITE, ["tiny"], ["nobody"]), NotFoundError),
    (lambda ws: assign(ws, TINY_SUITE, ["tiny"], ["vic"]), InvalidInputError),  # a viewer may not judge
    (lambda ws: assign(ws, TINY_SUITE, [], ["ann"]), InvalidInputError),
    (lambda ws: assign(ws, TINY_SUITE, ["tiny"], [" "]), InvalidInputError),
    (lambda ws: assign(ws, TINY_SUITE, "tiny", ["ann"]), InvalidInputError),
    (lambda ws: set_plan(ws, TINY_SUITE, 0), InvalidInputError),
    (lambda ws: set_plan(ws, "no-suite", 2), NotFoundError),
]


def test_bad_input_is_refused(team):
    for call, error in BAD_CALLS:
        with pytest.raises(error):
            call(team)
    assert list_assignments(team) == [] and get_plan(team, TINY_SUITE) is None


def test_a_disabled_account_cannot_be_assigned(team):
    disable_user(team, "bob")
    with pytest.raises(NotFoundError, match="bob"):
        assign(team, TINY_SUITE, ["tiny"], ["bob"])


def test_solo_mode_takes_any_name(judging_workspace):
    assign(judging_workspace, TINY_SUITE, ["tiny"], ["cleo"])
    assert [item.model for item in queue(judging_workspace, "cleo", TINY_SUITE)] == ["tiny"]


@pytest.mark.parametrize("who", ["ann", "vic"])
def test_only_a_lead_assigns(team, who):
    with pytest.raises(PermissionDeniedError, match="admin or analyst"):
        assign(as_user(team, who), TINY_SUITE, ["tiny"], ["ann"])
    with pytest.raises(PermissionDeniedError):
        set_plan(as_user(team, who), TINY_SUITE, 1)


def test_add_judgment_in_team_mode(team):
    runs = run_ids_by_model(team)
    ann = as_user(team, "ann")
    with pytest.raises(PermissionDeniedError, match="signed-in account"):
        add_judgment(ann, annotator="bob", model="tiny", label="variant", run_id=runs["tiny"])
    with pytest.raises(PermissionDeniedError, match="assigned"):
        add_judgment(ann, annotator="ann", model="tiny", label="variant", run_id=runs["tiny"])
    with pytest.raises(PermissionDeniedError, match="judge models"):
        add_judgment(as_user(team, "vic"), annotator="vic", model="tiny", label="variant", suite_id=TINY_SUITE)
    assign(team, TINY_SUITE, ["tiny"], ["ann"])
    stored = add_judgment(ann, annotator="ann", model="tiny", label="variant", run_id=runs["tiny"])
    assert (stored.annotator, stored.suite_id) == ("ann", TINY_SUITE)
    with pytest.raises(PermissionDeniedError, match="assigned"):  # no suite: nothing is assigned
        add_judgment(ann, annotator="ann", model="tiny", label="variant")
    lead = add_judgment(as_user(team, "lee"), annotator="lee", model="net3", label="borderline", suite_id=TINY_SUITE)
    assert lead.annotator == "lee"  # a lead (who may browse) judges any model


def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    from analytics.cli import main

    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_assign_everyone_and_progress(team, capsys):
    import json

    where = ["--workspace", str(team.root)]
    code, out, _ = cli(["assign", "--suite", TINY_SUITE, "--models", "tiny,net1", "--annotators", "ann,bob", *where, "--json"], capsys)
    assert code == 0 and len(json.loads(out)["assignments"]) == 4
    judge(team, "ann", {"tiny": "variant"})
    code, out, _ = cli(["assignments", "--suite", TINY_SUITE, *where, "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["plan"] is None
    assert {row["model"]: (row["judged"], row["wanted"]) for row in report["models"]}["tiny"] == (1, 2)
    assert {row["annotator"]: (row["done"], row["assigned"]) for row in report["annotators"]} == {"ann": (1, 2), "bob": (0, 2)}
    code, out, _ = cli(["assign", "--suite", TINY_SUITE, "--everyone", "--k", "3", *where, "--json"], capsys)
    assert code == 0 and json.loads(out)["plan"]["judgments_wanted"] == 3
    code, out, _ = cli(["assignments", "--suite", TINY_SUITE, *where, "--json"], capsys)
    assert all(row["wanted"] == 3 for row in json.loads(out)["models"])


BAD_ARGVS = [
    ["assign", "--suite", TINY_SUITE, "--everyone", "--k", "0"],
    ["assign", "--suite", TINY_SUITE, "--models", "tiny"],
    ["assign", "--suite", TINY_SUITE, "--everyone", "--models", "tiny"],
    ["assign", "--suite", TINY_SUITE, "--models", "tiny", "--annotators", "nobody"],
    ["assign", "--suite", "no-suite", "--everyone"],
    ["assignments", "--suite", "no-suite"],
]


def test_cli_bad_input_is_one_line_and_exit_2(team, capsys):
    for argv in BAD_ARGVS:
        code, out, err = cli([*argv, "--workspace", str(team.root)], capsys)
        assert code == 2 and not out and err.startswith("error: ") and err.count("\n") == 1, (argv, err)
