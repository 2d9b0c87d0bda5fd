"""Methods: which sampling method makes the best test suites? Per method, neuron coverage (diversity,
the recall), Fleiss' κ of the judgments made on its suites (the precision), F1, and a run-to-run
consistency that needs no annotators — our version of the paper's Table 1, beside theirs.

A thin view over :func:`analytics.comparison.methods.method_comparison`, run as a background job
(:mod:`analytics.jobs`, kind ``methods``): the page shows an estimate before it starts, then the
job's progress with Cancel (and Resume once cancelled or failed); the table is the job's result.
Suites, runs and coverage are kept in the workspace, so a repeated or resumed comparison skips what
is done. ``st.session_state`` keeps only the id of the job the page started.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.comparison import (
    DEFAULT_COVERAGE_THRESHOLD,
    DEFAULT_METHODS,
    DEFAULT_N,
    DEFAULT_SEED_COUNT,
    DEFAULT_TARGETS,
    PAPER_TABLE,
    estimate_seconds,
    method_requirements,
)
from analytics.data import list_backgrounds, list_targets
from analytics.figures import method_bars
from analytics.jobs import duration_text, get_job, latest_job
from analytics.models import list_models
from analytics.suites import SAMPLERS, suite_labels_of
from analytics.workspace import Workspace
from ui import jobs as job_view
from ui import state
from ui.auth import offer, require_page
from ui.markdown import escape_markdown

KEY = "methods."
JOB = KEY + "job"  # session-state key: the id of the comparison job this session started
PREFERRED_MODEL = "efficientnet-lite0"
LAYER_NAMES = {"embedding": "the embedding layer", "all": "all activation layers"}
CONSISTENCY_TEXT = (
    "**Consistency** (no annotators needed): for every pair of seeds and each signal, the two runs' "
    "variance matrices are resampled onto one grid over their shared distance range and compared as "
    "1 − mean |A − B| / (max − min of both); the score is the mean over signals and seed pairs. 1 = the seeds give "
    "identical matrices; lower = the judgment would depend on the luck of the draw."
)


def request_form(workspace: Workspace) -> dict | None:
    """The comparison settings and their time estimate; returns the request (plain values) when started."""
    models = [spec.name for spec in list_models(workspace)]
    if not models:
        st.info("Register a model first (Models page): coverage and matrices are measured on a model.")
        st.stop()
    requirements = method_requirements(workspace)
    ready = [name for name, missing in requirements.items() if not missing]
    pool, n_targets = len(list_backgrounds(workspace)), len(list_targets(workspace))
    left, middle, right = st.columns([2, 3, 2])
    model = left.selectbox("Model", models, index=models.index(PREFERRED_MODEL) if PREFERRED_MODEL in models else 0, key=KEY + "model")
    default = [name for name in DEFAULT_METHODS if name in ready] or ready[:1]
    methods = middle.multiselect(
        "Sampling methods", ready, default=default, key=KEY + "methods",
        help="By default the random baseline and the paper's ontology method; every method adds the same time again.",
    )  # fmt: skip
    recall_layers = right.radio("Coverage (recall) over", list(LAYER_NAMES), format_func=LAYER_NAMES.__getitem__, key=KEY + "recall")
    left, middle, right, last = st.columns([2, 2, 2, 2])
    seeds = left.number_input("Seeds per method", 1, 10, DEFAULT_SEED_COUNT, key=KEY + "seeds", help="Consistency compares the seeds' matrices; it needs at least two.")
    n = middle.number_input("Backgrounds per target", 1, max(1, pool), min(DEFAULT_N, max(1, pool)), key=KEY + "n")
    targets = right.number_input(
        "Targets", 1, max(1, n_targets), min(DEFAULT_TARGETS, max(1, n_targets)), key=KEY + "targets",
        help="Suites cover this many targets, spread over the classes; more targets = a steadier table, a longer wait.",
    )  # fmt: skip
    both = last.checkbox(
        "Both layer sets", value=False, key=KEY + "both",
        help="'All activation layers' needs a network with activation modules (not every TorchScript model has them).",
    )  # fmt: skip
    threshold = st.slider(
        "Coverage threshold", 0.0, 0.95, DEFAULT_COVERAGE_THRESHOLD, 0.05, key=KEY + "threshold",
        help="A neuron is covered when its min-max scaled activation exceeds this for some composite (DeepXplore).",
    )  # fmt: skip
    layers = list(LAYER_NAMES) if both else [recall_layers]
    seconds = estimate_seconds(workspace, methods=max(1, len(methods)), seeds=int(seeds), n=int(n), targets=int(targets), layers=len(layers))
    st.caption(
        f":material/schedule: Estimated time: about **{duration_text(seconds)}** for {len(methods)} method(s) × {int(seeds)} seed(s) × "
        f"{int(targets)} targets × {int(n)} backgrounds (from the last comparison timed in this workspace, else the demo's "
        "measured pace on 2 CPU cores; once it runs, the job's line revises it from its own pace). Suites, runs and coverage "
        "already computed are reused, so a repeat is faster."
    )
    for name, missing in requirements.items():
        if missing:
            st.caption(f":material/block: **{name}** needs {missing}.")
    if not st.button("Compare methods", type="primary", icon=":material/play_arrow:", key=KEY + "go", disabled=not methods):
        return None
    return {
        "model": model,
        "methods": list(methods),
        "seeds": int(seeds),
        "n": int(n),
        "targets": int(targets),
        "threshold": float(threshold),
        "recall_layers": recall_layers,
        "layers": layers,
    }


def result_table(job) -> pd.DataFrame:
    """The job's result as :func:`analytics.comparison.methods.method_comparison` returned it (tuples restored)."""
    table = pd.DataFrame(job.result["table"])
    for column in ("seeds", "suite_ids", "run_ids"):
        table[column] = table[column].map(tuple)
    return table.astype({c: float for c in ("coverage_embedding", "coverage_all", "recall", "precision", "f1", "consistency")})


