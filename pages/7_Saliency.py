"""Saliency: where a model looks on a target's original and on its composites, and how much of its
attribution falls on the object.

A thin view: attribution methods, which of them a model can run, and the comparison over many
targets (the background job kind ``saliency``) are :mod:`analytics.saliency`; caching, overlays,
tables and the chart are :mod:`ui.saliency`. One target's explanation stays inline (a few images).
The address bar holds run, model, suite, class, target and method (:mod:`ui.deeplink`). The page
catches only :class:`~analytics.exceptions.BackdropError`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.data import list_targets
from analytics.exceptions import BackdropError
from analytics.inference import class_problems
from analytics.jobs import latest_job
from analytics.runs import list_runs, runs_snapshot
from analytics.saliency import BASELINES, CLEAREST_FIRST, METHODS
from analytics.suites import list_suites
from analytics.team import User
from analytics.workspace import Workspace
from ui import deeplink, state, widgets
from ui import jobs as job_view
from ui import saliency as view
from ui.auth import offer, require_page
from ui.markdown import escape_markdown

KEY = "saliency."
NO_SUITE = "(originals only)"
NOT_RUNNABLE = (
    "they need layers or hooks the model does not give; TorchScript models accept no hooks, so Grad-CAM, Grad-CAM++ and "
    "guided backprop are not offered for them; ONNX models run in ONNX Runtime, which computes no gradients, so only "
    "occlusion and RISE are offered for them"
)


def follow_run_link(runs: pd.DataFrame) -> None:
    """A link's ``?run=`` opens that run's model and suite (once per new link)."""
    st.session_state.pop(KEY + "run", None)  # set again below only when the link is new
    deeplink.adopt("run", KEY + "run", runs["id"].tolist())
    run = st.session_state.get(KEY + "run")
    if run is not None:
        row = runs.set_index("id").loc[run]
        st.session_state[KEY + "model"], st.session_state[KEY + "suite"] = row["model"], row["suite_id"]


def keep_valid(key: str, options: list) -> None:
    """Drop a widget's remembered value that is no longer among its options (its first option shows)."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def choose_method(model: str, methods: list[str]) -> str:
    """The method picker over what ``model`` can run: clearest first, and the clearest by default —
    also after a model change, unless the user picked another method."""
    key, auto_key = KEY + "method", KEY + "method_default"
    unknown = deeplink.adopt("method", key, methods)
    if unknown is not None:
        st.warning(f"{escape_markdown(model)} cannot run the linked method {escape_markdown(repr(unknown))}; showing {METHODS[methods[0]].name} instead.")
    auto = st.session_state.get(auto_key)
    current = st.session_state.get(key)
    if current not in methods or (auto is not None and auto[0] != model and current == auto[1]):
        st.session_state[key] = methods[0]
    if st.session_state[key] == methods[0]:
        st.session_state[auto_key] = (model, methods[0])
    left_out = [METHODS[k].name for k in CLEAREST_FIRST if k not in methods]
    return st.selectbox(
        "Method", methods, format_func=lambda k: METHODS[k].name, key=key,
        help="Listed from the clearest maps to the noisiest; the first one is the default. Grad-CAM's coarse, smooth maps "
        "read at a glance; gradient methods show pixel-level detail that often looks like speckle."
        + (f" Not offered for {model}: {', '.join(left_out)} ({NOT_RUNNABLE})." if left_out else ""),
    )  # fmt: skip


def choose_settings(model: str, methods: list[str]) -> view.Settings:
    method = choose_method(model, methods)
    st.caption(METHODS[method].reference)
    with st.expander("Method settings"):
        method_settings = view.method_settings(method, key=KEY + "settings")
    threshold = st.slider(
        "Binarisation: top share of pixels", 0.05, 0.95, 0.2, 0.05, key=KEY + "threshold",
        help=f"The map's most important pixels kept for IoU, precision, recall and F1 ({view.BINARY_COLOUR_NAME} outline).",
    )  # fmt: skip
    faithful = st.checkbox("Insertion / deletion AUC", value=True, key=KEY + "faithfulness")
    steps, baseline = None, BASELINES[0]
    if faithful:
        left, right = st.columns(2)
        steps = int(left.number_input("Steps", 2, 256, 16, key=KEY + "steps"))
        baseline = right.selectbox("Baseline", BASELINES, key=KEY + "baseline", help="blank: zeros in model input; blur: Gaussian blur")
    return view.Settings(method, method_settings, float(threshold), steps, baseline)


def show_target(workspace_path: str, model: str, spec_key: str, settings: view.Settings, target: str, suite: str | None, n_composites: int) -> None:
    try:
        with st.spinner(f"Explaining {escape_markdown(target)}{f' and {n_composites} composites' if n_composites else ''} with {METHODS[settings.method].name}…", show_time=True):
            result = view.explain_target(workspace_path, model, spec_key, settings, target, suite, n_composites)
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    st.caption(
        f"Heat map: {METHODS[settings.method].name} of the true class's most probable output. {view.MASK_COLOUR_NAME.capitalize()}: "
        f"the object's mask; {view.BINARY_COLOUR_NAME}: the top {settings.threshold:.0%} of the map's pixels."
    )
    legend, words = st.columns([1, 3], vertical_alignment="center")
    legend.image(view.colour_legend(), width="stretch")
    words.caption(view.LEGEND_CAPTION)
    widgets.image_grid(view.overlays(result, settings.threshold), view.captions(result), n_columns=3)
    table = view.metrics_table(result)
    st.dataframe(table, hide_index=True, width="stretch", column_config=view.METRIC_COLUMNS)


