"""Streamlit helpers of the Scenarios page: the evaluation with a progress bar, display tables
(accuracy, robustness, Table 1's regression) and the class × scenario heat map (Plotly).

The statistics are :mod:`analytics.robustness.scenario_stats`; these functions only format and draw them.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from analytics.figures import MIN_HEIGHT, apply_style, plain_text
from analytics.robustness import ORIGINAL, Regression, evaluate_scenarios
from analytics.workspace import Workspace

KEY = "scenarios."
#: The paper's wording for each scenario (Tables 1–3 and §2.1).
LABELS = {
    ORIGINAL: "Original",
    "blur_background": "Blur background",
    "blur_object": "Blur object",
    "image_grey": "Grey background",
    "image_r": "Red hue background",
    "image_g": "Green hue background",
    "image_b": "Blue hue background",
    "image_rainbow": "Rainbow (hue-rotated) background",
    "image_bright": "Brightened background (unsharp mask)",
    "segmented_image": "Segmented (black background)",
    "transparent_image": "Transparent (over white)",
    "random_background": "Random real background",
}
#: The robustness score's scenario sets (``analytics.robustness.SCENARIO_SETS``), Table 3's first: the default.
SCENARIO_SET_LABELS = {"table3": "Table 3's eight scenarios (the paper's scores)", "all": "Every evaluated scenario"}
#: Accuracy colours: red (low) to green (high), fixed 0–1 so heat maps of different models compare.
ACCURACY_COLORSCALE = [[0.0, "#d73027"], [0.5, "#fee08b"], [1.0, "#1a9850"]]


def label(scenario: str) -> str:
    """The display name of a scenario (its registry name when it has none)."""
    return LABELS.get(scenario, scenario)


def evaluate_with_progress(workspace: Workspace, models: Sequence[str], scenarios: Sequence[str], seed: int) -> pd.DataFrame:
    """:func:`analytics.robustness.scenarios.evaluate_scenarios` with an ``st.progress`` bar (removed when done)."""
    bar = st.progress(0.0, text="Starting…")

    def progress(done: int, total: int, _message: str = "") -> None:
        bar.progress(done / total if total else 1.0, text=f"{done} of {total} images (cached ones count at once)")

    try:
        return evaluate_scenarios(workspace, models, scenarios=scenarios, seed=seed, progress=progress)
    finally:
        bar.empty()


def percent_columns(names: Sequence[str]) -> dict:
    """Column configuration showing accuracies in [0, 1] as percentages."""
    return {name: st.column_config.NumberColumn(name, format="percent") for name in names}


def accuracy_display(accuracy: pd.DataFrame) -> pd.DataFrame:
    """Scenario × model accuracy with the paper's scenario names as a column.

    accuracy : DataFrame from :func:`analytics.robustness.scenario_stats.scenario_accuracy`.
    """
    shown = accuracy.copy()
    shown.insert(0, "Scenario", [label(name) for name in shown.index])
    return shown.reset_index(drop=True)


def robustness_display(scores: pd.DataFrame) -> pd.DataFrame:
    """Robustness scores per model, the two forms side by side.

    scores : DataFrame from :func:`analytics.robustness.scenario_stats.robustness_scores`.
    """
    return pd.DataFrame({
        "Model": scores.index,
        "Original accuracy μ": scores["original"].to_numpy(),
        "S (§4: 1 − (σ_i + σ_e))": scores["score_paper"].to_numpy(),
        "S (Table 3: 1 − (σ_e² + σ_i²), n − 1)": scores["score_table3"].to_numpy(),
        "σ_e² external (scenarios)": scores["external"].to_numpy(),
        "σ_i² internal (classes)": scores["internal"].to_numpy(),
        "Scenarios": scores["n_scenarios"].to_numpy(),
    })


def format_p(p: float) -> str:
    """The paper's p-value style: ``< 0.0001`` below it, else 4 significant digits."""
    return "< 0.0001" if p < 1e-4 else f"{p:.4g}"


def regression_display(fit: Regression) -> pd.DataFrame:
    """Table 1's layout: Variable, Estimate, Standard error, t, 95 % CI, P value, P value summary."""
    table = fit.table
    return pd.DataFrame({
        "Variable": table["Variable"],
        "Estimate": table["Estimate"].round(4),
        "Standard error": table["Standard error"].round(5),
        "t": table["t"].round(3),
        "95% CI": [f"{low:.4g} to {high:.4g}" for low, high in zip(table["CI low"], table["CI high"])],
        "P value": [format_p(p) for p in table["P value"]],
        "P value summary": table["P value summary"],
    })


def class_heatmap(cells: pd.DataFrame, model: str) -> go.Figure:
    """Accuracy of one model per class (columns) and scenario (rows), like the paper's Table 5.

    cells : DataFrame from :func:`analytics.robustness.scenario_stats.class_accuracy`.
    """
    own = cells[cells["model"] == model]
    grid = own.pivot(index="scenario", columns="class", values="accuracy")
    counts = own.pivot(index="scenario", columns="class", values="n")
    grid = grid.reindex([name for name in LABELS if name in grid.index] + [n for n in grid.index if n not in LABELS])
    counts = counts.reindex(grid.index)
    figure = go.Figure(
        go.Heatmap(
            z=grid.to_numpy(),
            x=[plain_text(c) for c in grid.columns],
            y=[plain_text(label(name)) for name in grid.index],
            zmin=0.0,
            zmax=1.0,
            colorscale=ACCURACY_COLORSCALE,
            text=grid.map(lambda v: f"{v:.0%}").to_numpy(),
            texttemplate="%{text}",
            customdata=counts.to_numpy(),
            hovertemplate="%{y}<br>class %{x}<br>accuracy %{z:.1%} of %{customdata} images<extra></extra>",
            colorbar={"title": "Accuracy", "tickformat": ".0%"},
        )
    )
    figure.update_layout(
        title=f"{plain_text(model)}: accuracy per class and scenario",
        height=max(MIN_HEIGHT, 40 * len(grid) + 140),
        xaxis_title="Class",
        yaxis={"autorange": "reversed"},
        margin={"l": 10, "r": 10, "b": 60},
    )
    return apply_style(figure)
