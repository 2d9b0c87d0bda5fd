"""Helpers of the Judge page: the queue of models to judge, blind ids, cached matrices and figures.

The queue of an annotator on a suite is every model with a finished run over the suite that the
annotator has not judged yet (:func:`analytics.judgments.unjudged_models`). In blind mode a model is
shown as "Model #k of N": k is a number dealt once per browser session and suite in a random order
(so annotators do not all see the same sequence, and names sorted alphabetically reveal nothing),
kept in ``st.session_state`` as a plain ``{suite: {model: k}}`` dict.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from analytics.judgments import judgment_history, unjudged_models
from analytics.runs import SIGNALS, list_runs, run_matrices
from analytics.suites import list_suites
from analytics.variance import VarianceMatrix
from analytics.workspace import Workspace
from ui.agreement import LABEL_COLOURS
from ui.charts import variance_heatmap

KEY = "judge."  # prefix of the page's widget and state keys
BLIND_NUMBERS = KEY + "blind_numbers"  # {suite_id: {model: number}}
SESSION_SEED = KEY + "session_seed"
FLASH = KEY + "flash"  # (kind, text) shown once on the next run
NOTE = KEY + "note"
#: Button text, icon and keyboard shortcut per label.
LABEL_BUTTONS: dict[str, tuple[str, str, str]] = {
    "invariant": ("Invariant", ":material/check_circle:", "1"),
    "borderline": ("Borderline", ":material/help:", "2"),
    "variant": ("Variant", ":material/cancel:", "3"),
}
MATRIX_HEIGHT = 290  # px: four square heatmaps side by side in the wide layout
#: Short heatmap titles (the long names of analytics.runs.SIGNALS do not fit a quarter of the page).
SHORT_TITLES = {"true_prob": "True-class probability", "emb_topk_mean": "Embedding: top-k mean", "emb_max": "Embedding: max", "emb_mean": "Embedding: mean"}


@dataclass(frozen=True)
class QueueItem:
    """One model to judge: its run over the suite and its blind number."""

    model: str
    run_id: str
    number: int


def button_key(label: str, *, change: bool = False) -> str:
    """Widget key of a label button (``judge_invariant``; ``judge_change_invariant`` to change the last
    judgment). Underscores, not dots: the key becomes a CSS class (``st-key-<key>``) the page styles."""
    return f"judge_change_{label}" if change else f"judge_{label}"


def button_css() -> str:
    """CSS that makes the three label buttons big and coloured by label."""
    rules = [
        f".st-key-{button_key(label)} button {{height: 4.2rem; font-size: 1.25rem; font-weight: 600; "
        f"border: 2px solid {colour}; color: {colour};}}\n"
        f".st-key-{button_key(label)} button:hover, .st-key-{button_key(label)} button:focus-visible "
        f"{{background: {colour}; color: white; border-color: {colour};}}"
        for label, colour in LABEL_COLOURS.items()
    ]
    return "<style>\n" + "\n".join(rules) + "\n</style>"


# -- data ------------------------------------------------------------------------------------------
def finished_runs(workspace: Workspace, suite_id: str) -> pd.DataFrame:
    """The newest finished run of each model over ``suite_id`` (columns of :func:`analytics.runs.list_runs`)."""
    runs = list_runs(workspace, suite_id=suite_id)
    return runs[runs["status"] == "done"].drop_duplicates("model", keep="first")  # list_runs is newest first


def suites_with_runs(workspace: Workspace) -> pd.DataFrame:
    """Suites with at least one finished run, most runs first: ``id, label, runs``."""
    runs = list_runs(workspace)
    counts = runs[runs["status"] == "done"].groupby("suite_id")["model"].nunique()
    suites = list_suites(workspace).set_index("id")
    rows = [
        (suite_id, f"{suites.at[suite_id, 'method']} · n={suites.at[suite_id, 'n']} · seed {suites.at[suite_id, 'seed']} · {count} models · {suite_id}", count)
        for suite_id, count in counts.items()
        if suite_id in suites.index
    ]
    table = pd.DataFrame(rows, columns=["id", "label", "runs"])
    return table.sort_values(["runs", "id"], ascending=[False, True], ignore_index=True)


def blind_numbers(suite_id: str, models: list[str]) -> dict[str, int]:
    """Each model's blind number on this suite, stable for the browser session.

    New models get the next numbers, in a random order drawn from the session's seed.
    """
    seed = st.session_state.setdefault(SESSION_SEED, secrets.randbelow(2**31))
    numbers = st.session_state.setdefault(BLIND_NUMBERS, {}).setdefault(suite_id, {})
    new = [model for model in sorted(models) if model not in numbers]
    start = max(numbers.values(), default=0)
    for offset, index in enumerate(np.random.default_rng([seed, start]).permutation(len(new)), start=1):
        numbers[new[index]] = start + offset
    return {model: numbers[model] for model in models}


def judge_queue(workspace: Workspace, annotator: str, suite_id: str, runs: pd.DataFrame) -> tuple[list[QueueItem], int]:
    """The annotator's queue on a suite, in blind-number order, and the number of candidate models.

    Parameters
    ----------
    runs : DataFrame
        :func:`finished_runs` of the suite.
    """
    run_of = dict(zip(runs["model"], runs["id"]))
    numbers = blind_numbers(suite_id, list(run_of))
    ordered = sorted(run_of, key=numbers.__getitem__)
    todo = unjudged_models(workspace, annotator, ordered)
    return [QueueItem(model, run_of[model], numbers[model]) for model in todo], len(ordered)


def last_judgment(workspace: Workspace, annotator: str) -> pd.Series | None:
    """The annotator's most recent judgment (a row of :func:`analytics.judgments.judgment_history`), or None."""
    history = judgment_history(workspace)
    mine = history[history["annotator"] == annotator]
    return None if mine.empty else mine.iloc[-1]


