"""Background jobs on the pages (:mod:`analytics.jobs`): a job's progress bar with Cancel / Resume,
refreshed by itself while the job runs, and the panel of active jobs (Home and the pages that start
long work).

A job runs in a worker process of its own, so leaving the page never stops it and never leaves it
running unseen: it is listed here until it ends, and Cancel stops it at its next step.

Team mode: Cancel and Resume are offered only to who may use them (:func:`analytics.jobs.may_control`:
the job's owner or a lead). An account without the ``browse`` permission (annotators, who judge
blind) sees each job's kind, status, progress and owner only: its messages, parameters, results and
errors can name models, so they are never shown to it.
"""

from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from analytics import jobs
from analytics.exceptions import BackdropError, PermissionDeniedError
from analytics.team import allowed
from analytics.workspace import Workspace
from ui.markdown import escape_markdown

REFRESH_S = 2.0  # seconds between two looks at a running job
SUITES_PAGE = "pages/4_Suites.py"
KIND_NAMES = {
    "methods": "Method comparison", "suite": "Suite", "runs": "Runs", "zoo": "Zoo training", "saliency": "Saliency comparison", "gate": "Release gate",
}  # fmt: skip
ENDED = {"done": "Finished", "cancelled": "Cancelled", "failed": "Failed"}
REFUSED = ".refused"  # suffix of a follow_job state key: a refused start, shown once by follow_job


def blind(workspace: Workspace) -> bool:
    """Whether the signed-in account judges blind (no ``browse``): job messages, parameters, results
    and errors, which can name models, are not for it."""
    actor = workspace.actor
    return actor is not None and not allowed(actor.role, "browse")


def _error_text(workspace: Workspace, err: BackdropError, done: str) -> str:
    """The error to show: as it is, but to a blind account only a refusal (which names roles and
    accounts, never models); other errors can quote parameters that name models."""
    if not blind(workspace) or isinstance(err, PermissionDeniedError):
        return escape_markdown(err)
    return f"The job could not be {done}. Ask an analyst or admin to look at it."


def job_text(workspace: Workspace, job: jobs.Job, *, details: bool = True) -> str:
    """One line: what (with ``details``, the job's label, :func:`analytics.jobs.job_label`, its id
    last; else the id alone: labels name models), status, progress, the last message (only with
    ``details``) and who started it."""
    steps = f"{job.done} of {job.total}" if job.total else "starting"
    message = f" · {escape_markdown(job.message)}" if details and job.message else ""
    owner = f" · by {escape_markdown(job.owner)}" if job.owner else ""
    label = jobs.job_label(workspace, job) if details else job.id
    subject, reference = (f"`{job.id}`", "") if label == job.id else (f"“{escape_markdown(label)}”", f" · `{job.id}`")
    return f"{KIND_NAMES.get(job.kind, job.kind)} {subject} · {job.status} · {steps}{message}{owner}{reference}"


def show_job(workspace: Workspace, job_id: str, *, key: str) -> jobs.Job:
    """The job's progress with Cancel while it runs, or how it ended with Resume when it can.

    While the job is active the block refreshes itself every :data:`REFRESH_S` seconds (a
    fragment) and reruns the page once the job ends, so its result appears.

    Parameters
    ----------
    workspace : Workspace
        Acting as the signed-in account (resume checks its role).
    job_id : str
    key : str
        Prefix of the widget keys (unique on the page).

    Returns
    -------
    Job
        The job as it was when the page was drawn.
    """
    job = jobs.get_job(workspace, job_id)
    st.fragment(_job_block, run_every=REFRESH_S if job.active else None, key=f"{key}fragment.{job_id}")(workspace, job_id, key, job.active)
    return job


