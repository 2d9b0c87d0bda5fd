"""Agreement: how far the annotators agree about the models judged on one suite (Fleiss' κ, Cohen's κ
per pair, Krippendorff's α, each annotator against the majority, per-model table, confusion between
two annotators, majority vote), every statistic with its number of shared models, a warning below
the minimum and a bootstrap interval, and the full judgment history as CSV. Judgments count per
suite: the latest current one per (annotator, model, suite).

A thin view: the statistics are :mod:`analytics.judging.agreement`, the tables and figures :mod:`ui.agreement`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.figures import confusion_heatmap, format_kappa, kappa_heatmap
from analytics.judging import Agreement, confusion, judgment_history, latest_judgments
from analytics.runs import runs_snapshot
from analytics.team import roles_with
from analytics.workspace import Workspace, to_csv
from ui import agreement as view
from ui import state
from ui.auth import require_page
from ui.markdown import escape_markdown

PER_MODEL_NAMES = {
    "model": "Model",
    "n_judgments": "Judgments",
    "invariant": "Invariant",
    "borderline": "Borderline",
    "variant": "Variant",
    "majority": "Majority vote",
    "agreement": "Share agreeing",
}


def show_summary(agreement: Agreement) -> None:
    kappa, alpha = agreement.fleiss, agreement.alpha["ordinal"]
    # one row of four cards; κ's strength in words sits under its number (a card of its own cut
    # "worse than chance" at 1400 px, a row of five cut "Krippendorff's α (ordinal)" and "substantial")
    columns = st.columns(4)
    columns[0].metric(
        "Fleiss' κ", format_kappa(kappa.value), delta=view.kappa_words(kappa.value), delta_color="off", delta_arrow="off", border=True,
        help="Across all annotators, over the models judged by at least two. In words: Landis & Koch's (1977) bands.",
    )  # fmt: skip
    columns[0].caption(view.estimate_caption(kappa))
    columns[1].metric("Krippendorff's α", format_kappa(alpha.value), border=True, help="Ordinal (invariant < borderline < variant). " + view.ALPHA_EXPLAINED)
    columns[1].caption(view.estimate_caption(alpha))
    columns[2].metric("Models in κ and α", f"{len(agreement.fleiss_models)} of {len(agreement.models)}", border=True)
    columns[3].metric("Annotators", len(agreement.annotators), border=True)
    for warning in agreement.warnings:
        st.warning(warning, icon=":material/warning:")
    nominal = agreement.alpha["nominal"]
    st.caption(
        f"Krippendorff's α, nominal (labels unordered): {format_kappa(nominal.value)} · {view.estimate_caption(nominal)}. "
        f"{view.KAPPA_EXPLAINED} {view.INTERVAL_EXPLAINED}"
    )
    for note in agreement.notes:
        st.caption(f":material/info: {escape_markdown(note)}")


def show_pairs(agreement: Agreement) -> None:
    st.subheader("Pairs of annotators")
    # the table the whole width: beside the heatmap (3/5 of the row) it cut "Strength" to "slight (few mod"
    st.dataframe(view.cohen_table(agreement), hide_index=True, width="stretch", column_config={"Cohen's κ": st.column_config.NumberColumn(format="%.2f")})
    st.caption("Cohen's κ of each pair, on the models both judged; 'few models': fewer than the minimum shared.")
    st.columns(2)[0].plotly_chart(kappa_heatmap(agreement), width="stretch")


def show_annotators(agreement: Agreement) -> None:
    st.subheader("Each annotator against the majority")
    share = st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)
    st.dataframe(
        view.majority_table(agreement),
        hide_index=True,
        width="stretch",
        column_config={"With the others' majority": share, "With everyone's majority": share},
    )
    st.caption(
        "Over the models the annotator judged that someone else judged too: the share where their label equals the "
        "majority vote of the *other* annotators (no one agrees with themselves), and of *everyone*, themselves included "
        "(the label the assessor learns from)."
    )


def show_confusion(agreement: Agreement, judgments: pd.DataFrame) -> None:
    st.subheader("Where two annotators differ")
    names = list(agreement.annotators)
    left, right = st.columns(2)
    first = left.selectbox("First annotator (rows)", names, index=0, key="agreement.first")
    second = right.selectbox("Second annotator (columns)", names, index=1, key="agreement.second")
    if first == second:
        st.info("Pick two different annotators.")
        return
    table = confusion(judgments, first, second)
    left, right = st.columns([3, 2], gap="large")
    left.plotly_chart(confusion_heatmap(table), width="stretch")
    agreed = int(table.to_numpy().trace())
    right.markdown(f"**{agreed} of {int(table.to_numpy().sum())}** models judged by both got the same label (the diagonal).")
    right.caption("Off the diagonal: rows give the first annotator's label, columns the second's.")


def show_models(agreement: Agreement) -> None:
    st.subheader("Per model")
    st.markdown(f"**Majority vote:** {view.majority_summary(agreement.majority)}")
    st.dataframe(
        agreement.per_model.rename(columns=PER_MODEL_NAMES),
        hide_index=True,
        width="stretch",
        column_config={"Share agreeing": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)},
    )
    st.caption(
        "Majority vote: the label most annotators gave; a tie goes to the more cautious label "
        "(variant over borderline over invariant)."
    )


def show_history(workspace: Workspace) -> None:
    history = judgment_history(workspace)
    st.download_button(
        f"Download the judgment history ({len(history)} rows, CSV)",
        to_csv(history).encode(),
        file_name="judgments.csv",
        mime="text/csv",
        icon=":material/download:",
        key="agreement.download",
    )
    st.caption(
        "Every judgment ever made, changed and stale ones included (the latest per annotator, model and suite counts; "
        "model_key names the weights judged)."
    )


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Agreement")
    st.caption("Do the annotators read the variance matrices the same way?")
    workspace = state.current_workspace()
    suites = view.judged_suites(workspace)
    if suites.empty:
        # solo mode signs judgments with the sidebar's name; team mode with the account (no such field there)
        who = " (enter your name in the sidebar first)" if user is None else f", signed in as {' or '.join(roles_with('judge'))}"
        st.info(f"No judgments on a suite yet. Label models on the **Judge** page{who}.")
        st.stop()
    labels = dict(zip(suites["id"], suites["label"]))
    suite_id = st.selectbox("Suite", list(labels), format_func=labels.__getitem__, key="agreement.suite", help="Judgments are made per suite.")
    judgments = latest_judgments(workspace, suite_id)
    agreement = view.measured(judgments)
    show_summary(agreement)
    if len(agreement.annotators) < 2:
        st.info(
            f"Agreement needs at least two annotators; so far only **{escape_markdown(agreement.annotators[0])}** has judged "
            f"{len(agreement.models)} model(s) on this suite. Ask a colleague to judge the same models on the **Judge** "
            "page, on this suite, under their own name."
        )
    else:
        show_pairs(agreement)
        show_annotators(agreement)
        show_confusion(agreement, judgments)
    show_models(agreement)
    show_history(workspace)


with runs_snapshot():  # the runs are listed once per rerun, however many parts ask
    main()
