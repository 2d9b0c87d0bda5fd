"""Failures: which scenes break a model. Per background keyword and ontology level of a run, the error
rate and the drop of the true-class probability with 95 % intervals; the keyword x model heat map of
the suite's models; the self-contained HTML report. A thin view: numbers from
:mod:`analytics.failures`, layout from :mod:`ui.failures`.
"""

from __future__ import annotations

import streamlit as st

from analytics.exceptions import BackdropError
from analytics.runs import current_runs
from ui import failures as view
from ui import state
from ui.auth import require_page
from ui.runs import run_label


def main() -> None:
    require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Failures")
    st.caption(
        "Which scene keywords go with a model's mistakes? A composite counts for every keyword of its background; "
        "rates have Wilson intervals, mean drops of the true-class probability bootstrap intervals (95 %)."
    )
    workspace = state.current_workspace()
    runs = current_runs(workspace)
    runs = runs[runs["status"] == "done"]
    if runs.empty:
        st.info("No finished run yet: run a model over a suite on the Run page.")
        st.stop()
    records = {row["id"]: row for row in runs.to_dict("records")}
    run_id = st.selectbox("Run", list(records), format_func=lambda r: run_label(records[r]), key=view.KEY + "run")
    run = records[run_id]
    min_count = st.slider("Minimum composites per keyword", 1, 50, 3, key=view.KEY + "min_count")
    path = str(workspace.root)
    try:
        table = view.failures(path, run_id, run["finished"] or "", min_count)
    except BackdropError as err:
        st.error(str(err))
        st.stop()
    st.write(
        f"{table.composites} composites; overall error rate {table.error_rate:.3f}, mean drop {table.mean_drop:.3f} "
        f"(keywords: {table.keyword_source})."
    )
    if table.keywords.empty:
        st.info("No keyword has that many composites (or the suite's backgrounds have no keywords: compute a keyword table on the Suites page).")
    st.dataframe(view.display(table.keywords), hide_index=True, width="stretch", column_config=view.NUMBER_FORMAT, key=view.KEY + "keywords")
    st.subheader("By ontology level")
    st.caption("Level of the keyword the suite drew the background for: 0 detected on the target, 1+ through the ontology, −1 random.")
    st.dataframe(view.display(table.levels), hide_index=True, width="stretch", column_config=view.NUMBER_FORMAT, key=view.KEY + "levels")

    st.subheader("Keyword × model")
    suite_runs = runs[runs["suite_id"] == run["suite_id"]].drop_duplicates("model", keep="first")  # newest per model
    models = st.multiselect("Models", list(suite_runs["model"]), default=list(suite_runs["model"])[:8], key=view.KEY + "models")
    chosen = suite_runs[suite_runs["model"].isin(models)]
    if not chosen.empty:
        matrix = view.keyword_matrix(path, tuple(chosen["id"]), tuple(chosen["finished"].fillna("")), min_count)
        if matrix.empty:
            st.info("No keyword to compare.")
        else:
            st.plotly_chart(view.keyword_heatmap(matrix), width="stretch", key=view.KEY + "heatmap")

    st.subheader("Report")
    compare = [m for m in models if m != run["model"]]
    st.caption(f"{run['model']} over suite {run['suite_id']}, compared with {', '.join(compare) or 'no other model'} (the models chosen above).")
    view.report_button(workspace, run["model"], compare, run["suite_id"], min_count)


main()
