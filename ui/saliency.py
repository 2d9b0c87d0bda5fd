"""Streamlit helpers of the Saliency page: cached explanations, overlays, tables and the chart.

Explanations are ``st.cache_data`` keyed on the workspace path, the model name and its spec hash (a
re-registered model is explained afresh), the method with its settings, and the image ids; models
come from :func:`ui.cache.load_model` (``st.cache_resource``). Images, composites and the
comparison's numbers come from :mod:`analytics.saliency.survey`; a comparison over many targets runs
there as the background job kind ``saliency``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from analytics.figures import apply_style, plain_text
from analytics.saliency import METHODS, NORMALIZATIONS, OVERLAY_ALPHA, REDUCTIONS, Explanation, available_methods, binarize, heat_colours, heat_overlay, survey
from analytics.workspace import Workspace
from ui import cache, state
from ui.widgets import outline_mask

ORIGINAL = "original"
# Outline colours (RGB) and their names in the page's caption: the object as on the other pages (drawn
# over a dark underlay), the binarised map in white, a colour the JET heat map never takes.
MASK_COLOUR, MASK_COLOUR_NAME = (0, 230, 255), "cyan"
BINARY_COLOUR, BINARY_COLOUR_NAME = (255, 255, 255), "white"
COMPARISON_COLUMNS = {
    "model": "Model", "method": "Method", "inside_share_originals": "Inside share (originals)",
    "inside_share_composites": "Inside share (composites)", "originals": "Originals", "composites": "Composites",
}  # fmt: skip
LEGEND_CAPTION = "Heat map colours: dark blue = the map's lowest attribution → green → red = its highest (each map scaled to its own range)."


@dataclass(frozen=True)
class ExplainedImages:
    """A target's original and composites with one method's explanation of them.

    images : ndarray of shape (k, size, size, 3), uint8 — position 0 is the original
    masks : ndarray of shape (k, size, size), bool
    labels : list of str — 'original' or the background id of each composite
    """

    images: np.ndarray = field(repr=False)
    masks: np.ndarray = field(repr=False)
    labels: list[str]
    explanation: Explanation = field(repr=False)
    output_names: list[str]


@dataclass(frozen=True)
class Settings:
    """The page's choices that change an explanation (hashable: part of the cache keys)."""

    method: str
    method_settings: tuple[tuple[str, int | float | str], ...]
    threshold: float
    faithfulness_steps: int | None
    baseline: str


# -- data ------------------------------------------------------------------------------------
def registered_models(workspace: Workspace) -> dict[str, str]:
    """Registered model name -> its spec's content key (for cache keys), sorted by name."""
    from analytics.models import list_models

    return {spec.name: spec.content_key() for spec in list_models(workspace)}


@st.cache_data(max_entries=64, show_spinner="Loading the model…")
def runnable_methods(workspace_path: str, model_name: str, spec_key: str) -> list[str]:
    """The methods the model can run, clearest first (:func:`analytics.saliency.available_methods`)."""
    return available_methods(cache.load_model(workspace_path, model_name))


@st.cache_data(max_entries=128, show_spinner="Computing attribution maps…")
def explain_target(
    workspace_path: str, model_name: str, spec_key: str, settings: Settings, target_id: str, suite_id: str | None, n_composites: int
) -> ExplainedImages:
    """One method's maps and scores on a target's original and first composites (``spec_key`` keys the cache)."""
    workspace = state.open_workspace(workspace_path)
    backgrounds = survey.suite_backgrounds(workspace, suite_id, target_id, n_composites)
    model = cache.load_model(workspace_path, model_name)
    images, masks, explanation = survey.explain_target(
        workspace, model, target_id, method=settings.method, backgrounds=backgrounds, settings=dict(settings.method_settings),
        threshold=settings.threshold, faithfulness_steps=settings.faithfulness_steps, baseline=settings.baseline,
    )  # fmt: skip
    return ExplainedImages(images, masks, [ORIGINAL, *backgrounds], explanation, list(model.spec.label_space.names))


