"""The Data page's report of pool backgrounds kept out of each class's suites (``analytics.suites.screening``)."""

from __future__ import annotations

import streamlit as st

from analytics.exceptions import BackdropError
from analytics.suites import DEFAULT_SCREENING_THRESHOLD, exclusion_summary, screening_gaps
from analytics.workspace import Workspace
from ui.markdown import escape_markdown

KEY = "data.screening."


def show_exclusions(workspace: Workspace) -> None:
    """Per class: backgrounds a classifier found the class in, and crops of the targets' own photos."""
    st.subheader("Backgrounds kept out of each class's suites")
    st.caption(
        "A suite never gives a target a background that shows the target's class (an ImageNet classifier, the "
        f"workspace's keyword model, finds the class's summed probability above {DEFAULT_SCREENING_THRESHOLD} on the whole "
        "background or one of its 3x3 patches) or a crop of the photo the target was cut from."
    )
    try:
        summary = exclusion_summary(workspace)
        if summary["excluded_by_classifier"].isna().any() and st.button("Screen the pool now", key=KEY + "screen"):
            with st.spinner("Screening the pool (the classifier runs once per background; cached afterwards)…"):
                summary = exclusion_summary(workspace, compute=True)
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    if summary.empty:
        st.info("Import targets and a background pool first.")
        return
    gaps = screening_gaps(workspace)
    if gaps:
        st.warning(escape_markdown(gaps), icon=":material/warning:")
    if summary["excluded_by_classifier"].isna().any():
        st.caption("Blank classifier counts: the pool is not screened yet, or the class cannot be screened (see the warning above).")
    st.dataframe(summary, hide_index=True, width="stretch")
