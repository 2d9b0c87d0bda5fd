"""Streamlit helpers of the Repository page: the models table (status, accuracies, judgments so far,
the manifest's metadata), its filters, and the run job.

The assessor's verdict is not in the table: no verdict is stored per model (it would need the
assessor fitted and every run's matrix features computed on each page view), so the page says so.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from analytics.jobs import list_jobs
from analytics.judgments import latest_judgments
from analytics.repository import STATUSES, get_repository, repository_status
from analytics.workspace import Workspace
from ui import jobs as job_view

KEY = "repository."
JOB = KEY + "job"  # session-state key: the id of the repository job this session started
MATRICES_RUN = "runs.run"  # the Matrices page's run selector (ui.runs.KEY + "run")
#: Column configuration of :func:`models_table`.
COLUMNS = {
    name: st.column_config.ProgressColumn(name, format="percent", min_value=0, max_value=1) for name in ("Accuracy", "Worst-case accuracy")
}


def models_table(workspace: Workspace, name: str, suite_id: str) -> pd.DataFrame:
    """One row per model of the repository on the suite, ready to show.

    Returns
    -------
    DataFrame
        Model, Status, Accuracy, Worst-case accuracy (float in [0, 1], NaN until done), Images
        ('stored / expected'), Judgments (int: current judgments on this suite), Labels (their
        counts, e.g. 'invariant ×2'), Reason, Run, then one column per metadata key.
    """
    status = repository_status(workspace, name, suite_id)
    judged = latest_judgments(workspace, suite_id)
    counts = judged.groupby("model").size()
    labels = judged.groupby("model")["label"].agg(lambda s: ", ".join(f"{k} ×{v}" for k, v in s.value_counts().sort_index().items()))
    metadata = pd.DataFrame.from_dict(get_repository(workspace, name)["metadata"], orient="index").reindex(status["model"])
    table = pd.DataFrame({
        "Model": status["model"], "Status": status["status"], "Accuracy": status["accuracy"],
        "Worst-case accuracy": status["worst_case_accuracy"],
        "Images": [f"{i} / {e}" if e else "" for i, e in zip(status["images"], status["expected_images"])],
        "Judgments": [int(counts.get(m, 0)) for m in status["model"]], "Labels": [labels.get(m, "") for m in status["model"]],
        "Reason": status["reason"], "Run": status["run_id"],
    })  # fmt: skip
    return pd.concat([table, metadata.reset_index(drop=True)], axis=1)


def filter_table(table: pd.DataFrame, text: str, statuses: list[str]) -> pd.DataFrame:
    """Rows whose status is in ``statuses`` and where some cell contains ``text`` (case-insensitive)."""
    keep = table["Status"].isin(statuses)
    if text.strip():
        keep &= table.astype(str).apply(lambda column: column.str.contains(text.strip(), case=False, regex=False)).any(axis=1)
    return table[keep].reset_index(drop=True)


def filters() -> tuple[str, list[str]]:
    """The text filter and the status filter."""
    left, right = st.columns([2, 3])
    text = left.text_input("Filter", key=KEY + "filter", placeholder="model name or metadata, e.g. adam")
    statuses = right.multiselect("Status", list(STATUSES), default=list(STATUSES), key=KEY + "statuses")
    return text, statuses


def show_job(workspace: Workspace) -> None:
    """The repository job this session started (else the newest active one): progress, Cancel, Resume."""
    job_id = st.session_state.get(JOB)
    if job_id is None:
        active = list_jobs(workspace, active_only=True, kind="repository")
        job_id = None if active.empty else active["id"].iloc[0]
    if job_id is None:
        return
    job = job_view.show_job(workspace, job_id, key=KEY)
    if job.status == "done":
        result = job.result
        st.success(
            f"Repository {result['repository']} on {result['suite_id']}: {len(result['done'])} run now, "
            f"{len(result['skipped'])} finished before, {len(result['failed'])} failed."
        )


def start(workspace: Workspace, name: str, suite_id: str) -> None:
    """Start the repository's run as a background job and follow it."""
    job = job_view.start_job(workspace, "repository", {"name": name, "suite_id": suite_id})
    if job is not None:
        st.session_state[JOB] = job.id
        st.rerun()


def matrices_link(table: pd.DataFrame) -> None:
    """Pick a finished model and open its run on the Matrices page."""
    done = table[table["Run"] != ""].set_index("Model")["Run"].to_dict()
    if not done:
        return
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    model = left.selectbox("Model to open in Matrices", list(done), key=KEY + "matrices_model")
    st.session_state[MATRICES_RUN] = done[model]  # the Matrices page opens on this run
    try:
        right.page_link("pages/6_Matrices.py", label=f"Variance matrices of {model}", icon=":material/grid_on:")
    except StreamlitPageNotFoundError:  # the page run on its own (no app around it): no other page to link to
        right.caption(f"Open the Matrices page: it shows {model}'s run.")
