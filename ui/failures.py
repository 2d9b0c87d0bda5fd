"""Streamlit helpers of the Failures page: cached keyword statistics, their display table, the galleries
(fooling backgrounds and flips, with saliency overlays) and the report download; the keyword x model
heat map is :func:`analytics.figures.keyword_heatmap`.

The numbers are :mod:`analytics.findings.failures`'s, the galleries :mod:`analytics.findings.galleries`'s and the report
:func:`analytics.findings.report.build_report`'s; this module only caches and lays out. Everything of a run is
cached by workspace path, run id and finishing time (a redone run is read afresh); saliency maps are
computed only when the page asks (a toggle) and then cached per item and method.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from analytics.data import background_label, load_targets
from analytics.exceptions import BackdropError
from analytics.findings import (
    ClassGallery,
    FailureTable,
    GalleryItem,
    build_report,
    composite_table,
    failure_table,
    flips,
    fooling_backgrounds,
    item_images,
    item_saliency,
    keyword_changes,
    keyword_model_matrix,
)
from analytics.saliency import binarize
from analytics.workspace import Workspace
from ui import cache, state
from ui.markdown import escape_markdown
from ui.saliency import overlay

KEY = "failures."
#: Models the heat map opens with at most: each model's run table is read (~0.1 s a model at 200
#: targets), so a suite of 250 models would open in ~20 s, and 250 columns are not read anyway.
HEATMAP_MODELS = 12
#: Display headers of :attr:`analytics.findings.failures.FailureTable.keywords` / ``levels`` columns.
HEADERS = {
    "keyword": "Keyword", "level": "Level", "count": "Composites", "errors": "Errors", "error_rate": "Error rate",
    "error_low": "Rate 95% low", "error_high": "Rate 95% high", "mean_drop": "Mean drop", "drop_low": "Drop 95% low",
    "drop_high": "Drop 95% high", "targets": "Targets", "baseline_error_rate": "Baseline error rate", "baseline_low": "Baseline 95% low",
    "baseline_high": "Baseline 95% high", "rise": "Rise", "worse": "Newly wrong", "better": "Newly right", "p_value": "McNemar p",
}  # fmt: skip
#: Interval columns :func:`display` shows as one ``low–high`` text column, by their (low, high) columns.
INTERVALS = {
    ("error_low", "error_high"): "Rate 95%", ("drop_low", "drop_high"): "Drop 95%", ("baseline_low", "baseline_high"): "Baseline 95%",
}  # fmt: skip
#: Column configuration of :func:`gallery_table`: short headers (the full name in their help) and fixed widths for the free
#: text, so every column fits a 1400 px window (#47 item 9); a longer text is cut in its cell and shown whole on hover.
GALLERY_FORMAT = {
    "Target": st.column_config.TextColumn("Target", width=185),
    "Background": st.column_config.TextColumn("Background", width=175),
    "Original predicted": st.column_config.TextColumn("Predicted before", help="The prediction on the original target."),
    "True-class prob. before": st.column_config.NumberColumn("P before", format="%.3f", help="True-class probability on the original target."),
    "True-class prob. after": st.column_config.NumberColumn("P after", format="%.3f", help="True-class probability on the composite."),
    "Drop": st.column_config.NumberColumn(format="%.3f"),
    "Background keywords": st.column_config.TextColumn("Background keywords", width=150),
}
#: Column configuration of :func:`display`'s tables (keywords, levels, changes against a baseline): number formats,
#: short headers with the full name in their help, so every column (McNemar p last) fits a 1400 px window.
NUMBER_FORMAT = {
    **{title: st.column_config.NumberColumn(format="%.3f") for title in ("Error rate", "Mean drop", "Rise", "McNemar p")},
    "Keyword": st.column_config.TextColumn("Keyword", width=160),
    "Rate 95%": st.column_config.TextColumn("Rate 95%", help="95 % Wilson interval of the error rate."),
    "Drop 95%": st.column_config.TextColumn("Drop 95%", help="95 % bootstrap interval of the mean drop of the true-class probability."),
    "Baseline error rate": st.column_config.NumberColumn("Baseline rate", format="%.3f", help="The baseline model's error rate on the same composites."),
    "Baseline 95%": st.column_config.TextColumn("Baseline 95%", help="95 % Wilson interval of the baseline's error rate."),
    "Newly wrong": st.column_config.NumberColumn("Worse", help="Newly wrong: composites the baseline got right and this model wrong."),
    "Newly right": st.column_config.NumberColumn("Better", help="Newly right: composites the baseline got wrong and this model right."),
    "McNemar p": st.column_config.NumberColumn("McNemar p", format="%.3f", help="McNemar's exact test on the paired right/wrong outcomes."),
}


@st.cache_data(max_entries=16, show_spinner="Counting failures per keyword…")
def failures(workspace_path: str, run_id: str, finished: str, min_count: int, classes: tuple[str, ...] | None = None) -> FailureTable:
    """:func:`analytics.findings.failures.failure_table` of ``classes`` (None = every class), cached per
    run (``finished`` keys a redone run afresh)."""
    return failure_table(state.open_workspace(workspace_path), run_id, min_count=min_count, classes=classes)


@st.cache_data(max_entries=16, show_spinner="Comparing with the baseline per keyword…")
def changes(workspace_path: str, run_id: str, baseline_run_id: str, finished: tuple[str, str], min_count: int) -> pd.DataFrame:
    """:func:`analytics.findings.keyword_changes`, cached per pair of runs (``finished`` keys a redone run afresh)."""
    return keyword_changes(state.open_workspace(workspace_path), run_id, baseline_run_id, min_count=min_count)


@st.cache_data(max_entries=16, show_spinner="Comparing models per keyword…")
def keyword_matrix(
    workspace_path: str, run_ids: tuple[str, ...], finished: tuple[str, ...], min_count: int, classes: tuple[str, ...] | None = None
) -> pd.DataFrame:
    """:func:`analytics.findings.failures.keyword_model_matrix` of ``classes`` (None = every class), cached per set of runs."""
    return keyword_model_matrix(state.open_workspace(workspace_path), list(run_ids), min_count=min_count, classes=classes)


@st.cache_data(max_entries=16, show_spinner=False)
def run_keywords(workspace_path: str, run_id: str, finished: str) -> list[str]:
    """Every scene keyword of a run's composites' backgrounds, sorted by name."""
    frame = composite_table(state.open_workspace(workspace_path), run_id)
    return sorted({keyword for found in frame["keywords"] for keyword in found})


@st.cache_data(max_entries=16, show_spinner=False)
def run_classes(workspace_path: str, run_id: str, finished: str) -> list[str]:
    """The classes of a run's composites, sorted by name."""
    return sorted(set(composite_table(state.open_workspace(workspace_path), run_id)["class_name"]))


