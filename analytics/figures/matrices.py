"""Figures of a run's matrices: variance heatmaps (alone or on a suite's colour scale), the difference of
two models' matrices, raw point clouds, and the histogram of a suite's semantic distances.

Builders take arrays or :mod:`analytics` dataclasses and return a ``plotly.graph_objects.Figure``;
they compute nothing beyond what drawing needs (subsampling, a density histogram), so the pages
pass the figure to ``st.plotly_chart``, a notebook calls ``.show()`` and tests inspect it directly.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from analytics.exceptions import InvalidInputError
from analytics.runs import SIGNALS, VARIANCE_COLOURS, ColourScale
from analytics.variance import VarianceMatrix

from .layout import MARGIN, MIN_HEIGHT, SQUARE_HEIGHT, TEXT_SIZE, apply_style, plain_text, top_margin

#: Low variance green, high variance yellow (the paper's colours; the stops of exported PNGs, :data:`analytics.runs.VARIANCE_COLOURS`).
VARIANCE_COLORSCALE = [[stop, "#{:02x}{:02x}{:02x}".format(*rgb)] for stop, rgb in VARIANCE_COLOURS]
#: Density underlay of the scatter: transparent where empty, darker grey where points pile up.
DENSITY_COLORSCALE = [[0.0, "rgba(80,80,80,0)"], [1.0, "rgba(80,80,80,0.55)"]]
X_SYMBOL = "d(y_ij, x_i)"
Y_SYMBOL = "d(y_ik, x_i)"
#: Matrix axes: plain words first, the paper's symbol below them. The y title runs along a square plot
#: as short as ~200 px (a narrow column, a wide colour bar), so it takes three short lines: as two it
#: was longer than the plot and clipped at the figure's top and bottom.
X_TITLE = f"distance of background j from the original<br>{X_SYMBOL}"
Y_TITLE = f"distance of background k<br>from the original<br>{Y_SYMBOL}"
VALUE_TITLE = "change of the signal |S(y_ij) − S(y_ik)|"


def value_colorbar(title: str = VALUE_TITLE) -> dict:
    """Settings of a vertical colour bar whose title runs along its right side.

    A title above a narrow bar was clipped at the figure's edge; along the bar it stays whole, and
    ``len`` 0.9 of the plot height keeps the bar beside the square plot rather than the full figure.
    Its title has the axis titles' size: Plotly's default, 1.2 x the figure's font, ran past a short plot.

    Parameters
    ----------
    title : str, default=VALUE_TITLE

    Returns
    -------
    dict
        Plotly ``colorbar`` properties (title text, side and size, len, lenmode, thickness).
    """
    return {"title": {"text": title, "side": "right", "font": {"size": TEXT_SIZE}}, "len": 0.9, "lenmode": "fraction", "thickness": 14}


def _square_layout(figure: go.Figure, *, title: str | None, d_max: float) -> go.Figure:
    """Shared axes: both distances from 0 to d_max, equal scale, origin bottom left; readable size and style.
    ``title`` is plain text (:func:`plain_text`), as every builder's."""
    figure.update_layout(
        title=plain_text(title),
        height=SQUARE_HEIGHT,
        xaxis={"title": {"text": X_TITLE}, "range": [0, d_max], "constrain": "domain"},
        yaxis={"title": {"text": Y_TITLE}, "range": [0, d_max], "scaleanchor": "x", "constrain": "domain"},
        margin={**MARGIN, "t": top_margin(title)},
    )
    return apply_style(figure)


