"""What every figure shares: chart heights, margins, the readable axis style (:func:`apply_style`) and
:func:`plain_text`, through which every builder passes the strings it did not write itself."""

from __future__ import annotations

import html
from typing import overload

import plotly.graph_objects as go

#: Height (px) of a square chart (matrix, point cloud). Pages lay them out two per row: at a 1400 px
#: wide window (sidebar open) a column is ~460 px, so the square plot area is ~300 px a side; four
#: per row left ~170 px heatmaps and ~60 x 70 px clouds beside their colour bars.
SQUARE_HEIGHT = 460
#: No chart is drawn lower than this (px); tests check every builder against it.
MIN_HEIGHT = 360
#: Margins (px) that keep the axis titles whole (tick labels + two-line title on the left and bottom);
#: :func:`apply_style`'s automargin widens them where tick labels or titles need more.
MARGIN = {"l": 85, "r": 10, "b": 75}
#: Top margin (px) with a chart title; 20 without.
TITLE_MARGIN = 45
#: Text colour of every figure: the dashboard theme's text colour (``.streamlit/config.toml``), about
#: 14:1 on white. Streamlit's chart theme would draw axis text light grey (#808495, 3.8:1).
TEXT_COLOUR = "#1f2933"
#: Size (px) of axis tick labels, axis titles and other figure text (Streamlit's theme: 12 px ticks).
TEXT_SIZE = 13
#: Font of axis tick labels and titles.
AXIS_FONT = {"size": TEXT_SIZE, "color": TEXT_COLOUR}
#: Gap (px) between an axis's tick labels and its title (Plotly keeps it with automargin on): at 10 the
#: title's text box touched the tick labels' boxes.
TITLE_STANDOFF = 14


def top_margin(title: str | None) -> int:
    """The top margin (px) of a chart with or without a title."""
    return TITLE_MARGIN if title else 20


def apply_style(figure: go.Figure) -> go.Figure:
    """Give ``figure`` the shared readable style, in place, and return it.

    Every axis (subplots too) gets ``automargin`` (the margins grow until tick labels and title fit, so
    nothing is clipped at the figure's edge), a title :data:`TITLE_STANDOFF` px off its tick labels
    (never over them), and :data:`AXIS_FONT` for ticks and title; the rest of the text (colour bars,
    legends) gets :data:`TEXT_COLOUR` at :data:`TEXT_SIZE`. These are set on the figure itself, not a
    template: ``st.plotly_chart``'s Streamlit theme rewrites the template (12 px light-grey axis text)
    but leaves a figure's own settings alone. Titles, ranges and other axis settings are kept.

    Parameters
    ----------
    figure : plotly.graph_objects.Figure

    Returns
    -------
    plotly.graph_objects.Figure
        The same figure.
    """
    axis = {"automargin": True, "tickfont": AXIS_FONT, "title": {"font": AXIS_FONT, "standoff": TITLE_STANDOFF}}
    figure.update_layout(font=AXIS_FONT)
    figure.update_xaxes(**axis)
    figure.update_yaxes(**axis)
    return figure


@overload
def plain_text(text: None, *, template: bool = False) -> None: ...


@overload
def plain_text(text: object, *, template: bool = False) -> str: ...


def plain_text(text: object, *, template: bool = False) -> str | None:
    """``text`` (a model, class, annotator, keyword name...) as Plotly shows it: as the characters typed.

    Plotly draws titles, axis titles and tick labels, legend entries, hover text, annotations and table
    cells as a subset of HTML: ``<a href=...>`` becomes a link, ``<b>`` bold, ``<br>`` a line break. A
    name from the user's data must never be read as markup, so every builder passes such strings
    through here (once: escaping twice would show ``&amp;lt;``) and joins the escaped parts with its
    own markup (``f"{plain_text(model)}<br>accuracy"``). Plotly turns the entities back into ``&``,
    ``<`` and ``>`` on screen.

    Parameters
    ----------
    text : object
        Converted with ``str``; ``None`` stays ``None`` (a figure without a title).
    template : bool, default=False
        ``text`` goes into a ``hovertemplate`` or ``texttemplate``: ``%`` is escaped too, so a name
        holding ``%{y}`` is shown as typed rather than replaced by a value.

    Returns
    -------
    str or None
        ``&``, ``<`` and ``>`` as ``&amp;``, ``&lt;`` and ``&gt;`` (quotes are harmless outside tags
        and kept); with ``template``, ``%`` as ``&#37;``.
    """
    if text is None:
        return None
    escaped = html.escape(str(text), quote=False)
    return escaped.replace("%", "&#37;") if template else escaped