@st.cache_data(max_entries=32, show_spinner="Finding the backgrounds that fool the model…")
def gallery(workspace_path: str, run_id: str, finished: str, per_class: int, keyword: str | None) -> dict[str, ClassGallery]:
    """:func:`analytics.findings.galleries.fooling_backgrounds` of every class, cached per run."""
    return fooling_backgrounds(state.open_workspace(workspace_path), run_id, per_class=per_class, keyword=keyword)


@st.cache_data(max_entries=32, show_spinner="Finding flips…")
def flip_items(workspace_path: str, run_id: str, finished: str, limit: int, class_name: str, keyword: str | None) -> list[GalleryItem]:
    """:func:`analytics.findings.galleries.flips` of one class, cached per run."""
    return flips(state.open_workspace(workspace_path), run_id, limit=limit, class_name=class_name, keyword=keyword)


@st.cache_data(max_entries=256, show_spinner=False)
def pair_images(workspace_path: str, item: GalleryItem) -> tuple[np.ndarray, np.ndarray]:
    """:func:`analytics.findings.galleries.item_images`: original and composite, (size, size, 3) uint8 each."""
    return item_images(state.open_workspace(workspace_path), item)


@st.cache_data(max_entries=128, show_spinner="Computing saliency maps…")
def pair_saliency(workspace_path: str, run_id: str, finished: str, model: str, item: GalleryItem, method: str) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`analytics.findings.galleries.item_saliency` with the run's model (:func:`ui.cache.load_model`), cached
    per run, item and method; None when the model cannot run the method."""
    return item_saliency(state.open_workspace(workspace_path), cache.load_model(workspace_path, model), item, method=method)


def gallery_table(items: Sequence[GalleryItem]) -> pd.DataFrame:
    """One row per gallery item: target, background, predictions and probabilities before/after, keywords."""
    return pd.DataFrame(
        {
            "Target": [i.target_id for i in items], "Background": [background_label(i.background_id) for i in items],
            "Predicted": [i.predicted for i in items], "Original predicted": [i.original_predicted for i in items],
            "True-class prob. before": [i.original_true_prob for i in items], "True-class prob. after": [i.true_prob for i in items],
            "Drop": [i.drop for i in items], "Background keywords": [", ".join(i.keywords) for i in items],
        }
    )  # fmt: skip


def gallery_cards(workspace_path: str, items: Sequence[GalleryItem]) -> tuple[list[np.ndarray], list[str]]:
    """Original then composite of each item, with captions (the composite's names its background's
    keywords), for :func:`ui.widgets.image_grid`.

    Returns
    -------
    images : list of ndarray of shape (size, size, 3), uint8
        Two per item.
    captions : list of str
        One per image.
    """
    images, captions = [], []
    for item in items:
        pair, (original_caption, composite_caption) = flip_cards(workspace_path, item)
        images += pair
        captions += [original_caption, f"{composite_caption} · keywords: {', '.join(item.keywords) or 'none'}"]
    return images, captions


def flip_cards(workspace_path: str, item: GalleryItem) -> tuple[list[np.ndarray], list[str]]:
    """Original and composite of an item with their captions (prediction, true-class probability).

    Returns
    -------
    images : list of two ndarray of shape (size, size, 3), uint8
    captions : list of two str
    """
    original, composite = pair_images(workspace_path, item)
    return [original, composite], [
        f"original {item.target_id} · predicted {item.original_predicted} · true class {item.original_true_prob:.2f}",
        f"on {background_label(item.background_id)} · predicted {item.predicted} · true class {item.true_prob:.2f} (drop {item.drop:+.2f})",
    ]


def flip_overlays(workspace_path: str, item: GalleryItem, maps: tuple[np.ndarray, np.ndarray], threshold: float) -> list[np.ndarray]:
    """:func:`ui.saliency.overlay` of the original's and the composite's maps (object outline, top ``threshold`` share).

    Parameters
    ----------
    workspace_path : str
    item : GalleryItem
    maps : tuple of two ndarray of shape (size, size), float32 in [0, 1]
        :func:`analytics.findings.galleries.item_saliency` of the item.
    threshold : float
        Share of each map's pixels outlined as salient.

    Returns
    -------
    list of two ndarray of shape (size, size, 3), uint8
    """
    original, composite = pair_images(workspace_path, item)
    _, masks = load_targets(state.open_workspace(workspace_path), [item.target_id])
    binary = binarize(np.stack(maps), threshold=threshold)
    return [overlay(image, heat, masks[0], salient) for image, heat, salient in zip((original, composite), maps, binary)]


def pick_keyword(keywords: Sequence[str]) -> None:
    """``on_select`` callback of the keyword table: a selected row becomes the galleries' keyword."""
    rows = st.session_state[KEY + "keywords"].selection.rows
    if rows:
        st.session_state[KEY + "keyword"] = keywords[rows[0]]


