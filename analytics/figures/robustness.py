"""Figures of the robustness pages: the Backgrounds Challenge's accuracy per variant and image
categories, and ImageNet-X's error ratios and prevalence shifts per factor (Factors page)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analytics.robustness import factor_names
from analytics.robustness.bgchallenge import CATEGORIES

from .layout import MIN_HEIGHT, apply_style, plain_text

_FACTOR_CHART_HEIGHT = 440
_FACTOR_MARGIN = {"l": 60, "r": 20, "t": 50, "b": 20}


def variant_accuracy_chart(table: pd.DataFrame, model: str) -> go.Figure:
    """Bar chart of one model's accuracy per Backgrounds Challenge variant.

    Parameters
    ----------
    table : DataFrame
        :func:`analytics.robustness.bgchallenge.variant_accuracy` (columns ``name, accuracy``).
    model : str
        The chart's title (plain text, never markup: :func:`~analytics.figures.plain_text`).
    """
    bars = go.Bar(
        x=[plain_text(name) for name in table["name"]], y=table["accuracy"], text=[f"{a:.0%}" if a == a else "–" for a in table["accuracy"]], name=plain_text(model)
    )
    figure = go.Figure(bars)
    figure.update_layout(title=plain_text(model), yaxis={"title": "Accuracy", "range": [0, 1], "tickformat": ".0%"}, height=MIN_HEIGHT, margin={"l": 60, "r": 10, "b": 60, "t": 45})
    return apply_style(figure)


def challenge_categories_chart(counts: pd.DataFrame) -> go.Figure:
    """Grouped bars: images per category of the paper's Table 3, one group of bars per model.

    Parameters
    ----------
    counts : DataFrame
        A ``Model`` column and one column of image counts per category of
        :data:`analytics.robustness.bgchallenge.CATEGORIES` (:func:`analytics.robustness.bgchallenge.category_counts` per model).
    """
    figure = go.Figure([go.Bar(x=list(CATEGORIES), y=row[list(CATEGORIES)].tolist(), name=plain_text(row["Model"])) for _, row in counts.iterrows()])
    figure.update_layout(barmode="group", yaxis={"title": "Images"}, height=MIN_HEIGHT, margin={"l": 60, "r": 10, "b": 60, "t": 20})
    return apply_style(figure)


def factor_label(factor: str) -> str:
    """An ImageNet-X factor as words: ``'partial_view'`` -> ``'partial view'``."""
    return factor.replace("_", " ")


def error_ratio_chart(summary: pd.DataFrame, *, log: bool = False) -> go.Figure:
    """Grouped bars of each model's error ratio per factor, with the reference line at 1.

    Parameters
    ----------
    summary : DataFrame
        :attr:`analytics.robustness.FactorAnalysis.summary` (index model, one column per factor).
    log : bool, default=False
        Logarithmic y axis (ratios above and below 1 then look alike).
    """
    factors = list(factor_names())
    labels = [factor_label(f) for f in factors]
    figure = go.Figure(
        [
            go.Bar(
                name=plain_text(model), x=labels, y=row[factors].astype(float).tolist(),
                hovertemplate=f"{plain_text(model, template=True)}<br>%{{x}}: error ratio %{{y:.2f}}<extra></extra>",
            )  # fmt: skip
            for model, row in summary.iterrows()
        ]
    )
    figure.add_hline(y=1.0, line_dash="dash", line_color="#444", annotation_text="1 = errors as often as overall", annotation_position="top left")
    figure.update_layout(
        barmode="group",
        title="Error ratio per factor: (1 − accuracy on the factor) / (1 − overall accuracy)",
        yaxis={"title": "error ratio", "type": "log" if log else "linear", "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.25},
        margin=_FACTOR_MARGIN,
        height=max(MIN_HEIGHT, _FACTOR_CHART_HEIGHT),
    )
    return apply_style(figure)


def prevalence_chart(details: pd.DataFrame) -> go.Figure:
    """Grouped bars of each factor's share among each model's errors, and markers for its share
    among all the first model's images (what an error ratio of 1 would give).

    Parameters
    ----------
    details : DataFrame
        :attr:`analytics.robustness.FactorAnalysis.details`.
    """
    models = list(dict.fromkeys(details["model"]))
    bars = [
        go.Bar(
            name=plain_text(model),
            x=[plain_text(factor_label(f)) for f in rows["factor"]],
            y=rows["share_of_errors"].tolist(),
            customdata=rows["shift"].tolist(),
            hovertemplate=f"{plain_text(model, template=True)}<br>%{{x}}: %{{y:.1%}} of errors (shift %{{customdata:+.2f}})<extra></extra>",
        )
        for model, rows in details.groupby("model", sort=False)
    ]
    first = details[details["model"] == models[0]]
    overall = go.Scatter(
        name=f"share of all images ({plain_text(models[0])})",
        x=[plain_text(factor_label(f)) for f in first["factor"]],
        y=first["share_of_images"].tolist(),
        mode="markers",
        marker={"symbol": "line-ew-open", "size": 28, "line": {"width": 3, "color": "#222"}},
        hovertemplate="%{x}: %{y:.1%} of all images<extra></extra>",
    )
    figure = go.Figure([*bars, overall])
    figure.update_layout(
        barmode="group",
        title="Prevalence of each factor among the errors",
        yaxis={"title": "share", "tickformat": ".0%"},
        legend={"orientation": "h", "y": -0.25},
        margin=_FACTOR_MARGIN,
        height=max(MIN_HEIGHT, _FACTOR_CHART_HEIGHT),
    )
    return apply_style(figure)
