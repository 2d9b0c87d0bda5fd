"""Tests of analytics.figures.matrices: the figures build from small data with the expected traces and axes."""

from __future__ import annotations

import numpy as np
import pytest

from analytics.exceptions import InvalidInputError
from analytics.figures import MIN_HEIGHT, SQUARE_HEIGHT, difference_heatmap, distance_histogram, point_scatter, suite_scale_heatmaps, variance_heatmap
from analytics.figures.matrices import VALUE_TITLE, VARIANCE_COLORSCALE, X_TITLE, Y_TITLE
from analytics.runs import SIGNALS, VARIANCE_COLOURS, ColourScale, matrix_difference
from analytics.runs.colour_scale import reference_tops
from analytics.variance import variance_matrix
from analytics.variance.point_cloud import point_cloud
from tests.analytics.runs.test_colour_scale import synthetic_matrices


@pytest.fixture
def cloud():
    rng = np.random.default_rng(0)
    distances = rng.uniform(0.0, 2.0, size=(20, 6))
    distances[:, 0] = 0.0
    return point_cloud(distances, rng.random((20, 6)))


def test_variance_heatmap_draws_the_matrix_at_cell_centres(cloud):
    matrix = variance_matrix(cloud.points, cloud.values, grid=8, window=4, sigma=1.0)
    figure = variance_heatmap(matrix, title="Lite0 · probability", zmin=0.0, zmax=0.5)

    (trace,) = figure.data
    assert trace.type == "heatmap"
    np.testing.assert_array_equal(np.asarray(trace.z), matrix.matrix)
    np.testing.assert_allclose(trace.x, matrix.centres)
    assert (trace.zmin, trace.zmax) == (0.0, 0.5)
    assert [list(stop) for stop in trace.colorscale] == [list(stop) for stop in VARIANCE_COLORSCALE]
    assert figure.layout.xaxis.title.text == X_TITLE and figure.layout.yaxis.title.text == Y_TITLE
    assert figure.layout.title.text == "Lite0 · probability"
    assert tuple(figure.layout.xaxis.range) == (0, matrix.d_max)
    # a click on a drawn cell centre maps back to that cell
    assert matrix.cell_at(trace.x[3], trace.y[5]) == (5, 3)


def test_variance_heatmap_defaults_to_the_matrix_range(cloud):
    matrix = variance_matrix(cloud.points, cloud.values, grid=4, window=4, sigma=1.0)
    trace = variance_heatmap(matrix).data[0]
    assert trace.zmin is None and trace.zmax is None


def test_point_scatter_subsamples_and_shades_density(cloud):
    figure = point_scatter(cloud.points, cloud.values, max_points=100, seed=1)

    density, scatter = figure.data
    assert (density.type, density.name) == ("heatmap", "density")
    assert (scatter.type, scatter.name) == ("scattergl", "points")
    assert len(scatter.x) == 100
    shown = np.asarray(scatter.customdata)
    assert len(set(shown.tolist())) == 100
    np.testing.assert_array_equal(scatter.x, cloud.points[shown, 0])
    np.testing.assert_array_equal(scatter.marker.color, cloud.values[shown])
    # the underlay counts every point, not only the drawn ones
    assert np.expm1(np.asarray(density.z)).sum() == pytest.approx(len(cloud))
    assert figure.layout.xaxis.title.text == X_TITLE
    again = point_scatter(cloud.points, cloud.values, max_points=100, seed=1)
    np.testing.assert_array_equal(again.data[1].customdata, shown)


def test_point_scatter_draws_small_clouds_whole(cloud):
    scatter = point_scatter(cloud.points, cloud.values).data[1]
    assert len(scatter.x) == len(cloud)
    with pytest.raises(InvalidInputError, match="points must have shape"):
        point_scatter(cloud.points, cloud.values[:-1])


def test_distance_histogram_overlays_one_trace_per_method():
    rng = np.random.default_rng(2)
    figure = distance_histogram(
        {"random": rng.uniform(0, 1, (5, 4)), "ontology": rng.uniform(0, 0.5, 30)}, bins=10
    )
    assert [trace.name for trace in figure.data] == ["random", "ontology"]
    assert all(trace.type == "histogram" for trace in figure.data)
    assert len(figure.data[0].x) == 20  # flattened
    assert figure.data[0].xbins.size == figure.data[1].xbins.size
    assert figure.layout.barmode == "overlay"
    assert distance_histogram({}).data == ()


