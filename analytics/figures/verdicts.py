"""The release gate's verdict as a figure: one row per rule, green where it holds, red where it fails."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from .layout import MIN_HEIGHT, plain_text

__all__ = ["verdict_figure"]

_PASS, _FAIL = "#d9f0d3", "#f4cccc"  # row colours: light green, light red
_ROW_PX = 30


def verdict_figure(table: pd.DataFrame) -> go.Figure:
    """A table figure of the gate's verdict, a row per rule with its result, measured value, limit and message.

    Parameters
    ----------
    table : DataFrame
        :func:`analytics.gate.verdict_table` of a check's results (columns ``rule, passed, measured,
        limit, message``).

    Returns
    -------
    plotly.graph_objects.Figure
        One ``table`` trace; the title says whether every rule holds.
    """
    failed = int((~table["passed"].astype(bool)).sum())
    title = "passed: every rule holds" if not failed else f"FAILED: {failed} of {len(table)} rules"
    colours = [_PASS if passed else _FAIL for passed in table["passed"]]
    figure = go.Figure(
        go.Table(
            columnwidth=[2, 1, 1, 1, 6],
            header={"values": ["rule", "result", "measured", "limit", "message"], "align": "left", "font": {"size": 13}},
            cells={
                "values": [
                    [plain_text(rule) for rule in table["rule"]],
                    ["pass" if passed else "FAIL" for passed in table["passed"]],
                    [_number(v) for v in table["measured"]],
                    [_number(v) for v in table["limit"]],
                    [plain_text(message) for message in table["message"]],
                ],
                "fill_color": [colours] * 5,
                "align": "left",
            },
        )
    )
    figure.update_layout(title=f"Backdrop check {title}", height=max(MIN_HEIGHT, 120 + _ROW_PX * len(table)), margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return figure


def _number(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.3f}"
