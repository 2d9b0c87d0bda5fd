"""Ontology: build the workspace's keyword tables, mine the keyword association ontology, browse
its rules and graph, explore expansion.

A thin view: mining, paths and expansion are :mod:`analytics.ontology`; keyword files and tables
are :mod:`analytics.keywords`; caching, figures and widgets are :mod:`ui.ontology`, the keyword-table
builder :mod:`ui.keyword_tables`. The page catches only :class:`~analytics.exceptions.BackdropError`.
"""

from __future__ import annotations

import streamlit as st

from analytics.exceptions import BackdropError
from analytics.keywords import list_keyword_tables
from analytics.ontology import ontology_labels, save_ontology
from analytics.team import User
from analytics.workspace import Workspace
from ui import keyword_tables as builder
from ui import ontology as view
from ui import state
from ui.auth import offer, require_page
from ui.markdown import escape_markdown


def workspace_or_none() -> Workspace | None:
    """The session's workspace (acting as the signed-in account), or None: a keyword file on the server still works without one."""
    path = None
    try:
        path = state.workspace_path()
        return state.open_workspace(path)
    except BackdropError as err:  # no workspace there, or a path that does not expand (~user of no user)
        where = f"No workspace at `{path}`" if path is not None else escape_markdown(err)
        st.info(f"{where}: only keyword files can be used, and nothing can be saved.")
        return None


def keyword_tables(workspace: Workspace, user: User | None) -> None:
    """The builder (classifier patches, a keyword file, scene-model checkpoints; roles that build) and the table list."""
    # kept open after a build, or its report (and the warnings about unmatched image names) is hidden
    expanded = list_keyword_tables(workspace).empty or builder.BUILD_REPORT in st.session_state
    with st.expander("Keyword tables of this workspace", expanded=expanded):
        request = builder.keyword_builder(workspace) if offer(user, "build_suites", "Building keyword tables") else None
        if request is not None:
            try:
                view.remember_build(builder.run_build(workspace, request))
            except BackdropError as err:
                st.error(escape_markdown(err))
            else:
                st.rerun()
        builder.build_report()
        builder.keyword_tables_view(workspace)


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Ontology")
    st.caption(
        "Keywords that co-occur in scenes, mined as association rules (support, confidence) and drawn "
        "as a directed graph; keyword expansion follows its edges level by level."
    )
    workspace = workspace_or_none()
    if workspace is not None:
        keyword_tables(workspace, user)
    source = view.source_picker(workspace)
    params = view.mining_controls()
    if source is None:
        st.info("Choose at least one keyword table or give a keyword file.")
        st.stop()
    try:
        tables = view.tables_for(source, workspace)
        ontology = view.cached_ontology(tables, tuple(t.digest() for t in tables), **params)
    except BackdropError as err:
        st.error(escape_markdown(err))
        st.stop()

    columns = st.columns(5)
    for column, (label, value) in zip(columns, ontology.summary.items()):
        column.metric(label.capitalize(), value)
    saving = workspace is not None and offer(user, "build_suites", "Saving ontologies and keyword tables")
    if saving and st.button("Save this ontology in the workspace", key=view.KEY + "save"):
        # one entry per keyword table, so the Suites page and build_suite find the tables it was mined from
        tables_used = list(source.names) or [source.label]
        try:
            saved = save_ontology(workspace, ontology, tables=tables_used)
            st.success(f"Saved ontology {escape_markdown(ontology_labels(workspace)[saved])} (id `{saved}`).")
        except BackdropError as err:
            st.error(str(err))

    rules_tab, network_tab, expansion_tab = st.tabs(["Rules", "Network", "Expansion explorer"])
    with rules_tab:
        view.rules_view(ontology)
    with network_tab:
        view.network_view(ontology)
    with expansion_tab:
        names = list(source.names) or [view.default_table_name(source.path)]
        try:
            view.expansion_explorer(ontology, tables, names)
        except BackdropError as err:
            st.error(escape_markdown(err))
    if source.kind == view.FILE_SOURCE and saving:
        try:
            view.save_file_table(workspace, tables[0], view.default_table_name(source.path))
        except BackdropError as err:
            st.error(escape_markdown(err))


main()
