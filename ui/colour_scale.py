"""The Matrices page's colour ranges: the suite's fixed scale by default, per-model autoscale on request.

The suite scale is :func:`analytics.runs.suite_colour_scale` without freezing it (only the
Judge page freezes it); its cache key holds the suite's finished runs, so a live scale follows new
runs until judging starts.
"""

from __future__ import annotations

import streamlit as st

from analytics.runs import EMBEDDING_RANGE, SIGNALS, ColourScale, missing_cell_quantiles, suite_colour_scale
from analytics.variance import MatrixSettings
from ui import state, widgets

SUITE = "Suite scale (fixed, as on the Judge page)"
AUTOSCALE = "Per-model autoscale (each matrix its own range; not comparable)"
CHOICES = (SUITE, AUTOSCALE)


def suite_scale(workspace_path: str, suite_id: str, run_ids: tuple[str, ...], settings: MatrixSettings) -> ColourScale:
    """The suite's colour scale at ``settings``: from Streamlit's cache, or, when some of its runs have no
    quantiles stored at these settings (other settings than the default: each such run's matrices are
    computed first, 4.4 s for the demo's 39 zoo runs), under a progress bar counting the runs.
    ``run_ids``, the suite's finished runs, only key the cache."""
    workspace = state.open_workspace(workspace_path)
    if not missing_cell_quantiles(workspace, suite_id, settings=settings):
        return _suite_scale(workspace_path, suite_id, run_ids, settings)
    with widgets.step_bar("Setting the suite's colour scale from its runs' matrices") as progress:
        return suite_colour_scale(workspace, suite_id, settings=settings, progress=progress)


@st.cache_data(max_entries=32, show_spinner=False)
def _suite_scale(workspace_path: str, suite_id: str, run_ids: tuple[str, ...], settings: MatrixSettings) -> ColourScale:
    """:func:`analytics.runs.suite_colour_scale` once every run's quantiles are stored (a read of each)."""
    return suite_colour_scale(state.open_workspace(workspace_path), suite_id, settings=settings)


def ranges(scale: ColourScale, autoscale: bool) -> dict[str, tuple[float | None, float | None]]:
    """``(zmin, zmax)`` per signal: ``(bottom, top)`` of the suite scale, or ``(None, None)`` (own range) when autoscaling."""
    return {signal: (None, None) if autoscale else scale.colour_range(signal) for signal in SIGNALS}


def describe(scale: ColourScale, autoscale: bool) -> str:
    """One line naming the colour range of every signal."""
    if autoscale:
        return "Colours: per-model autoscale — each matrix spans its own range, so colours are not comparable between models or signals."
    state = f"frozen {scale.frozen[:16].replace('T', ' ')}" if scale.frozen else "live until judging starts"
    tops = " · ".join(f"{SIGNALS[s]} {scale.bottom(s):.3g}–{top:.3g}" for s, top in scale.tops.items())
    return f"Colours: suite scale ({state}) — {tops}; each embedding signal {EMBEDDING_RANGE}."
