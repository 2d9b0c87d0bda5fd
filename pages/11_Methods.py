"""Methods: which sampling method makes the best test suites? Per method, neuron coverage (diversity,
the recall), Fleiss' κ of the judgments made on its suites (the precision), F1, and a run-to-run
consistency that needs no annotators — our version of the paper's Table 1, beside theirs.

A thin view over :func:`analytics.methods.method_comparison`. Suites, runs and coverage are kept in
the workspace, so once a comparison has run, reruns (another threshold, another page visit) are fast;
``st.session_state`` keeps only the last request (plain values).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.coverage import DEFAULT_THRESHOLD
from analytics.datasets import list_backgrounds
from analytics.exceptions import BackdropError
from analytics.methods import PAPER_TABLE, method_comparison, method_requirements
from analytics.models import list_models
from analytics.sampling import SAMPLERS
from analytics.workspace import Workspace
from ui import agreement as view
from ui import state
from ui.auth import require_page

KEY = "methods."
REQUEST = KEY + "request"
PREFERRED_MODEL = "efficientnet-lite0"
LAYER_NAMES = {"embedding": "the embedding layer", "all": "all activation layers"}
CONSISTENCY_TEXT = (
    "**Consistency** (no annotators needed): for every pair of seeds and each of the four signals, the two runs' "
    "variance matrices are resampled onto one grid over their shared distance range and compared as "
    "1 − mean |A − B| / (max − min of both); the score is the mean over signals and seed pairs. 1 = the seeds give "
    "identical matrices; lower = the judgment would depend on the luck of the draw."
)


def request_form(workspace: Workspace) -> dict | None:
    """The comparison settings; returns the submitted request (plain values) or the last one."""
    models = [spec.name for spec in list_models(workspace)]
    if not models:
        st.info("Register a model first (Models page): coverage and matrices are measured on a model.")
        st.stop()
    requirements = method_requirements(workspace)
    ready = [name for name, missing in requirements.items() if not missing]
    pool = len(list_backgrounds(workspace))
    with st.form(KEY + "form"):
        left, middle, right = st.columns([2, 3, 2])
        model = left.selectbox("Model", models, index=models.index(PREFERRED_MODEL) if PREFERRED_MODEL in models else 0, key=KEY + "model")
        methods = middle.multiselect("Sampling methods", ready, default=ready, key=KEY + "methods")
        recall_layers = right.radio("Coverage (recall) over", list(LAYER_NAMES), format_func=LAYER_NAMES.__getitem__, key=KEY + "recall")
        left, middle, right = st.columns([2, 3, 2])
        seeds = left.number_input("Seeds per method", 1, 10, 3, key=KEY + "seeds", help="Consistency compares the seeds' matrices; it needs at least two.")
        n = middle.number_input("Backgrounds per target", 1, max(1, pool), min(8, max(1, pool)), key=KEY + "n")
        both = right.checkbox(
            "Both layer sets", value=True, key=KEY + "both",
            help="'All activation layers' needs a network with activation modules (not every TorchScript model has them).",
        )
        submitted = st.form_submit_button("Compare methods", type="primary", icon=":material/play_arrow:")
    unavailable = {name: missing for name, missing in requirements.items() if missing}
    for name, missing in unavailable.items():
        st.caption(f":material/block: **{name}** needs {missing}.")
    if submitted:
        st.session_state[REQUEST] = {
            "model": model,
            "methods": list(methods),
            "seeds": int(seeds),
            "n": int(n),
            "recall_layers": recall_layers,
            "layers": list(LAYER_NAMES) if both else [recall_layers],
        }
    return st.session_state.get(REQUEST)


def run_comparison(workspace: Workspace, request: dict, threshold: float) -> pd.DataFrame | None:
    bar = st.progress(0.0, text="Building suites, running the model, measuring coverage…")

    def progress(step: str, done: int, total: int) -> None:
        bar.progress(done / total, text=f"{step} ({done} of {total} steps)")

    try:
        table = method_comparison(
            workspace,
            model=request["model"],
            methods=request["methods"] or None,
            seeds=request["seeds"],
            n=request["n"],
            threshold=threshold,
            layers=request["layers"],
            recall_layers=request["recall_layers"],
            progress=progress,
        )
    except BackdropError as err:
        bar.empty()
        st.error(str(err))
        return None
    bar.empty()
    return table


def or_na(values: pd.Series) -> list[str]:
    """Numbers with three decimals, 'N/A' where undefined (no judgments yet)."""
    return ["N/A" if pd.isna(value) else f"{value:.3f}" for value in values]


def show_table(table: pd.DataFrame, request: dict, threshold: float) -> None:
    shown = pd.DataFrame(
        {
            "Method": table["method"],
            "Coverage: embedding": table["coverage_embedding"],
            "Coverage: all layers": table["coverage_all"],
            "Recall": table["recall"],
            "Precision (Fleiss' κ)": or_na(table["precision"]),
            "Judged models": table["n_judged_models"],
            "F1": or_na(table["f1"]),
            "Consistency": table["consistency"],
            "Worst-case accuracy": table["worst_case_accuracy"],
        }
    )
    st.markdown(f"**Ours** — {request['model']}, {request['seeds']} seed(s) × {request['n']} backgrounds per target, threshold {threshold:.2f}")
    numbers = ("Coverage: embedding", "Coverage: all layers", "Recall", "Consistency", "Worst-case accuracy")
    st.dataframe(shown, hide_index=True, width="stretch", column_config={name: st.column_config.NumberColumn(format="%.3f") for name in numbers})
    st.caption(
        f"Recall = coverage over {LAYER_NAMES[request['recall_layers']]}, mean over seeds. Precision is N/A until two "
        "annotators judge models on runs of the method's suites (Judge page). F1 = 2PR / (P + R), κ ≤ 0 counting as 0."
    )
    left, right = st.columns([2, 3], gap="large")
    with left:
        st.markdown("**The paper's Table 1** — Liao & Chen's numbers, for reference (not ours)")
        paper = pd.DataFrame(
            [(row.title, row.recall, row.precision, row.f1) for row in PAPER_TABLE.values()],
            columns=["Method (paper)", "Recall", "Precision", "F1"],
        )
        st.dataframe(paper, hide_index=True, width="stretch", column_config={n: st.column_config.NumberColumn(format="%.3f") for n in ("Recall", "Precision", "F1")})
        st.caption("Their 'CLIP keywords' corresponds to our keyword method (detected keywords, no expansion).")
    right.plotly_chart(view.method_bars(table), width="stretch")
    st.caption(CONSISTENCY_TEXT)
    with st.expander("Suites and runs used"):
        st.dataframe(table[["method", "seeds", "suite_ids", "run_ids", "images"]], hide_index=True, width="stretch")


def main() -> None:
    require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Methods")
    st.caption(
        "Which sampling method makes the best suites? Diverse suites cover more neurons (recall); suites that let "
        "annotators agree give a high κ (precision); good suites give similar matrices whatever the seed."
    )
    workspace = state.current_workspace()
    request = request_form(workspace)
    threshold = st.slider(
        "Coverage threshold", 0.0, 0.95, DEFAULT_THRESHOLD, 0.05, key=KEY + "threshold",
        help="A neuron is covered when its min-max scaled activation exceeds this for some composite (DeepXplore).",
    )  # fmt: skip
    if request is None:
        st.info(
            f"Choose the settings and press **Compare methods**. Each method builds one suite per seed, runs the model on it "
            f"and measures coverage; everything is kept in the workspace, so a second look is fast. "
            f"Methods: {', '.join(SAMPLERS)}."
        )
        st.stop()
    table = run_comparison(workspace, request, float(threshold))
    if table is not None:
        show_table(table, request, float(threshold))


main()
