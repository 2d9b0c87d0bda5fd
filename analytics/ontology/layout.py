"""Which keywords and edges of an ontology graph to draw, and where: plain data for a network chart
(the Ontology page draws it with Plotly). No drawing here.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np

from analytics.exceptions import InvalidInputError


def without_isolates(graph: nx.DiGraph) -> tuple[nx.DiGraph, int]:
    """The subgraph of keywords with at least one edge (a copy), and how many keywords had none."""
    isolates = set(nx.isolates(graph))
    return graph.subgraph(node for node in graph if node not in isolates).copy(), len(isolates)


def best_connected(graph: nx.DiGraph) -> list[str]:
    """Every keyword, most edges (in + out) first; ties by name."""
    return sorted(graph, key=lambda node: (-graph.degree(node), node))


def strongest_edges(graph: nx.DiGraph, *, limit: int | None = None) -> list[tuple[str, str, float]]:
    """The ``limit`` edges of highest confidence (all when None) as ``(a, b, confidence)``,
    strongest first; ties by names."""
    return sorted(graph.edges(data="confidence"), key=lambda edge: (-edge[2], edge[0], edge[1]))[:limit]


def neighbourhood(graph: nx.DiGraph, centre: str, *, depth: int = 1, limit: int | None = None) -> list[list[str]]:
    """Rings of keywords around ``centre``: ``[[centre], ring 1, ring 2 …]`` up to ``depth``.

    Edges count in either direction; each ring keeps its ``limit`` keywords with the strongest
    edge (confidence) from the ring inside it, strongest first, ring 2 grouped by parent so the
    radial layout puts keywords next to the neighbour that reached them.

    Parameters
    ----------
    graph : networkx.DiGraph
        Ontology graph; edges carry ``confidence``.
    centre : str
        A keyword of ``graph``.
    depth : int, default=1
        Rings beyond the centre (fewer when nothing is left to reach).
    limit : int or None, default=None
        Keywords kept per ring; None keeps all.

    Returns
    -------
    list of list of str
        ``[[centre], ring 1, …]``; every keyword appears once.
    """
    if centre not in graph:
        raise InvalidInputError(f"keyword {centre!r} is not in the ontology graph; pick one of its keywords")
    # own breadth-first search, not nx.bfs_layers: a ring is cut to `limit` before the next one is reached
    rings, seen = [[centre]], {centre}
    for _ in range(depth):
        best: dict[str, tuple[float, int]] = {}  # keyword -> (strongest confidence, index of the parent)
        for index, parent in enumerate(rings[-1]):
            for other in set(graph.successors(parent)) | set(graph.predecessors(parent)):
                if other in seen:
                    continue
                strength = max(graph.get_edge_data(parent, other, {}).get("confidence", 0.0), graph.get_edge_data(other, parent, {}).get("confidence", 0.0))
                if other not in best or strength > best[other][0]:
                    best[other] = (strength, index)
        kept = sorted(best, key=lambda n: (-best[n][0], n))[:limit]
        ring = sorted(kept, key=lambda n: (best[n][1], -best[n][0], n))
        if not ring:
            break
        rings.append(ring)
        seen.update(ring)
    return rings


def radial_layout(rings: Sequence[Sequence[str]]) -> dict[str, np.ndarray]:
    """The centre at the origin and ring ``r`` evenly spread on the circle of radius ``r``
    (:func:`networkx.shell_layout`).

    Parameters
    ----------
    rings : sequence of sequence of str
        From :func:`neighbourhood`: one centre, then the rings.

    Returns
    -------
    dict of str to ndarray of shape (2,), float64
        Position of every keyword; ring members clockwise from the top in their ring's order.
    """
    nodes = [node for ring in rings for node in ring]
    positions = nx.shell_layout(nodes, nlist=[list(ring) for ring in rings], rotate=0, scale=len(rings))
    return {node: xy[::-1].copy() for node, xy in positions.items()}  # (x, y) -> (y, x): counter-clockwise from 3 o'clock becomes clockwise from 12


def graph_layout(graph: nx.DiGraph, edges: Sequence[tuple[str, str, float]], *, seed: int = 0) -> dict[str, np.ndarray]:
    """Node positions for an overview: a seeded spring layout of the nodes joined by the drawn
    ``edges`` in [-1, 1]², and the remaining (isolated) nodes in rows below it. Without this, the
    spring layout pushes isolated nodes far out and squeezes the connected part into a corner.

    Parameters
    ----------
    graph : networkx.DiGraph
        Every node gets a position.
    edges : sequence of (str, str, float)
        The edges that will be drawn, as from :func:`strongest_edges`.
    seed : int, default=0

    Returns
    -------
    dict of str to ndarray of shape (2,), float64
    """
    linked = nx.DiGraph((a, b) for a, b, _ in edges)
    positions = nx.spring_layout(linked, seed=seed, k=2 / np.sqrt(max(len(linked), 1))) if len(linked) else {}
    alone = sorted(node for node in graph if node not in positions)
    per_row = max(1, int(np.ceil(np.sqrt(len(alone) * 3))))
    for i, node in enumerate(alone):
        row, col = divmod(i, per_row)
        positions[node] = np.array([-1 + 2 * (col + 0.5) / per_row, -1.3 - 0.25 * row])
    return positions
