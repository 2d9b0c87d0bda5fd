"""Failures against a baseline (analytics/findings/baseline.py): McNemar's paired test and keyword changes."""

from __future__ import annotations

import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from analytics.exceptions import InvalidInputError
from analytics.findings import composite_table, keyword_changes, paired_test
from analytics.findings.baseline import CHANGE_COLUMNS
from analytics.runs import start_runs
from tests.fixtures.models import insert_suite


def test_paired_test_is_mcnemars_exact_test_on_the_discordant_pairs():
    index = pd.RangeIndex(20)
    baseline = pd.Series([True] * 14 + [False] * 6, index=index)
    candidate = pd.Series([True] * 4 + [False] * 10 + [True] * 2 + [False] * 4, index=index)
    test = paired_test(baseline, candidate)
    assert (test.pairs, test.worse, test.better) == (20, 10, 2)
    assert test.p_value == pytest.approx(mcnemar([[4, 10], [2, 4]], exact=True).pvalue)
    assert paired_test(baseline, baseline).p_value == 1.0
    assert paired_test(baseline, candidate.iloc[5:]).pairs == 15  # aligned on the index: only shared items pair


def test_keyword_changes_pair_the_composites_of_each_keyword(suite_workspace):
    bg_only, fg_only = start_runs(suite_workspace, ["bg-only", "fg-only"], "tiny-suite", device="cpu")
    table = keyword_changes(suite_workspace, bg_only, fg_only)
    assert list(table.columns) == CHANGE_COLUMNS and list(table["rise"]) == sorted(table["rise"], reverse=True)
    ours = composite_table(suite_workspace, bg_only).explode("keywords")
    theirs = composite_table(suite_workspace, fg_only).explode("keywords")
    for row in table.itertuples():
        mine, base = ours[ours["keywords"] == row.keyword], theirs[theirs["keywords"] == row.keyword]
        assert row.count == len(mine) == len(base)
        assert row.error_rate == pytest.approx((~mine["correct"]).mean()) and row.baseline_error_rate == pytest.approx((~base["correct"]).mean())
        assert row.rise == pytest.approx(row.error_rate - row.baseline_error_rate)
        low, high = proportion_confint(int((~mine["correct"]).sum()), len(mine), alpha=0.05, method="wilson")
        assert (row.error_low, row.error_high) == pytest.approx((low, high))
    same = keyword_changes(suite_workspace, bg_only, bg_only)
    assert (same["rise"] == 0).all() and (same["p_value"] == 1).all()


def test_keyword_changes_refuse_runs_over_different_suites(suite_workspace):
    insert_suite(suite_workspace, "other", n=2, seed=1)
    first = start_runs(suite_workspace, ["bg-only"], "tiny-suite", device="cpu")[0]
    second = start_runs(suite_workspace, ["bg-only"], "other", device="cpu")[0]
    with pytest.raises(InvalidInputError, match="different suites"):
        keyword_changes(suite_workspace, first, second)