def variance_heatmap(
    matrix: VarianceMatrix, *, title: str | None = None, zmin: float | None = None, zmax: float | None = None
) -> go.Figure:
    """Heatmap of an RBF variance matrix, green = low variance, yellow = high.

    Cells sit at their centres in distance units, so a click reports ``(x, y) = (d_ij, d_ik)`` of the
    cell centre and ``matrix.cell_at(x, y)`` gives its ``(row, col)`` for the drill-down.

    Parameters
    ----------
    matrix : VarianceMatrix
        From :func:`analytics.variance.variance_matrix` or :func:`analytics.runs.run_matrices`.
    title : str, optional
    zmin, zmax : float, optional
        Colour range; pass the same pair to several heatmaps for a shared scale. Default: the
        matrix's own range.

    Returns
    -------
    plotly.graph_objects.Figure
        One ``heatmap`` trace named ``variance``.
    """
    centres = matrix.centres
    heatmap = go.Heatmap(
        z=matrix.matrix,
        x=centres,
        y=centres,
        zmin=zmin,
        zmax=zmax,
        colorscale=VARIANCE_COLORSCALE,
        colorbar=value_colorbar(),
        hovertemplate=f"{X_SYMBOL} ≈ %{{x:.3f}}<br>{Y_SYMBOL} ≈ %{{y:.3f}}<br>value %{{z:.4f}}<extra></extra>",
        name="variance",
    )
    return _square_layout(go.Figure(heatmap), title=title, d_max=matrix.d_max)


def colour_ticks(top: float, bottom: float = 0.0) -> tuple[list[float], list[str]]:
    """Colour-bar ticks bottom, the middle and top, and their labels (3 significant digits)."""
    values = [bottom, (bottom + top) / 2, top]
    return values, [f"{value:.3g}" for value in values]


def suite_scale_heatmaps(
    matrices_by_signal: Mapping[str, VarianceMatrix], scale: ColourScale, *, titles: Mapping[str, str] | None = None
) -> list[go.Figure]:
    """One :func:`variance_heatmap` per signal on the suite's fixed colour scale, as the Judge page shows them.

    Each signal is drawn from its bottom to its top in ``scale`` (:meth:`~analytics.runs.ColourScale.colour_range`),
    the same for every model of the suite (never the model's own range), with a colour bar that names the
    bottom, the middle and the top.

    Parameters
    ----------
    matrices_by_signal : mapping of str to VarianceMatrix
        :func:`analytics.runs.run_matrices` of one run; figures come in its order.
    scale : ColourScale
        :func:`analytics.runs.suite_colour_scale` of the run's suite (at the same settings).
    titles : mapping of str to str, optional
        Title per signal; default :data:`analytics.runs.SIGNALS`' names.

    Returns
    -------
    list of plotly.graph_objects.Figure
    """
    titles = SIGNALS if titles is None else titles
    figures = []
    for signal, matrix in matrices_by_signal.items():
        bottom, top = scale.colour_range(signal)
        figure = variance_heatmap(matrix, title=titles.get(signal, SIGNALS.get(signal, signal)), zmin=bottom, zmax=top)
        tickvals, ticktext = colour_ticks(top, bottom)
        colorbar = {**value_colorbar(), "tickvals": tickvals, "ticktext": ticktext, "tickfont": {"size": 12}}
        figure.update_traces(showscale=True, colorbar=colorbar)
        figure.update_layout(title={"font": {"size": 15}, "x": 0.5, "xanchor": "center"})
        figures.append(figure)
    return figures


def difference_heatmap(difference: VarianceMatrix, *, title: str | None = None) -> go.Figure:
    """Heatmap of a difference of two matrices (:func:`analytics.runs.matrix_difference`) on a
    diverging scale centred on 0: red where the first model varies more, blue where it varies less,
    white where they agree; the range is symmetric, ± the largest absolute difference."""
    top = float(np.nanmax(np.abs(difference.matrix))) or 1.0  # all zero: any symmetric range shows white
    heatmap = go.Heatmap(
        z=difference.matrix, x=difference.centres, y=difference.centres, zmin=-top, zmax=top, zmid=0.0, colorscale="RdBu_r",
        colorbar=value_colorbar("difference"), name="difference",
        hovertemplate=f"{X_TITLE} ≈ %{{x:.3f}}<br>{Y_TITLE} ≈ %{{y:.3f}}<br>difference %{{z:+.4f}}<extra></extra>",
    )  # fmt: skip
    return _square_layout(go.Figure(heatmap), title=title, d_max=difference.d_max)


