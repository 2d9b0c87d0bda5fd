"""Helpers of the Judge page: the queue of models to judge, cached matrices and figures, and the matrix
panel (:func:`matrix_panel`) the Judge and Adjudication pages share, so a lead sees what annotators saw.
On the Judge page the panel also names the signals in which the suite's models differ most
(:func:`differences_sentence`, from :func:`analytics.runs.suite_signal_differences`).

The queue of an annotator on a suite (:func:`analytics.judging.annotator_queue`) is the models assigned to them
(:func:`analytics.judging.queues.queue`: assignments, or every model under an "everyone judges
everything" plan); a lead (who may see names) without assignments on the suite judges every model
with a finished current run over it (stale runs of replaced weights left out), as in solo mode. Only
models the annotator has not judged on the suite yet are queued, models still short of their wanted
judgments first and the most judged of them first, so annotators overlap early. In blind mode a model is shown as its alias
(:func:`analytics.judging.assignments.blind_name`, e.g. "Model 7F3A"), the same for everyone, so
an adjudicator can refer to it; annotators (no ``browse`` permission) always judge blind.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from analytics.exceptions import BackdropError
from analytics.figures import suite_scale_heatmaps
from analytics.judging import judgeable_runs, judgeable_suites
from analytics.runs import EMBEDDING_RANGE, ColourScale, cached_matrices, run_matrices, suite_colour_scale, suite_signal_differences
from analytics.variance import DEFAULT_MATRIX_GRID, DEFAULT_SETTINGS, PRESETS, MatrixSettings, VarianceMatrix
from analytics.workspace import Workspace
from ui import state, widgets
from ui.agreement import LABEL_COLOURS
from ui.markdown import escape_markdown
from ui.runs import matrices_bar

KEY = "judge."  # prefix of the page's widget and state keys
FLASH = KEY + "flash"  # (kind, text) shown once on the next run
NOTE = KEY + "note"
#: Button text, icon and keyboard shortcut per label.
LABEL_BUTTONS: dict[str, tuple[str, str, str]] = {
    "invariant": ("Invariant", ":material/check_circle:", "1"),
    "borderline": ("Borderline", ":material/help:", "2"),
    "variant": ("Variant", ":material/cancel:", "3"),
}
#: Help of the interpolation choice: the presets and their units.
PRESET_HELP = (
    "The paper's presets (circular window's diameter, σ) in cells of the "
    f"{DEFAULT_MATRIX_GRID}-cell grid, one cell = 1/{DEFAULT_MATRIX_GRID} of the largest distance: "
    + ", ".join(f"{name} ({w}, {s:g}) = ±{w / 2 / DEFAULT_MATRIX_GRID:.3g} and σ {s / DEFAULT_MATRIX_GRID:.3g} of the axis" for name, (w, s) in PRESETS.items())
    + "."
)
#: How the colour scale is chosen, under the heatmaps.
SCALE_NOTE = (
    "Colours are fixed per signal and the same for every model of the suite (never a model's own range): the "
    f"probability from 0 to 1, each embedding signal {EMBEDDING_RANGE}, frozen when judging on the suite "
    "started. Values above the top are drawn yellow, below the bottom green."
)
#: Signals shown in :func:`differences_sentence`.
DIFFERENCES_SHOWN = 4
#: How the signals are compared, beside the sentence.
RANKING_HELP = (
    "Each model's matrix is placed on the suite's colour range of the signal (bottom 0, top 1, clipped as the heatmaps "
    "clip it); two models differ by the mean absolute difference of their cells there: 0 % = the same colours, 100 % "
    "= green against yellow everywhere. The signal where they differ most is where to look first."
)
#: How to read the heatmaps, under them.
READING_NOTE = (
    "Each cell: how much the signal changes between two images of a target whose distances to the original are "
    "(x, y) — green = stable, yellow = changes a lot. An invariant model stays green where the backgrounds are "
    "close to the original."
)
#: The four matrices the paper's annotators judged, as judging shows them; the max probability (the
#: authors' confidence) is a fifth signal on Matrices and in the assessor, not in the judged view.
JUDGED_SIGNALS = ("true_prob", "emb_topk_mean", "emb_max", "emb_mean")
#: Short heatmap titles (the long names of analytics.runs.SIGNALS do not fit a quarter of the page).
SHORT_TITLES = {"true_prob": "True-class probability", "emb_topk_mean": "Embedding: top-k mean", "emb_max": "Embedding: max", "emb_mean": "Embedding: mean"}


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
    return judgeable_runs(workspace, suite_id)


def suites_with_runs(workspace: Workspace, annotator: str | None = None) -> pd.DataFrame:
    """:func:`analytics.judging.judgeable_suites` with the picker's ``label`` (``<suite> · <n> models``): ``id, label, runs``."""
    table = judgeable_suites(workspace, annotator=annotator)
    return pd.DataFrame({"id": table["id"], "label": [f"{suite} · {n} models" for suite, n in zip(table["suite"], table["runs"])], "runs": table["runs"]})


