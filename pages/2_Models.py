"""Models: the registry, registering new models, training the zoo, and accuracy on the original targets.

A thin view: loading, validating and storing models is :mod:`analytics.models`; evaluation is
:mod:`analytics.inference`; the zoo (:mod:`analytics.zoo`) trains as a background job (kind ``zoo``:
progress, Cancel, Resume via :mod:`ui.jobs`; ``st.session_state`` keeps only its id). The page
catches only :class:`~analytics.exceptions.BackdropError`.
"""

from __future__ import annotations

import streamlit as st

from analytics.data import list_targets, targets_stamp
from analytics.exceptions import BackdropError
from analytics.figures import per_class_accuracy_chart
from analytics.models import ModelSpec, list_models
from analytics.workspace import Workspace, model_keys
from ui import cache, state
from ui import jobs as job_view
from ui import models as ui_models
from ui.auth import offer, require_page
from ui.markdown import escape_markdown
from ui.model_form import LAST_REGISTERED, register_form

TAB = "models.tab"  # the open tab (its label)


def show_registry(workspace: Workspace) -> None:
    specs = list_models(workspace)
    if not specs:
        st.info("No models yet — register one in the **Register** tab, or run `python -m analytics add-model --arch efficientnet-lite0`.")
        return
    st.caption("Embedding = the layer before the classifier head (what the embedding signals read).")
    st.dataframe(ui_models.model_table(specs), hide_index=True, width="stretch", column_config=ui_models.TABLE_CONFIG)


def show_zoo(workspace: Workspace) -> None:
    """The zoo form; the zoo job this session started (else the newest active one) with its heads once done."""
    st.caption(
        "A zoo of small heads on one frozen backbone, each trained where the class predicts the background with a "
        "known strength s: models whose background reliance is known by construction (for the Assessor page)."
    )
    params = ui_models.zoo_form(workspace)
    if params is not None:
        job = job_view.start_job(workspace, "zoo", params)
        if job is not None:
            st.session_state[ui_models.ZOO_JOB] = job.id
    job = job_view.follow_job(workspace, "zoo", state_key=ui_models.ZOO_JOB, key=ui_models.ZOO_KEY)
    if job is not None and job.status == "done":
        heads = len(job.result["models"])
        st.success(f"The zoo has {heads} heads; {job.result['trained']} trained now, {heads - job.result['trained']} kept.")
        st.dataframe(
            ui_models.zoo_result_table(job.result), hide_index=True, width="stretch",
            column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("Accuracy", "Held-out accuracy")},
        )  # fmt: skip


def show_accuracy(workspace: Workspace) -> None:
    specs = {spec.name: spec for spec in list_models(workspace)}
    if not specs:
        st.info("Register a model to see its accuracy on the original target images.")
        return
    name = st.selectbox("Model", list(specs), key="models.evaluate")
    spec = specs[name]
    try:
        result = ui_models.evaluation(str(workspace.root), name, model_keys(workspace).keys[name], targets_stamp(workspace))
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    left, middle, right = st.columns(3)
    left.metric("Accuracy on original targets", f"{result.accuracy:.1%}")
    middle.metric("Targets", result.n)
    right.metric("Label space", f"{spec.label_space.kind} ({spec.n_outputs})")
    chart, table = st.columns([3, 2])
    chart.plotly_chart(per_class_accuracy_chart(result), width="stretch")
    table.dataframe(
        ui_models.per_class_table(result), hide_index=True,
        column_config={"Accuracy": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)},
    )
    with st.expander("Per target"):
        st.dataframe(result.table, hide_index=True, width="stretch")
    show_top_predictions(workspace, spec)


def show_top_predictions(workspace: Workspace, spec: ModelSpec) -> None:
    targets = list_targets(workspace)
    st.subheader("Top predictions on one target")
    target = st.selectbox("Target", targets["id"], key="models.target")
    image_hash = targets.set_index("id").loc[target, "image_hash"]
    image_column, table_column = st.columns([1, 2])
    image_column.image(cache.load_array(str(workspace.root), image_hash), caption=escape_markdown(target), width="stretch")
    try:
        top = ui_models.top_predictions(str(workspace.root), spec.name, model_keys(workspace).keys[spec.name], image_hash)
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    table_column.dataframe(
        top, hide_index=True, width="stretch",
        column_config={"probability": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)},
    )


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Models")
    workspace = state.current_workspace()
    if st.session_state.get(LAST_REGISTERED):
        st.success(f"Registered {escape_markdown(repr(st.session_state.pop(LAST_REGISTERED)))}.")
    # registering loads model files (TorchScript and ONNX are code): admins only; the library refuses others too.
    # A role without a tab is told which role it needs, rather than finding the tab gone.
    registering = offer(user, "register_models", "Registering models (the Register tab)")
    training = offer(user, "run_models", "Training a model zoo (the Zoo tab)")
    names = ["Registered", *(["Register"] if registering else []), *(["Zoo"] if training else []), "Accuracy"]
    # a stateful tab bar: the chosen tab is kept in session state, so the rerun after an action (the
    # "Registered …" message above shifts the page) reopens it instead of "Registered" (issue 42.11b)
    tabs = dict(zip(names, st.tabs(names, key=TAB, on_change="rerun")))
    with tabs["Registered"]:
        show_registry(workspace)
    if registering:
        with tabs["Register"]:
            register_form(workspace)
    if training:
        with tabs["Zoo"]:
            show_zoo(workspace)
    with tabs["Accuracy"]:
        show_accuracy(workspace)


main()
