"""Adjudication: the models whose annotators disagree on a suite, each annotator's label, confidence and
note side by side with the model's four variance matrices, and a form where a lead records the
consensus label with a reason (history kept). The assessor learns from the consensus where one is
recorded, else from the majority vote. Judgments and consensus export together as CSV.

A thin view: data are :mod:`analytics.judging.adjudication`, drawing and the form's callback :mod:`ui.adjudication`.
Needs the ``adjudicate`` permission (admin or analyst) in team mode.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.judging import LABELS, consensus_history, disagreements, export_judgments_csv
from analytics.runs import runs_snapshot
from analytics.team import User
from analytics.workspace import Workspace
from ui import adjudication as view
from ui import state
from ui.auth import require_page
from ui.markdown import escape_markdown
from ui.widgets import prefill


def choose_suite(workspace: Workspace) -> str:
    suites = view.judged_suites(workspace)
    if suites.empty:
        st.info("No judgments on a suite yet: annotators judge models on the **Judge** page first.")
        st.stop()
    rows = {row["id"]: row for row in suites.to_dict("records")}
    return st.selectbox("Suite", list(rows), format_func=lambda suite_id: rows[suite_id]["label"], key=view.KEY + "suite")


def choose_model(workspace: Workspace, table: pd.DataFrame, suite_id: str) -> pd.Series:
    st.subheader(f"{len(table)} model(s) where the annotators disagree")
    st.dataframe(
        view.disagreement_list(workspace, table, suite_id),
        hide_index=True,
        width="stretch",
        column_config={"Share agreeing": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)},
    )
    st.caption("Majority vote: the label most annotators gave; a tie goes to the more cautious label (variant over borderline over invariant).")
    rows = table.set_index("model")
    model = st.selectbox(
        "Model to adjudicate", list(rows.index), format_func=lambda name: view.model_choice(workspace, rows.loc[name], suite_id), key=view.KEY + "model"
    )
    return rows.loc[model].rename(model)


def consensus_form(workspace: Workspace, user: User | None, suite_id: str, row: pd.Series) -> None:
    model = str(row.name)
    prefill(view.LABEL, row["consensus"] if row["has_consensus"] else row["majority"], follows=(suite_id, model))
    with st.form(view.KEY + "form", border=True):
        st.markdown(f"**Consensus for {escape_markdown(model)}**")
        st.radio("Consensus label", list(LABELS), horizontal=True, key=view.LABEL)
        st.text_area("Reason (required)", key=view.REASON, placeholder="what in the matrices or the notes settles it")
        if user is None:  # solo mode: no account signs it
            st.text_input("Adjudicator (your name)", value=state.annotator(), key=view.ADJUDICATOR)
        else:
            st.caption(f"Signed by **{escape_markdown(user.name)}**.")
        st.form_submit_button("Record consensus", type="primary", on_click=view.record, args=(workspace, suite_id, model))


def show_flash() -> None:
    flash = st.session_state.pop(view.FLASH, None)
    if flash is not None:
        kind, text = flash
        (st.error if kind == "error" else st.success)(text, icon=":material/error:" if kind == "error" else ":material/done:")


def show_history(workspace: Workspace, suite_id: str) -> None:
    st.subheader("Consensus history on this suite")
    history = consensus_history(workspace, suite_id)
    if history.empty:
        st.caption("No consensus recorded on this suite yet.")
    else:
        st.dataframe(view.history_table(history), hide_index=True, width="stretch")
        st.caption("Newest first. Recording again adds a row; the newest consensus of a model counts (for the weights it was given).")
    st.download_button(
        "Export judgments + consensus (CSV)",
        export_judgments_csv(workspace, suite_id).encode(),
        file_name=f"judgments-consensus-{suite_id}.csv",
        mime="text/csv",
        icon=":material/download:",
        key=view.KEY + "download",
        help="Every judgment and consensus on this suite, both histories; the column 'record' tells them apart, 'counts' marks the rows that count now.",
    )


def main() -> None:
    user = require_page("adjudicate")  # team mode: the sign-in form, then admin or analyst only
    st.title("Adjudication")
    st.caption("Where annotators disagree, a lead records the consensus label; the assessor learns from it.")
    workspace = state.current_workspace()
    show_flash()
    suite_id = choose_suite(workspace)
    table = disagreements(workspace, suite_id)
    if table.empty:
        st.success("The annotators agree on every model judged on this suite: nothing to adjudicate.", icon=":material/done_all:")
    else:
        row = choose_model(workspace, table, suite_id)
        view.show_judgments(row)
        view.show_matrices(workspace, suite_id, str(row.name))
        consensus_form(workspace, user, suite_id, row)
    show_history(workspace, suite_id)


with runs_snapshot():  # the runs are listed once per rerun, however many parts ask
    main()
