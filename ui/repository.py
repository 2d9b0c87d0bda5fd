"""Streamlit helpers of the Repository page: making a repository from registered models (the zoo in
one click), the models table (status, accuracies, the assessor's verdict, judgments so far, the
metadata, a link to each model's matrices), its filters, and the run job.

The assessor's verdict is the release gate's (:func:`analytics.assessor.suite_verdicts`): a random
forest on the variance-matrix features trained on the human labels of the suite, a judged model's
verdict from the other judged models (leave-one-out, never its own label restated); cached on the
workspace, the runs (id and finishing time) and the labels, so the page refits only when a run
finishes or a judgment changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from analytics import jobs
from analytics.assessor import ASSESSORS, VERDICT_ASSESSOR, human_labels, suite_verdicts
from analytics.exceptions import BackdropError
from analytics.judging import LABELS, judging_progress, label_counts, latest_judgments
from analytics.models import list_models
from analytics.repository import REPOSITORY_STATUSES, create_repository, get_repository, repository_status
from analytics.runs import list_runs
from analytics.suites import suite_labels_of
from analytics.workspace import Workspace, to_csv
from analytics.zoo import list_zoo
from ui import jobs as job_view
from ui import state
from ui.markdown import escape_markdown

KEY = "repository."
JOB = KEY + "job"  # session-state key: the id of the repository job this session started
MEMBERS = KEY + "members"  # the form's model selection
NEW_NAME = KEY + "new_name"  # the form's repository name
NOTICE = KEY + "notice"  # (kind, text) the form's callback leaves for the next run
MATRICES_RUN = "runs.run"  # the Matrices page's run selector (ui.runs.KEY + "run")
MATRICES_PAGE = "pages/6_Matrices.py"
MATRICES_URL = "Matrices"  # the Matrices page's URL path (st.Page derives it from the file name)
NO_ASSESSOR = "no assessor"
ZOO_NAME = "zoo"  # the name the zoo preset proposes
#: Column configuration of the shown table.
COLUMNS = {
    **{name: st.column_config.ProgressColumn(name, format="percent", min_value=0, max_value=1) for name in ("Accuracy", "Worst-case accuracy")},
    "Confidence": st.column_config.ProgressColumn("Confidence", format="percent", min_value=0, max_value=1, help="The assessor's probability of its verdict."),
    "Matrices": st.column_config.LinkColumn("Matrices", display_text="open", help="The model's run on the Matrices page (a new tab)."),
}  # fmt: skip


# -- making a repository from registered models ------------------------------------------------------
def zoo_members(workspace: Workspace) -> tuple[list[str], dict[str, dict]]:
    """The zoo's heads and their backbones, with each head's construction as its metadata.

    Returns
    -------
    models : list of str
        The backbones first, then the heads (sorted by name); empty without a zoo.
    metadata : dict of str to dict
        Head -> strength, augment, seed, family, temperature.
    """
    zoo = list_zoo(workspace)
    return [*dict.fromkeys(zoo["backbone"]), *zoo["name"]], zoo.drop(columns="backbone").set_index("name").to_dict("index")


def create_form(workspace: Workspace, *, expanded: bool) -> None:
    """An expander with the form that records registered models as a repository (the zoo preset above it)."""
    models = [spec.name for spec in list_models(workspace)]
    with st.expander("Make a repository from registered models", expanded=expanded, icon=":material/library_add:"):
        kind, text = st.session_state.pop(NOTICE, (None, ""))
        if kind is not None:
            (st.error if kind == "error" else st.success)(text)
        if not models:
            st.info("No registered model yet: register models on the Models page first.")
            return
        zoo, _ = zoo_members(workspace)
        if zoo:
            st.button(
                "All models of the zoo", key=KEY + "zoo", icon=":material/pets:", on_click=_take_zoo, args=(zoo,),
                help=f"Select the zoo's {len(zoo)} models: its heads and their backbone.",
            )  # fmt: skip
        with st.form(KEY + "create", border=False):
            st.text_input("Repository name", key=NEW_NAME, placeholder="e.g. zoo")
            st.multiselect("Registered models", models, key=MEMBERS, placeholder="models to run together")
            st.form_submit_button("Make the repository", type="primary", icon=":material/check:", on_click=_create, args=(workspace,), key=KEY + "make")


def _take_zoo(zoo: list[str]) -> None:
    st.session_state[MEMBERS] = zoo
    if not st.session_state.get(NEW_NAME):
        st.session_state[NEW_NAME] = ZOO_NAME


def _create(workspace: Workspace) -> None:
    """The form's callback: record the repository and select it on the page (it runs before the page draws)."""
    name, members = st.session_state.get(NEW_NAME, ""), st.session_state.get(MEMBERS, [])
    try:
        record = create_repository(workspace, name.strip(), members, metadata=zoo_members(workspace)[1])
    except BackdropError as err:
        st.session_state[NOTICE] = ("error", str(err))
        return
    st.session_state[KEY + "name"] = name.strip()
    st.session_state[NOTICE] = ("success", f"Repository {name.strip()}: {len(record['models'])} models. Pick a suite and run it.")


