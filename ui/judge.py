"""Helpers of the Judge page: the queue of models to judge, blind ids, cached matrices and figures.

The queue of an annotator on a suite is every model with a finished current run over the suite
(stale runs of replaced weights left out) that the annotator has not judged on that suite yet
(:func:`analytics.judgments.unjudged_models`). In blind mode a model is
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

from analytics.colour_scale import REFERENCE_PERCENTILE, ColourScale, suite_colour_scale
from analytics.judgments import judgment_history, unjudged_models
from analytics.runs import SIGNALS, current_runs, run_matrices
from analytics.suites import list_suites
from analytics.variance import DEFAULT_GRID, PRESETS, VarianceMatrix
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
#: Help of the interpolation choice: the presets and their units.
PRESET_HELP = (
    "The paper's presets (window side, σ) in cells of the "
    f"{DEFAULT_GRID}-cell grid, one cell = 1/{DEFAULT_GRID} of the largest distance: "
    + ", ".join(f"{name} ({w}, {s:g}) = ±{w / 2 / DEFAULT_GRID:.3g} and σ {s / DEFAULT_GRID:.3g} of the axis" for name, (w, s) in PRESETS.items())
    + "."
)
#: How the colour scale is chosen, under the heatmaps.
SCALE_NOTE = (
    "Colours are fixed per signal and the same for every model of the suite (never a model's own range): the "
    f"probability from 0 to 1, each embedding signal from 0 to the {REFERENCE_PERCENTILE:g}th percentile of the "
    "suite's matrix cells, frozen when judging on the suite started. Values above the top are drawn yellow."
)
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
    """The newest finished current run of each model over ``suite_id`` (columns of :func:`analytics.runs.list_runs`)."""
    runs = current_runs(workspace, suite_id=suite_id)
    return runs[runs["status"] == "done"].drop_duplicates("model", keep="first")  # list_runs is newest first


def suites_with_runs(workspace: Workspace) -> pd.DataFrame:
    """Suites with at least one finished current run, most runs first: ``id, label, runs``."""
    runs = current_runs(workspace)
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
    todo = unjudged_models(workspace, annotator, suite_id, ordered)
    return [QueueItem(model, run_of[model], numbers[model]) for model in todo], len(ordered)


def last_judgment(workspace: Workspace, annotator: str, suite_id: str) -> pd.Series | None:
    """The annotator's most recent judgment on the suite (a row of :func:`analytics.judgments.judgment_history`), or None."""
    history = judgment_history(workspace, suite_id=suite_id)
    mine = history[history["annotator"] == annotator]
    return None if mine.empty else mine.iloc[-1]


@st.cache_data(max_entries=64, show_spinner="Computing the variance matrices…")
def matrices(workspace_path: str, run_id: str, preset: str) -> dict[str, VarianceMatrix]:
    """The run's four variance matrices (cached here and in the workspace)."""
    return run_matrices(Workspace(workspace_path, create=False), run_id, preset=preset)


# -- figures ---------------------------------------------------------------------------------------
@st.cache_data(max_entries=16, show_spinner="Fixing the colour scale of the suite…")
def colour_scale(workspace_path: str, suite_id: str, preset: str) -> ColourScale:
    """The suite's colour scale, frozen on first use (judging starts); identical for every model."""
    return suite_colour_scale(Workspace(workspace_path, create=False), suite_id, preset=preset, freeze=True)


def colour_ticks(top: float) -> tuple[list[float], list[str]]:
    """Colour-bar ticks 0, top / 2, top and their labels (3 significant digits)."""
    values = [0.0, top / 2, top]
    return values, [f"{value:.3g}" for value in values]


def matrix_figures(matrices_by_signal: dict[str, VarianceMatrix], scale: ColourScale) -> list[go.Figure]:
    """One heatmap per signal (in :data:`SIGNALS` order), green = low variance, yellow = high.

    Each signal is drawn from 0 to its top in ``scale``, the same for every model of the suite (never
    the model's own range), with a colour bar and its numbers under the heatmap.
    """
    figures = []
    for signal, matrix in matrices_by_signal.items():
        top = scale.tops[signal]
        figure = variance_heatmap(matrix, title=SHORT_TITLES.get(signal, SIGNALS.get(signal, signal)), zmin=0.0, zmax=top)
        tickvals, ticktext = colour_ticks(top)
        colorbar = {"orientation": "h", "thickness": 10, "y": -0.32, "title": {"text": ""}, "tickvals": tickvals, "ticktext": ticktext}
        figure.update_traces(showscale=True, colorbar=colorbar)
        figure.update_layout(
            height=MATRIX_HEIGHT + 50,
            title={"font": {"size": 14}, "x": 0.5, "xanchor": "center"},
            margin={"l": 45, "r": 10, "t": 36, "b": 36},
            xaxis={"title": {"font": {"size": 11}}},
            yaxis={"title": {"font": {"size": 11}}},
        )
        figures.append(figure)
    return figures