@st.cache_data(max_entries=64, show_spinner="Explaining originals and composites…")
def inside_share_comparison(
    workspace_path: str, model_name: str, spec_key: str, settings: Settings, suite_id: str | None, target_ids: tuple[str, ...], n_composites: int
) -> dict[str, float | int | str]:
    """Mean inside share of one model × method on the originals and on the composites of ``target_ids``
    (inline: a few targets; many go through the ``saliency`` job), with :func:`comparison_table`'s names."""
    row = survey.object_share_row(
        state.open_workspace(workspace_path), cache.load_model(workspace_path, model_name), target_ids, method=settings.method,
        suite_id=suite_id, n_composites=n_composites, settings=dict(settings.method_settings),
    )  # fmt: skip
    return comparison_table([row]).iloc[0].to_dict()


def survey_params(
    models: list[str], methods: list[str], settings: Settings, target_ids: list[str], suite_id: str | None, n_composites: int
) -> dict:
    """Parameters of the ``saliency`` job for the comparison (the page's method keeps its settings)."""
    return {
        "models": models, "methods": methods, "target_ids": target_ids, "suite_id": suite_id, "n_composites": n_composites,
        "settings": {settings.method: dict(settings.method_settings)} if settings.method in methods else {},
    }  # fmt: skip


# -- widgets ---------------------------------------------------------------------------------
def method_settings(method: str, *, key: str) -> tuple[tuple[str, int | float | str], ...]:
    """Widgets for a method's channel reduction, normalisation and numeric settings; returns them as
    sorted ``(name, value)`` pairs (hashable, so they can key caches)."""
    cls = METHODS[method]
    values: dict[str, int | float | str] = {}
    left, right = st.columns(2)
    values["reduce"] = left.selectbox(
        "Channel reduction", REDUCTIONS, index=REDUCTIONS.index(cls.default_reduce), key=f"{key}.{method}.reduce",
        help="How the colour channels of a pixel become one value (sum keeps the sign).",
    )
    values["normalize"] = right.selectbox(
        "Normalisation", NORMALIZATIONS, key=f"{key}.{method}.normalize", help="Per-image scaling before the metrics."
    )
    for setting in cls.settings:
        step = 1 if setting.integer else 0.05
        values[setting.name] = st.number_input(
            setting.name.replace("_", " ").capitalize(),
            min_value=setting.minimum,
            max_value=setting.maximum,
            value=setting.default,
            step=step,
            help=setting.help,
            key=f"{key}.{method}.{setting.name}",
        )
    return tuple(sorted(values.items()))


# -- figures and tables ----------------------------------------------------------------------
def overlay(image: np.ndarray, saliency: np.ndarray, mask: np.ndarray, binary: np.ndarray, *, alpha: float = OVERLAY_ALPHA) -> np.ndarray:
    """A heat map blended over the image, with the outlines of the object (:data:`MASK_COLOUR`) and
    of the binarised map (:data:`BINARY_COLOUR`).

    Parameters
    ----------
    image : ndarray of shape (h, w, 3), uint8
    saliency : ndarray of shape (h, w), float in [0, 1]
    mask, binary : ndarray of shape (h, w), bool

    Returns
    -------
    ndarray of shape (h, w, 3), uint8
    """
    blended = heat_overlay(image, saliency, alpha=alpha)
    return outline_mask(outline_mask(blended, binary, colour=BINARY_COLOUR), mask, colour=MASK_COLOUR)


def colour_legend(*, width: int = 256, height: int = 14) -> np.ndarray:
    """The heat map's colour scale from 0 (left) to 1 (right), as drawn by :func:`overlay`.

    Returns
    -------
    ndarray of shape (height, width, 3), uint8
    """
    return np.repeat(heat_colours(np.linspace(0.0, 1.0, width)[None, :]), height, axis=0)