# -- the assessor's verdicts --------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdicts:
    """The assessor's verdict per model, or why there is none.

    Attributes
    ----------
    table : DataFrame or None
        Index = model; ``Verdict`` (str, one of ``LABELS``, or 'no assessor' for a judged model when
        too few labels remain without its own) and ``Confidence`` (float in [0, 1], NaN without a verdict);
        None when no assessor can be trained.
    note : str
        One sentence for the caption.
    """

    table: pd.DataFrame | None
    note: str


@st.cache_data(max_entries=16, show_spinner="Predicting the assessor's verdicts…")
def predicted_verdicts(
    workspace_path: str, suite_id: str, run_ids: tuple[str, ...], suite_runs: tuple[tuple[str, str], ...], labels: tuple[tuple[str, str], ...]
) -> pd.DataFrame:
    """:func:`analytics.assessor.suite_verdicts` of ``run_ids``; ``suite_runs`` (every run of the suite:
    id, finishing time) and ``labels`` (model, label) only key the cache."""
    return suite_verdicts(state.open_workspace(workspace_path), suite_id, list(run_ids))


def assessor_verdicts(workspace: Workspace, suite_id: str, runs: pd.Series) -> Verdicts:
    """The assessor's verdicts on ``runs`` (model -> finished run id) from the human labels of ``suite_id``."""
    times = list_runs(workspace, suite_id=suite_id).set_index("id")["finished"].astype(str)
    try:
        verdicts = predicted_verdicts(str(workspace.root), suite_id, tuple(runs), tuple(times.items()), tuple(human_labels(workspace, suite_id).items()))
    except BackdropError as err:  # too few or too uniform labels, or a run's features cannot be computed
        return Verdicts(None, f"No assessor: {err}. See the Assessor page.")
    table = pd.DataFrame({"Verdict": verdicts["label"].replace("", NO_ASSESSOR), "Confidence": verdicts["confidence"]})
    return Verdicts(
        table,
        f"Verdict: the {ASSESSORS[VERDICT_ASSESSOR].title} assessor of the release gate, trained on the human labels of the models judged "
        "on this suite; a judged model's verdict comes from the other judged models (its own label left out), 'no assessor' where too "
        "few remain without it. Confidence: its probability of the verdict.",
    )


# -- the table ----------------------------------------------------------------------------------------
def models_table(workspace: Workspace, name: str, suite_id: str) -> tuple[pd.DataFrame, str]:
    """One row per model of the repository on the suite, ready to show, and the assessor's note.

    Returns
    -------
    table : DataFrame
        Model, Status, Accuracy, Worst-case accuracy (float in [0, 1], NaN until done), Verdict
        (the assessor's label; '' until done, 'no assessor' when none is trained), Confidence
        (float in [0, 1] or NaN), Images ('stored / expected'), Judgments (int: current judgments
        on this suite), Labels (their counts, e.g. 'invariant ×2'), Reason, Run, Matrices (the
        relative URL of the run on the Matrices page, None until done), then one column per
        metadata key.
    note : str
        What the verdict is, or why there is none.
    """
    status = repository_status(workspace, name, suite_id)
    counts = judging_progress(workspace, suite_id).set_index("model")["judged"]  # annotators with a current judgment
    per_label = label_counts(latest_judgments(workspace, suite_id))
    labels = {model: ", ".join(f"{label} ×{n}" for label, n in sorted(row.items()) if n) for model, row in per_label.iterrows()}
    metadata = pd.DataFrame.from_dict(get_repository(workspace, name)["metadata"], orient="index").reindex(status["model"])
    done = status["status"] == "done"
    assessed = assessor_verdicts(workspace, suite_id, status.loc[done].set_index("model")["run_id"])
    verdict = (
        pd.DataFrame({"Verdict": NO_ASSESSOR, "Confidence": float("nan")}, index=status["model"]) if assessed.table is None
        else assessed.table.reindex(status["model"]).fillna({"Verdict": ""})
    )  # fmt: skip
    table = pd.DataFrame({
        "Model": status["model"], "Status": status["status"], "Accuracy": status["accuracy"],
        "Worst-case accuracy": status["worst_case_accuracy"],
        "Verdict": verdict["Verdict"].to_numpy(), "Confidence": verdict["Confidence"].to_numpy(dtype=float),
        "Images": [f"{i} / {e}" if e else "" for i, e in zip(status["images"], status["expected_images"])],
        "Judgments": [int(counts.get(m, 0)) for m in status["model"]], "Labels": [labels.get(m, "") for m in status["model"]],
        "Reason": status["reason"], "Run": status["run_id"],
        "Matrices": [f"{MATRICES_URL}?run={run}" if ok else None for run, ok in zip(status["run_id"], done)],
    })  # fmt: skip
    return pd.concat([table, metadata.reset_index(drop=True)], axis=1), assessed.note


