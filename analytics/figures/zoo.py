"""Figure of the model zoo: worst-case accuracy against the background reliance its heads were built
with (Home, where the demo states its point)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .layout import MARGIN, MIN_HEIGHT, apply_style

#: Legend name of each line of :func:`reliance_chart`, by the heads' ``augment``.
RELIANCE_LINE_NAMES = {False: "plain heads", True: "heads also trained on random backgrounds"}
#: Colours as the zoo's story tells it: plain heads lean on the background, augmented ones less.
_LINE_COLOURS = {False: "#c62828", True: "#1565c0"}
_STRENGTH_TITLE = "construction strength s<br>(0: the background never predicts the class, 1: always)"


def reliance_chart(curve: pd.DataFrame) -> go.Figure:
    """Lines of worst-case accuracy (mean over the seeds, bars from the lowest to the highest seed)
    against construction strength: one line for the plain heads, one for the augmented ones.

    Parameters
    ----------
    curve : DataFrame
        :func:`analytics.zoo.reliance_curve` (columns ``strength, augment, worst_case_accuracy,
        lowest, highest, heads``).
    """
    figure = go.Figure()
    for augment, line in curve.sort_values(["augment", "strength"]).groupby("augment", sort=True):
        augment = bool(augment)
        # lists, not arrays: Plotly would ship arrays base64-encoded, unreadable in a saved figure's JSON
        strength, mean = line["strength"].tolist(), line["worst_case_accuracy"].to_numpy()
        figure.add_trace(
            go.Scatter(
                x=strength, y=mean.tolist(), mode="lines+markers", name=RELIANCE_LINE_NAMES[augment],
                line={"color": _LINE_COLOURS[augment]},
                # the seeds' spread: a point alone would hide how far one head may stray from the mean
                error_y={"type": "data", "array": (line["highest"].to_numpy() - mean).tolist(), "arrayminus": (mean - line["lowest"].to_numpy()).tolist(), "visible": True},
                customdata=line[["lowest", "highest", "heads"]].to_numpy().tolist(),
                hovertemplate="s = %{x}<br>worst-case accuracy %{y:.0%}<br>seeds %{customdata[0]:.0%}–%{customdata[1]:.0%} "
                "(%{customdata[2]} heads)<extra></extra>",
            )
        )  # fmt: skip
    figure.update_layout(
        xaxis={"title": _STRENGTH_TITLE, "range": [-0.05, 1.05], "dtick": 0.25},
        yaxis={"title": "worst-case accuracy<br>(right under every background)", "range": [0, 1.05], "tickformat": ".0%"},
        legend={"orientation": "h", "y": 1.12, "x": 0},
        height=MIN_HEIGHT, margin={**MARGIN, "t": 40},
    )  # fmt: skip
    return apply_style(figure)
