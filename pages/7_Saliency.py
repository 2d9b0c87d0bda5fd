"""Saliency: where a model looks on a target's original and on its composites, and how much of its
attribution falls on the object.

A thin view: attribution methods and mask metrics are :mod:`analytics.saliency`; caching, overlays,
tables and the chart are :mod:`ui.saliency`. The page catches only
:class:`~analytics.exceptions.BackdropError`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.datasets import list_targets
from analytics.exceptions import BackdropError
from analytics.saliency import BASELINES, METHODS
from analytics.suites import list_suites
from ui import state, widgets
from ui import saliency as view
from ui.auth import require_page

NO_SUITE = "(originals only)"


def choose_settings() -> view.Settings:
    method = st.selectbox(
        "Method", list(METHODS), index=list(METHODS).index(view.DEFAULT_METHOD), format_func=lambda k: METHODS[k].name, key="saliency.method",
        help=f"{METHODS[view.DEFAULT_METHOD].name} (the default) gives coarse, smooth maps that read at a glance; gradient "
        "methods show pixel-level detail that often looks like speckle. TorchScript models cannot run Grad-CAM (no hooks).",
    )  # fmt: skip
    st.caption(METHODS[method].reference)
    with st.expander("Method settings"):
        method_settings = view.method_settings(method, key="saliency.settings")
    threshold = st.slider(
        "Binarisation: top share of pixels", 0.05, 0.95, 0.2, 0.05, key="saliency.threshold",
        help=f"The map's most important pixels kept for IoU, precision, recall and F1 ({view.BINARY_COLOUR_NAME} outline).",
    )
    faithful = st.checkbox("Insertion / deletion AUC", value=True, key="saliency.faithfulness")
    steps, baseline = None, BASELINES[0]
    if faithful:
        left, right = st.columns(2)
        steps = int(left.number_input("Steps", 2, 256, 16, key="saliency.steps"))
        baseline = right.selectbox("Baseline", BASELINES, key="saliency.baseline", help="blank: zeros in model input; blur: Gaussian blur")
    return view.Settings(method, method_settings, float(threshold), steps, baseline)


def show_target(workspace_path: str, model: str, spec_key: str, settings: view.Settings, target: str, suite: str | None, n_composites: int) -> None:
    try:
        result = view.explain_target(workspace_path, model, spec_key, settings, target, suite, n_composites)
    except BackdropError as err:
        st.error(str(err))
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
    st.dataframe(
        table, hide_index=True, width="stretch",
        column_config={"Inside share": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)},
    )


def show_comparison(workspace_path: str, models: dict[str, str], settings: view.Settings, targets: list[str], suite: str | None, n_composites: int) -> None:
    st.subheader("Object share per model × method")
    st.caption(
        "Mean share of positive attribution inside the object's mask, on originals and on their composites. A model "
        "that keeps looking at the object when the scene changes is a good sign."
    )
    left, middle, right = st.columns(3)
    chosen_models = left.multiselect("Models", list(models), default=list(models)[:1], key="saliency.compare_models")
    widgets.prefill("saliency.compare_methods", [settings.method], follows=settings.method)  # follows the page's method
    chosen_methods = middle.multiselect("Methods", list(METHODS), format_func=lambda k: METHODS[k].name, key="saliency.compare_methods")
    n_targets = int(right.number_input("First targets", 1, max(1, len(targets)), min(4, len(targets)), key="saliency.compare_targets"))
    if not st.button("Compare", key="saliency.compare"):
        st.caption("Each cell explains every chosen target and composite once; results are cached.")
        return
    rows, progress = [], st.progress(0.0)
    pairs = [(m, k) for m in chosen_models for k in chosen_methods]
    for i, (model, method) in enumerate(pairs):
        # the page's settings belong to its method; other methods run with their defaults
        cell = settings if method == settings.method else view.Settings(method, (), settings.threshold, None, settings.baseline)
        try:
            rows.append(view.inside_share_comparison(workspace_path, model, models[model], cell, suite, tuple(targets[:n_targets]), n_composites))
        except BackdropError as err:
            st.error(f"{model} · {METHODS[method].name}: {err}")
        progress.progress((i + 1) / len(pairs))
    if rows:
        table = pd.DataFrame(rows)
        st.plotly_chart(view.comparison_chart(table), width="stretch")
        st.dataframe(table, hide_index=True, width="stretch")


def main() -> None:
    require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
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
    with st.sidebar:
        model = st.selectbox("Model", list(models), key="saliency.model")
        target = st.selectbox("Target", targets["id"], key="saliency.target")
        suite = st.selectbox(
            "Composites from suite", [NO_SUITE, *suites], key="saliency.suite",
            format_func=lambda s: s if s == NO_SUITE else widgets.suite_label({"id": s, **suites[s]}),
        )  # fmt: skip
        suite = None if suite == NO_SUITE else suite
        n_composites = int(st.number_input("Composites shown", 0, 32, 5, key="saliency.n_composites")) if suite else 0
        settings = choose_settings()
    if not suites:
        st.info("No suite yet: only the original is shown. Build one on the Suites page to see composites.")
    show_target(workspace_path, model, models[model], settings, target, suite, n_composites)
    show_comparison(workspace_path, models, settings, targets["id"].tolist(), suite, n_composites)


main()
