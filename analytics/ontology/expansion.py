"""Keyword expansion through the ontology, level by level (docs/method.md, 'Keyword expansion'; Liao & Chen, Appendix A5).

::

    Ontology + detected keywords -> expand_keywords -> Expansion (levels, paths, weights)

Decisions (the paper leaves them open):

* **Direction.** From V_i we follow edges A -> B (successors): A was seen, so B is likely in the
  same kind of scene with probability confidence(A -> B) (paper A3, "pr(B|A)"). Each new keyword
  keeps the best path (by ``rank_by``, :mod:`analytics.ontology.paths`) from a level-0 keyword
  that reached it.
* **No detected keyword.** When an image has none, expansion starts from the most frequent keywords
  of its class (needs labels) and the result says so (:attr:`Expansion.note`).
* **Defaults.** ``maxits = 5`` (MAXITS, :data:`DEFAULT_MAXITS`) and ``minkws = None`` (MINKWS: expand
  to MAXITS): the paper's gain "becomes less significant after the 4th iteration". With the mining
  defaults they reproduce its Figure 9 (numbers in :mod:`analytics.ontology.mining`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import networkx as nx
import numpy as np
import pandas as pd

from analytics._choices import DEFAULT_MAXITS
from analytics._validation import check_choice, check_positive_int
from analytics.exceptions import InvalidInputError
from analytics.keywords import KeywordTable

from .mining import Ontology
from .paths import (
    WEIGHTS,
    _additive,
    _check_alpha,
    _keyword_path,
    path_weights,
    product_weight,
)

logger = logging.getLogger(__name__)

EXPANSION_LEVEL_COLUMNS = ["level", "min", "mean", "max"]


@dataclass(frozen=True)
class ExpandedKeyword:
    """A keyword of OL_x with its level (0 = detected) and the path that reached it."""

    keyword: str
    level: int
    path: tuple[str, ...]
    product: float
    additive: float


@dataclass(frozen=True)
class Expansion:
    """The expanded keyword set OL_x of one image (paper Eq. 3).

    Attributes
    ----------
    keywords : tuple of ExpandedKeyword
        Ranked by level, then aggregated weight (``rank_by``, descending), then name.
    seeds : tuple of str
        V_0: the detected keywords, or the fallback keywords when none were detected.
    levels : int
        Expansion steps run (the i at which expansion stopped).
    fallback : bool
        True when V_0 is not what was detected (the image had no keyword).
    note : str
        Why V_0 is not the detected set, or why it is empty ('' when keywords were detected).
    """

    keywords: tuple[ExpandedKeyword, ...]
    seeds: tuple[str, ...]
    levels: int
    fallback: bool = False
    note: str = ""

    def sizes(self, maxits: int) -> list[int]:
        """|OL_x[i]| for i = 0 .. maxits (constant after expansion stopped)."""
        levels = np.array([entry.level for entry in self.keywords], dtype=int)
        return [int((levels <= i).sum()) for i in range(maxits + 1)]

    def to_frame(self) -> pd.DataFrame:
        """One row per keyword: keyword, level, path (``a → b``), hops, product, additive."""
        return pd.DataFrame(
            [
                {
                    "keyword": entry.keyword,
                    "level": entry.level,
                    "path": " → ".join(entry.path),
                    "hops": len(entry.path) - 1,
                    "product": entry.product,
                    "additive": entry.additive,
                }
                for entry in self.keywords
            ],
            columns=["keyword", "level", "path", "hops", "product", "additive"],
        )


def expand_keywords(
    graph: nx.DiGraph,
    keywords: Sequence[str],
    *,
    maxits: int = DEFAULT_MAXITS,
    minkws: int | None = None,
    alpha: float | Sequence[float] = 1.0,
    rank_by: Literal["product", "additive"] = "product",
    fallback: Sequence[str] = (),
) -> Expansion:
    """Expand detected keywords through the ontology (paper Appendix A5).

    V_0 = ``keywords`` (level 0). While |V| < ``minkws`` and i < ``maxits``: E_{i+1} = successors in
    the ontology of the keywords of V_i that are not yet in V, tagged level i + 1. Stops early when a
    level adds nothing.

    Parameters
    ----------
    graph : networkx.DiGraph
        An ontology graph (edge attribute ``confidence``).
    keywords : sequence of str
        Detected keywords; ones not in the graph stay at level 0 but expand nothing.
    maxits : int >= 0, default=5
        MAXITS.
    minkws : int >= 1 or None, default=None
        MINKWS; None expands until ``maxits``.
    alpha : float or sequence of float, default=1.0
        α_i of the additive weight.
    rank_by : {'product', 'additive'}, default='product'
        Aggregated weight that picks the path to each keyword and ranks keywords within a level.
    fallback : sequence of str, default=()
        V_0 when ``keywords`` is empty (e.g. the class's most frequent keywords).

    Returns
    -------
    Expansion
    """
    maxits = check_positive_int(maxits, "maxits", minimum=0)
    if minkws is not None:
        minkws = check_positive_int(minkws, "minkws")
    check_choice(rank_by, "rank_by", WEIGHTS)
    alphas = _check_alpha(alpha)
    used_fallback = len(keywords) == 0 and len(fallback) > 0
    seeds = tuple(dict.fromkeys(fallback if used_fallback else keywords))
    score = _scorer(graph, rank_by, alphas)
    paths: dict[str, tuple[str, ...]] = {seed: (seed,) for seed in seeds}
    level_of = dict.fromkeys(seeds, 0)
    level = 0
    layers = _layers(graph, seeds, score=score)
    while level < maxits and (minkws is None or len(paths) < minkws):
        layer = next(layers, None)
        if layer is None:
            break
        level += 1
        paths.update(layer)
        level_of.update(dict.fromkeys(layer, level))
    entries = [_expanded(graph, word, level_of[word], paths[word], alphas) for word in paths]
    entries.sort(key=lambda e: (e.level, -getattr(e, rank_by), e.keyword))
    note = f"no keywords detected; expanded from the fallback keywords {list(seeds)}" if used_fallback else ""
    return Expansion(tuple(entries), seeds, level, fallback=used_fallback, note=note)


def _scorer(graph: nx.DiGraph, rank_by: str, alphas: list[float]) -> Callable[[tuple[str, ...]], float]:
    if rank_by == "product":
        return lambda nodes: product_weight(path_weights(graph, nodes))
    return lambda nodes: _additive(path_weights(graph, nodes), alphas)


def _layers(graph: nx.DiGraph, sources: Sequence[str], *, score: Callable[[tuple[str, ...]], float]) -> Iterator[dict[str, tuple[str, ...]]]:
    """Breadth-first layers from ``sources`` along edge directions (:func:`networkx.bfs_layers`).

    Yields, per level, the newly reached nodes each with the best-scoring path (from a source)
    among the shortest ones; ties go to the alphabetically first predecessor.
    """
    layers = nx.bfs_layers(graph, [node for node in sources if node in graph])
    previous = {node: (node,) for node in next(layers, [])}
    for layer in layers:
        # best path = the best path to a predecessor one layer up, extended: all_shortest_paths
        # would enumerate every shortest path instead (exponentially many on a dense ontology)
        previous = {
            node: max((previous[p] + (node,) for p in sorted(graph.predecessors(node)) if p in previous), key=score)
            for node in sorted(layer)
        }
        yield previous


def _expanded(graph: nx.DiGraph, keyword: str, level: int, nodes: tuple[str, ...], alphas: list[float]) -> ExpandedKeyword:
    path = _keyword_path(graph, nodes, alphas)
    return ExpandedKeyword(keyword, level, nodes, path.product, path.additive)


def class_keywords(table: KeywordTable, *, top: int = 3, graph: nx.DiGraph | None = None) -> dict[str, list[str]]:
    """The ``top`` most frequent keywords of each class (label) of ``table``.

    Parameters
    ----------
    table : KeywordTable
        Must have labels.
    top : int, default=3
    graph : networkx.DiGraph, default=None
        When given, only keywords that are ontology nodes count (so that they can expand).

    Returns
    -------
    dict label -> list of keywords (most frequent first; ties in vocabulary order)
    """
    top = check_positive_int(top, "top")
    if table.labels is None:
        raise InvalidInputError("class keywords need a labelled keyword table; this table has no labels")
    labels = np.asarray(table.labels)
    usable = np.array([graph is None or word in graph for word in table.vocabulary])
    result = {}
    for label in dict.fromkeys(table.labels):
        counts = np.where(usable, table.present[labels == label].sum(axis=0), 0)
        order = np.argsort(-counts, kind="stable")[:top]
        result[label] = [table.vocabulary[j] for j in order if counts[j] > 0]
    return result


def expand_table(
    ontology: Ontology,
    table: KeywordTable,
    *,
    maxits: int = DEFAULT_MAXITS,
    minkws: int | None = None,
    alpha: float | Sequence[float] = 1.0,
    rank_by: Literal["product", "additive"] = "product",
    fallback_top: int = 3,
) -> list[Expansion]:
    """:func:`expand_item` for every row of ``table``.

    Returns
    -------
    list of Expansion, length table.n_items
    """
    seeds = class_keywords(table, top=fallback_top, graph=ontology.graph) if table.labels is not None else {}
    options = {"maxits": maxits, "minkws": minkws, "alpha": alpha, "rank_by": rank_by}
    expansions = [expand_item(ontology, table, row, class_seeds=seeds, **options) for row in range(table.n_items)]
    n_fallback = sum(e.fallback for e in expansions)
    if n_fallback:
        logger.info("%d of %d items had no keywords and used their class's frequent keywords", n_fallback, table.n_items)
    return expansions


def expand_item(
    ontology: Ontology,
    table: KeywordTable,
    row: int,
    *,
    maxits: int = DEFAULT_MAXITS,
    minkws: int | None = None,
    alpha: float | Sequence[float] = 1.0,
    rank_by: Literal["product", "additive"] = "product",
    fallback_top: int = 3,
    class_seeds: dict[str, list[str]] | None = None,
) -> Expansion:
    """:func:`expand_keywords` for item ``row`` of ``table``.

    An item without keywords expands from the ``fallback_top`` most frequent keywords of its class
    (:func:`class_keywords` over the whole table; ``class_seeds`` passes them precomputed) and its
    :class:`Expansion` says so; without a label it stays empty, with a note.
    """
    detected = table.keywords_of(row)
    label = table.labels[row] if table.labels is not None else None
    seeds: list[str] = []
    if not detected and label is not None:
        if class_seeds is None:
            class_seeds = class_keywords(table, top=fallback_top, graph=ontology.graph)
        seeds = class_seeds.get(label, [])
    expansion = expand_keywords(ontology.graph, detected, maxits=maxits, minkws=minkws, alpha=alpha, rank_by=rank_by, fallback=seeds)
    if expansion.fallback:
        return replace(expansion, note=f"no keywords detected; expanded from the {len(seeds)} most frequent keywords of class {label!r}")
    if not expansion.seeds:
        return replace(expansion, note="no keywords detected and no class keywords to fall back on")
    return expansion


def level_statistics(expansions: Sequence[Expansion], *, maxits: int) -> pd.DataFrame:
    """Min / mean / max of |OL_x[i]| over images, per level i = 0 .. maxits (paper Figure 9).

    Returns
    -------
    DataFrame with columns level (int), min (int), mean (float), max (int); empty without expansions.
    """
    maxits = check_positive_int(maxits, "maxits", minimum=0)
    if not expansions:
        return pd.DataFrame(columns=EXPANSION_LEVEL_COLUMNS)
    sizes = np.array([expansion.sizes(maxits) for expansion in expansions])
    return pd.DataFrame(
        {"level": np.arange(maxits + 1), "min": sizes.min(axis=0), "mean": sizes.mean(axis=0), "max": sizes.max(axis=0)},
        columns=EXPANSION_LEVEL_COLUMNS,
    )

