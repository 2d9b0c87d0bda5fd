"""Repository: every model of a model repository on one suite — status, accuracy, worst-case
accuracy, the assessor's verdict, judgments so far, the metadata, a link to its matrices —
sortable, filterable, exportable as CSV, with a run of the whole repository as one background job;
while that job runs, the table redraws itself every few seconds (a fragment).

A thin view: the library is :mod:`analytics.repository` (the job kind ``repository``), the helpers
:mod:`ui.repository`. Repositories are made here from registered models (the zoo in one click) or
added from a manifest with ``python -m analytics repository add MANIFEST --name NAME``.
"""

from __future__ import annotations

import streamlit as st

from analytics.repository import list_repositories
from analytics.runs import runs_snapshot
from analytics.suites import list_suites
from analytics.workspace import Workspace
from ui import repository as view
from ui import state
from ui.auth import may, require_page


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Repository")
    st.caption(
        "A repository is a set of models tested as one unit: checkpoints registered from a manifest, or registered models such as the zoo. Run them all over a suite as one job: "
        "finished models are skipped, an interrupted run resumes, and a model that fails is listed with its reason."
    )
    workspace = state.current_workspace()
    view.show_job(workspace)
    names, suites = list_repositories(workspace), list_suites(workspace)
    if may(user, "register_models"):
        view.create_form(workspace, expanded=not names)
    if not names:
        st.info(
            "No repository yet. Make one from registered models above, or add one from a CSV manifest: "
            "`python -m analytics repository add MANIFEST --name NAME`."
        )
        return
    if suites.empty:
        st.info("Build and save a suite on the Suites page first.")
        return
    left, right = st.columns(2)
    name = left.selectbox("Repository", names, key=view.KEY + "name")
    records = suites.set_index("id").to_dict("index")
    suite_id = right.selectbox("Suite", list(records), key=view.KEY + "suite", format_func=lambda s: records[s]["label"])
    if may(user, "run_models"):
        view.run_button(workspace)
    # while a job runs this repository the table redraws itself, so its rows follow the models as they finish
    st.fragment(models_view, run_every=view.table_refresh_s(workspace, name, suite_id))(workspace, name, suite_id)


def models_view(workspace: Workspace, name: str, suite_id: str) -> None:
    """The repository's models on the suite: counts, filters, the table, its CSV and the way to the matrices."""
    table, assessor_note = view.models_table(workspace, name, suite_id)
    counts = table["Status"].value_counts()
    st.caption(" · ".join(f"{counts.get(s, 0)} {s}" for s in view.REPOSITORY_STATUSES) + f" of {len(table)} models")
    text, statuses, verdicts = view.filters(table)
    shown = view.filter_table(table, text, statuses, verdicts)
    st.dataframe(shown, hide_index=True, width="stretch", column_config=view.COLUMNS, key=view.KEY + "table")
    st.caption(
        "Click a column header to sort. Worst-case accuracy: share of targets classified correctly under every one of their "
        f"backgrounds. Judgments: current judgments on this suite. {assessor_note}"
    )
    st.download_button(
        "Download CSV", view.csv_bytes(shown), file_name=f"repository-{name}-{suite_id}.csv", mime="text/csv", key=view.KEY + "csv"
    )
    view.matrices_link(shown)

with runs_snapshot():  # the runs are listed once per rerun, however many parts ask
    main()
