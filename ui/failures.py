"""Streamlit helpers of the Failures page: cached keyword statistics, their display table, the keyword x
model heat map and the report download.

The numbers are :mod:`analytics.failures`'s and the report :func:`analytics.report.build_report`'s;
this module only caches and lays out.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from analytics.failures import FailureTable, failure_table, keyword_model_matrix
from analytics.report import build_report
from analytics.workspace import Workspace
from ui.charts import MIN_HEIGHT

KEY = "failures."
ROW_PX = 22  # heat map height per keyword row
MAX_HEATMAP_KEYWORDS = 40  # rows of the heat map: the keywords with the highest mean error rate
#: Display headers of :attr:`analytics.failures.FailureTable.keywords` / ``levels`` columns.
HEADERS = {
    "keyword": "Keyword", "level": "Level", "count": "Composites", "errors": "Errors", "error_rate": "Error rate",
    "error_low": "Rate 95% low", "error_high": "Rate 95% high", "mean_drop": "Mean drop", "drop_low": "Drop 95% low",
    "drop_high": "Drop 95% high", "targets": "Targets",
}  # fmt: skip
NUMBER_FORMAT = {
    title: st.column_config.NumberColumn(format="%.3f")
    for title in ("Error rate", "Rate 95% low", "Rate 95% high", "Mean drop", "Drop 95% low", "Drop 95% high")
}


@st.cache_data(max_entries=16, show_spinner="Counting failures per keyword…")
def failures(workspace_path: str, run_id: str, finished: str, min_count: int) -> FailureTable:
    """:func:`analytics.failures.failure_table`, cached per run (``finished`` keys a redone run afresh)."""
    return failure_table(Workspace(workspace_path), run_id, min_count=min_count)


@st.cache_data(max_entries=16, show_spinner="Comparing models per keyword…")
def keyword_matrix(workspace_path: str, run_ids: tuple[str, ...], finished: tuple[str, ...], min_count: int) -> pd.DataFrame:
    """:func:`analytics.failures.keyword_model_matrix`, cached per set of runs."""
    return keyword_model_matrix(Workspace(workspace_path), list(run_ids), min_count=min_count)


def display(frame: pd.DataFrame) -> pd.DataFrame:
    """A keyword or level table with readable headers (columns of :data:`HEADERS`)."""
    return frame.rename(columns=HEADERS)


def keyword_heatmap(matrix: pd.DataFrame) -> go.Figure:
    """Heat map of :func:`analytics.failures.keyword_model_matrix` (keywords down, models across), white
    = no errors, dark red = every composite misclassified.

    Parameters
    ----------
    matrix : DataFrame of float, shape (n_keywords, n_models)
        Error rates in [0, 1]; the first :data:`MAX_HEATMAP_KEYWORDS` rows are drawn.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    shown = matrix.head(MAX_HEATMAP_KEYWORDS)
    counts = matrix.attrs.get("counts", {})
    labels = [f"{keyword} ({counts.get(keyword, '?')})" for keyword in shown.index]
    figure = go.Figure(
        go.Heatmap(
            z=shown.to_numpy(float), x=list(shown.columns), y=labels, zmin=0.0, zmax=1.0, colorscale="Reds",
            colorbar={"title": {"text": "error rate", "side": "right"}}, hovertemplate="%{y} · %{x}: %{z:.3f}<extra></extra>",
        )
    )  # fmt: skip
    figure.update_yaxes(autorange="reversed", title="keyword (composites)")
    figure.update_layout(height=max(MIN_HEIGHT, ROW_PX * len(shown) + 140), margin={"l": 10, "r": 10, "t": 20, "b": 40})
    return figure


def report_button(workspace: Workspace, model: str, compare: Sequence[str], suite_id: str, min_count: int) -> None:
    """A download button whose click builds the HTML report (:func:`analytics.report.build_report`)."""
    st.download_button(
        "Download report (HTML)",
        data=lambda: build_report(workspace, model, compare=list(compare), suite_id=suite_id, min_count=min_count),
        file_name=f"backdrop-report-{model}.html",
        mime="text/html",
        icon=":material/download:",
        key=KEY + "report",
        help="One self-contained file: matrices, keyword failures, gallery, judgments and provenance; opens without a server.",
    )
