"""Figures of the Failures page: the keyword x model heat map of error rates."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .layout import MIN_HEIGHT, apply_style, plain_text

#: Rows of the heat map: the keywords with the highest mean error rate.
MAX_HEATMAP_KEYWORDS = 40
_ROW_PX = 22  # heat map height per keyword row


def keyword_heatmap(matrix: pd.DataFrame) -> go.Figure:
    """Heat map of :func:`analytics.findings.keyword_model_matrix` (keywords down, models across), white
    = no errors, dark red = every composite misclassified.

    Parameters
    ----------
    matrix : DataFrame of float, shape (n_keywords, n_models)
        Error rates in [0, 1], worst keyword first; the first :data:`MAX_HEATMAP_KEYWORDS` rows are
        drawn, each labelled with its composites (``matrix.attrs['counts']``, where given).

    Returns
    -------
    plotly.graph_objects.Figure
        One ``heatmap`` trace.
    """
    shown = matrix.head(MAX_HEATMAP_KEYWORDS)
    counts = matrix.attrs.get("counts", {})
    labels = [f"{plain_text(keyword)} ({counts.get(keyword, '?')})" for keyword in shown.index]
    figure = go.Figure(
        go.Heatmap(
            z=shown.to_numpy(float), x=[plain_text(model) for model in shown.columns], y=labels, zmin=0.0, zmax=1.0, colorscale="Reds",
            colorbar={"title": {"text": "error rate", "side": "right"}}, hovertemplate="%{y} · %{x}: %{z:.3f}<extra></extra>",
        )
    )  # fmt: skip
    figure.update_yaxes(autorange="reversed", title="keyword (composites)")  # long keywords stay whole: apply_style's automargin
    figure.update_layout(height=max(MIN_HEIGHT, _ROW_PX * len(shown) + 140), margin={"l": 10, "r": 10, "t": 20, "b": 40})
    return apply_style(figure)