def show_comparison(
    workspace: Workspace, user: User | None, models: list[str], default: list[str], settings: view.Settings, targets: list[str], suite: str | None, n_composites: int
) -> None:
    st.subheader("Object share per model × method")
    st.caption(
        "Mean share of positive attribution inside the object's mask, on originals and on their composites. A model "
        "that keeps looking at the object when the scene changes is a good sign."
    )
    left, middle, right = st.columns(3)
    chosen_models = left.multiselect("Models", models, default=default, key=KEY + "compare_models")
    widgets.prefill(KEY + "compare_methods", [settings.method], follows=settings.method)  # follows the page's method
    chosen_methods = middle.multiselect("Methods", list(CLEAREST_FIRST), format_func=lambda k: METHODS[k].name, key=KEY + "compare_methods")
    n_targets = int(right.number_input("First targets", 1, max(1, len(targets)), min(4, len(targets)), key=KEY + "compare_targets"))
    params = view.survey_params(chosen_models, chosen_methods, settings, targets[:n_targets], suite, n_composites)
    if offer(user, "run_models", "Comparing saliency across models") and st.button("Compare", key=KEY + "compare", disabled=not (chosen_models and chosen_methods), help="Runs as a background job."):
        if job_view.start_job(workspace, "saliency", params) is None:
            return
    job = latest_job(workspace, "saliency", params)
    if job is None or not job.active:
        job_view.active_jobs(workspace, kind="saliency", key=KEY)  # comparisons started with other settings
    if job is None:
        st.caption(
            "Runs in the background (Home lists it; Cancel stops it, Resume finishes it). Each model × method × target is "
            "explained once and kept in the workspace, so a repeated comparison is read back."
        )
        return
    job = job_view.show_job(workspace, job.id, key=KEY)
    if job.status != "done":
        return
    table = view.comparison_table(job.result["rows"])
    if not table.empty:
        st.plotly_chart(view.comparison_chart(table), width="stretch")
        st.dataframe(table, hide_index=True, width="stretch")
    if job.result["skipped"]:
        pairs = ", ".join(f"{model} · {METHODS[method].name}" for model, method in job.result["skipped"])
        st.caption(f"Not run: {escape_markdown(pairs)} ({NOT_RUNNABLE}).")


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Saliency")
    st.caption(
        "Attribution maps of the true class on a target and its composites, scored against the object's mask "
        "(IoU, precision, recall, F1, pointing game, share inside) and by insertion / deletion AUC."
    )
    workspace = state.current_workspace()
    workspace_path = str(workspace.root)
    models = view.registered_models(workspace)
    targets = list_targets(workspace)
    if not models or targets.empty:
        st.info("Saliency needs a registered model (Models page) and targets (Data page).")
        st.stop()
    suites = list_suites(workspace).set_index("id").to_dict("index")
    classes = sorted(targets["class_name"].unique())
    cannot = class_problems(workspace, list(models))  # open on a model that can score the classes, not on an error
    with st.container(border=True):  # the pickers in the page: in the sidebar they sat below every page link
        follow_run_link(list_runs(workspace))
        deeplink.adopt("model", KEY + "model", list(models))
        keep_valid(KEY + "model", list(models))
        model_column, class_column, target_column = st.columns(3)
        model = model_column.selectbox(
            "Model", list(models), key=KEY + "model", index=next((i for i, name in enumerate(models) if name not in cannot), 0),
            format_func=lambda name: f"{name} (cannot score every class)" if name in cannot else name,
        )  # fmt: skip
        deeplink.adopt("class", KEY + "class", classes)
        with class_column:
            class_name = widgets.class_filter(classes, key=KEY + "class", label="Targets of class")
        shown = targets["id"].tolist() if class_name is None else targets.loc[targets["class_name"] == class_name, "id"].tolist()
        deeplink.adopt("target", KEY + "target", shown)
        keep_valid(KEY + "target", shown)
        target = target_column.selectbox("Target", shown, key=KEY + "target")
        deeplink.adopt("suite", KEY + "suite", list(suites))
        keep_valid(KEY + "suite", [NO_SUITE, *suites])
        suite_column, count_column = st.columns([2, 1])
        suite = suite_column.selectbox(
            "Composites from suite", [NO_SUITE, *suites], key=KEY + "suite",
            format_func=lambda s: s if s == NO_SUITE else suites[s]["label"],
        )  # fmt: skip
        suite = None if suite == NO_SUITE else suite
        n_composites = int(count_column.number_input("Composites shown", 0, 32, 5, key=KEY + "n_composites")) if suite else 0
        try:
            with st.spinner(f"Loading {escape_markdown(model)}…", show_time=True):
                methods = view.runnable_methods(workspace_path, model, models[model])
        except BackdropError as err:
            st.error(escape_markdown(err))
            st.stop()
        settings = choose_settings(model, methods)
    runs = list_runs(workspace, model=model, suite_id=suite) if suite else None
    deeplink.publish(
        run=None if runs is None or runs.empty else runs["id"].iloc[0], model=model, suite=suite, **{"class": class_name},
        target=target, method=settings.method,
    )  # fmt: skip
    if not suites:
        st.info("No suite yet: only the original is shown. Build one on the Suites page to see composites.")
    show_target(workspace_path, model, models[model], settings, target, suite, n_composites)
    # compared by default: the page's model, or the first that can score the workspace's classes (issue 47.10d)
    scorable = [name for name in models if name not in cannot]
    default = [model] if model in scorable else scorable[:1]
    show_comparison(workspace, user, list(models), default, settings, targets["id"].tolist(), suite, n_composites)


with runs_snapshot():  # the runs are listed once per rerun, however many parts ask
    main()