def matrices(workspace_path: str, run_id: str, preset: str) -> dict[str, VarianceMatrix]:
    """The run's four judged variance matrices (:data:`JUDGED_SIGNALS`): read from the workspace cache,
    else computed under :func:`ui.runs.matrices_bar` (a bar naming the step and counting targets; no
    ``st.cache_data``, which would replay the bar)."""
    workspace, settings = state.open_workspace(workspace_path), MatrixSettings.of(preset)
    every = cached_matrices(workspace, run_id, settings=settings)
    if every is None:
        with matrices_bar() as progress:
            every = run_matrices(workspace, run_id, settings=settings, progress=progress)
    return {signal: every[signal] for signal in JUDGED_SIGNALS}


@st.cache_data(max_entries=16, show_spinner="Comparing the models' matrices…")
def signal_ranking(workspace_path: str, suite_id: str, run_ids: tuple[str, ...], preset: str) -> pd.DataFrame:
    """:func:`analytics.runs.suite_signal_differences` of ``run_ids`` on the suite's frozen scale, over :data:`JUDGED_SIGNALS`."""
    scale = colour_scale(workspace_path, suite_id, preset)
    settings = MatrixSettings.of(preset)
    return suite_signal_differences(state.open_workspace(workspace_path), run_ids, scale, settings=settings, signals=JUDGED_SIGNALS)


def differences_sentence(ranking: pd.DataFrame, models: int) -> str:
    """One sentence naming the signals in which the models' matrices differ most (:func:`signal_ranking`'s order)."""
    first, *rest = [f"{SHORT_TITLES.get(row.signal, row.name)} {row.difference:.0%}" for row in ranking.head(DIFFERENCES_SHOWN).itertuples()]
    among = "the two models" if models == 2 else f"the {models} models"
    then = f", then {', '.join(rest)}" if rest else ""
    pairs = "" if models == 2 else ", mean over every pair"
    return f"Where {among} of this suite differ most: **{first}**{then} (how far apart their matrices' colours lie, as a share of the colour range{pairs})."


# -- figures ---------------------------------------------------------------------------------------
@st.cache_data(max_entries=16, show_spinner="Fixing the colour scale of the suite…")
def colour_scale(workspace_path: str, suite_id: str, preset: str) -> ColourScale:
    """The suite's colour scale, frozen on first use (judging starts); identical for every model."""
    return suite_colour_scale(state.open_workspace(workspace_path), suite_id, settings=MatrixSettings.of(preset), freeze=True)


def matrix_panel(workspace: Workspace, suite_id: str, run_id: str, *, key: str, compare: Sequence[str] = ()) -> None:
    """A model's four variance matrices on a suite, as every page that judges shows them.

    An interpolation choice (the presets of :data:`analytics.variance.PRESETS`, the library's default
    selected) under "Display settings", then one heatmap per signal, two a row, on the suite's frozen colour scale
    (:func:`colour_scale`), and how to read them. A library refusal is shown as an error.

    Parameters
    ----------
    workspace : Workspace
    suite_id : str
        The suite whose colour scale is used.
    run_id : str
        A finished run of the model over the suite.
    key : str
        Widget key of the preset choice (unique on the page).
    compare : sequence of str, optional
        Runs of the models being judged on the suite: with two or more, a sentence under the heatmaps
        names the signals in which their matrices differ most (:func:`differences_sentence`).
    """
    presets = list(PRESETS)
    with st.expander("Display settings"):
        preset = st.radio("Interpolation", presets, index=presets.index(DEFAULT_SETTINGS.preset), horizontal=True, key=key, help=PRESET_HELP)
    try:
        by_signal = matrices(str(workspace.root), run_id, preset)
        scale = colour_scale(str(workspace.root), suite_id, preset)
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    for column, figure in zip(widgets.grid_columns(len(by_signal)), suite_scale_heatmaps(by_signal, scale, titles=SHORT_TITLES)):  # two a row: ~460 px each
        column.plotly_chart(figure, width="stretch", config={"displayModeBar": False})
    st.caption(f"{READING_NOTE} {SCALE_NOTE}")
    if len(compare) >= 2:
        try:
            ranking = signal_ranking(str(workspace.root), suite_id, tuple(sorted(compare)), preset)
        except BackdropError as err:
            st.error(escape_markdown(err))
            return
        st.markdown(differences_sentence(ranking, len(compare)), help=RANKING_HELP)
