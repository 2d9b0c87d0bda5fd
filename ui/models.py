"""Streamlit helpers of the Models page: cached evaluations and predictions, tables,
and the form that trains the zoo of heads with known background reliance (:mod:`analytics.zoo`).

Loaded models come from :func:`ui.cache.load_model` (``st.cache_resource``: one shared object per
workspace, model and content key); evaluations and predictions are ``st.cache_data`` keyed on the
workspace path, the model name and its content key (:func:`analytics.workspace.model_keys`; a head's
covers its backbone), so a re-registered model is evaluated afresh.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from analytics.inference import Evaluation, evaluate
from analytics.models import LITE_VARIANTS, ModelSpec, list_models
from analytics.workspace import Workspace
from analytics.zoo import DEFAULT_BACKBONE, DEFAULT_STRENGTHS, DEFAULT_TEMPERATURES, DEFAULT_ZOO_SEEDS
from ui import cache, state

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
#: Column configuration of :func:`model_table`: short headers, compact parameter counts and fixed widths for the
#: free text, so every column fits a 1400 px window (#47 item 9); a longer text is cut and shown whole on hover.
TABLE_CONFIG = {
    "Model": st.column_config.TextColumn("Model", width=160),
    "Source": st.column_config.TextColumn("Source", width=110),
    "Architecture": st.column_config.TextColumn("Architecture", width=115),
    "Label space": st.column_config.TextColumn("Labels", help="Label space: imagenet, in9 or the model's own (custom)."),
    "Input px": st.column_config.NumberColumn("Input px"),
    "Parameters": st.column_config.NumberColumn("Parameters", format="compact"),
    "Embedding": st.column_config.TextColumn("Embedding", width=130, help="The layer whose output the embedding signals use."),
    "Construction": st.column_config.TextColumn("Construction", width=120, help="How a zoo head was built (strength, augmentation, seed)."),
}
ZOO_KEY = "models.zoo."  # prefix of the zoo form's widget keys
ZOO_JOB = ZOO_KEY + "job"  # session-state key: the id of the zoo job this session started
ZOO_COLUMNS = {
    "name": "Head",
    "strength": "Strength s",
    "augment": "Augmented",
    "seed": "Seed",
    "temperature": "Temperature",
    "accuracy": "Accuracy",
    "heldout_accuracy": "Held-out accuracy",
    "trained": "Trained now",
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
    """:func:`analytics.inference.evaluate` (``spec_key``/``targets_stamp``, :func:`analytics.data.targets_stamp`, only key the cache)."""
    return evaluate(state.open_workspace(workspace_path), model_name)


def per_class_table(result: Evaluation) -> pd.DataFrame:
    return pd.DataFrame(
        {"Class": list(result.per_class), "Targets": [result.per_class_n[c] for c in result.per_class], "Accuracy": list(result.per_class.values())}
    )


@st.cache_data(max_entries=256, show_spinner=False)
def top_predictions(workspace_path: str, model_name: str, spec_key: str, image_hash: str, k: int = 5) -> pd.DataFrame:
    """The model's ``k`` most probable outputs on one stored image: columns output, probability."""
    top = cache.load_model(workspace_path, model_name).top_outputs(cache.load_array(workspace_path, image_hash), k=k)
    return pd.DataFrame(top, columns=["output", "probability"])


def zoo_backbones(workspace: Workspace) -> list[str]:
    """Networks a zoo can be trained on: registered non-head models, then the EfficientNet-Lites not yet registered."""
    registered = [spec.name for spec in list_models(workspace) if spec.source != "head"]
    return registered + [name for v in LITE_VARIANTS if (name := f"efficientnet-lite{v}") not in registered]


def zoo_form(workspace: Workspace) -> dict | None:
    """The zoo settings (backbone, strengths, augmentation, seeds, figure-8 family, replace).

    Returns
    -------
    dict or None
        Keyword arguments of :func:`analytics.zoo.build_zoo` (JSON values) when the button was
        pressed, else None.
    """
    backbones = zoo_backbones(workspace)
    left, middle, right = st.columns([2, 3, 1])
    backbone = left.selectbox(
        "Backbone", backbones, index=backbones.index(DEFAULT_BACKBONE) if DEFAULT_BACKBONE in backbones else 0, key=ZOO_KEY + "backbone",
        help="The heads read this network's frozen embedding; a missing EfficientNet-Lite is registered from its bundled weights.",
    )  # fmt: skip
    strengths = middle.multiselect(
        "Background strengths s", list(DEFAULT_STRENGTHS), default=list(DEFAULT_STRENGTHS), format_func=lambda s: f"{s:g}", key=ZOO_KEY + "strengths",
        help="How strongly a class predicts its background in a head's training set: 0 = independent, 1 = always its home scenes.",
    )  # fmt: skip
    seeds = int(right.number_input("Seeds", 1, 10, len(DEFAULT_ZOO_SEEDS), key=ZOO_KEY + "seeds"))
    left, middle, right = st.columns(3)
    augment = left.checkbox("Augmented heads too", value=True, key=ZOO_KEY + "augment", help="Also train each head with random-background composites, which lowers its reliance.")
    family = middle.checkbox(
        "Figure-8 family", value=True, key=ZOO_KEY + "family",
        help=f"Per seed, the s = 0.5 head at temperatures {', '.join(f'{t:g}' for t in DEFAULT_TEMPERATURES)}: equal accuracy, different matrices (the paper's Figure 8).",
    )  # fmt: skip
    replace = right.checkbox("Retrain heads built with other settings", value=False, key=ZOO_KEY + "replace", help="Otherwise such a head stops the job with a message.")
    heads = len(strengths) * (2 if augment else 1) * seeds + (seeds * len(DEFAULT_TEMPERATURES) if family else 0)
    st.caption(
        f"{heads} heads. Runs in the background with progress and Cancel; a resumed or repeated build keeps the heads "
        "already trained with the same settings and the cached embeddings."
    )
    if not st.button("Train the zoo", type="primary", icon=":material/play_arrow:", key=ZOO_KEY + "go", disabled=not strengths):
        return None
    return {
        "backbone": backbone,
        "strengths": [float(s) for s in strengths],
        "augment": [False, True] if augment else [False],
        "seeds": list(range(seeds)),
        "temperatures": list(DEFAULT_TEMPERATURES) if family else [],
        "replace": bool(replace),
    }


def zoo_result_table(result: dict) -> pd.DataFrame:
    """A finished zoo job's heads (its ``result["models"]``) with the columns of :data:`ZOO_COLUMNS`."""
    table = pd.DataFrame(result.get("models", []), columns=list(ZOO_COLUMNS))
    return table.rename(columns=ZOO_COLUMNS)