@st.cache_data(max_entries=64, show_spinner="Computing the variance matrices…")
def matrices(workspace_path: str, run_id: str, preset: str) -> dict[str, VarianceMatrix]:
    """The run's four variance matrices (cached here and in the workspace)."""
    return run_matrices(Workspace(workspace_path, create=False), run_id, preset=preset)


# -- figures ---------------------------------------------------------------------------------------
def colour_top(matrices_by_signal: dict[str, VarianceMatrix]) -> float:
    """The top of the shared colour range: the largest value of the matrices (1 when all are 0)."""
    return max(float(np.max(m.matrix)) for m in matrices_by_signal.values()) or 1.0


def matrix_figures(matrices_by_signal: dict[str, VarianceMatrix], *, shared: bool) -> list[go.Figure]:
    """One heatmap per signal (in :data:`SIGNALS` order), green = low variance, yellow = high.

    Parameters
    ----------
    shared : bool
        One colour range 0 … :func:`colour_top` for all four and no colour bars (the page states the
        range once); else each matrix from 0 to its own maximum, with its own colour bar below it.
    """
    figures = []
    for signal, matrix in matrices_by_signal.items():
        zmax = colour_top(matrices_by_signal) if shared else float(np.max(matrix.matrix)) or 1.0
        figure = variance_heatmap(matrix, title=SHORT_TITLES.get(signal, SIGNALS.get(signal, signal)), zmin=0.0, zmax=zmax)
        figure.update_traces(
            showscale=not shared, colorbar={"orientation": "h", "thickness": 10, "y": -0.32, "title": {"text": ""}}
        )
        figure.update_layout(
            height=MATRIX_HEIGHT + (0 if shared else 50),
            title={"font": {"size": 14}, "x": 0.5, "xanchor": "center"},
            margin={"l": 45, "r": 10, "t": 36, "b": 36},
            xaxis={"title": {"font": {"size": 11}}},
            yaxis={"title": {"font": {"size": 11}}},
        )
        figures.append(figure)
    return figures

