"""Figures of the Agreement, Assessor and Methods pages: Cohen's κ per pair of annotators, the
confusion of two annotators' labels, the assessors' accuracy, a model's Shapley values and the
sampling methods' comparison."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analytics.assessor import DEFAULT_FEATURE_SET, INPUTS, describe_feature
from analytics.judging import Agreement

from .layout import apply_style, plain_text

#: κ from −1 (red) through 0 (white: chance) to 1 (green).
KAPPA_COLORSCALE = [[0.0, "#d73027"], [0.5, "#f7f7f7"], [1.0, "#1a9850"]]
#: Bar colour per assessor input (:data:`analytics.assessor.INPUTS` description -> colour).
_INPUT_COLOURS = {INPUTS["matrix"]: "#4c78a8", INPUTS["accuracy"]: "#f58518", INPUTS["worst_case"]: "#bab0ac"}
#: Bars of :func:`method_bars`: column of the comparison table -> legend name.
METHOD_MEASURES = {"recall": "Coverage (recall)", "precision": "Fleiss' κ (precision)", "f1": "F1", "consistency": "Consistency"}
_MARGIN = {"l": 20, "r": 20, "t": 50, "b": 20}


def format_kappa(kappa: float | None) -> str:
    """κ with two decimals, or 'N/A' when undefined."""
    return "N/A" if kappa is None or math.isnan(kappa) else f"{kappa:.2f}"


def kappa_heatmap(agreement: Agreement) -> go.Figure:
    """Symmetric annotator × annotator heatmap of Cohen's κ (diagonal left empty), κ and shared models written in.

    Parameters
    ----------
    agreement : Agreement
        :func:`analytics.judging.measure_agreement` of one suite's judgments.

    Returns
    -------
    plotly.graph_objects.Figure
        One ``heatmap`` trace from −1 (red) to 1 (green); ``customdata`` holds the shared models per pair.
    """
    names = list(agreement.annotators)
    index = {name: i for i, name in enumerate(names)}
    labels = [plain_text(name) for name in names]
    values = np.full((len(names), len(names)), np.nan)
    shared = np.zeros((len(names), len(names)), dtype=int)
    for (first, second), estimate in agreement.cohen.items():
        values[index[first], index[second]] = values[index[second], index[first]] = estimate.value
        shared[index[first], index[second]] = shared[index[second], index[first]] = estimate.n_models
    text = [["" if np.isnan(v) else f"{v:.2f}<br>n={n}" for v, n in zip(row, counts)] for row, counts in zip(values, shared)]
    figure = go.Figure(
        go.Heatmap(
            z=values,
            x=labels,
            y=labels,
            zmin=-1,
            zmax=1,
            colorscale=KAPPA_COLORSCALE,
            text=text,
            texttemplate="%{text}",
            colorbar={"title": {"text": "Cohen's κ"}},
            customdata=shared,
            hovertemplate="%{y} vs %{x}: κ = %{z:.3f} on %{customdata} shared models<extra></extra>",
        )
    )
    figure.update_layout(
        title="Cohen's κ per pair of annotators",
        xaxis={"showgrid": False},
        yaxis={"autorange": "reversed", "scaleanchor": "x", "showgrid": False},
        margin=_MARGIN,
        height=320 + 30 * len(names),
    )
    return apply_style(figure)


def confusion_heatmap(table: pd.DataFrame) -> go.Figure:
    """Counts of (first annotator's label, second annotator's label) with the numbers written in.

    Parameters
    ----------
    table : DataFrame of shape (3, 3), int
        From :func:`analytics.judging.confusion`; index and columns are named after the annotators.

    Returns
    -------
    plotly.graph_objects.Figure
        One ``heatmap`` trace.
    """
    first, second = plain_text(table.index.name), plain_text(table.columns.name)
    first_key, second_key = plain_text(table.index.name, template=True), plain_text(table.columns.name, template=True)
    figure = go.Figure(
        go.Heatmap(
            z=table.to_numpy(),
            x=[plain_text(label) for label in table.columns],
            y=[plain_text(label) for label in table.index],
            colorscale="Blues",
            texttemplate="%{z}",
            colorbar={"title": {"text": "models"}},
            hovertemplate=f"{first_key}: %{{y}}<br>{second_key}: %{{x}}<br>%{{z}} models<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"{first} (rows) vs {second} (columns)",
        xaxis={"title": {"text": second}, "side": "bottom", "showgrid": False},
        yaxis={"title": {"text": first}, "autorange": "reversed", "scaleanchor": "x", "showgrid": False},
        margin=_MARGIN,
        height=380,
    )
    return apply_style(figure)


def assessor_bars(table: pd.DataFrame) -> go.Figure:
    """Accuracy mean ± standard deviation per assessor (bars with error bars), κ under each name.

    Parameters
    ----------
    table : DataFrame
        :meth:`analytics.assessor.AssessorReport.table`: ``assessor, inputs, accuracy_mean, accuracy_std,
        kappa_mean``; bars are coloured by ``inputs`` (matrices blue, accuracy statistics orange,
        worst-case threshold grey).

    Returns
    -------
    plotly.graph_objects.Figure
        One ``bar`` trace.
    """
    figure = go.Figure(
        go.Bar(
            x=[f"{plain_text(name)}<br>κ {format_kappa(k)}" for name, k in zip(table["assessor"], table["kappa_mean"])],
            y=table["accuracy_mean"],
            error_y={"type": "data", "array": table["accuracy_std"], "visible": True},
            marker_color=[_INPUT_COLOURS[inputs] for inputs in table["inputs"]],
            hovertemplate="%{x}<br>accuracy %{y:.1%}<extra></extra>",
            width=0.55,
        )
    )
    figure.update_layout(
        title="Test accuracy over the repeats (mean ± std)",
        yaxis={"title": {"text": "accuracy"}, "range": [0, 1.05], "tickformat": ".0%"},
        margin=_MARGIN,
        height=360,
    )
    return apply_style(figure)


def shapley_bars(values: pd.Series, *, top: int = 10, title: str | None = None, feature_set: str = DEFAULT_FEATURE_SET) -> go.Figure:
    """Horizontal bars of the ``top`` features with the largest |Shapley value| (largest on top).

    Parameters
    ----------
    values : Series of float
        Index = feature name; one model's Shapley values (``ShapleyValues.values.loc[model]``).
    top : int, default=10
    title : str, optional
    feature_set : str, default='authors'
        The set the features come from, for their plain labels (:func:`analytics.assessor.describe_feature`).

    Returns
    -------
    plotly.graph_objects.Figure
        One ``bar`` trace; bars are labelled in plain words (the meaning on hover); green bars raise
        the explained probability, red ones lower it.
    """
    shown = values.reindex(values.abs().sort_values(ascending=False).index[:top])[::-1]
    described = [describe_feature(str(name), feature_set) for name in shown.index]
    figure = go.Figure(
        go.Bar(
            x=shown.to_numpy(),
            y=[plain_text(label) for label, _ in described],
            customdata=[plain_text(meaning) for _, meaning in described],
            orientation="h",
            marker_color=["#1a9850" if v >= 0 else "#d73027" for v in shown],
            hovertemplate="%{y}: %{x:+.3f}<br>%{customdata}<extra></extra>",
        )
    )
    figure.update_layout(
        title=plain_text(title),
        xaxis={"title": {"text": "contribution to the predicted probability (Shapley value)"}, "zeroline": True},
        margin={**_MARGIN, "t": 50 if title else 20},
        height=120 + 28 * len(shown),
    )
    return apply_style(figure)


def method_bars(table: pd.DataFrame) -> go.Figure:
    """Grouped bars per sampling method: recall, precision, F1 and consistency (missing values left out).

    Parameters
    ----------
    table : DataFrame
        :func:`analytics.comparison.method_comparison`.

    Returns
    -------
    plotly.graph_objects.Figure
        One ``bar`` trace per measure of :data:`METHOD_MEASURES`.
    """
    figure = go.Figure(
        [
            go.Bar(name=name, x=[plain_text(method) for method in table["method"]], y=table[column], hovertemplate=f"%{{x}}<br>{name} %{{y:.3f}}<extra></extra>")
            for column, name in METHOD_MEASURES.items()
        ]
    )
    figure.update_layout(
        barmode="group",
        title="Per sampling method (ours)",
        yaxis={"range": [min(0.0, float(np.nanmin(table[list(METHOD_MEASURES)].to_numpy(dtype=float), initial=0.0))), 1.0]},
        legend={"orientation": "h", "y": -0.15},
        margin=_MARGIN,
        height=380,
    )
    return apply_style(figure)
