"""Plotly figures of the library's results, the ones the dashboard's pages draw: pure functions of
library data (matrices, DataFrames, dataclasses) that return a ``plotly.graph_objects.Figure``.

No Streamlit: a page passes a figure to ``st.plotly_chart``, a notebook calls ``.show()``, a script
``write_html``. Modules: :mod:`.layout` (shared sizes; :func:`apply_style`, the readable axis
style every builder ends with; :func:`plain_text`, through which every builder passes user strings
such as model and class names, so Plotly never reads them as HTML), :mod:`.matrices` (variance heatmaps, the difference of two models,
point clouds, distance histograms), :mod:`.failures` (the keyword x model heat map), :mod:`.agreement`
(κ, confusion, assessors, Shapley values, sampling methods), :mod:`.models` (accuracy per class),
:mod:`.robustness` (Backgrounds Challenge, ImageNet-X factors), :mod:`.verdicts` (the release gate's
verdict) and :mod:`.zoo` (the zoo's worst-case accuracy against the reliance built in).

Example
-------
>>> from analytics.figures import variance_heatmap
>>> from analytics.runs import run_matrices
>>> variance_heatmap(run_matrices(workspace, run_id)["true_prob"]).show()  # doctest: +SKIP
"""

from .agreement import (
    KAPPA_COLORSCALE,
    METHOD_MEASURES,
    assessor_bars,
    confusion_heatmap,
    format_kappa,
    kappa_heatmap,
    method_bars,
    shapley_bars,
)
from .failures import MAX_HEATMAP_KEYWORDS, keyword_heatmap
from .layout import AXIS_FONT, MARGIN, MIN_HEIGHT, SQUARE_HEIGHT, TEXT_COLOUR, TEXT_SIZE, TITLE_MARGIN, TITLE_STANDOFF, apply_style, plain_text, top_margin
from .matrices import (
    DENSITY_COLORSCALE,
    VALUE_TITLE,
    VARIANCE_COLORSCALE,
    X_SYMBOL,
    X_TITLE,
    Y_SYMBOL,
    Y_TITLE,
    colour_ticks,
    difference_heatmap,
    distance_histogram,
    point_scatter,
    suite_scale_heatmaps,
    value_colorbar,
    variance_heatmap,
)
from .models import per_class_accuracy_chart
from .robustness import challenge_categories_chart, error_ratio_chart, factor_label, prevalence_chart, variant_accuracy_chart
from .verdicts import verdict_figure
from .zoo import RELIANCE_LINE_NAMES, reliance_chart

__all__ = [
    "AXIS_FONT", "DENSITY_COLORSCALE", "KAPPA_COLORSCALE", "MARGIN", "MAX_HEATMAP_KEYWORDS", "METHOD_MEASURES", "MIN_HEIGHT", "RELIANCE_LINE_NAMES",
    "SQUARE_HEIGHT", "TEXT_COLOUR", "TEXT_SIZE", "TITLE_MARGIN", "TITLE_STANDOFF", "VALUE_TITLE", "VARIANCE_COLORSCALE", "X_SYMBOL", "X_TITLE",
    "Y_SYMBOL", "Y_TITLE", "apply_style", "assessor_bars",
    "challenge_categories_chart", "colour_ticks", "confusion_heatmap", "difference_heatmap", "distance_histogram", "error_ratio_chart",
    "factor_label", "format_kappa", "kappa_heatmap", "keyword_heatmap", "method_bars", "per_class_accuracy_chart", "plain_text", "point_scatter",
    "prevalence_chart", "reliance_chart", "shapley_bars", "suite_scale_heatmaps", "top_margin", "value_colorbar", "variance_heatmap",
    "variant_accuracy_chart", "verdict_figure",
]  # fmt: skip