def overlays(result: ExplainedImages, threshold: float) -> list[np.ndarray]:
    """One :func:`overlay` per image of ``result`` (binarised at the top ``threshold`` share)."""
    binary = binarize(result.explanation.maps, threshold=threshold)
    return [overlay(img, sal, m, b) for img, sal, m, b in zip(result.images, result.explanation.maps, result.masks, binary)]


def captions(result: ExplainedImages) -> list[str]:
    """'<label> · predicted <name> · true class <p>' per image."""
    names, e = result.output_names, result.explanation
    return [
        f"{label} · predicted {names[p] if p < len(names) else p} · true class {t:.0%}"
        for label, p, t in zip(result.labels, e.predicted_output, e.true_probability)
    ]


#: Column configuration of :func:`metrics_table`: two decimals, short headers (the full name in their help) and
#: fixed widths for class names, so all twelve columns fit a 1400 px window (#47 item 9).
METRIC_COLUMNS = {
    "Image": st.column_config.TextColumn("Image", width=95),
    "Predicted": st.column_config.TextColumn("Predicted", width=115),
    "True-class probability": st.column_config.NumberColumn("P(true)", format="%.2f", help="True-class probability."),
    "Explained output": st.column_config.TextColumn("Explained", width=115, help="The output the map explains: the true class's most probable one."),
    **{name: st.column_config.NumberColumn(name, format="%.2f") for name in ("IoU", "Precision", "Recall", "F1")},
    "Pointing game": st.column_config.NumberColumn("Pointing", format="%.0f", help="Pointing game: 1 when the map's peak lies on the object."),
    "Inside share": st.column_config.NumberColumn("Inside", format="percent", help="Inside share: the share of positive attribution inside the object's mask."),
    "Insertion AUC": st.column_config.NumberColumn("Insertion", format="%.2f", help="Insertion AUC (higher: the map's top pixels restore the class sooner)."),
    "Deletion AUC": st.column_config.NumberColumn("Deletion", format="%.2f", help="Deletion AUC (lower: removing the map's top pixels loses the class sooner)."),
}


def metrics_table(result: ExplainedImages) -> pd.DataFrame:
    """Per-image scores: one row per image of ``result``."""
    e, names = result.explanation, result.output_names
    table = pd.DataFrame(
        {
            "Image": result.labels,
            "Predicted": [names[p] if p < len(names) else str(p) for p in e.predicted_output],
            "True-class probability": e.true_probability,
            "Explained output": [names[t] if t < len(names) else str(t) for t in e.target_output],
            "IoU": e.alignment.iou,
            "Precision": e.alignment.precision,
            "Recall": e.alignment.recall,
            "F1": e.alignment.f1,
            "Pointing game": e.alignment.pointing_game,
            "Inside share": e.alignment.inside_share,
        }
    )
    if e.faithfulness is not None:
        table["Insertion AUC"] = e.faithfulness.insertion_auc
        table["Deletion AUC"] = e.faithfulness.deletion_auc
    return table


def comparison_table(rows: list[dict]) -> pd.DataFrame:
    """The rows of :func:`analytics.saliency.survey.object_share` with display names."""
    table = pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS)).rename(columns=COMPARISON_COLUMNS)
    table["Method"] = [METHODS[m].name for m in table["Method"]]
    return table


def comparison_chart(table: pd.DataFrame) -> go.Figure:
    """Grouped bars: mean inside share on originals vs composites, one group per model × method."""
    groups = [f"{plain_text(model)} · {plain_text(method)}" for model, method in zip(table["Model"], table["Method"])]
    figure = go.Figure(
        [
            go.Bar(name="Originals", x=groups, y=table["Inside share (originals)"]),
            go.Bar(name="Composites", x=groups, y=table["Inside share (composites)"]),
        ]
    )
    figure.update_layout(
        barmode="group",
        yaxis={"title": "Mean share of positive attribution on the object", "range": [0, 1]},
        margin={"t": 30, "b": 10},
        legend={"orientation": "h"},
    )
    return apply_style(figure)
