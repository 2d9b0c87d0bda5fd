"""Streamlit helpers of the Backgrounds Challenge page: running the evaluation with a progress bar,
the tables, the example grid and the adversarial gallery (the charts are :mod:`analytics.figures`').

The tables are plain builders; the evaluation itself is :mod:`analytics.robustness.bgchallenge`,
whose workspace cache makes a repeated view fast.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import pandas as pd
import streamlit as st

from analytics.data import background_label
from analytics.exceptions import BackdropError
from analytics.robustness.bgchallenge import (
    CATEGORIES,
    VARIANT_NAMES,
    VARIANTS,
    AdversarialResult,
    ChallengeData,
    VariantPlan,
    category_counts,
    evaluate_variants,
    gaps,
    image_categories,
    only_bg_t,
    plan_variant,
    render,
    search_backgrounds,
    variant_accuracy,
)
from analytics.workspace import Workspace
from ui.markdown import escape_markdown

THUMBNAIL = 160  # px of the example and gallery images
PAPER_RESNET50 = {"Original": 0.962, "Only-BG-T": 0.178, "Mixed-Same": 0.823, "Mixed-Rand": 0.763}  # Xiao et al., Table 2, ImageNet ResNet-50


def evaluate_with_progress(workspace: Workspace, models: Sequence[str], data: ChallengeData, *, seed: int, blend: bool) -> dict[str, pd.DataFrame]:
    """Each model's prediction table (:func:`analytics.robustness.bgchallenge.evaluate_variants`), with an ``st.progress`` bar."""
    bar = st.progress(0.0, text="Evaluating the variants…")
    tables = {}
    for k, name in enumerate(models):

        def progress(done: int, total: int, _message: str = "", k: int = k, name: str = name) -> None:
            bar.progress((k + done / max(total, 1)) / len(models), text=f"{escape_markdown(name)}: {done} of {total} variant images")

        tables[name] = evaluate_variants(workspace, name, data, seed=seed, blend=blend, progress=progress)
    bar.empty()
    return tables


def stored_tables(workspace: Workspace, models: Sequence[str], data: ChallengeData, *, seed: int, blend: bool) -> dict[str, pd.DataFrame]:
    """The prediction tables of the ``models`` whose evaluation with these settings the workspace holds
    (nothing runs: ``cached_only``); a model that cannot be read (e.g. a class without an output) is left
    out, for Evaluate to report."""
    tables = {}
    for name in models:
        try:
            table = evaluate_variants(workspace, name, data, seed=seed, blend=blend, cached_only=True)
        except BackdropError:
            continue
        if table is not None:
            tables[name] = table
    return tables


def search_with_progress(workspace: Workspace, models: Sequence[str], data: ChallengeData, *, include_own: bool = True) -> dict[str, AdversarialResult]:
    """Each model's adversarial search (:func:`analytics.robustness.bgchallenge.search_backgrounds`), with an ``st.progress`` bar."""
    bar = st.progress(0.0, text="Searching adversarial backgrounds…")
    results = {}
    for k, name in enumerate(models):

        def progress(done: int, total: int, _message: str = "", k: int = k, name: str = name) -> None:
            bar.progress((k + done / max(total, 1)) / len(models), text=f"{escape_markdown(name)}: foreground {done} of {total}")

        results[name] = search_backgrounds(workspace, name, data, include_own=include_own, progress=progress)
    bar.empty()
    return results


def accuracy_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Models (rows) x the paper's variant names (columns) of accuracy, plus BG-Gap and Mixed-Same − Mixed-Next."""
    rows = {}
    for name, table in tables.items():
        accuracy, gap = variant_accuracy(table).set_index("name")["accuracy"], gaps(table)
        rows[name] = {**accuracy.to_dict(), "BG-Gap": gap["bg_gap"], "Mixed-Same − Mixed-Next": gap["same_minus_next"]}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("Model").reset_index()


def categories_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Models (rows) x the paper's Table 3 categories (columns) of image counts."""
    return pd.DataFrame.from_dict({name: category_counts(image_categories(t)) for name, t in tables.items()}, orient="index")[list(CATEGORIES)].rename_axis("Model").reset_index()


def example_images(data: ChallengeData, source: int, *, seed: int, blend: bool, tables: dict[str, pd.DataFrame]) -> tuple[list[np.ndarray], list[str]]:
    """One target across the eight variants, captioned with the background's provenance and each model's prediction.

    Returns
    -------
    images : list of ndarray of shape (s, s, 3), uint8
    captions : list of str
    """
    images, captions = [], []
    for variant in VARIANTS:
        plan = plan_variant(data, variant, seed=seed)
        rows = np.flatnonzero(plan.sources == source)
        if not len(rows):
            continue
        images.append(_thumbnail(render(data, plan, rows, blend=blend)[0]))
        captions.append(f"{VARIANT_NAMES[variant]}{_provenance(data, plan, rows[0])} · {_predictions(tables, variant, data.ids[source])}")
    return images, captions


def _provenance(data: ChallengeData, plan: VariantPlan, row: int) -> str:
    background = plan.backgrounds[row]
    return "" if background == plan.sources[row] else f" (bg {data.ids[background]}, {data.classes[background]})"


def _predictions(tables: dict[str, pd.DataFrame], variant: str, source_id: str) -> str:
    said = []
    for name, table in tables.items():
        hit = table[(table["variant"] == variant) & (table["source_id"] == source_id)]
        if len(hit):
            row = hit.iloc[0]
            said.append(f"{name}: {row['predicted_class'] or 'other'} {'✓' if row['correct'] else '✗'}")
    return "; ".join(said)


def gallery(result: AdversarialResult, *, per_class: int = 5) -> tuple[list[np.ndarray], list[str]]:
    """The most-fooling Only-BG-T backgrounds per class with their attack success rates.

    Returns
    -------
    images : list of ndarray of shape (s, s, 3), uint8
    captions : list of str
    """
    top = result.most_fooling(per_class=per_class)
    index = {target: i for i, target in enumerate(result.data.ids)}
    rows = [index[b] for b in top["background_id"]]
    tiled = only_bg_t(result.data.images[rows], result.data.masks[rows]) if rows else []
    captions = [f"{r.class_name} #{r.rank}: {background_label(r.background_id)} · fools {r.asr:.0%}" for r in top.itertuples()]
    return [_thumbnail(image) for image in tiled], captions


def _thumbnail(image: np.ndarray) -> np.ndarray:
    side = image.shape[0]
    return image if side <= THUMBNAIL else cv2.resize(image, (THUMBNAIL, THUMBNAIL), interpolation=cv2.INTER_AREA)