# -- the Judge page's heatmaps (suite_scale_heatmaps) ---------------------------------------------------------
def test_invariant_and_variant_models_share_one_scale_per_signal_and_the_variant_looks_worse():
    distances = np.random.default_rng(0).uniform(0.0, 1.0, (30, 9))
    distances[:, 0] = 0.0  # one suite: both models see the same images
    invariant = synthetic_matrices(distances, variant=False, seed=1)
    variant = synthetic_matrices(distances, variant=True, seed=2)
    tops = reference_tops([invariant, variant])
    scale = ColourScale(tops=tops, rules={}, runs=("invariant", "variant"), settings={})
    drawn = {name: suite_scale_heatmaps(m, scale) for name, m in (("invariant", invariant), ("variant", variant))}
    for s, signal in enumerate(SIGNALS):
        inv_trace, var_trace = drawn["invariant"][s].data[0], drawn["variant"][s].data[0]
        assert inv_trace.zmin == var_trace.zmin == 0.0
        assert inv_trace.zmax == var_trace.zmax == tops[signal]  # same scale for both models
        assert inv_trace.showscale and inv_trace.colorbar.ticktext == var_trace.colorbar.ticktext  # same numbers on the bar
        upper = {name: int((m[signal].matrix > tops[signal] / 2).sum()) for name, m in (("invariant", invariant), ("variant", variant))}
        assert upper["variant"] > upper["invariant"], (signal, upper)
        # the defect this guards against: on its own range the invariant model fills the upper half too
        own = invariant[signal].matrix
        assert (own > own.max() / 2).sum() > upper["invariant"]


# -- legible sizes (issue 19.3: clouds were ~60 x 70 px beside a full-height bar with a cut title, heatmaps ~170 px) --
def square_figures(cloud) -> list:
    matrix = variance_matrix(cloud.points, cloud.values, grid=8, window=4, sigma=1.0)
    return [variance_heatmap(matrix, title="probability"), point_scatter(cloud.points, cloud.values, title="probability")]


def colour_bar(figure):
    """The value colour bar: the heatmap's, or the scatter markers' (the density underlay has none)."""
    first = figure.data[0]
    return first.colorbar if first.name == "variance" else figure.data[1].marker.colorbar


def test_square_charts_are_tall_enough_to_read(cloud):
    assert SQUARE_HEIGHT >= MIN_HEIGHT >= 360
    for figure in square_figures(cloud):
        assert figure.layout.height >= SQUARE_HEIGHT
        assert figure.layout.yaxis.scaleanchor == "x"  # still square


def test_colour_bar_titles_run_along_the_bar_and_stay_beside_the_plot(cloud):
    for figure in square_figures(cloud):
        bar = colour_bar(figure)
        assert bar.title.text == VALUE_TITLE
        assert bar.title.side == "right"  # a title on top of a narrow bar was cut off at the figure's edge
        assert bar.lenmode == "fraction" and bar.len <= 0.9  # not the full figure height
        assert 10 <= bar.thickness <= 20


def test_margins_leave_room_for_the_axis_titles(cloud):
    figures = [*square_figures(cloud), distance_histogram({"random": np.linspace(0, 1, 9)}, title="distances")]
    for figure in figures:
        margin = figure.layout.margin
        assert margin.l >= 60 and margin.b >= 50 and margin.t >= 40  # tick labels + title on each axis, the chart title on top
        assert figure.layout.xaxis.automargin and figure.layout.yaxis.automargin
        assert figure.layout.height >= MIN_HEIGHT


def test_the_variance_colours_are_the_exported_pngs(cloud):
    """One colour scale: the heatmaps' stops are the PNG export's (analytics.runs.VARIANCE_COLOURS)."""
    assert [stop for stop, _ in VARIANCE_COLORSCALE] == [stop for stop, _ in VARIANCE_COLOURS]
    assert [int(colour[1:3], 16) for _, colour in VARIANCE_COLORSCALE] == [rgb[0] for _, rgb in VARIANCE_COLOURS]


def test_difference_heatmap_is_symmetric_around_zero(cloud):
    first = variance_matrix(cloud.points, cloud.values, grid=4, window=4, sigma=1.0)
    second = variance_matrix(cloud.points, cloud.values[::-1].copy(), grid=4, window=4, sigma=1.0)
    (trace,) = difference_heatmap(matrix_difference(first, second), title="a − b").data
    assert trace.type == "heatmap" and trace.zmid == 0.0
    assert trace.zmin == -trace.zmax == -float(np.abs(first.matrix - second.matrix).max())
