"""analytics/findings/headline.py (and analytics.zoo.real_models_first): Home's main suite, its models
in the order people read them, and the headline of the models that lose most and least to the backgrounds."""

from __future__ import annotations

import pandas as pd
import pytest

from analytics.exceptions import InvalidInputError
from analytics.findings import headline, largest_losses, main_suite_first, main_suite_runs
from analytics.zoo import ZOO_KIND, real_models_first

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


def test_largest_losses_keep_real_models_first_biggest_loss_first():
    shown = largest_losses(RUNS, limit=2)
    assert list(shown["model"]) == ["real-a", "real-b"] and list(shown["loss"]) == pytest.approx([0.4, 0.1])
    assert list(largest_losses(RUNS, limit=3)["model"]) == ["real-a", "real-b", "head-b"]
    with pytest.raises(InvalidInputError, match="limit"):
        largest_losses(RUNS, limit=0)


def test_the_headline_compares_the_real_models_and_counts_the_zoo():
    found = headline(RUNS)
    assert (found.suite_id, found.suite, found.most["model"], found.least["model"]) == ("s2", "label of s2", "real-a", "real-b")
    assert (found.n_models, found.n_zoo, found.mixed) == (2, 1, True)
    assert found.most["loss"] == pytest.approx(0.4)
    zoo_only = headline(RUNS[RUNS["id"].isin(["r1", "r8"])])
    assert (zoo_only.n_models, zoo_only.n_zoo, zoo_only.mixed) == (2, 2, False)
    assert headline(RUNS.iloc[0:0]) is None
