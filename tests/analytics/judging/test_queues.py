"""analytics/judging/queues.py: the scope of an annotator's queue, the suites to judge and the judged
suites (once decided on the Judge, Assessor and Agreement pages)."""

from __future__ import annotations

from analytics.judging import annotator_queue, assign, judgeable_suites, judged_suite_counts, last_judgment
from analytics.suites import suite_labels_of
from tests.fixtures.judging import ANNOTATORS, JUDGING_MODELS, JUDGMENTS, TINY_SUITE, judge


def test_a_lead_without_assignments_judges_every_model_an_annotator_only_what_is_assigned(judging_workspace):
    items, scope = annotator_queue(judging_workspace, "lee", TINY_SUITE)
    assert scope == len(JUDGING_MODELS) and {item.model for item in items} == set(JUDGING_MODELS)
    assert annotator_queue(judging_workspace, "ann", TINY_SUITE, blind_only=True) == ([], 0)
    assign(judging_workspace, TINY_SUITE, ["tiny", "net1"], ["ann", "lee"])
    for who, blind_only in (("ann", True), ("lee", False)):  # assignments narrow a lead's queue too
        items, scope = annotator_queue(judging_workspace, who, TINY_SUITE, blind_only=blind_only)
        assert scope == 2 and {item.model for item in items} == {"tiny", "net1"}
    judge(judging_workspace, "ann", {"tiny": "variant"})
    items, scope = annotator_queue(judging_workspace, "ann", TINY_SUITE, blind_only=True)
    assert scope == 2 and [item.model for item in items] == ["net1"]


def test_judgeable_suites_count_models_with_finished_runs_and_follow_assignments(judging_workspace):
    table = judgeable_suites(judging_workspace)
    assert table.to_dict("records") == [{"id": TINY_SUITE, "suite": suite_labels_of(judging_workspace)[TINY_SUITE], "runs": len(JUDGING_MODELS)}]
    assert judgeable_suites(judging_workspace, annotator="ann").empty
    assign(judging_workspace, TINY_SUITE, ["tiny"], ["ann"])
    assert list(judgeable_suites(judging_workspace, annotator="ann")["id"]) == [TINY_SUITE]


def test_judged_suite_counts_and_the_last_judgment(judged_workspace):
    table = judged_suite_counts(judged_workspace)
    assert table[["id", "models", "annotators"]].to_dict("records") == [{"id": TINY_SUITE, "models": len(JUDGMENTS), "annotators": len(ANNOTATORS)}]
    last = last_judgment(judged_workspace, "ben", TINY_SUITE)
    assert (last["model"], last["label"]) == (list(JUDGMENTS)[-1], JUDGMENTS[list(JUDGMENTS)[-1]][1])
    assert last_judgment(judged_workspace, "nobody", TINY_SUITE) is None
