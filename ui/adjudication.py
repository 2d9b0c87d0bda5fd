"""Helpers of the Adjudication page: judged suites, the disagreement table, each annotator's judgment
side by side, the model's four variance matrices (the Judge page's figures and fixed colour scale)
and the consensus form's callback.

Data come from :mod:`analytics.judging.adjudication`; the matrices, colour scale and figures are reused from
:mod:`ui.judge`, so a lead sees exactly what the annotators saw.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from analytics.exceptions import BackdropError
from analytics.judging import add_consensus, blind_name, latest_judgments_by_suite
from analytics.suites import list_suites
from analytics.workspace import Workspace
from ui import judge
from ui.agreement import LABEL_COLOURS
from ui.markdown import escape_markdown

KEY = "adjudication."  # prefix of the page's widget and state keys
LABEL = KEY + "label"
REASON = KEY + "reason"
ADJUDICATOR = KEY + "adjudicator"  # solo mode only: team mode signs with the account
FLASH = KEY + "flash"  # (kind, text) shown once on the next run
#: Display names of the columns of :func:`analytics.judging.adjudication.disagreements` the list shows.
LIST_COLUMNS = {
    "model": "Model",
    "n_judgments": "Judgments",
    "majority": "Majority vote",
    "agreement": "Share agreeing",
    "consensus": "Consensus",
}
HISTORY_COLUMNS = {"created": "When", "model": "Model", "label": "Consensus", "adjudicator": "Adjudicator", "reason": "Reason"}


def judged_suites(workspace: Workspace) -> pd.DataFrame:
    """Suites with current judgments (rows of :func:`analytics.suites.list_suites`, newest first)."""
    judged = set(latest_judgments_by_suite(workspace)["suite_id"])
    suites = list_suites(workspace)
    return suites[suites["id"].isin(judged)].reset_index(drop=True)


def disagreement_list(workspace: Workspace, table: pd.DataFrame, suite_id: str) -> pd.DataFrame:
    """The disagreement table as the page lists it: one row per model, display names, the alias
    annotators saw (their notes may name it), '—' without consensus.

    Parameters
    ----------
    workspace : Workspace
    table : DataFrame
        :func:`analytics.judging.adjudication.disagreements` of ``suite_id``.
    suite_id : str
    """
    shown = table[list(LIST_COLUMNS)].rename(columns=LIST_COLUMNS)
    shown.insert(1, "Shown blind as", [blind_name(workspace, suite_id, model) for model in table["model"]])
    shown["Consensus"] = shown["Consensus"].fillna("—")
    return shown


def model_choice(workspace: Workspace, row: pd.Series, suite_id: str) -> str:
    """How the model picker names a row of :func:`analytics.judging.adjudication.disagreements`."""
    status = f"consensus: {row['consensus']}" if row["has_consensus"] else "no consensus yet"
    return f"{row.name} ({blind_name(workspace, suite_id, str(row.name))}) · {status}"


def annotators_of(row: pd.Series) -> list[str]:
    """The annotators who judged the model of one row of :func:`analytics.judging.adjudication.disagreements`."""
    return [column.split(":", 1)[1] for column, value in row.items() if column.startswith("label:") and isinstance(value, str)]


def card_key(position: int) -> str:
    """Key of the ``position``-th annotator's card (a CSS class ``st-key-<key>``; names may hold dots)."""
    return f"adjudication_card_{position}"


def show_judgments(row: pd.Series) -> None:
    """Each annotator's label, confidence and note side by side, one bordered column each."""
    names = annotators_of(row)
    for position, (column, name) in enumerate(zip(st.columns(len(names)), names)):
        label, confidence, note = row[f"label:{name}"], row[f"confidence:{name}"], row[f"note:{name}"]
        box = column.container(border=True, key=card_key(position))
        box.markdown(f"**{escape_markdown(name)}**")
        box.markdown(f"<span style='color:{LABEL_COLOURS[label]}; font-weight:600; font-size:1.2rem'>{label}</span>", unsafe_allow_html=True)
        box.caption(f"Confidence: {_confidence(confidence)}")
        has_note = isinstance(note, str) and note.strip()
        box.markdown("\n".join(f"> {escape_markdown(line)}" for line in note.splitlines()) if has_note else "_no note_")


def show_matrices(workspace: Workspace, suite_id: str, model: str) -> None:
    """The model's four variance matrices on the suite: the Judge page's panel (:func:`ui.judge.matrix_panel`)."""
    runs = judge.finished_runs(workspace, suite_id)
    run_ids = dict(zip(runs["model"], runs["id"]))
    if model not in run_ids:
        st.info(f"{escape_markdown(model)} has no finished current run over this suite, so there are no matrices to show.")
        return
    judge.matrix_panel(workspace, suite_id, run_ids[model], key=KEY + "preset")


def record(workspace: Workspace, suite_id: str, model: str) -> None:
    """Form callback: store the consensus chosen in the form; a refusal or bad input becomes the flash.

    In team mode ``workspace`` acts as the signed-in account, which signs the consensus; in solo mode
    the name typed in the form does.
    """
    try:
        consensus = add_consensus(
            workspace,
            model=model,
            suite_id=suite_id,
            label=st.session_state.get(LABEL),
            reason=str(st.session_state.get(REASON, "")),
            adjudicator=st.session_state.get(ADJUDICATOR),
        )
    except BackdropError as err:
        st.session_state[FLASH] = ("error", str(err))
        return
    st.session_state[REASON] = ""
    st.session_state[FLASH] = ("success", f"Consensus saved: {model} is **{consensus.label}** (by {consensus.adjudicator}).")


def history_table(history: pd.DataFrame) -> pd.DataFrame:
    """Consensus history, newest first, with display names (rows of :func:`analytics.judging.adjudication.consensus_history`)."""
    shown = history.iloc[::-1][list(HISTORY_COLUMNS)].rename(columns=HISTORY_COLUMNS)
    shown["When"] = shown["When"].str.slice(0, 19).str.replace("T", " ")
    return shown


def _confidence(value: float) -> str:
    return "not given" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.0%}"
