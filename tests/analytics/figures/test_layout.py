"""Tests of analytics.figures.layout: the shared readable style (automargin, title standoff, 12 px+ dark
axis text) reaches every axis, keeps what a builder set, and the builders end with it."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analytics.figures import apply_style, distance_histogram, point_scatter, variance_heatmap
from analytics.figures.layout import AXIS_FONT, TEXT_COLOUR, TITLE_STANDOFF
from analytics.figures.matrices import X_TITLE, Y_TITLE
from analytics.variance import variance_matrix
from analytics.variance.point_cloud import point_cloud


def assert_readable(axis) -> None:
    assert axis.automargin is True
    assert axis.title.standoff == TITLE_STANDOFF >= 10
    for font in (axis.tickfont, axis.title.font):
        assert font.size >= 12 and font.color == TEXT_COLOUR


def test_apply_style_reaches_every_axis_and_keeps_the_builders_settings():
    figure = make_subplots(rows=1, cols=2)
    figure.add_trace(go.Bar(x=["a"], y=[1]), row=1, col=1)
    figure.add_trace(go.Bar(x=["b"], y=[2]), row=1, col=2)
    figure.update_layout(yaxis={"title": {"text": "accuracy"}, "range": [0, 1]}, xaxis2_title="class")

    assert apply_style(figure) is figure
    for axis in (figure.layout.xaxis, figure.layout.yaxis, figure.layout.xaxis2, figure.layout.yaxis2):
        assert_readable(axis)
    assert figure.layout.yaxis.title.text == "accuracy" and tuple(figure.layout.yaxis.range) == (0, 1)
    assert figure.layout.xaxis2.title.text == "class"
    assert figure.layout.font.size == AXIS_FONT["size"] and figure.layout.font.color == TEXT_COLOUR  # colour bars, legends


def test_text_colour_is_dark_enough_on_white():
    channels = [int(TEXT_COLOUR[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    assert 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05) >= 7  # WCAG AAA


def test_matrix_figures_end_with_the_shared_style():
    rng = np.random.default_rng(0)
    cloud = point_cloud(rng.uniform(0.0, 2.0, size=(12, 5)), rng.random((12, 5)))
    matrix = variance_matrix(cloud.points, cloud.values, grid=4, window=4, sigma=1.0)
    for figure in (variance_heatmap(matrix), point_scatter(cloud.points, cloud.values), distance_histogram({"random": cloud.points[:, 0]})):
        assert_readable(figure.layout.xaxis)
        assert_readable(figure.layout.yaxis)
    # the y title runs along a square plot as short as ~200 px: short lines, so it is never longer than the plot
    assert max(len(line) for line in Y_TITLE.split("<br>")) <= 25
    assert X_TITLE.count("<br>") == 1
