"""Failures against a baseline: which scene keywords got worse from one model's run to another's over the same suite.

Both runs saw the same composites, so every keyword's composites pair up: :func:`paired_test` is
McNemar's exact test (:func:`statsmodels.stats.contingency_tables.mcnemar`) on the paired
correct/incorrect outcomes, and :func:`keyword_changes` lists per keyword both error rates with
their 95 % Wilson intervals, the rise and the test's p-value, largest rise first.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from analytics._validation import check_positive_int
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace

from .failures import FAILURE_CONFIDENCE, composite_table

#: Columns of :func:`keyword_changes`.
CHANGE_COLUMNS = [
    "keyword", "count", "error_rate", "error_low", "error_high", "baseline_error_rate", "baseline_low", "baseline_high", "rise", "worse",
    "better", "p_value",
]  # fmt: skip


@dataclass(frozen=True)
class PairedTest:
    """McNemar's exact test on paired outcomes: ``worse`` = baseline right and candidate wrong, ``better`` the reverse."""

    pairs: int
    worse: int
    better: int
    p_value: float


def paired_test(baseline: pd.Series, candidate: pd.Series) -> PairedTest:
    """McNemar's exact test on two boolean Series of correct outcomes aligned on their index (inner join);
    p = 1 without a discordant pair."""
    both = pd.concat({"b": baseline.astype(bool), "c": candidate.astype(bool)}, axis=1, join="inner")
    b, c = both["b"].to_numpy(), both["c"].to_numpy()
    worse, better = int((b & ~c).sum()), int((~b & c).sum())
    table = [[int((b & c).sum()), worse], [better, int((~b & ~c).sum())]]
    p_value = 1.0 if worse + better == 0 else float(mcnemar(table, exact=True).pvalue)
    return PairedTest(pairs=len(both), worse=worse, better=better, p_value=p_value)


def keyword_changes(
    workspace: Workspace, run_id: str, baseline_run_id: str, *, min_count: int = 1, composites: tuple[pd.DataFrame, pd.DataFrame] | None = None
) -> pd.DataFrame:
    """Per scene keyword, the candidate's and the baseline's error rates on the composites both runs share.

    Parameters
    ----------
    workspace : Workspace
    run_id, baseline_run_id : str
        Two runs over the same suite (the candidate's, the baseline's).
    min_count : int, default=1
        Leave out keywords on fewer shared composites.
    composites : (DataFrame, DataFrame), optional
        The two runs' :func:`analytics.findings.composite_table` exploded by keyword, when the caller has them.

    Returns
    -------
    DataFrame
        Columns :data:`CHANGE_COLUMNS`: keyword, count (int), error_rate / error_low / error_high and
        baseline_error_rate / baseline_low / baseline_high (float: rates with Wilson intervals),
        rise (candidate − baseline error rate), worse / better (int: composites only the baseline /
        only the candidate got right), p_value (McNemar's exact test). Largest rise first.

    Raises
    ------
    InvalidInputError
        The runs are over different suites.
    """
    min_count = check_positive_int(min_count, "min_count")
    suites = {r["id"]: r["suite_id"] for r in workspace.query("SELECT id, suite_id FROM runs WHERE id IN (?, ?)", (run_id, baseline_run_id))}
    if len(set(suites.values())) > 1:
        raise InvalidInputError(f"runs {run_id} and {baseline_run_id} are over different suites ({', '.join(sorted(set(suites.values())))}); compare runs over one suite")
    ours, theirs = composites or tuple(
        composite_table(workspace, r).explode("keywords").dropna(subset=["keywords"]) for r in (run_id, baseline_run_id)
    )
    key = ["keywords", "target_id", "position"]
    both = ours[[*key, "correct"]].merge(theirs[[*key, "correct"]], on=key, suffixes=("", "_baseline"))
    rows = []
    for keyword, group in both.groupby("keywords", sort=True):
        if len(group) < min_count:
            continue
        pairs = group.set_index(["target_id", "position"])
        test = paired_test(pairs["correct_baseline"], pairs["correct"])
        n, errors, base_errors = len(group), int((~group["correct"]).sum()), int((~group["correct_baseline"]).sum())
        low, high = proportion_confint(errors, n, alpha=1 - FAILURE_CONFIDENCE, method="wilson")
        base_low, base_high = proportion_confint(base_errors, n, alpha=1 - FAILURE_CONFIDENCE, method="wilson")
        rows.append({
            "keyword": keyword, "count": n, "error_rate": errors / n, "error_low": float(low), "error_high": float(high),
            "baseline_error_rate": base_errors / n, "baseline_low": float(base_low), "baseline_high": float(base_high),
            "rise": (errors - base_errors) / n, "worse": test.worse, "better": test.better, "p_value": test.p_value,
        })  # fmt: skip
    return pd.DataFrame(rows, columns=CHANGE_COLUMNS).sort_values(["rise", "keyword"], ascending=[False, True], ignore_index=True)
