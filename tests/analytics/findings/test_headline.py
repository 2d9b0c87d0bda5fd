"""analytics/findings/headline.py (and analytics.zoo.real_models_first): Home's main suite, its models
in the order people read them, and the headline of the models the backgrounds hit hardest and least, by
composite accuracy, named only where McNemar's test sets them apart (issue 47.1)."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

from analytics.exceptions import InvalidInputError
from analytics.findings import HEADLINE_ALPHA, composite_outcomes, composite_ranking, headline, main_suite_first
from analytics.findings.headline import main_suite_runs
from analytics.zoo import real_models_first
from analytics.zoo.layout import ZOO_KIND

ZOO = {"kind": ZOO_KIND, "strength": 0.5}


def runs_table(rows) -> pd.DataFrame:
    """A list_runs-like table, newest first: (id, model, suite_id, zoo, original, worst[, status, stale])."""
    records = []
    for row in rows:
        run_id, model, suite_id, zoo, original, worst, *rest = row
        status, stale = rest or ("done", False)
        records.append({
            "id": run_id, "model": model, "suite_id": suite_id, "suite": f"label of {suite_id}", "status": status, "stale": stale,
            "construction": ZOO if zoo else None, "original_accuracy": original, "worst_case_accuracy": worst,
        })  # fmt: skip
    return pd.DataFrame(records)


RUNS = runs_table([
    ("r1", "head-a", "s1", True, 0.9, 0.1),
    ("r2", "real-a", "s2", False, 0.9, 0.5),
    ("r3", "head-b", "s2", True, 0.9, 0.0),
    ("r4", "real-b", "s2", False, 0.8, 0.7),
    ("r5", "real-c", "s1", False, 0.9, 0.2),
    ("r6", "real-d", "s2", False, 0.9, 0.1, "done", True),  # stale: not counted
    ("r7", "real-e", "s2", False, 0.9, 0.1, "running", False),
    ("r8", "head-c", "s1", True, 0.9, 0.1),
    ("r9", "head-d", "s1", True, 0.9, 0.1),
])  # fmt: skip


def test_real_models_come_before_zoo_heads_each_group_in_its_order():
    assert list(real_models_first(RUNS)["id"]) == ["r2", "r4", "r5", "r6", "r7", "r1", "r3", "r8", "r9"]


def test_the_main_suite_is_the_one_most_real_models_ran_over():
    found = main_suite_runs(RUNS)  # s1 has more runs (4) but one real model; s2 two current real models
    assert list(found["id"]) == ["r2", "r4", "r3"] and list(found["zoo"]) == [False, False, True]
    only_zoo = main_suite_runs(RUNS[RUNS["id"].isin(["r1", "r3", "r8"])])
    assert set(only_zoo["suite_id"]) == {"s1"}  # without real models the zoo heads count
    assert main_suite_runs(RUNS[RUNS["status"] != "done"]).empty
    assert list(main_suite_first(RUNS)["id"]) == ["r2", "r4", "r6", "r7", "r3", "r1", "r5", "r8", "r9"]


def outcomes_of(correct: dict[str, list[bool]]):
    """A run id -> composite outcomes loader over one suite's composites ``(t<i>, 1)``, ``correct`` per run id."""
    return lambda run_id: pd.Series(correct[run_id], index=pd.MultiIndex.from_tuples([(f"t{i}", 1) for i in range(len(correct[run_id]))]), dtype=bool)


def right(n_right: int, n: int = 100, *, shift: int = 0) -> list[bool]:
    """``n`` composites of which the ``n_right`` from index ``shift`` on (cyclically) are right."""
    return list(np.roll(np.arange(n) < n_right, shift))


#: s2's runs: real-a gets far fewer composites right than real-b (although it lost more to the worst case), head-b fewest.
S2 = outcomes_of({"r2": right(30), "r3": right(5), "r4": right(80)})


