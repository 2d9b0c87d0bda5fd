"""Gate: the release gate of ``python -m analytics check`` on a page. A candidate model against a policy
(the example, an uploaded TOML file, or rules edited here) and, optionally, the last release; the
verdict one row per rule, the Markdown summary, and the files the command line writes (JUnit XML,
summary, report) as downloads.

A thin view: the check is :func:`analytics.gate.check_text`, run as a background job (:mod:`analytics.jobs`,
kind ``gate``) with its progress, Cancel and Resume; the page's parts are :mod:`ui.gate`. Starting a
check needs ``run_models`` (admin, analyst); a viewer sees the newest check's verdict and files.
``st.session_state`` keeps only the id of the job the page started.
"""

from __future__ import annotations

import streamlit as st

from ui import gate as view
from ui import jobs as job_view
from ui import state
from ui.auth import offer, require_page


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Gate")
    st.caption(
        "Is this checkpoint fit to release? The gate holds a candidate to a policy's limits (worst-case accuracy, accuracy drop, "
        "BG-Gap, robustness, the assessor, scene keywords) and to the last release, as `python -m analytics check` does in CI."
    )
    workspace = state.current_workspace()
    if offer(user, "run_models", "Running the gate"):
        params = view.request_form(workspace)
        if params is not None:
            started = job_view.start_job(workspace, "gate", params)
            if started is not None:
                st.session_state[view.JOB] = started.id
    view.show_check(workspace)


main()
