"""User strings in figures are text, never HTML: every builder of :mod:`analytics.figures` passes the
names it is given (models, classes, annotators, keywords, titles...) through :func:`plain_text`, so a
model named ``<a href=...>`` is not drawn as a link in a chart's title, legend, ticks or hover text."""

from __future__ import annotations

import html
import inspect
import json
import math
import typing
from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import analytics.figures as figures
from analytics.assessor import INPUTS
from analytics.figures import plain_text
from analytics.gate import RuleResult, verdict_table
from analytics.inference import Evaluation
from analytics.judging import confusion, measure_agreement
from analytics.robustness import factor_names
from analytics.robustness.bgchallenge import CATEGORIES
from analytics.runs import ColourScale, matrix_difference
from analytics.variance import variance_matrix
from analytics.variance.point_cloud import point_cloud

#: A name that Plotly, unescaped, would draw as an external link and bold text; ``%{y}`` would be a
#: hover template's variable.
HOSTILE = '<a href="https://evil.example">m</a><b>x</b> & 50%{y}'
#: Raw markup of HOSTILE that must not reach a figure.
RAW = ("<a ", "</a>", "<b>", "</b>")


def hostile(i: int = 0) -> str:
    """HOSTILE, made distinct where a builder needs several names (annotators, models)."""
    return f"{HOSTILE} {i}" if i else HOSTILE


def _matrix():
    rng = np.random.default_rng(0)
    cloud = point_cloud(rng.uniform(0.0, 2.0, size=(12, 5)), rng.random((12, 5)))
    return cloud, variance_matrix(cloud.points, cloud.values, grid=4, window=4, sigma=1.0)


def _judgments() -> pd.DataFrame:
    labels = {hostile(1): ("invariant", "variant", "variant"), hostile(2): ("invariant", "variant", "borderline"), hostile(3): ("variant", "variant", "invariant")}
    return pd.DataFrame([(annotator, hostile(10 + m), label) for annotator, row in labels.items() for m, label in enumerate(row)], columns=["annotator", "model", "label"])


def _calls() -> dict[str, Callable[[], go.Figure | list[go.Figure]]]:
    """Each builder called on small valid data with HOSTILE in every string it takes."""
    cloud, matrix = _matrix()
    factors = list(factor_names())
    return {
        "variant_accuracy_chart": lambda: figures.variant_accuracy_chart(pd.DataFrame({"name": [hostile(1), hostile(2)], "accuracy": [0.9, math.nan]}), HOSTILE),
        "challenge_categories_chart": lambda: figures.challenge_categories_chart(pd.DataFrame([{"Model": HOSTILE, **dict.fromkeys(CATEGORIES, 2)}])),
        "error_ratio_chart": lambda: figures.error_ratio_chart(pd.DataFrame([[1.0] * len(factors)], index=[HOSTILE], columns=factors)),
        "prevalence_chart": lambda: figures.prevalence_chart(
            pd.DataFrame({"model": [HOSTILE] * 2, "factor": [hostile(1), "pose"], "share_of_errors": [0.2, 0.1], "shift": [0.1, 0.0], "share_of_images": [0.1, 0.1]})
        ),
        "per_class_accuracy_chart": lambda: figures.per_class_accuracy_chart(
            Evaluation(model=HOSTILE, n=2, accuracy=0.5, per_class={hostile(1): 1.0, hostile(2): 0.0}, per_class_n={hostile(1): 1, hostile(2): 1}, table=pd.DataFrame())
        ),
        "keyword_heatmap": lambda: figures.keyword_heatmap(_keyword_matrix()),
        "kappa_heatmap": lambda: figures.kappa_heatmap(measure_agreement(_judgments(), resamples=0)),
        "confusion_heatmap": lambda: figures.confusion_heatmap(confusion(_judgments(), hostile(1), hostile(3))),
        "assessor_bars": lambda: figures.assessor_bars(pd.DataFrame({"assessor": [HOSTILE], "inputs": [INPUTS["matrix"]], "accuracy_mean": [0.8], "accuracy_std": [0.1], "kappa_mean": [0.5]})),
        "shapley_bars": lambda: figures.shapley_bars(pd.Series({hostile(1): 0.3, f"true_prob.{HOSTILE}": -0.2}), title=HOSTILE),
        "method_bars": lambda: figures.method_bars(pd.DataFrame({"method": [HOSTILE], "recall": [0.5], "precision": [0.2], "f1": [0.3], "consistency": [0.9]})),
        "verdict_figure": lambda: figures.verdict_figure(verdict_table([RuleResult(HOSTILE, False, math.nan, math.nan, hostile(1))])),
        "reliance_chart": lambda: figures.reliance_chart(pd.DataFrame({"strength": [0.0], "augment": [False], "worst_case_accuracy": [0.5], "lowest": [0.4], "highest": [0.6], "heads": [3]})),
        "variance_heatmap": lambda: figures.variance_heatmap(matrix, title=HOSTILE),
        "suite_scale_heatmaps": lambda: figures.suite_scale_heatmaps(
            {"true_prob": matrix, HOSTILE: matrix}, ColourScale(tops={"true_prob": 1.0, HOSTILE: 1.0}, rules={}, runs=(), settings={}), titles={"true_prob": HOSTILE}
        ),
        "difference_heatmap": lambda: figures.difference_heatmap(matrix_difference(matrix, matrix), title=HOSTILE),
        "point_scatter": lambda: figures.point_scatter(cloud.points, cloud.values, title=HOSTILE),
        "distance_histogram": lambda: figures.distance_histogram({HOSTILE: cloud.points[:, 0], hostile(1): cloud.points[:, 1]}, title=hostile(2)),
    }


