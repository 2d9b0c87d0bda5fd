"""Streamlit helpers of the Factors page (ImageNet-X): uploaded and predicted predictions, the
cached analysis and its tables (the charts are :mod:`analytics.figures`').

The table builders compute nothing beyond layout; the numbers are
:func:`analytics.robustness.factors.analyse_models`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd
import streamlit as st

from analytics.exceptions import BackdropError
from analytics.figures import factor_label
from analytics.models import list_models
from analytics.robustness import (
    FactorAnalysis,
    analyse_models,
    check_file_size,
    factor_names,
    load_predictions,
    matched_rows,
    predict_imagenet_val,
)
from analytics.team import resolve_server_path
from analytics.workspace import Workspace
from ui.markdown import escape_markdown

KEY = "factors."
PREDICT = KEY + "predict"  # the last prediction request (plain values: model, folder, batch size)
#: What the per-factor table can show: details column -> title.
VALUES = {"accuracy": "Accuracy", "error_ratio": "Error ratio", "share_of_errors": "Share of errors", "shift": "Prevalence shift", "images": "Images"}
FORMAT_TEXT = (
    "A predictions CSV in the imagenet-x format has one row per ImageNet validation image: "
    "`file_name,predicted_class,predicted_probability`, e.g. `ILSVRC2012_val_00000001.JPEG,65,0.91` "
    "(`predicted_class` is the ImageNet-1k index 0–999; the probability is optional)."
)


# -- inputs ----------------------------------------------------------------------------------------
@st.cache_data(max_entries=16, show_spinner=False)
def _parsed(data: bytes, name: str) -> pd.DataFrame:
    return load_predictions(data, name=name)


def uploaded_predictions(uploads: Iterable) -> dict[str, pd.DataFrame]:
    """``{name: predictions}`` of the uploaded CSVs (named by file stem); a bad file gets an error box
    naming it and is left out, the others stay."""
    models: dict[str, pd.DataFrame] = {}
    for upload in uploads:
        try:
            check_file_size(upload.size, upload.name)  # before the bytes are hashed for the cache
            predictions = _parsed(upload.getvalue(), upload.name)
        except BackdropError as err:
            st.error(escape_markdown(err))
            continue
        matched = matched_rows(predictions)
        if not matched:  # an empty chart says nothing: say why, and what the file must hold
            st.error(
                escape_markdown(f"{upload.name}: 0 of its {len(predictions)} rows name an annotated ImageNet-X validation image "
                f"(first file name: {predictions['file_name'].iloc[0]}); left out.") + f" {FORMAT_TEXT}"
            )  # fmt: skip
            continue
        name = unique_name(Path(upload.name).stem, models)
        st.caption(escape_markdown(
            f"{upload.name} (model {name}): {matched} of its {len(predictions)} rows name an annotated ImageNet-X validation image"
            + ("." if matched == len(predictions) else "; the analysis counts those, the others are left out.")
        ))  # fmt: skip
        models[name] = predictions
    return models


def unique_name(name: str, taken: Mapping[str, object]) -> str:
    """``name``, or ``name (2)``, ``name (3)``… when taken (two uploads may share a file name)."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name} ({n})"
    return candidate


def imagenet_models(workspace: Workspace) -> list[str]:
    """Registered models whose outputs are the 1000 ImageNet-1k classes (the ones ImageNet-X can use)."""
    return [spec.name for spec in list_models(workspace) if spec.label_space.kind == "imagenet"]


def prediction_form(workspace: Workspace) -> None:
    """Model, server folder and batch size; a submitted request goes to ``st.session_state[PREDICT]``."""
    models = imagenet_models(workspace)
    if not models:
        st.caption("No registered model has the ImageNet-1k label space (Models page).")
        return
    with st.form(KEY + "form"):
        left, middle, right = st.columns([2, 4, 1])
        model = left.selectbox("Model", models, key=KEY + "model")
        folder = middle.text_input(
            "Folder of ImageNet validation images on the server", key=KEY + "folder",
            help="Files named like ILSVRC2012_val_00000001.JPEG, flat or in class subfolders; only images ImageNet-X annotates are read.",
        )  # fmt: skip
        batch_size = right.number_input("Batch size", 1, 256, 32, key=KEY + "batch")
        if st.form_submit_button("Predict", icon=":material/play_arrow:"):
            st.session_state[PREDICT] = {"model": model, "folder": folder.strip(), "batch_size": int(batch_size)}


def workspace_predictions(workspace: Workspace, request: Mapping) -> pd.DataFrame | None:
    """Predictions of the requested model (cached per chunk in the workspace: a rerun or a resumed
    run reads them back), with a progress bar; None after an error box."""
    bar = st.progress(0.0, text=f"Predicting with {escape_markdown(request['model'])}…")
    try:
        folder = resolve_server_path(workspace, request["folder"])  # read by the server: only inside the data roots
        predictions = predict_imagenet_val(
            workspace,
            request["model"],
            folder,
            batch_size=request["batch_size"],
            progress=lambda done, total: bar.progress(done / total, text=f"Predicting with {escape_markdown(request['model'])}: {done} of {total} images"),
        )
    except BackdropError as err:
        st.error(escape_markdown(err))
        return None
    finally:
        bar.empty()
    return predictions


@st.cache_data(max_entries=8, show_spinner="Comparing the factors…")
def analysis(models: dict[str, pd.DataFrame]) -> FactorAnalysis:
    """:func:`analytics.robustness.factors.analyse_models`, cached on the predictions' contents."""
    return analyse_models(models)


# -- tables -------------------------------------------------------------------------------
def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Model, images, overall and worst-factor accuracy, and the factor with the highest error ratio."""
    ratios = summary[list(factor_names())].astype(float)
    worst = [factor_label(row.idxmax()) if row.notna().any() else "—" for _, row in ratios.iterrows()]
    return pd.DataFrame(
        {
            "Model": summary.index,
            "Images": summary["images"].to_numpy(),
            "Accuracy": summary["accuracy"].to_numpy(),
            "Worst-factor accuracy": summary["worst_factor_accuracy"].to_numpy(),
            "Highest error ratio": worst,
            "Ratio": ratios.max(axis=1).to_numpy(),
        }
    )


def factor_pivot(details: pd.DataFrame, value: str) -> pd.DataFrame:
    """One row per factor, one column per model, holding ``value`` (a key of :data:`VALUES`)."""
    table = details.pivot(index="factor", columns="model", values=value)
    table = table.reindex(index=list(factor_names()), columns=list(dict.fromkeys(details["model"])))
    table.index = [factor_label(f) for f in table.index]
    table.index.name = "Factor"
    return table.reset_index()
