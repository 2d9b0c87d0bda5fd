"""The gate's verdict as a table: one row per rule, as the Markdown summary's table lists them."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .rules import RuleResult

#: Columns of :func:`verdict_table`.
VERDICT_TABLE_COLUMNS = ("rule", "passed", "result", "measured", "limit", "message")


def verdict_table(results: Sequence[RuleResult]) -> pd.DataFrame:
    """One row per rule of a check (:attr:`analytics.gate.CheckResult.results`), in the policy's order.

    Parameters
    ----------
    results : sequence of RuleResult

    Returns
    -------
    DataFrame
        Columns :data:`VERDICT_TABLE_COLUMNS`: the rule's name, whether it holds (bool), its result
        (``'pass'``, ``'fail'`` or ``'error'``: nothing to measure), the measured value and its limit
        (float; NaN where the rule has no number) and the one-line message.
    """
    rows = [(r.name, bool(r.passed), r.outcome, float(r.value), float(r.limit), r.message) for r in results]
    return pd.DataFrame(rows, columns=list(VERDICT_TABLE_COLUMNS)).astype({"passed": bool, "measured": float, "limit": float})
