"""What the ontology's network chart draws, and where (analytics.ontology.layout), on a tiny graph."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from analytics.exceptions import InvalidInputError
from analytics.ontology import (
    best_connected,
    graph_layout,
    neighbourhood,
    radial_layout,
    strongest_edges,
    without_isolates,
)


@pytest.fixture
def graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_node("moon", support=0.1)  # no edge
    for a, b, w in [("sky", "tree", 0.6), ("tree", "sky", 0.9), ("sky", "sea", 0.3), ("sea", "sand", 0.5), ("grass", "tree", 0.9)]:
        graph.add_edge(a, b, confidence=w)
    return graph


def test_isolates_degree_and_strongest_edges(graph):
    linked, n_hidden = without_isolates(graph)
    assert n_hidden == 1 and set(linked) == {"sky", "tree", "sea", "sand", "grass"} and "moon" in graph
    assert best_connected(graph) == ["sky", "tree", "sea", "grass", "sand", "moon"]  # degree 3, 3, 2, 1, 1, 0; ties by name
    assert strongest_edges(graph, limit=3) == [("grass", "tree", 0.9), ("tree", "sky", 0.9), ("sky", "tree", 0.6)]
    assert len(strongest_edges(graph)) == 5


def test_neighbourhood_rings_either_direction_strongest_first(graph):
    assert neighbourhood(graph, "sky") == [["sky"], ["tree", "sea"]]
    assert neighbourhood(graph, "sky", depth=2) == [["sky"], ["tree", "sea"], ["grass", "sand"]]  # grouped by parent
    assert neighbourhood(graph, "sky", depth=2, limit=1) == [["sky"], ["tree"], ["grass"]]
    assert neighbourhood(graph, "sand", depth=5) == [["sand"], ["sea"], ["sky"], ["tree"], ["grass"]]  # stops when nothing is left
    with pytest.raises(InvalidInputError, match="'sun' is not in the ontology graph"):
        neighbourhood(graph, "sun")


def test_radial_layout_rings_clockwise_from_the_top():
    positions = radial_layout([["c"], ["n", "e", "s", "w"], ["a", "b"]])
    expected = {"c": (0, 0), "n": (0, 1), "e": (1, 0), "s": (0, -1), "w": (-1, 0), "a": (0, 2), "b": (0, -2)}
    assert positions.keys() == expected.keys()
    for node, xy in expected.items():
        assert positions[node].shape == (2,) and positions[node].dtype == np.float64
        np.testing.assert_allclose(positions[node], xy, atol=1e-6)
    np.testing.assert_array_equal(radial_layout([["c"]])["c"], [0.0, 0.0])


def test_graph_layout_puts_unlinked_nodes_in_rows_below(graph):
    edges = strongest_edges(graph, limit=2)
    positions = graph_layout(graph, edges)
    assert set(positions) == set(graph)
    linked = np.array([positions[n] for n in ("grass", "tree", "sky")])
    alone = np.array([positions[n] for n in ("moon", "sand", "sea")])
    assert np.abs(linked).max() <= 1 + 1e-9 and (alone[:, 1] <= -1.3).all()
    assert all(np.array_equal(positions[n], again) for n, again in graph_layout(graph, edges).items())  # seeded
