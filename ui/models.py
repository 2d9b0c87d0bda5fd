"""Streamlit helpers of the Models page: cached evaluations and predictions, tables, charts, uploads.

Loaded models come from :func:`ui.cache.load_model` (``st.cache_resource``: one shared object per
workspace, model and content key); evaluations and predictions are ``st.cache_data`` keyed on the
workspace path, the model name and its content key (:func:`analytics.runs.model_keys`; a head's
covers its backbone), so a re-registered model is evaluated afresh.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from analytics.inference import Evaluation, evaluate
from analytics.models import ModelSpec
from analytics.workspace import Workspace
from ui import cache

TABLE_COLUMNS = {
    "name": "Model",
    "source": "Source",
    "arch": "Architecture",
    "label_space": "Label space",
    "n_outputs": "Outputs",
    "input_size": "Input px",
    "n_params": "Parameters",
    "embedding_layer": "Embedding",
    "construction": "Construction",
}


def model_table(specs: Sequence[ModelSpec]) -> pd.DataFrame:
    """One row per model with the columns of :data:`TABLE_COLUMNS` (empty but well-formed if none)."""
    rows = []
    for spec in specs:
        record = spec.summary()
        record["construction"] = ", ".join(f"{k}={v}" for k, v in (spec.construction or {}).items())
        rows.append({label: record[key] for key, label in TABLE_COLUMNS.items()})
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS.values()))


@st.cache_data(max_entries=64, show_spinner="Evaluating on the original targets…")
def evaluation(workspace_path: str, model_name: str, spec_key: str, targets_stamp: str) -> Evaluation:
    """:func:`analytics.inference.evaluate` (``spec_key``/``targets_stamp`` only key the cache)."""
    return evaluate(Workspace(workspace_path, create=False), model_name)


def targets_stamp(workspace: Workspace) -> str:
    """Changes whenever targets or class indices change (part of the evaluation cache key)."""
    row = workspace.query_one(
        "SELECT (SELECT COUNT(*) || ':' || IFNULL(MAX(added), '') FROM targets) || '|' || "
        "(SELECT IFNULL(GROUP_CONCAT(name || imagenet_indices), '') FROM classes) AS stamp"
    )
    return str(row["stamp"])


def per_class_chart(result: Evaluation) -> go.Figure:
    """Bar chart of accuracy per class, with the overall accuracy as a dashed line."""
    classes = list(result.per_class)
    figure = go.Figure(
        go.Bar(
            x=classes,
            y=[result.per_class[c] for c in classes],
            text=[f"{result.per_class[c]:.0%} of {result.per_class_n[c]}" for c in classes],
            marker_color="#2e7d32",
        )
    )
    figure.add_hline(y=result.accuracy, line_dash="dash", annotation_text=f"overall {result.accuracy:.1%}")
    figure.update_layout(yaxis={"title": "accuracy", "range": [0, 1.05], "tickformat": ".0%"}, xaxis_title="class", height=360, margin={"t": 30})
    return figure


def per_class_table(result: Evaluation) -> pd.DataFrame:
    return pd.DataFrame(
        {"Class": list(result.per_class), "Targets": [result.per_class_n[c] for c in result.per_class], "Accuracy": list(result.per_class.values())}
    )


@st.cache_data(max_entries=256, show_spinner=False)
def top_predictions(workspace_path: str, model_name: str, spec_key: str, image_hash: str, k: int = 5) -> pd.DataFrame:
    """The model's ``k`` most probable outputs on one stored image: columns output, probability."""
    model = cache.load_model(workspace_path, model_name)
    image = cache.load_array(workspace_path, image_hash)
    probabilities = model.predict(image[None]).probabilities[0]
    order = np.argsort(-probabilities)[:k]
    return pd.DataFrame({"output": [model.spec.label_space.names[i] for i in order], "probability": probabilities[order]})


@contextmanager
def uploaded_file(upload) -> Iterator[Path]:
    """An ``st.file_uploader`` file saved under its own name in a temporary folder (removed after)."""
    with tempfile.TemporaryDirectory(prefix="backdrop-upload-") as folder:
        path = Path(folder) / Path(upload.name).name
        path.write_bytes(upload.getvalue())
        yield path
