"""Suites: sample N backgrounds per target with one of five methods, preview them, save them.

A thin view: sampling, distances and storage are :mod:`analytics.suites`; caching, the form, the
preview grid and the histogram are :mod:`ui.suites`. The page catches only
:class:`~analytics.exceptions.BackdropError`.
"""

from __future__ import annotations

import streamlit as st

from analytics.datasets import list_backgrounds, list_targets
from analytics.exceptions import BackdropError
from analytics.suites import save_suite
from ui import state
from ui import suites as view
from ui.auth import require_page


def main() -> None:
    require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Suites")
    st.caption(
        "For every target, N background scenes chosen at random, by embedding distance (nearest, "
        "interval) or by scene keywords (detected, or expanded through the ontology: one background per "
        "distinct keyword where the pool allows, topped up at random where the keywords run out). Each "
        "background keeps its keyword, level and semantic distance; composites are made on the fly."
    )
    workspace = state.current_workspace()
    n_targets, n_pool = len(list_targets(workspace)), len(list_backgrounds(workspace))
    if not n_targets or not n_pool:
        st.info("The workspace needs targets and backgrounds first: import them on the Data page.")
        st.stop()
    view.missing_inputs(workspace)
    st.caption(
        "Keywords from a CSV or HDF5 keyword file, or from the ADE20K + Places365 checkpoints: build the "
        "tables on the **Ontology** page (or `python -m analytics keywords`); the newest table of each kind is used."
    )
    request = view.request_form(workspace, n_pool)
    suite = None
    if request is not None:
        try:
            suite = view.cached_suite(str(workspace.root), request, view.workspace_stamp(workspace))
        except BackdropError as err:
            st.error(str(err))
    if suite is not None:
        st.subheader(f"{suite.method} suite `{suite.id}`")
        view.summary(suite)
        if st.button("Save this suite", key=view.KEY + "save"):
            saved = save_suite(workspace, suite)
            st.success(f"Saved suite `{saved.id}` ({len(saved.items)} backgrounds).")
        view.preview(workspace, suite)

    st.subheader("Distances per method")
    distances = view.distances_by_method(workspace, suite)
    if distances:
        st.plotly_chart(view.distance_figure(distances), key=view.KEY + "histogram")
    else:
        st.caption("No suite with distances yet (distances need a registered model).")

    st.subheader("Saved suites")
    saved = view.saved_table(workspace)
    if saved.empty:
        st.caption("No suite saved yet.")
    else:
        st.dataframe(saved, hide_index=True, key=view.KEY + "saved")


main()
