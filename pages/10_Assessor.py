"""Assessor: learn the invariant / borderline / variant decision from features of the variance matrices,
score it as the paper does (2/3 train, 1/3 test, repeated random splits) against the same learners fed
only the accuracy statistics and against a worst-case-accuracy threshold, predict the label of models
nobody judged, and explain each prediction by Shapley values.

A thin view: the learning and which columns each assessor reads are :mod:`analytics.assessor`
(the same as ``python -m analytics assess``), features :func:`analytics.assessor.features_table`,
caching, tables and charts :mod:`ui.agreement`. Too few labelled models is not an error here but an
explanation of how many are needed.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.assessor import (
    ASSESSORS,
    FEATURE_SETS,
    MAX_EXACT_FEATURES,
    SHAP_PERMUTATIONS,
    feature_columns,
    human_labels,
    predict,
    shapley_values,
)
from analytics.exceptions import BackdropError, InvalidInputError
from analytics.figures import assessor_bars, shapley_bars
from analytics.judging import LABELS
from analytics.runs import runs_snapshot
from analytics.workspace import Workspace
from analytics.zoo import construction_labels
from ui import agreement as view
from ui import judge, state
from ui.auth import require_page
from ui.markdown import escape_markdown

KEY = "assessor."
HUMAN, CONSTRUCTION = "human", "construction"
SOURCES = {
    HUMAN: "Human labels (consensus where recorded, else the annotators' majority vote)",
    CONSTRUCTION: "Construction labels (how the zoo models were built; not human judgments)",
}
TOP_FEATURES = 10


def choose_inputs(workspace: Workspace) -> tuple[str, str, int, str]:
    suites = judge.suites_with_runs(workspace)
    if suites.empty:
        st.info("The assessor learns from variance matrices: run models over a suite first (Run page).")
        st.stop()
    labels = dict(zip(suites["id"], suites["label"]))
    left, middle, right = st.columns([3, 3, 2])
    suite_id = left.selectbox("Features from the runs over suite", list(labels), format_func=labels.__getitem__, key=KEY + "suite")
    feature_set = left.radio(
        "Matrix features", list(FEATURE_SETS), format_func=lambda name: FEATURE_SETS[name].title, key=KEY + "features",
        help="The ML4ML authors' features (their code's definitions: mean, squared mean, std, error rate above 0.15, "
        "discontinuity, asymmetry, signed gradients, sensitivity to a 90 % subsample), or Backdrop's earlier set.",
    )  # fmt: skip
    source = middle.radio("Labels to learn", list(SOURCES), format_func=SOURCES.__getitem__, key=KEY + "labels")
    repeats = right.slider("Random splits", 1, 50, 10, key=KEY + "repeats", help="The paper repeats the 2/3 : 1/3 split 10 times.")
    return suite_id, source, int(repeats), feature_set


def load_labels(workspace: Workspace, source: str, suite_id: str) -> pd.Series:
    if source == CONSTRUCTION:
        labels = construction_labels(workspace)
        st.caption(
            ":material/construction: **Construction labels** come from the background strength each zoo model was "
            "trained with (s ≤ 0.25 invariant, 0.5 borderline, ≥ 0.75 variant). They are a ground truth of the "
            "construction, not anyone's judgment."
        )
        return labels
    st.caption(
        ":material/groups: **Human labels**: the consensus a lead recorded on this suite (Adjudication page), else the "
        "majority vote of the annotators' latest judgments there (Agreement page); judgments on other suites judged "
        "other matrices and do not count here."
    )
    return human_labels(workspace, suite_id)


def show_evaluation(features: pd.DataFrame, labels: pd.Series, repeats: int, source: str, feature_set: str) -> None:
    try:
        report = view.assessor_report(features, labels, repeats)
    except InvalidInputError as err:
        what = "judged" if source == HUMAN else "zoo"
        st.info(f"Not enough labelled models yet: {escape_markdown(err)}.", icon=":material/hourglass_empty:")
        st.caption(f"{len(labels)} {what} model(s) have features on this suite; the assessor needs more.")
        st.stop()
    counts = " · ".join(f"{n} {label}" for label, n in report.class_counts.items())
    st.markdown(f"**{report.n_models} labelled models** ({counts}), {len(report.feature_names)} matrix features, {report.repeats} splits.")
    left, right = st.columns([2, 3], gap="large")
    left.dataframe(
        view.report_table(report),
        hide_index=True,
        width="stretch",
        column_config={
            "Accuracy": st.column_config.NumberColumn(format="percent"),
            "± std": st.column_config.NumberColumn(format="percent"),
            "κ": st.column_config.NumberColumn(format="%.2f", help="Cohen's κ of the predictions against the labels on the test split."),
        },
    )
    left.caption(
        "The matrix assessors see only the variance-matrix features; the same two learners on accuracy, original and "
        "worst-case accuracy are the learned baseline (do the matrices tell more than the accuracy numbers?); the "
        "threshold sees only the worst-case accuracy. All share the same splits. Paper (human labels, 250 models): "
        "random forest 79.7 ± 7.5 %, AdaBoost 74.8 ± 9.1 %, worst-case threshold 64.4 %."
    )
    right.plotly_chart(assessor_bars(report.table()), width="stretch")
    for name, scores in report.scores.items():
        if scores.failed:
            st.warning(
                f"{ASSESSORS[name].title}: {scores.failed} of {report.repeats} fits refused by scikit-learn ({scores.failure}); "
                "its scores cover the other splits only (none: no score).",
                icon=":material/warning:",
            )
    with st.expander("Features each assessor reads"):
        st.caption(
            "Each matrix feature is one statistic of one signal's variance matrix (the signal's name first). In the "
            "matrices, moving right means the first background is further from the original, moving up the second one."
        )
        st.dataframe(view.feature_glossary(feature_columns(features.columns, "random_forest"), feature_set), hide_index=True, width="stretch")
        st.caption("The columns each assessor reads (ids as in `python -m analytics assess --json`):")
        st.dataframe(view.assessor_inputs_table(report), hide_index=True, width="stretch")


def show_predictions(features: pd.DataFrame, labels: pd.Series, feature_set: str) -> None:
    st.subheader("Predictions and why")
    kind = st.selectbox(
        "Assessor", list(ASSESSORS), format_func=lambda k: ASSESSORS[k].title, key=KEY + "kind",
        help="Trained on every labelled model.",
    )  # fmt: skip
    try:
        fitted = view.fitted_assessor(features, labels, kind)
    except InvalidInputError as err:
        st.warning(escape_markdown(err))
        return
    unlabelled = features.index.difference(labels.index)
    if len(unlabelled):
        table = predict(fitted, features.loc[unlabelled]).reset_index(names="model")
        st.dataframe(
            table,
            hide_index=True,
            width="stretch",
            column_config={
                f"p_{label}": st.column_config.ProgressColumn(f"P({label})", format="percent", min_value=0, max_value=1) for label in LABELS
            },
        )
        st.caption(f"{len(unlabelled)} model(s) without a label, with the assessor's probability of each label.")
    else:
        st.caption("Every model with a run on this suite is labelled; explanations below show what the assessor learnt.")
    model = st.selectbox("Explain the prediction for", [*unlabelled, *labels.index.intersection(features.index)], key=KEY + "explain")
    try:
        explanation = shapley_values(fitted, features.loc[[model]])
    except BackdropError as err:
        st.warning(escape_markdown(err))
        return
    target = explanation.target[model]
    st.plotly_chart(
        shapley_bars(explanation.values.loc[model], top=TOP_FEATURES, title=f"Why {model} is predicted {target}", feature_set=feature_set),
        width="stretch",
    )
    st.caption(
        f"Shapley values of the top {TOP_FEATURES} features: how much each moves P({target}) from the average "
        f"{explanation.base_value[model]:.2f} over the training models (green up, red down). Explainer: "
        f"{explanation.method}. Tree-based assessors are explained exactly (TreeSHAP); AdaBoost exactly up to "
        f"{MAX_EXACT_FEATURES} features, beyond that by a sampling budget of {SHAP_PERMUTATIONS} antithetic "
        "permutations per model (estimates that still add up to the probability)."
    )


def main() -> None:
    require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Assessor")
    st.caption(
        "Learn the decision from the matrices, check it against the same learners on the accuracy statistics and a "
        "worst-case-accuracy threshold, and predict unjudged models."
    )
    workspace = state.current_workspace()
    suite_id, source, repeats, feature_set = choose_inputs(workspace)
    labels = load_labels(workspace, source, suite_id)
    runs = judge.finished_runs(workspace, suite_id)
    try:
        features = view.assessor_features(str(workspace.root), tuple(zip(runs["id"], runs["finished"])), "smooth", feature_set)
    except BackdropError as err:
        st.error(escape_markdown(err))
        st.stop()
    labels = labels[labels.index.isin(features.index)]
    show_evaluation(features, labels, repeats, source, feature_set)
    show_predictions(features, labels, feature_set)


with runs_snapshot():  # the runs are listed once per rerun, however many parts ask
    main()
