"""Run: run registered models over a saved suite (one background job, with progress and Cancel),
list past runs and resume an interrupted one.

A thin view: the engine is :mod:`analytics.inference` via :func:`analytics.runs.start_runs`, run by a
worker process (:mod:`analytics.jobs`, kind ``runs``; :mod:`ui.jobs` shows it); tables are
:mod:`ui.runs`. A cancelled run keeps its finished batches and resumes from them. A refused start
(:class:`~analytics.exceptions.BackdropError`) is shown by :func:`ui.jobs.start_job`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.models import list_models
from analytics.runs import list_runs, runs_snapshot
from analytics.suites import list_suites
from analytics.workspace import Workspace
from ui import jobs as job_view
from ui import runs as view
from ui import state, widgets
from ui.auth import require_page

DEVICES = {"auto": None, "cpu": "cpu", "cuda": "cuda"}
JOB = "run.job"  # session-state key: the id of the runs job this session started


def execute(workspace: Workspace, models: list[str], suite_id: str, *, top_k: int, device: str | None, batch_size: int) -> None:
    """Start the runs as a background job; the page follows it (:func:`show_runs_job`)."""
    params = {"model_names": models, "suite_id": suite_id, "device": device, "batch_size": batch_size, "top_k": top_k}
    job = job_view.start_job(workspace, "runs", params)
    if job is not None:
        st.session_state[JOB] = job.id
        st.rerun()


def show_runs_job(workspace: Workspace) -> None:
    """The runs job this session started (else the newest one still active): progress, Cancel, Resume."""
    job = job_view.follow_job(workspace, "runs", state_key=JOB, key="run.")
    if job is not None and job.status == "done":
        finished = job.result["run_ids"]
        st.success(f"Finished {len(finished)} run(s): {', '.join(finished)}. See their variance matrices on the Matrices page.")


def start_form(workspace: Workspace, suites: pd.DataFrame) -> None:
    names = [spec.name for spec in list_models(workspace)]
    models = st.multiselect("Models", names, default=names[:1], key="run.models", help="Several models over one suite run as one action.")
    records = suites.set_index("id").to_dict("index")
    suite_id = st.selectbox("Suite", list(records), key="run.suite", format_func=lambda s: widgets.suite_label({"id": s, **records[s]}))
    with st.expander("Options"):
        left, middle, right = st.columns(3)
        top_k = int(left.number_input("Top-k neurons", 1, 64, 3, key="run.top_k", help="Embedding neurons picked on the foreground-only image."))
        device = DEVICES[middle.selectbox("Device", list(DEVICES), key="run.device", help="auto = CUDA when available")]
        batch_size = int(right.number_input("Batch size", 1, 512, 32, key="run.batch_size"))
    n_images = records[suite_id]["items"] + records[suite_id]["targets"] if suite_id else 0
    st.caption(f"{len(models)} model(s) × {n_images} images (originals + composites). A finished run is reused; an interrupted one resumes.")
    if st.button("Run", type="primary", disabled=not models or suite_id is None, key="run.start"):
        execute(workspace, models, suite_id, top_k=top_k, device=device, batch_size=batch_size)


def past_runs(workspace: Workspace) -> None:
    st.subheader("Runs")
    table = list_runs(workspace)
    if table.empty:
        st.caption("No runs yet.")
        return
    st.dataframe(view.runs_display(table), hide_index=True, width="stretch", column_config=view.PERCENT, key="run.table")
    st.caption("Worst-case accuracy: share of targets classified correctly under every one of their backgrounds.")
    if table["stale"].any():
        st.caption(
            f"**{view.STALE.capitalize()}**: {int(table['stale'].sum())} run(s) used weights the model no longer has (re-registered since) or a "
            "class mapping that has changed. They stay listed but never feed the Judge queue or the assessor; run the model again."
        )
    unfinished = table[(table["status"] != "done") & ~table["stale"]]  # a stale run cannot be resumed: its weights are gone
    if unfinished.empty:
        return
    records = unfinished.set_index("id").to_dict("index")
    chosen = st.selectbox("Unfinished run", list(records), format_func=lambda r: view.run_label({"id": r, **records[r]}), key="run.resume_choice")
    if st.button("Resume", key="run.resume"):
        run = records[chosen]
        execute(workspace, [run["model"]], run["suite_id"], top_k=int(run["top_k"] or 3), device=None, batch_size=32)


def main() -> None:
    require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Run")
    st.caption(
        "A run composes every target with each of its suite's backgrounds, runs the model on the original and "
        "the composites, and stores five signals per image (true-class and max probability, three embedding "
        "statistics), the prediction and the semantic distance, plus the authors' two statistics of the last convolutional map "
        "where the model has one (an extra on the Matrices page)."
    )
    workspace = state.current_workspace()
    show_runs_job(workspace)
    suites = list_suites(workspace)
    if not list_models(workspace):
        st.info("Register a model on the Models page first (EfficientNet-Lite works offline).")
    elif suites.empty:
        st.info("Build and save a suite on the Suites page first.")
    else:
        start_form(workspace, suites)
    past_runs(workspace)


with runs_snapshot():  # the runs are listed once per rerun, however many parts ask
    main()