def _keyword_matrix() -> pd.DataFrame:
    matrix = pd.DataFrame({hostile(1): [0.5, 0.2], hostile(2): [0.1, 0.0]}, index=[hostile(3), hostile(4)])
    matrix.attrs["counts"] = {hostile(3): 4}
    return matrix


#: Builders that take no string at all: nothing of the user's reaches them.
NO_USER_TEXT = {"reliance_chart"}


def builders() -> list[str]:
    """Every figure builder :mod:`analytics.figures` exports: a function that returns a figure (or a
    list of them) and does not take one (:func:`apply_style` restyles a figure it is given)."""
    found = []
    for name in figures.__all__:
        function = getattr(figures, name)
        if not inspect.isfunction(function):
            continue
        hints = typing.get_type_hints(function)
        first = next(iter(inspect.signature(function).parameters), None)
        if hints.get("return") in (go.Figure, list[go.Figure]) and hints.get(first) is not go.Figure:
            found.append(name)
    return found


def strings(value, key: str = "") -> list[tuple[str, str]]:
    """Every string in a figure's JSON, keys too, with the key it is under."""
    if isinstance(value, str):
        return [(key, value)]
    if isinstance(value, dict):
        return [*((key, k) for k in value), *(s for k, v in value.items() for s in strings(v, k))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v, key)]
    return []


def test_every_builder_has_hostile_inputs_here():
    assert set(builders()) == set(_calls()), "a new builder of analytics.figures: give it hostile inputs in _calls()"


@pytest.mark.parametrize("name", builders())
def test_a_builder_shows_user_strings_as_text_never_as_markup(name):
    built = _calls()[name]()
    found = [s for figure in (built if isinstance(built, list) else [built]) for s in strings(json.loads(figure.to_json()))]
    text = "\n".join(s for _, s in found)
    leaked = [raw for raw in RAW if raw in text]
    assert not leaked, f"{name} draws the user's markup {leaked}"
    assert "&amp;lt;" not in text and "&amp;amp;" not in text, f"{name} escapes a name twice"
    templates = "\n".join(s for key, s in found if key.endswith("template"))
    assert "50%{y}" not in templates, f"{name} lets a name become a hover template's variable"
    if name not in NO_USER_TEXT:
        assert plain_text(HOSTILE) in text or plain_text(HOSTILE, template=True) in text, f"{name} never shows the name"


def test_backdrop_own_markup_stays_markup():
    """Only the user's parts are escaped: the builders' own line breaks still break lines."""
    assessor = figures.assessor_bars(pd.DataFrame({"assessor": ["<i>"], "inputs": [INPUTS["matrix"]], "accuracy_mean": [0.8], "accuracy_std": [0.1], "kappa_mean": [0.5]}))
    assert assessor.data[0].x[0] == "&lt;i&gt;<br>κ 0.50"
    ratios = figures.error_ratio_chart(pd.DataFrame([[1.0] * len(factor_names())], index=["a<b"], columns=list(factor_names())))
    assert ratios.data[0].name == "a&lt;b" and ratios.data[0].hovertemplate.startswith("a&lt;b<br>%{x}")
    _, matrix = _matrix()
    heatmap = figures.variance_heatmap(matrix, title="tiny · probability")
    assert heatmap.layout.title.text == "tiny · probability" and "<br>" in heatmap.layout.xaxis.title.text


def test_plain_text_escapes_what_plotly_reads_as_markup_and_keeps_the_characters():
    assert plain_text(HOSTILE) == '&lt;a href="https://evil.example"&gt;m&lt;/a&gt;&lt;b&gt;x&lt;/b&gt; &amp; 50%{y}'
    assert plain_text(HOSTILE, template=True).endswith("&amp; 50&#37;{y}")
    assert plain_text(None) is None and plain_text(3) == "3" and plain_text("Lite0 · ε") == "Lite0 · ε"
    # Plotly turns &amp; &lt; &gt; and numeric entities back into the characters on screen
    for text in (HOSTILE, "&lt; already an entity", "a<br>b", "tab\tand ünïcode 🐟"):
        assert html.unescape(plain_text(text)) == text and html.unescape(plain_text(text, template=True)) == text