def filter_table(table: pd.DataFrame, text: str, statuses: list[str], verdicts: list[str]) -> pd.DataFrame:
    """Rows whose status is in ``statuses``, whose verdict is in ``verdicts`` (all when empty) and where
    some cell contains ``text`` (case-insensitive)."""
    keep = table["Status"].isin(statuses)
    if verdicts:
        keep &= table["Verdict"].isin(verdicts)
    if text.strip():
        keep &= table.astype(str).apply(lambda column: column.str.contains(text.strip(), case=False, regex=False)).any(axis=1)
    return table[keep].reset_index(drop=True)


def filters(table: pd.DataFrame) -> tuple[str, list[str], list[str]]:
    """The text filter, the status filter and the verdict filter (empty: every verdict)."""
    left, middle, right = st.columns([2, 3, 2])
    text = left.text_input("Filter", key=KEY + "filter", placeholder="model name or metadata, e.g. adam")
    statuses = middle.multiselect("Status", list(REPOSITORY_STATUSES), default=list(REPOSITORY_STATUSES), key=KEY + "statuses")
    trained = bool(set(table["Verdict"]) & set(LABELS))  # fixed options: a choice stays valid when the table changes
    verdicts = right.multiselect("Verdict", list(LABELS), key=KEY + "verdicts", placeholder="every verdict", disabled=not trained)
    return text, statuses, verdicts if trained else []  # a choice left from another suite must not hide every row


def csv_bytes(table: pd.DataFrame) -> bytes:
    """The table as CSV, without the page links (relative to the app, meaningless in a file)."""
    return to_csv(table.drop(columns="Matrices")).encode()


# -- the job and the way to the matrices ----------------------------------------------------------------
def show_job(workspace: Workspace) -> None:
    """The repository job this session started (else the newest active one): progress, Cancel, Resume."""
    job = job_view.follow_job(workspace, "repository", state_key=JOB, key=KEY)
    if job is not None and job.status == "done":
        result = job.result
        suite = suite_labels_of(workspace).get(result["suite_id"], result["suite_id"])
        st.success(
            f"Repository {escape_markdown(result['repository'])} on {escape_markdown(suite)}: {len(result['done'])} run now, "
            f"{len(result['skipped'])} finished before, {len(result['failed'])} failed."
        )


def run_button(workspace: Workspace) -> None:
    """The button that runs the picked repository over the picked suite as a background job."""
    st.button("Run the repository", type="primary", key=KEY + "run", icon=":material/play_arrow:", on_click=_start, args=(workspace,))


def _start(workspace: Workspace) -> None:
    """The button's callback: the job of the pickers' values at the click, started before the page is
    drawn again (:func:`ui.jobs.start_on_click`), so the job :func:`show_job` follows is the one just started."""
    params = {"name": st.session_state.get(KEY + "name"), "suite_id": st.session_state.get(KEY + "suite")}
    job_view.start_on_click(workspace, "repository", params, state_key=JOB)


def table_refresh_s(workspace: Workspace, name: str, suite_id: str) -> float | None:
    """How often the models table refreshes itself: every :data:`ui.jobs.REFRESH_S` seconds while a job
    runs this repository over this suite (its rows change as models finish), else never."""
    running = jobs.list_jobs(workspace, active_only=True, kind="repository")
    wanted = {"name": name, "suite_id": suite_id}
    return job_view.REFRESH_S if any(all(params.get(k) == v for k, v in wanted.items()) for params in running["params"]) else None


def matrices_link(table: pd.DataFrame) -> None:
    """Pick a finished model and open its run on the Matrices page in this tab (the table's links open a new one)."""
    done = table[table["Status"] == "done"].set_index("Model")["Run"].to_dict()
    if not done:
        return
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    model = left.selectbox("Model to open in Matrices", list(done), key=KEY + "matrices_model")
    st.session_state[MATRICES_RUN] = done[model]  # the Matrices page opens on this run, with or without ?run=
    try:
        right.page_link(MATRICES_PAGE, label=f"Variance matrices of {escape_markdown(model)}", icon=":material/grid_on:", query_params={"run": done[model]})
    except StreamlitPageNotFoundError:  # the page run on its own (no app around it): no other page to link to
        right.caption(f"Open the Matrices page: it shows {escape_markdown(model)}'s run.")
