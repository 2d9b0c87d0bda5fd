"""Scenarios: the XIMAGENET-12 scenarios (grey, hue-shifted, rainbow, brightened, blurred, segmented,
transparent and random real backgrounds, blurred object) on the workspace's targets for several
models: a scenario × model accuracy table, robustness scores in the paper's two forms, a class ×
scenario heat map, Table 1's regression, one target across the scenarios, and the per-image CSV.

A thin view: the scenarios and evaluation are :mod:`analytics.robustness.scenarios`, the statistics
:mod:`analytics.robustness.scenario_stats`, tables and figures :mod:`ui.scenarios`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.data import list_targets
from analytics.exceptions import BackdropError
from analytics.models import list_models
from analytics.robustness import SCENARIOS, class_accuracy, robustness_scores, scenario_accuracy, scenario_examples, scenario_regression
from analytics.team import User
from analytics.workspace import Workspace, to_csv
from analytics.zoo import models_to_open_on
from ui import scenarios as view
from ui import state, widgets
from ui.auth import offer, require_page
from ui.markdown import escape_markdown

REQUEST = view.KEY + "request"  # (models, scenarios, seed) of the evaluation shown


def request_form(workspace: Workspace, models: list[str], user: User | None) -> None:
    opened = [name for name in models_to_open_on(workspace) if name in models]
    chosen = st.multiselect("Models", models, default=opened, key=view.KEY + "models", help="Each model is evaluated on every target under every scenario.")
    names = st.multiselect("Scenarios", list(SCENARIOS), default=list(SCENARIOS), format_func=view.label, key=view.KEY + "names", help="The original images are always evaluated (the baseline).")
    seed = int(st.number_input("Seed", 0, 2**31 - 1, 0, key=view.KEY + "seed", help="Seeds the hue, rainbow shift and background drawn, per target."))
    n_targets = len(list_targets(workspace))
    st.caption(f"{len(chosen)} model(s) × {len(names) + 1} scenarios × {n_targets} targets. Results are cached per model and scenario; an interrupted evaluation resumes.")
    # evaluating runs the models and caches their predictions: roles that run models (the library refuses others too)
    if offer(user, "run_models", "Evaluate") and st.button("Evaluate", type="primary", disabled=not chosen or not names, key=view.KEY + "evaluate"):
        try:
            view.evaluate_with_progress(workspace, chosen, names, seed)
        except BackdropError as err:
            st.error(escape_markdown(err))
            return
        st.session_state[REQUEST] = (tuple(chosen), tuple(names), seed)


def show_results(workspace: Workspace, predictions: pd.DataFrame, seed: int) -> None:
    st.subheader("Accuracy per scenario")
    st.dataframe(view.accuracy_display(scenario_accuracy(predictions)), hide_index=True, width="stretch", column_config=view.percent_columns(predictions["model"].unique()), key=view.KEY + "accuracy")
    show_robustness(predictions)
    st.subheader("Accuracy per class and scenario")
    cells = class_accuracy(predictions)
    model = st.selectbox("Model", list(dict.fromkeys(predictions["model"])), key=view.KEY + "heat_model")
    st.plotly_chart(view.class_heatmap(cells, model), key=view.KEY + "heatmap")
    show_regression(predictions)
    show_examples(workspace, predictions, seed)
    st.download_button(
        "Per-image predictions (CSV)", to_csv(predictions).encode(), file_name="scenario-predictions.csv", mime="text/csv",
        icon=":material/download:", key=view.KEY + "download",
    )  # fmt: skip


def show_robustness(predictions: pd.DataFrame) -> None:
    st.subheader("Robustness score")
    scenario_set = st.radio(
        "Score over", list(view.SCENARIO_SET_LABELS), format_func=view.SCENARIO_SET_LABELS.get, horizontal=True, key=view.KEY + "score_over",
        help="Table 3 of the paper scores eight scenarios (no rainbow, brightness or transparent); its numbers compare only with that set.",
    )  # fmt: skip
    try:
        scores = robustness_scores(predictions, scenario_set=scenario_set)
    except BackdropError as err:
        st.caption(escape_markdown(err))
        return
    st.dataframe(view.robustness_display(scores), hide_index=True, width="stretch", key=view.KEY + "robustness")
    st.caption(
        "σ_e²: spread of the per-scenario accuracies around the original accuracy μ; σ_i²: spread of the per-class accuracies "
        "(under the scenarios) around μ. §4 of the paper writes S = 1 − (σ_i + σ_e) with standard deviations (divided by n); "
        "its Table 3 computes 1 − (σ_e² + σ_i²) with variances divided by n − 1, which sits much closer to 1."
    )


def show_regression(predictions: pd.DataFrame) -> None:
    st.subheader("Regression: accuracy ~ model + scenario + class")
    try:
        fit = scenario_regression(predictions)
    except BackdropError as err:
        st.caption(escape_markdown(err))
        return
    st.dataframe(view.regression_display(fit), hide_index=True, width="stretch", key=view.KEY + "regression")
    baseline = fit.baseline
    st.caption(
        f"OLS over {fit.n_cells} (model, scenario, class) accuracies, as the paper's Table 1. Intercept: model {escape_markdown(baseline['model'])}, "
        f"the original images, class {escape_markdown(baseline['class'])}. R² = {fit.r_squared:.3f}, F = {fit.f_value:.4g}, p {view.format_p(fit.f_pvalue)}."
    )


def show_examples(workspace: Workspace, predictions: pd.DataFrame, seed: int) -> None:
    st.subheader("One target across the scenarios")
    targets = list(dict.fromkeys(predictions["target"]))
    target = st.selectbox("Target", targets, key=view.KEY + "target")
    examples = scenario_examples(workspace, target, scenarios=list(dict.fromkeys(predictions["scenario"])), seed=seed)
    mine = predictions[predictions["target"] == target]
    captions = []
    for name in examples:
        verdicts = mine[mine["scenario"] == name]
        said = ", ".join(f"{row.model}: {row.predicted}{' ✓' if row.correct else ' ✗'}" for row in verdicts.itertuples())
        captions.append(f"{view.label(name)} — {said}")
    widgets.image_grid(list(examples.values()), captions, n_columns=4)


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Scenarios")
    st.caption(
        "XIMAGENET-12's scenarios change each target's background (or blur its object) using its mask: how much does each "
        "model's accuracy drop, for which classes, and how robust is it by the paper's score?"
    )
    workspace = state.current_workspace()
    models = [spec.name for spec in list_models(workspace)]
    if not models:
        st.info("Register a model on the Models page first (EfficientNet-Lite works offline).")
        return
    if list_targets(workspace).empty:
        st.info("Add targets (images with masks) on the Data page first.")
        return
    request_form(workspace, models, user)
    request = st.session_state.get(REQUEST)
    if request is None:
        st.caption("Choose models and scenarios, then Evaluate.")
        return
    chosen, names, seed = request
    try:
        predictions = view.evaluate_with_progress(workspace, list(chosen), list(names), seed)  # cached: instant
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    show_results(workspace, predictions, seed)


main()
