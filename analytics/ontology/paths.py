"""Paths in the ontology graph and their aggregated weights (docs/method.md, 'Association ontology'; Liao & Chen, Appendix A).

Decisions (the paper leaves them open):

* **Shortest path** = fewest hops (edges followed in their direction); among equally short paths
  the one with the largest product of confidences. Both aggregated weights are reported for it.
* **Aggregated weights** of a path with confidences w_1 ... w_h: the product ``Π w_i``, and the
  additive form printed in the paper as ``min(0, w_1 - Σ_{i=2..h} (1 - w_i)^α_i)``, α_i >= 1. As
  printed it is never positive (a one-hop path with w_1 = 0.9 would weigh 0), so we read it as
  ``max(0, ...)``: start from the first confidence and subtract a penalty (1 - w_i)^α_i for each
  further hop, floored at 0. Like the product it lies in [0, 1], equals w_1 for one hop and never
  grows with more hops; α_i > 1 softens the penalty of strong edges. A zero-hop path weighs 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real

import networkx as nx

from analytics.exceptions import InvalidInputError, NotFoundError

WEIGHTS = ("product", "additive")


@dataclass(frozen=True)
class KeywordPath:
    """A path in the ontology with its hop count and both aggregated weights."""

    nodes: tuple[str, ...]
    weights: tuple[float, ...]
    product: float
    additive: float

    @property
    def hops(self) -> int:
        return len(self.weights)


def product_weight(weights: Sequence[float]) -> float:
    """Π w_i over a path's confidences (1 for an empty path)."""
    return float(math.prod(weights))  # math.prod: np.prod costs more than the path walk itself


def additive_weight(weights: Sequence[float], *, alpha: float | Sequence[float] = 1.0) -> float:
    """max(0, w_1 − Σ_{i=2..h} (1 − w_i)^α_i) over a path's confidences (see the module notes).

    Parameters
    ----------
    weights : sequence of float in [0, 1], length h
    alpha : float >= 1 or sequence of float >= 1, default=1.0
        α_i for hops i = 2, 3, ...: one value for all, or one per hop (the last repeats).

    Returns
    -------
    float in [0, 1]; 1 for an empty path.
    """
    return _additive(weights, _check_alpha(alpha))


def _additive(weights: Sequence[float], alphas: list[float]) -> float:
    """:func:`additive_weight` with checked ``alphas`` (the hot path of expansion)."""
    if not len(weights):
        return 1.0
    penalty = sum((1.0 - w) ** alphas[min(i, len(alphas) - 1)] for i, w in enumerate(weights[1:]))
    return max(0.0, float(weights[0]) - penalty)


def _check_alpha(alpha: float | Sequence[float]) -> list[float]:
    alphas = [alpha] if isinstance(alpha, Real) else list(alpha)
    if not alphas or any(not isinstance(a, Real) or not a >= 1 for a in alphas):
        raise InvalidInputError(f"alpha must be a number >= 1 or a non-empty sequence of them; got {alpha!r}")
    return [float(a) for a in alphas]


def path_weights(graph: nx.DiGraph, nodes: Sequence[str]) -> tuple[float, ...]:
    """Confidences of the consecutive edges of ``nodes``."""
    return tuple(graph.succ[a][b]["confidence"] for a, b in zip(nodes, nodes[1:]))


def shortest_path(graph: nx.DiGraph, source: str, target: str, *, alpha: float | Sequence[float] = 1.0) -> KeywordPath | None:
    """The shortest path from ``source`` to ``target`` (fewest hops; ties: largest product).

    Parameters
    ----------
    graph : networkx.DiGraph
        An ontology graph (edge attribute ``confidence``).
    source, target : str
        Keywords (graph nodes).
    alpha : float or sequence of float, default=1.0
        α_i of the additive weight.

    Returns
    -------
    KeywordPath, or None when ``target`` cannot be reached.
    """
    alphas = _check_alpha(alpha)
    for keyword in (source, target):
        if keyword not in graph:
            raise NotFoundError(f"keyword {keyword!r} is not in the ontology (not frequent at this min_support)")
    try:
        paths = [_keyword_path(graph, tuple(nodes), alphas) for nodes in nx.all_shortest_paths(graph, source, target)]
    except nx.NetworkXNoPath:
        return None
    return min(paths, key=_strongest_first)


def _strongest_first(path: KeywordPath) -> tuple[tuple[float, str], ...]:
    """Sort key: largest product first; ties go to the alphabetically first predecessor of the
    target, then of that predecessor (on the strongest prefix), and so on back to the source: the
    path that :mod:`analytics.ontology.expansion`'s layers pick."""
    return tuple((-product_weight(path.weights[:hop]), path.nodes[hop - 1]) for hop in range(path.hops, 0, -1))


def _keyword_path(graph: nx.DiGraph, nodes: tuple[str, ...], alphas: list[float]) -> KeywordPath:
    weights = path_weights(graph, nodes)
    return KeywordPath(nodes, weights, product_weight(weights), _additive(weights, alphas))
