"""Run: run registered models over a saved suite (one background job, with progress and Cancel),
list past runs and resume an interrupted one.

A thin view: the engine is :mod:`analytics.inference` via :func:`analytics.api.run` (the flow the command
line's ``run`` and a notebook call), run by a worker process (:mod:`analytics.jobs`, kind ``runs``; :mod:`ui.jobs` shows it); tables are
:mod:`ui.runs`. A cancelled run keeps its finished batches and resumes from them. Run and Resume start
the job in their ``on_click`` (:func:`ui.jobs.start_on_click`), before the page is drawn, so the
status on top is always the job just started; a refused start
(:class:`~analytics.exceptions.BackdropError`) is shown in its place.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.inference import class_problems
from analytics.models import list_models
from analytics.runs import list_runs, runs_snapshot
from analytics.suites import list_suites
from analytics.workspace import Workspace
from analytics.zoo import models_to_open_on
from ui import jobs as job_view
from ui import runs as view
from ui import state
from ui.auth import require_page
from ui.markdown import escape_markdown

DEVICES = {"auto": None, "cpu": "cpu", "cuda": "cuda"}
JOB = "run.job"  # session-state key: the id of the runs job this session started


def start_from_form(workspace: Workspace) -> None:
    """Run's ``on_click``: the runs of the form's values as they are at the click, started before the
    page is drawn again, so the job the page follows (:func:`show_runs_job`) is the one just started."""
    get = st.session_state.get
    params = {
        "model_names": list(get("run.models", [])), "suite_id": get("run.suite"), "device": DEVICES[get("run.device", "auto")],
        "batch_size": None if get("run.batch_size") is None else int(get("run.batch_size")), "top_k": int(get("run.top_k", 3)),
    }  # fmt: skip
    job_view.start_on_click(workspace, "runs", params, state_key=JOB)


def resume_chosen(workspace: Workspace, unfinished: dict[str, dict]) -> None:
    """Resume's ``on_click``: the unfinished run picked at the click, started as :func:`start_from_form` does."""
    run = unfinished[st.session_state["run.resume_choice"]]
    params = {"model_names": [run["model"]], "suite_id": run["suite_id"], "device": None, "batch_size": None, "top_k": int(run["top_k"] or 3)}
    job_view.start_on_click(workspace, "runs", params, state_key=JOB)


def show_runs_job(workspace: Workspace) -> None:
    """The runs job this session started (else the newest one still active): progress, Cancel, Resume."""
    job = job_view.follow_job(workspace, "runs", state_key=JOB, key="run.")
    if job is not None and job.status == "done":
        finished = job.result["run_ids"]
        labels = list_runs(workspace).set_index("id")["label"]
        named = ", ".join(escape_markdown(labels.get(run_id, run_id)) for run_id in finished)
        st.success(f"Finished {len(finished)} run(s): {named}. See their variance matrices on the Matrices page.")
        for model, reason in job.result.get("failed", {}).items():
            st.warning(f"{escape_markdown(model)} did not run: {escape_markdown(reason)}")


def start_form(workspace: Workspace, suites: pd.DataFrame) -> None:
    names = [spec.name for spec in list_models(workspace)]
    cannot = class_problems(workspace, names)  # over the workspace's classes: the suite's are among them
    models = st.multiselect(
        "Models", names, default=models_to_open_on(workspace)[:1], key="run.models",
        help="Several models over one suite run as one action; a model that cannot score the suite's classes is reported and the others run.",
    )  # fmt: skip
    if cannot:
        st.caption(f"Cannot score every class of this workspace (they would be skipped): {escape_markdown(', '.join(cannot))}.")
    records = suites.set_index("id").to_dict("index")
    suite_id = st.selectbox("Suite", list(records), key="run.suite", format_func=lambda s: records[s]["label"])
    with st.expander("Options"):
        left, middle, right = st.columns(3)
        left.number_input("Top-k neurons", 1, 64, 3, key="run.top_k", help="Embedding neurons picked on the foreground-only image.")
        middle.selectbox("Device", list(DEVICES), key="run.device", help="auto = CUDA when available")
        right.number_input(  # read at the click by start_from_form
            "Batch size", 1, 512, None, key="run.batch_size", placeholder="auto",
            help="Images per batch. Left empty, 256 on a GPU (a model that does not fit halves it) and 32 on a CPU.",
        )  # fmt: skip
    n_images = records[suite_id]["items"] + records[suite_id]["targets"] if suite_id else 0
    st.caption(f"{len(models)} model(s) × {n_images} images (originals + composites). A finished run is reused; an interrupted one resumes.")
    st.button("Run", type="primary", disabled=not models or suite_id is None, key="run.start", on_click=start_from_form, args=(workspace,))


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
    st.selectbox("Unfinished run", list(records), format_func=lambda r: records[r]["label"], key="run.resume_choice")
    st.button("Resume", key="run.resume", on_click=resume_chosen, args=(workspace, records))


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