def test_composite_ranking_keeps_real_models_first_lowest_composite_accuracy_first():
    shown = composite_ranking(RUNS, S2)
    assert list(shown["model"]) == ["real-a", "real-b", "head-b"]
    assert list(shown["composite_accuracy"]) == pytest.approx([0.3, 0.8, 0.05]) and list(shown["composites"]) == [100] * 3
    assert list(composite_ranking(RUNS, S2, limit=1)["model"]) == ["real-a"]
    with pytest.raises(InvalidInputError, match="limit"):
        composite_ranking(RUNS, S2, limit=0)


def test_the_headline_compares_the_real_models_and_counts_the_zoo():
    found = headline(RUNS, S2)
    assert (found.suite_id, found.suite, found.most["model"], found.least["model"]) == ("s2", "label of s2", "real-a", "real-b")
    assert (found.n_models, found.n_zoo, found.mixed, found.pairs) == (2, 1, True, 100)
    assert found.most["composite_accuracy"] == pytest.approx(0.3) and found.p_most == found.p_least < HEADLINE_ALPHA
    zoo_only = headline(RUNS[RUNS["id"].isin(["r1", "r8"])], outcomes_of({"r1": right(10), "r8": right(90)}))
    assert (zoo_only.n_models, zoo_only.n_zoo, zoo_only.mixed) == (2, 2, False)
    assert headline(RUNS.iloc[0:0], S2) is None


# -- issue 47.1: the headline points the way the gate and the Failures page do ------------------------------
def test_the_headline_names_the_background_reliant_model_though_its_originals_are_lower():
    """The issue's two models: v2 learnt a background shortcut, its originals are lower, so it loses fewer
    points to the worst case (40 against 45) while it gets far fewer composites right (0.40 against 0.62)."""
    runs = runs_table([("v2", "team-v2", "s", False, 0.80, 0.40), ("v1", "team-v1", "s", False, 0.90, 0.45)])
    found = headline(runs, outcomes_of({"v1": right(62), "v2": right(40, shift=30)}))
    assert (0.90 - 0.45) > (0.80 - 0.40)  # the old measure (drop to the worst case) named team-v1
    assert (found.most["model"], found.least["model"]) == ("team-v2", "team-v1")
    assert (found.most["composite_accuracy"], found.least["composite_accuracy"]) == pytest.approx((0.40, 0.62))
    assert found.p_most < HEADLINE_ALPHA


def test_models_within_the_uncertainty_are_not_ranked():
    runs = runs_table([("a", "model-a", "s", False, 0.9, 0.2), ("b", "model-b", "s", False, 0.9, 0.6)])
    found = headline(runs, outcomes_of({"a": right(50), "b": right(54, shift=10)}))
    assert found.most is None and found.least is None and found.p_most >= HEADLINE_ALPHA
    assert (found.lowest["model"], found.highest["model"]) == ("model-a", "model-b")  # still ordered for the sentence
    # three models: the lowest stands apart from both others, the two highest do not from each other
    runs = runs_table([("a", "model-a", "s", False, 0.9, 0.2), ("b", "model-b", "s", False, 0.9, 0.6), ("c", "model-c", "s", False, 0.9, 0.6)])
    found = headline(runs, outcomes_of({"a": right(20), "b": right(70), "c": right(72, shift=5)}))
    assert found.most["model"] == "model-a" and found.least is None and found.highest["model"] == "model-c"
    one = headline(runs.iloc[:1], outcomes_of({"a": right(20)}))
    assert one.most is one.least is None and np.isnan(one.p_most) and one.n_models == 1


def test_composite_outcomes_read_a_runs_composites(run_workspace, run_ids):
    from analytics.runs import image_table, list_runs

    found = composite_outcomes(run_workspace, run_ids["bg-only"])
    images = image_table(run_workspace, run_ids["bg-only"])
    expected = images[images["position"] > 0].set_index(["target_id", "position"])["correct"]
    pd.testing.assert_series_equal(found, expected, check_names=False)
    found = headline(list_runs(run_workspace), functools.partial(composite_outcomes, run_workspace))
    assert found.n_models == 3 and found.pairs == len(expected)