def or_na(values: pd.Series) -> list[str]:
    """Numbers with three decimals, 'N/A' where undefined (no judgments yet)."""
    return ["N/A" if pd.isna(value) else f"{value:.3f}" for value in values]


def show_table(table: pd.DataFrame, request: dict, suite_labels: dict[str, str]) -> None:
    threshold = request["threshold"]
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
    st.markdown(
        f"**Ours** — {escape_markdown(request['model'])}, {request['seeds']} seed(s) × {request['n']} backgrounds per target × "
        f"{request['targets']} targets, threshold {threshold:.2f}"
    )
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
    right.plotly_chart(method_bars(table), width="stretch")
    st.caption(CONSISTENCY_TEXT)
    with st.expander("Suites and runs used"):
        used = table.assign(suites=[tuple(suite_labels.get(s, s) for s in ids) for ids in table["suite_ids"]])
        st.dataframe(used[["method", "seeds", "suites", "images", "suite_ids", "run_ids"]], hide_index=True, width="stretch")


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Methods")
    st.caption(
        "Which sampling method makes the best suites? Diverse suites cover more neurons (recall); suites that let "
        "annotators agree give a high κ (precision); good suites give similar matrices whatever the seed."
    )
    workspace = state.current_workspace()
    request = request_form(workspace) if offer(user, "build_suites", "Comparing methods") else None
    if request is not None:
        started = job_view.start_job(workspace, "methods", request)
        if started is not None:
            st.session_state[JOB] = started.id
    job_id = st.session_state.get(JOB)
    job = get_job(workspace, job_id) if job_id else latest_job(workspace, "methods")
    if job is None:
        st.info(
            "Choose the settings and press **Compare methods**. Each method builds one suite per seed, runs the model on it "
            "and measures coverage, as a background job: it keeps running if you leave the page (Home lists it) and can be "
            f"cancelled and resumed. Methods: {', '.join(SAMPLERS)}."
        )
        st.stop()
    job = job_view.show_job(workspace, job.id, key=KEY)
    if job.status == "done":
        defaults = {"seeds": DEFAULT_SEED_COUNT, "n": DEFAULT_N, "targets": DEFAULT_TARGETS, "threshold": DEFAULT_COVERAGE_THRESHOLD, "recall_layers": "embedding"}
        show_table(result_table(job), {**defaults, **job.params}, suite_labels_of(workspace))


main()
