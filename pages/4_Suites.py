"""Suites: preview N backgrounds per target for a few targets with one of five methods, then save
the suite for every target (or build and save it straight away, without a preview).

A thin view: sampling, distances and storage are :mod:`analytics.suites`. The preview samples a few
targets in this process (nothing saved, a progress bar); saving runs as a background job
(:mod:`analytics.jobs`, kind ``suite``: :func:`analytics.api.build_suite`; progress, Cancel, Resume via :mod:`ui.jobs`). The form, the
preview grid and the histogram are :mod:`ui.suites`. A refused preview or start, or a failed job
(:class:`~analytics.exceptions.BackdropError`), is shown by :mod:`ui.suites` / :mod:`ui.jobs`.
Saved suites are opened by their label (a name given on the form, else method, N, seed and targets);
the address bar holds the open one (``?suite=<id>``), the link a finished suite job shows.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.data import list_backgrounds, list_targets
from analytics.exceptions import InvalidInputError
from analytics.suites import default_keyword_model, list_suites, select_targets
from analytics.workspace import Workspace
from ui import deeplink, state
from ui import jobs as job_view
from ui import suites as view
from ui.auth import require_page
from ui.markdown import escape_markdown
from ui.widgets import prefill


def suite_of_job(workspace: Workspace) -> str | None:
    """The suite job this session started: its progress (Cancel, Resume), then the id of the saved suite."""
    job_id = st.session_state.get(view.JOB)
    if job_id is None:
        return None
    job = job_view.show_job(workspace, job_id, key=view.KEY)
    if job.status != "done":
        return None
    label = job.result.get("suite") or job.result["suite_id"]
    st.success(f"Saved suite {escape_markdown(label)} ({job.result['items']} backgrounds): open below under Saved suites.")
    return job.result["suite_id"]


def open_saved(workspace: Workspace, saved: pd.DataFrame, just_saved: str | None) -> None:
    """A saved suite picked by its label (the one a job just saved, or a link's ``?suite=``): its summary
    and grid; none until one is picked (drawing a grid of composites on every visit would slow the page)."""
    labels = dict(zip(saved["id"], saved["label"]))
    if just_saved in labels:
        prefill(view.OPEN, just_saved, follows=just_saved)
    unknown = deeplink.adopt("suite", view.OPEN, list(labels))
    if unknown:
        st.warning(f"The link names no saved suite ({escape_markdown(unknown)}): pick one below.", icon=":material/link_off:")
    suite_id = st.selectbox(
        "Open a saved suite", list(labels), index=None, format_func=labels.__getitem__, key=view.OPEN, placeholder="Pick a suite to see its backgrounds"
    )
    deeplink.publish(suite=suite_id)
    if suite_id is None:
        return
    suite = view.cached_saved_suite(str(workspace.root), suite_id)
    st.markdown(f"**{escape_markdown(labels[suite_id])}** · saved {escape_markdown(suite.created[:16].replace('T', ' '))} · id `{suite.id}`")
    view.summary(suite)
    view.preview(workspace, suite)


def previewed(workspace: Workspace) -> None:
    """The last preview (not saved) with the button that saves its suite for every selected target."""
    shown = st.session_state.get(view.PREVIEW)
    if shown is None:
        return
    request, suite = shown
    n_targets = len(select_targets(workspace, classes=request.classes))
    st.subheader(f"Preview: {suite.method} suite for {len(suite.target_ids)} of {n_targets} targets")
    st.caption(
        f"Not saved yet. Saving samples all {n_targets} targets{' of the classes picked' if request.classes else ''} with these settings and seed; a target's draw depends on "
        "the seed and its own inputs, so these targets keep these backgrounds (one without detected keywords may not: "
        "it borrows its class's most frequent keywords, counted over all targets)."
    )
    view.preview(workspace, suite, key=view.KEY + "preview_target")
    save = st.button("Save suite", type="primary", icon=":material/save:", key=view.KEY + "save", help="Runs in the background with progress and Cancel.")
    if save and view.start_build(workspace, request):
        del st.session_state[view.PREVIEW]
        st.rerun()


def keyword_sources(workspace: Workspace) -> str:
    """Where the keyword methods' keywords come from: the default (classifier-patch keywords, naming the
    model that computes them), then the other sources (issue 47.10b: the intro omitted the default)."""
    try:
        model = escape_markdown(default_keyword_model(workspace))
    except InvalidInputError:
        model = "the first registered ImageNet classifier (none is registered yet)"
    return (
        f"Keywords by default: classifier-patch keywords, the ImageNet labels {model} gives the patches of each "
        "image (the button below computes them when absent). Or from a CSV or HDF5 keyword file, or from the "
        "ADE20K + Places365 checkpoints: build the tables on the **Ontology** page (or `python -m analytics "
        "keywords`); the newest table of each kind is used."
    )


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
    st.caption(keyword_sources(workspace))
    submitted = view.request_form(workspace, n_pool)
    if submitted is not None:
        action, request = submitted
        st.session_state[view.PREVIEW] = None
        if action == "build":
            view.start_build(workspace, request)
        else:
            suite = view.sample_preview(workspace, request)
            st.session_state[view.PREVIEW] = None if suite is None else (request, suite)
    previewed(workspace)
    just_saved = suite_of_job(workspace)

    st.subheader("Distances per method")
    distances = view.distances_by_method(workspace)
    if distances:
        st.plotly_chart(view.distance_figure(distances), key=view.KEY + "histogram")
    else:
        st.caption("No suite with distances yet (distances need a registered model).")

    st.subheader("Saved suites")
    saved = list_suites(workspace)
    if saved.empty:
        st.caption("No suite saved yet.")
        return
    open_saved(workspace, saved, just_saved)
    st.dataframe(view.saved_table(workspace, saved), hide_index=True, width="stretch", column_config=view.SAVED_COLUMNS, key=view.KEY + "saved")


main()
