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

from .agreement import assessor_bars, confusion_heatmap, format_kappa, kappa_heatmap, method_bars, shapley_bars
from .failures import keyword_heatmap
from .layout import MIN_HEIGHT, SQUARE_HEIGHT, apply_style, plain_text
from .matrices import X_SYMBOL, Y_SYMBOL, difference_heatmap, distance_histogram, point_scatter, suite_scale_heatmaps, variance_heatmap
from .models import per_class_accuracy_chart
from .robustness import challenge_categories_chart, error_ratio_chart, factor_label, prevalence_chart, variant_accuracy_chart
from .verdicts import verdict_figure
from .zoo import reliance_chart

__all__ = [
    "MIN_HEIGHT",
    "SQUARE_HEIGHT",
    "X_SYMBOL",
    "Y_SYMBOL",
    "apply_style",
    "assessor_bars",
    "challenge_categories_chart",
    "confusion_heatmap",
    "difference_heatmap",
    "distance_histogram",
    "error_ratio_chart",
    "factor_label",
    "format_kappa",
    "kappa_heatmap",
    "keyword_heatmap",
    "method_bars",
    "per_class_accuracy_chart",
    "plain_text",
    "point_scatter",
    "prevalence_chart",
    "reliance_chart",
    "shapley_bars",
    "suite_scale_heatmaps",
    "variance_heatmap",
    "variant_accuracy_chart",
    "verdict_figure",
]