def _job_block(workspace: Workspace, job_id: str, key: str, was_active: bool) -> None:
    job = jobs.get_job(workspace, job_id)
    if was_active and not job.active:
        st.rerun()  # the whole page: its result (or the reason it stopped) is shown there
    details = not blind(workspace)
    if job.active:
        left, right = st.columns([5, 1], vertical_alignment="bottom")
        left.progress(job.fraction, text=job_text(workspace, job, details=details))
        if jobs.may_control(workspace, job, action="cancel") and right.button(
            "Cancel", key=f"{key}cancel.{job.id}", icon=":material/stop:", disabled=job.status == "cancelling"
        ):
            with st.spinner("Stopping the job…"):
                try:
                    jobs.cancel(workspace, job.id)
                except BackdropError as err:
                    st.error(_error_text(workspace, err, "cancelled"))
                    return
            st.rerun()
        return
    text = f"{ENDED[job.status]}: {job_text(workspace, job, details=details)}"
    if job.status == "done":
        st.caption(text)
        if details and job.kind == "suite":
            suite_link(job.result["suite_id"], job.result.get("suite") or job.result["suite_id"])
        return
    st.warning(text + (" — the worker process was stopped before it finished." if job.message == jobs.INTERRUPTED else ""))
    if not jobs.may_control(workspace, job, action="resume"):
        return
    if st.button("Resume", key=f"{key}resume.{job.id}", icon=":material/play_arrow:", help="Done steps are kept and skipped."):
        try:
            jobs.resume(workspace, job.id)
        except BackdropError as err:
            st.error(_error_text(workspace, err, "resumed"))
            return
        st.rerun()


def suite_link(suite_id: str, label: str) -> None:
    """A link that opens the Suites page on the saved suite ``suite_id`` (``?suite=``), named by its ``label``."""
    try:
        st.page_link(SUITES_PAGE, label=f"Open suite {escape_markdown(label)}", icon=":material/open_in_new:", query_params={"suite": suite_id})
    except StreamlitPageNotFoundError:  # the page run on its own (no app around it): no other page to link to
        st.caption(f"Open it on the Suites page: {escape_markdown(label)}.")


def active_jobs(workspace: Workspace, *, kind: str | None = None, key: str = "jobs.") -> None:
    """Every active job (of ``kind``) with its progress, and Cancel where the account may use it;
    nothing when none runs. Blind accounts see no job messages (:func:`blind`)."""
    table = jobs.list_jobs(workspace, active_only=True, kind=kind)
    if table.empty:
        return
    st.markdown("**Running in the background**")
    for job_id in table["id"]:
        show_job(workspace, job_id, key=key)


def follow_job(workspace: Workspace, kind: str, *, state_key: str, key: str) -> jobs.Job | None:
    """Show the job of ``kind`` this session started (its id at ``st.session_state[state_key]``),
    else the newest active one of that kind: progress, Cancel, Resume. None when there is neither."""
    refused = st.session_state.pop(state_key + REFUSED, None)
    if refused is not None:
        st.error(refused)
    job_id = st.session_state.get(state_key)
    if job_id is None:
        active = jobs.list_jobs(workspace, active_only=True, kind=kind)
        job_id = None if active.empty else active["id"].iloc[0]
    return None if job_id is None else show_job(workspace, job_id, key=key)


def start_on_click(workspace: Workspace, kind: str, params: dict, *, state_key: str) -> None:
    """A start button's ``on_click``: the job starts before the page is drawn, so the status that
    :func:`follow_job` (same ``state_key``) shows next is this job's, never the previous job's
    "Finished" (issue 27.12). A refused start clears the previous job too and is shown in its place
    (to a blind account without the message, as :func:`start_job`)."""
    st.session_state.pop(state_key, None)
    try:
        st.session_state[state_key] = jobs.start(workspace, kind, params).id
    except BackdropError as err:
        st.session_state[state_key + REFUSED] = _error_text(workspace, err, "started")


def start_job(workspace: Workspace, kind: str, params: dict) -> jobs.Job | None:
    """Start a job; a refused request (bad input, role) is shown as an error and gives None (to a
    blind account without the message, which can name the parameters' models)."""
    try:
        return jobs.start(workspace, kind, params)
    except BackdropError as err:
        st.error(_error_text(workspace, err, "started"))
        return None
