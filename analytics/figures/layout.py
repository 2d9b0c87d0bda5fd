"""Sizes every figure shares: chart heights and margins that keep axis titles whole."""

from __future__ import annotations

__all__ = ["MARGIN", "MIN_HEIGHT", "SQUARE_HEIGHT", "TITLE_MARGIN", "top_margin"]

#: Height (px) of a square chart (matrix, point cloud). Pages lay them out two per row: at a 1400 px
#: wide window (sidebar open) a column is ~460 px, so the square plot area is ~300 px a side; four
#: per row left ~170 px heatmaps and ~60 x 70 px clouds beside their colour bars.
SQUARE_HEIGHT = 460
#: No chart is drawn lower than this (px); tests check every builder against it.
MIN_HEIGHT = 360
#: Margins (px) that keep the axis titles whole (tick labels + two-line title on the left and bottom).
MARGIN = {"l": 85, "r": 10, "b": 75}
#: Top margin (px) with a chart title; 20 without.
TITLE_MARGIN = 45


def top_margin(title: str | None) -> int:
    """The top margin (px) of a chart with or without a title."""
    return TITLE_MARGIN if title else 20
