"""Figures of the Models page: a model's accuracy per class on the original targets."""

from __future__ import annotations

import plotly.graph_objects as go

from analytics.inference import Evaluation

from .layout import MIN_HEIGHT, apply_style, plain_text


def per_class_accuracy_chart(result: Evaluation) -> go.Figure:
    """Bar chart of accuracy per class (targets per class written on the bars), the overall accuracy dashed.

    Parameters
    ----------
    result : Evaluation
        :func:`analytics.inference.evaluate` of a model on the workspace's targets.
    """
    classes = list(result.per_class)
    figure = go.Figure(
        go.Bar(
            x=[plain_text(c) for c in classes],
            y=[result.per_class[c] for c in classes],
            text=[f"{result.per_class[c]:.0%} of {result.per_class_n[c]}" for c in classes],
            marker_color="#2e7d32",
        )
    )
    # the note in the right margin, level with the line: inside the plot it sat over the last bars (#47 item 9)
    figure.add_hline(y=result.accuracy, line_dash="dash", annotation_text=f"overall<br>{result.accuracy:.1%}", annotation_position="right")
    figure.update_layout(
        yaxis={"title": "accuracy", "range": [0, 1.05], "tickformat": ".0%"}, xaxis_title="class", height=MIN_HEIGHT, margin={"t": 30, "r": 70}
    )
    return apply_style(figure)