def point_scatter(
    points: np.ndarray,
    values: np.ndarray,
    *,
    max_points: int = 20_000,
    seed: int = 0,
    bins: int = 64,
    title: str | None = None,
) -> go.Figure:
    """Raw point cloud: a random subsample coloured by value over a density shading of all points.

    Drawing 1.8 M markers would stall the browser, so at most ``max_points`` are drawn (the same ones
    for the same ``seed``); the grey underlay is a 2-D histogram of *all* points (log-scaled counts),
    which shows where the cloud is dense even where the subsample is thin.

    Parameters
    ----------
    points : ndarray of shape (n_points, 2), float
        ``(d_ij, d_ik)`` (``PointCloud.points``).
    values : ndarray of shape (n_points,), float
        ``PointCloud.values``.
    max_points : int, default=20000
        Markers drawn at most.
    seed : int, default=0
        Seed of the subsample.
    bins : int, default=64
        Histogram bins per axis of the density underlay.
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``density`` (heatmap) and ``points`` (scattergl); each marker's ``customdata`` is its
        index in ``points``, for drilling down to the image pair.
    """
    points = np.asarray(points, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 2 or values.shape != (points.shape[0],):
        raise InvalidInputError(
            f"points must have shape (n_points, 2) and values (n_points,); got {points.shape} and {values.shape}"
        )
    d_max = float(points.max()) if points.size and points.max() > 0 else 1.0
    counts, edges, _ = np.histogram2d(points[:, 0], points[:, 1], bins=bins, range=[[0, d_max], [0, d_max]])
    centres = (edges[:-1] + edges[1:]) / 2
    density = go.Heatmap(
        z=np.log1p(counts.T),  # histogram2d puts x on the first axis; heatmaps want rows = y
        x=centres,
        y=centres,
        colorscale=DENSITY_COLORSCALE,
        showscale=False,
        hoverinfo="skip",
        name="density",
    )
    shown = np.random.default_rng(seed).permutation(values.size)[:max_points]
    shown.sort()
    scatter = go.Scattergl(
        x=points[shown, 0],
        y=points[shown, 1],
        mode="markers",
        customdata=shown,
        marker={
            "color": values[shown],
            "colorscale": VARIANCE_COLORSCALE,
            "cmin": min(0.0, float(values.min(initial=0.0))),  # absolute differences start the bar at 0 (Plotly centres all-zero values on 0)
            "cmax": max(float(values.max(initial=0.0)), 1e-6),
            "size": 4,
            "opacity": 0.6,
            "colorbar": value_colorbar(),
        },
        hovertemplate=f"{X_SYMBOL} %{{x:.3f}}<br>{Y_SYMBOL} %{{y:.3f}}<br>value %{{marker.color:.4f}}<extra></extra>",
        name="points",
    )
    figure = go.Figure([density, scatter])
    return _square_layout(figure, title=title, d_max=d_max)


def distance_histogram(
    distances_by_method: Mapping[str, np.ndarray], *, bins: int = 40, title: str | None = None
) -> go.Figure:
    """Overlaid histograms of semantic distances, one per sampling method (the paper's Figure 11).

    Parameters
    ----------
    distances_by_method : mapping of str to ndarray of any shape, float
        Distances of each method's composites to their originals; arrays are flattened. Leave out the
        originals' zero distances (column 0 of a run's distance table) to show the composites only.
    bins : int, default=40
        Bins over the shared range, so the methods' bars line up.
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
        One ``histogram`` trace per method (named after it), normalised to the share of composites.
    """
    flat = {name: np.asarray(d, dtype=np.float64).ravel() for name, d in distances_by_method.items()}
    top = max((float(d.max()) for d in flat.values() if d.size), default=1.0) or 1.0
    size = top / bins
    figure = go.Figure(
        [
            go.Histogram(
                x=d,
                name=plain_text(name),
                xbins={"start": 0.0, "end": top + size, "size": size},
                histnorm="probability",
                opacity=0.6,
            )
            for name, d in flat.items()
        ]
    )
    figure.update_layout(
        title=plain_text(title),
        height=MIN_HEIGHT,
        barmode="overlay",
        margin={**MARGIN, "t": top_margin(title)},
        xaxis={"title": {"text": f"semantic distance of a background from the original, {X_SYMBOL}"}},
        yaxis={"title": {"text": "share of composites"}},
    )
    return apply_style(figure)
