"""The dashboard's own Plotly figures (ui/) show user strings as text, never as HTML, as
:mod:`analytics.figures`' builders do (tests/analytics/figures/test_plain_text.py)."""

from __future__ import annotations

import json

import networkx as nx
import pandas as pd
import pytest

from analytics.figures import plain_text
from tests.analytics.figures.test_plain_text import HOSTILE, RAW, hostile, strings
from ui.ontology import neighbourhood_figure, network_figure
from ui.saliency import comparison_chart
from ui.scenarios import class_heatmap


def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from([(HOSTILE, {"support": 0.5}), (hostile(1), {"support": 0.2}), (hostile(2), {"support": 0.1})])
    graph.add_edges_from([(HOSTILE, hostile(1), {"confidence": 0.9}), (hostile(2), HOSTILE, {"confidence": 0.4})])
    return graph


CALLS = {
    "class_heatmap": lambda: class_heatmap(pd.DataFrame({"model": [HOSTILE] * 2, "scenario": [hostile(1)] * 2, "class": [hostile(2), hostile(3)], "accuracy": [0.5, 1.0], "n": [2, 1]}), HOSTILE),
    "network_figure": lambda: network_figure(_graph()),
    "neighbourhood_figure": lambda: neighbourhood_figure(_graph(), HOSTILE),
    "comparison_chart": lambda: comparison_chart(pd.DataFrame({"Model": [HOSTILE], "Method": [hostile(1)], "Inside share (originals)": [0.5], "Inside share (composites)": [0.4]})),
}


@pytest.mark.parametrize("name", CALLS)
def test_ui_figures_show_user_strings_as_text(name):
    figure = CALLS[name]()
    drawn = [s for key, s in strings(json.loads(figure.to_json())) if key != "customdata"]  # customdata is never drawn here: the page's own lookup
    text = "\n".join(drawn)
    assert not [raw for raw in RAW if raw in text] and "&amp;lt;" not in text
    assert plain_text(HOSTILE) in text


def test_the_network_keeps_the_keywords_as_they_are_for_the_page():
    nodes = next(trace for trace in network_figure(_graph()).data if trace.name == "keywords")
    assert HOSTILE in nodes.customdata and plain_text(HOSTILE) in nodes.text