def keep_valid(key: str, options: Sequence) -> None:
    """Forget widget ``key``'s value when it is no longer an option (another run has other classes)."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def display(frame: pd.DataFrame) -> pd.DataFrame:
    """A keyword or level table with readable headers (columns of :data:`HEADERS`); each interval's low
    and high columns as one ``0.25–0.59`` text column (:data:`INTERVALS`) in their place."""
    shown = frame.copy()
    for (low, high), title in INTERVALS.items():
        if low in shown.columns and high in shown.columns:
            shown.insert(int(shown.columns.get_loc(low)), title, [f"{a:.2f}–{b:.2f}" for a, b in zip(shown[low], shown[high])])
            shown = shown.drop(columns=[low, high])
    return shown.rename(columns=HEADERS)


def report_button(
    workspace: Workspace, model: str, compare: Sequence[str] = (), suite_id: str | None = None, min_count: int = 3, *, key: str = KEY + "report"
) -> None:
    """A button that builds the HTML report of ``model`` (:func:`analytics.findings.report.build_report`) with a
    progress bar over its sections, then a download button for the file.

    Any page may call it (Failures, Matrices, Repository, Home); ``key`` must be unique on the page.
    The built file is kept in the session under ``key`` for this (workspace, model, compare, suite,
    min_count), so reruns keep offering it and another choice asks for a new build.

    Parameters
    ----------
    workspace : Workspace
    model : str
    compare : sequence of str, default=()
        Models shown beside it.
    suite_id : str, optional
        Default: the suite of ``model``'s newest finished run.
    min_count : int, default=3
        Fewest composites of a keyword in the failure table.
    key : str, default='failures.report'
        Widget key of the download button; the build button is ``key + '.build'``.
    """
    request = (str(workspace.root), model, tuple(compare), suite_id, int(min_count))
    built = st.session_state.get(key + ".built")
    if built is None or built[0] != request:
        clicked = st.button(
            "Build report (HTML)", key=key + ".build", icon=":material/description:",
            help="One self-contained file: accuracy and BG-Gap, matrices, keyword failures, galleries, flips with saliency, "
            "judgments, assessor verdict and provenance; opens without a server or network.",
        )  # fmt: skip
        if not clicked:
            return
        bar = st.progress(0.0, text="Building the report…")
        try:
            text = build_report(
                workspace, model, compare=list(compare), suite_id=suite_id, min_count=min_count,
                progress=lambda done, total: bar.progress(done / total, text=f"Building the report: {done} of {total} sections"),
            )  # fmt: skip
        except BackdropError as error:
            st.error(escape_markdown(error))
            return
        finally:
            bar.empty()
        built = st.session_state[key + ".built"] = (request, text.encode("utf-8"))
    st.download_button(
        "Download report (HTML)",
        data=built[1],
        file_name=f"backdrop-report-{model}.html",
        mime="text/html",
        icon=":material/download:",
        key=key,
        help=f"{len(built[1]) / 1e6:.1f} MB; opens in any browser without a server or network, and prints.",
    )
