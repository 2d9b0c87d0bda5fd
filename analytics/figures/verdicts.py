"""The release gate's verdict as a figure: one row per rule, green where it holds, red where it fails, orange where it had nothing to measure."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from .layout import MIN_HEIGHT, plain_text

_COLOURS = {"pass": "#d9f0d3", "fail": "#f4cccc", "error": "#fce5cd"}  # row colours: light green, light red, light orange
_ROW_PX = 30


def verdict_figure(table: pd.DataFrame) -> go.Figure:
    """A table figure of the gate's verdict, a row per rule with its result, measured value, limit and message.

    Parameters
    ----------
    table : DataFrame
        :func:`analytics.gate.verdict_table` of a check's results (columns ``rule, passed, result,
        measured, limit, message``; without ``result``, ``passed`` decides pass or fail).

    Returns
    -------
    plotly.graph_objects.Figure
        One ``table`` trace; the title says whether every rule holds.
    """
    outcomes = list(table["result"]) if "result" in table else ["pass" if passed else "fail" for passed in table["passed"]]
    failed, errors = sum(outcome != "pass" for outcome in outcomes), outcomes.count("error")
    title = "passed: every rule holds" if not failed else f"FAILED: {failed} of {len(table)} rules"
    if errors:
        title += f" ({errors} with nothing to measure)"
    colours = [_COLOURS[outcome] for outcome in outcomes]
    figure = go.Figure(
        go.Table(
            columnwidth=[2, 1, 1, 1, 6],
            header={"values": ["rule", "result", "measured", "limit", "message"], "align": "left", "font": {"size": 13}},
            cells={
                "values": [
                    [plain_text(rule) for rule in table["rule"]],
                    [outcome if outcome == "pass" else outcome.upper() for outcome in outcomes],
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
