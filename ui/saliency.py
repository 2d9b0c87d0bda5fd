"""Streamlit helpers of the Saliency page: cached explanations, overlays, tables and the chart.

Explanations are ``st.cache_data`` keyed on the workspace path, the model name and its spec hash (a
re-registered model is explained afresh), the method with its settings, and the image ids; models
come from :func:`ui.cache.load_model` (``st.cache_resource``). Composites are made here from the
``suites``/``suite_items`` rows with :func:`analytics.compose.composite`, as a run makes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from analytics.classes import list_class_mappings
from analytics.compose import composite
from analytics.datasets import load_backgrounds, load_targets
from analytics.saliency import METHODS, NORMALIZATIONS, REDUCTIONS, Explanation, binarize, explain
from analytics.workspace import Workspace
from ui import cache
from ui.widgets import outline_mask

ORIGINAL = "original"
# Outline colours (RGB) and their names in the page's caption: the object as on the other pages (drawn
# over a dark underlay), the binarised map in white, a colour the JET heat map never takes.
MASK_COLOUR, MASK_COLOUR_NAME = (0, 230, 255), "cyan"
BINARY_COLOUR, BINARY_COLOUR_NAME = (255, 255, 255), "white"
OVERLAY_ALPHA = 0.5
#: The page's first method: Grad-CAM's coarse maps read at a glance, where plain gradients are speckle.
DEFAULT_METHOD = "gradcam"
HEAT_MAP = cv2.COLORMAP_JET
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


def suite_backgrounds(workspace: Workspace, suite_id: str | None, target_id: str, limit: int) -> list[str]:
    """Background ids of a target's first ``limit`` composites in a suite (by position)."""
    if suite_id is None or limit <= 0:
        return []
    rows = workspace.query(
        "SELECT background_id FROM suite_items WHERE suite_id = ? AND target_id = ? ORDER BY position LIMIT ?",
        (suite_id, target_id, limit),
    )
    return [row["background_id"] for row in rows]


def images_of_target(workspace: Workspace, target_id: str, backgrounds: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The original image of a target followed by its composites on ``backgrounds``.

    Returns
    -------
    images : ndarray of shape (1 + len(backgrounds), size, size, 3), uint8
    masks : ndarray of shape (1 + len(backgrounds), size, size), bool (the object's mask, repeated)
    """
    image, mask = load_targets(workspace, [target_id])
    k = len(backgrounds)
    images, masks = np.repeat(image, 1 + k, 0), np.repeat(mask, 1 + k, 0)
    if k:
        images[1:] = composite(images[1:], masks[1:], load_backgrounds(workspace, backgrounds))
    return images, masks


@st.cache_data(max_entries=128, show_spinner="Computing attribution maps…")
def explain_target(
    workspace_path: str, model_name: str, spec_key: str, settings: Settings, target_id: str, suite_id: str | None, n_composites: int
) -> ExplainedImages:
    """One method's maps and scores on a target's original and first composites (``spec_key`` keys the cache)."""
    workspace = Workspace(workspace_path, create=False)
    backgrounds = suite_backgrounds(workspace, suite_id, target_id, n_composites)
    images, masks = images_of_target(workspace, target_id, backgrounds)
    class_name = workspace.query_one("SELECT class_name FROM targets WHERE id = ?", (target_id,))["class_name"]
    model = cache.load_model(workspace_path, model_name)
    outputs = model.spec.label_space.class_outputs({class_name: list_class_mappings(workspace)[class_name]})[class_name]
    explanation = _explain(model, images, masks, [outputs] * len(images), settings)
    return ExplainedImages(images, masks, [ORIGINAL, *backgrounds], explanation, list(model.spec.label_space.names))


@st.cache_data(max_entries=64, show_spinner="Explaining originals and composites…")
def inside_share_comparison(
    workspace_path: str, model_name: str, spec_key: str, settings: Settings, suite_id: str | None, target_ids: tuple[str, ...], n_composites: int
) -> dict[str, float | int | str]:
    """Mean inside share of one model × method on the originals and on the composites of ``target_ids``."""
    workspace = Workspace(workspace_path, create=False)
    model = cache.load_model(workspace_path, model_name)
    classes = dict(zip(target_ids, _class_names(workspace, target_ids)))
    outputs = model.spec.label_space.class_outputs(list_class_mappings(workspace))
    shares: dict[bool, list[np.ndarray]] = {False: [], True: []}
    for target_id in target_ids:
        images, masks = images_of_target(workspace, target_id, suite_backgrounds(workspace, suite_id, target_id, n_composites))
        result = _explain(model, images, masks, [outputs[classes[target_id]]] * len(images), settings)
        share = result.alignment.inside_share
        shares[False].append(share[:1])
        shares[True].append(share[1:])
    originals, composites = np.concatenate(shares[False]), np.concatenate(shares[True])
    return {
        "Model": model_name,
        "Method": METHODS[settings.method].name,
        "Inside share (originals)": _nanmean(originals),
        "Inside share (composites)": _nanmean(composites),
        "Originals": int(len(originals)),
        "Composites": int(len(composites)),
    }


def _explain(model, images: np.ndarray, masks: np.ndarray, outputs: list[list[int]], settings: Settings) -> Explanation:
    return explain(
        model,
        images,
        masks,
        outputs,
        method=settings.method,
        settings=dict(settings.method_settings),
        threshold=settings.threshold,
        faithfulness_steps=settings.faithfulness_steps,
        baseline=settings.baseline,
    )


def _class_names(workspace: Workspace, target_ids: tuple[str, ...]) -> list[str]:
    marks = ",".join("?" * len(target_ids))
    found = {r["id"]: r["class_name"] for r in workspace.query(f"SELECT id, class_name FROM targets WHERE id IN ({marks})", target_ids)}
    return [found[t] for t in target_ids]


def _nanmean(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(values.mean()) if len(values) else float("nan")


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
    heat = _heat(np.clip(saliency, 0, 1))
    blended = cv2.addWeighted(image, 1 - alpha, heat, alpha, 0)
    return outline_mask(outline_mask(blended, binary, colour=BINARY_COLOUR), mask, colour=MASK_COLOUR)


def colour_legend(*, width: int = 256, height: int = 14) -> np.ndarray:
    """The heat map's colour scale from 0 (left) to 1 (right), as drawn by :func:`overlay`.

    Returns
    -------
    ndarray of shape (height, width, 3), uint8
    """
    return np.repeat(_heat(np.linspace(0.0, 1.0, width)[None, :]), height, axis=0)


def _heat(values: np.ndarray) -> np.ndarray:
    """RGB colours of :data:`HEAT_MAP` for values in [0, 1]: ndarray of shape values.shape + (3,), uint8."""
    return np.ascontiguousarray(cv2.applyColorMap(np.uint8(values * 255), HEAT_MAP)[..., ::-1])


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


def comparison_chart(table: pd.DataFrame) -> go.Figure:
    """Grouped bars: mean inside share on originals vs composites, one group per model × method."""
    groups = table["Model"] + " · " + table["Method"]
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
    return figure
