"""Tests of analytics.figures' failure, agreement and verdict figures: built from small hand-made
library data, with the expected traces, values and labels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analytics.assessor import INPUTS
from analytics.figures import MIN_HEIGHT, assessor_bars, confusion_heatmap, format_kappa, kappa_heatmap, keyword_heatmap, method_bars, shapley_bars, verdict_figure
from analytics.figures.agreement import KAPPA_COLORSCALE
from analytics.figures.failures import MAX_HEATMAP_KEYWORDS
from analytics.gate import RuleResult, verdict_table
from analytics.gate.table import VERDICT_TABLE_COLUMNS
from analytics.judging import confusion, measure_agreement

#: Three annotators on four models: A and B agree on all four, C differs on two.
JUDGMENTS = pd.DataFrame(
    [(annotator, model, label) for annotator, labels in (
        ("A", ("invariant", "variant", "variant", "borderline")),
        ("B", ("invariant", "variant", "variant", "borderline")),
        ("C", ("variant", "variant", "invariant", "borderline")),
    ) for model, label in zip(("m1", "m2", "m3", "m4"), labels)],
    columns=["annotator", "model", "label"],
)  # fmt: skip


def test_keyword_heatmap_draws_the_worst_keywords_with_their_counts():
    rates = np.linspace(1.0, 0.0, MAX_HEATMAP_KEYWORDS + 5)
    matrix = pd.DataFrame({"tiny": rates, "bg-only": rates / 2}, index=[f"kw{i}" for i in range(rates.size)])
    matrix.attrs["counts"] = {"kw0": 12}
    figure = keyword_heatmap(matrix)
    (trace,) = figure.data
    assert trace.type == "heatmap" and (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert list(trace.x) == ["tiny", "bg-only"]
    assert len(trace.y) == MAX_HEATMAP_KEYWORDS and trace.y[0] == "kw0 (12)" and trace.y[1] == "kw1 (?)"
    np.testing.assert_array_equal(np.asarray(trace.z), matrix.head(MAX_HEATMAP_KEYWORDS).to_numpy())
    assert figure.layout.height >= MIN_HEIGHT


def test_kappa_heatmap_is_symmetric_with_an_empty_diagonal():
    agreement = measure_agreement(JUDGMENTS, resamples=0)
    (trace,) = kappa_heatmap(agreement).data
    z = np.asarray(trace.z, dtype=float)
    assert list(trace.x) == list(trace.y) == ["A", "B", "C"]
    assert np.isnan(np.diag(z)).all()
    np.testing.assert_array_equal(z, z.T)
    assert z[0, 1] == pytest.approx(agreement.cohen[("A", "B")].value) == pytest.approx(1.0)
    assert (trace.zmin, trace.zmax) == (-1, 1)
    assert [list(stop) for stop in trace.colorscale] == [list(stop) for stop in KAPPA_COLORSCALE]


def test_confusion_heatmap_counts_the_pairs_labels():
    table = confusion(JUDGMENTS, "A", "C")
    figure = confusion_heatmap(table)
    (trace,) = figure.data
    np.testing.assert_array_equal(np.asarray(trace.z), table.to_numpy())
    assert int(np.asarray(trace.z).sum()) == 4
    assert figure.layout.title.text == "A (rows) vs C (columns)"


def test_assessor_method_and_shapley_bars():
    report = pd.DataFrame({
        "assessor": ["Forest", "Threshold"], "inputs": [INPUTS["matrix"], INPUTS["worst_case"]],
        "accuracy_mean": [0.8, 0.6], "accuracy_std": [0.1, 0.05], "kappa_mean": [0.5, float("nan")],
    })  # fmt: skip
    (bars,) = assessor_bars(report).data
    assert bars.type == "bar" and list(bars.y) == [0.8, 0.6]
    assert bars.x[0].endswith("κ 0.50") and bars.x[1].endswith("κ N/A")
    methods = pd.DataFrame({"method": ["random", "ontology"], "recall": [0.5, 0.7], "precision": [0.2, np.nan], "f1": [0.3, 0.4], "consistency": [0.9, 0.8]})
    assert [trace.name for trace in method_bars(methods).data] == ["Coverage (recall)", "Fleiss' κ (precision)", "F1", "Consistency"]
    values = pd.Series({"a": 0.3, "b": -0.5, "c": 0.01})
    (shap,) = shapley_bars(values, top=2, title="why").data
    assert shap.orientation == "h" and list(shap.x) == [0.3, -0.5]  # largest |value| on top (last drawn)


def test_format_kappa():
    assert format_kappa(0.456) == "0.46" and format_kappa(float("nan")) == "N/A" and format_kappa(None) == "N/A"


def test_verdict_table_and_figure_list_every_rule_in_order():
    results = [
        RuleResult("worst_case_accuracy_min", True, 0.75, 0.5, "worst-case accuracy 0.750 ≥ 0.500"),
        RuleResult("assessor_label", False, math.nan, math.nan, "the assessor says variant"),
    ]
    table = verdict_table(results)
    assert tuple(table.columns) == VERDICT_TABLE_COLUMNS
    assert list(table["rule"]) == ["worst_case_accuracy_min", "assessor_label"] and list(table["passed"]) == [True, False]
    figure = verdict_figure(table)
    (trace,) = figure.data
    assert trace.type == "table"
    rule, result, measured, limit, message = trace.cells.values
    assert list(result) == ["pass", "FAIL"] and list(measured) == ["0.750", ""] and list(limit) == ["0.500", ""]
    assert figure.layout.title.text == "Backdrop check FAILED: 1 of 2 rules"
    assert verdict_figure(verdict_table([])).layout.title.text == "Backdrop check passed: every rule holds"
