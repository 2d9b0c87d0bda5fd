"""Tests of analytics.figures' robustness and model figures: the Backgrounds Challenge's and
ImageNet-X's charts and a model's accuracy per class, from small hand-made tables."""

from __future__ import annotations

import pandas as pd

from analytics.figures import (
    MIN_HEIGHT,
    challenge_categories_chart,
    error_ratio_chart,
    factor_label,
    per_class_accuracy_chart,
    prevalence_chart,
    variant_accuracy_chart,
)
from analytics.inference import Evaluation
from analytics.robustness import factor_names
from analytics.robustness.bgchallenge import CATEGORIES


def test_challenge_charts():
    accuracy = pd.DataFrame({"name": ["Original", "Mixed-Rand"], "accuracy": [0.9, float("nan")]})
    figure = variant_accuracy_chart(accuracy, "tiny")
    (bars,) = figure.data
    assert list(bars.text) == ["90%", "–"] and figure.layout.title.text == "tiny"
    counts = pd.DataFrame([{"Model": "tiny", **dict.fromkeys(CATEGORIES, 2)}, {"Model": "big", **dict.fromkeys(CATEGORIES, 1)}])
    assert [(t.name, list(t.y)) for t in challenge_categories_chart(counts).data] == [("tiny", [2] * len(CATEGORIES)), ("big", [1] * len(CATEGORIES))]


def test_factor_charts_name_the_factors_in_words():
    factors = list(factor_names())
    summary = pd.DataFrame([[1.0 + i / 10 for i in range(len(factors))]], index=["tiny"], columns=factors)
    ratios = error_ratio_chart(summary, log=True)
    assert list(ratios.data[0].x) == [factor_label(f) for f in factors] and ratios.layout.yaxis.type == "log"
    details = pd.DataFrame({"model": ["a", "a", "b", "b"], "factor": ["partial_view", "pose"] * 2, "share_of_errors": [0.2, 0.1, 0.3, 0.0],
                            "shift": [0.1, 0.0, 0.2, -0.1], "share_of_images": [0.1, 0.1, 0.1, 0.1]})  # fmt: skip
    traces = prevalence_chart(details).data
    assert [t.name for t in traces] == ["a", "b", "share of all images (a)"] and list(traces[0].x) == ["partial view", "pose"]
    assert min(ratios.layout.height, prevalence_chart(details).layout.height) >= MIN_HEIGHT


def test_per_class_accuracy_chart():
    result = Evaluation(model="tiny", n=4, accuracy=0.75, per_class={"disc": 1.0, "square": 0.5}, per_class_n={"disc": 2, "square": 2}, table=pd.DataFrame())
    figure = per_class_accuracy_chart(result)
    (bars,) = figure.data
    assert list(bars.x) == ["disc", "square"] and list(bars.text) == ["100% of 2", "50% of 2"]
    assert figure.layout.shapes[0].y0 == 0.75  # the overall accuracy, dashed
    # its note in the right margin, level with the line: inside the plot it sat over the last bars (#47 item 9)
    (note,) = figure.layout.annotations
    assert (note.xref, note.x, note.xanchor, note.y) == ("x domain", 1, "left", 0.75) and "75.0%" in note.text
    assert figure.layout.margin.r >= 60  # room for "overall" and "100.0%"
