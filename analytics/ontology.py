"""Association ontology over scene keywords and keyword expansion (DESIGN §1.2-1.3; Liao & Chen,
"Background Invariance Testing According to Semantic Proximity", §4.1.2 and Appendix A).

Pipeline, one small function per step over mlxtend's shared formats::

    transactions (KeywordTable / bool matrix) -> to_onehot -> mine_itemsets (apriori | fpgrowth)
    -> mine_rules (confidence) -> build_graph -> Ontology
    Ontology + detected keywords -> expand_keywords -> Expansion (levels, paths, weights)

Decisions (the paper leaves them open):

* **Graph.** Nodes are the frequent keywords (frequent 1-itemsets) with their ``support``; an edge
  A -> B carries ``confidence(A -> B)`` (plus ``support`` of {A, B} and ``lift``) for every rule with
  one antecedent and one consequent that passes ``min_confidence``. Rules with several antecedents
  or consequents stay in :attr:`Ontology.rules` (shown in the rules table) but make no edge: an edge
  relates two keywords, and every frequent pair {A, B} already yields its own single-item rules.
* **Shortest path** = fewest hops (edges followed in their direction); among equally short paths
  the one with the largest product of confidences. Both aggregated weights are reported for it.
* **Aggregated weights** of a path with confidences w_1 ... w_h: the product ``Π w_i``, and the
  additive form printed in the paper as ``min(0, w_1 - Σ_{i=2..h} (1 - w_i)^α_i)``, α_i >= 1. As
  printed it is never positive (a one-hop path with w_1 = 0.9 would weigh 0), so we read it as
  ``max(0, ...)``: start from the first confidence and subtract a penalty (1 - w_i)^α_i for each
  further hop, floored at 0. Like the product it lies in [0, 1], equals w_1 for one hop and never
  grows with more hops; α_i > 1 softens the penalty of strong edges. A zero-hop path weighs 1.
* **Expansion direction.** From V_i we follow edges A -> B (successors): A was seen, so B is likely
  in the same kind of scene with probability confidence(A -> B) (paper A3, "pr(B|A)"). Each new
  keyword keeps the best path (by ``rank_by``) from a level-0 keyword that reached it.
* **No detected keyword.** When an image has none, expansion starts from the most frequent keywords
  of its class (needs labels) and the result says so (:attr:`Expansion.note`).

Defaults (the paper gives no numbers; chosen to reproduce its Figure 9 on its own keyword file,
``../shared/reference/bgtest/bgdb_items_val.hdf5``: 1712 images, 5.3 detected keywords each with
the Places365 arg-max rule):

* ``min_support = 0.005`` (:data:`DEFAULT_MIN_SUPPORT`): a keyword or pair must occur in 0.5 % of the
  images (9 of 1712). The paper draws an edge wherever two keywords "have been detected from the same
  image at least once", i.e. no real floor; 0.005 keeps most of that reach while dropping pairs
  seen in fewer than 9 images, whose confidences rest on a handful of images.
* ``min_confidence = 0.1`` (:data:`DEFAULT_MIN_CONFIDENCE`): B follows A in at least 10 % of A's images.
  Confidence edges point towards frequent keywords; at 0.3 most surviving edges lead into a few hubs
  (``ade:wall`` receives 60 of 171, then sky, earth, floor, tree), so every expansion reaches the
  same hubs after one level and stops.
* ``max_len = 2`` (:data:`DEFAULT_MAX_LEN`): only pairs make edges; longer itemsets add multi-keyword
  rules to :attr:`Ontology.rules` only, and at low support on a small workspace their number grows
  exponentially with the keywords per image. Pass ``max_len=None`` for all of them.
* ``maxits = 5`` (MAXITS, :data:`DEFAULT_MAXITS`) and ``minkws = None`` (MINKWS: expand to MAXITS): the
  paper's gain "becomes less significant after the 4th iteration".

Keywords per image on the reference file, levels 0..5 (``python -m analytics expand --keywords
FILE``): these defaults (113 keywords, 511 edges) 5.3, 16.2, 27.4, 35.8, 39.1, 39.2, growing for four
levels and then saturating as in Figure 9, with more keywords per image than the 32 backgrounds of a
suite; the former 0.01 / 0.3 (65 keywords, 171 edges) 5.3, 8.4, 9.2, 9.2, flat from level 2, so a
32-background suite cycled about nine keywords.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from numbers import Real
from typing import Any, Literal

import networkx as nx
import numpy as np
import pandas as pd
from mlxtend.frequent_patterns import apriori, association_rules, fpgrowth

from ._validation import check_choice, check_fraction, check_positive_int
from .exceptions import InvalidInputError, NotFoundError
from .keywords import KeywordTable, transactions_digest
from .team.roles import require_permission
from .workspace import Workspace, content_id, now

logger = logging.getLogger(__name__)

ALGORITHMS: dict[str, Callable[..., pd.DataFrame]] = {"apriori": apriori, "fpgrowth": fpgrowth}
ITEMSET_COLUMNS = ["support", "itemsets"]
RULE_COLUMNS = ["antecedents", "consequents", "antecedent support", "consequent support", "support", "confidence", "lift"]
WEIGHTS = ("product", "additive")
LEVEL_COLUMNS = ["level", "min", "mean", "max"]
DEFAULT_ALGORITHM = "fpgrowth"
DEFAULT_MIN_SUPPORT = 0.005
DEFAULT_MIN_CONFIDENCE = 0.1
DEFAULT_MAX_LEN = 2
DEFAULT_MAXITS = 5


# -- parameters and result ------------------------------------------------------------------
@dataclass(frozen=True)
class OntologyParams:
    """Settings of an ontology build (validated on creation).

    Defaults reproduce the paper's Figure 9 on its keyword file (see the module notes).

    algorithm : {'fpgrowth', 'apriori'}, default='fpgrowth' (same itemsets; FP-Growth is faster)
    min_support : float in (0, 1], default=0.005
    min_confidence : float in (0, 1], default=0.1
    max_len : int >= 1 or None, default=2 (longest itemset; pairs make the graph; None = no limit)
    """

    algorithm: str = DEFAULT_ALGORITHM
    min_support: float = DEFAULT_MIN_SUPPORT
    min_confidence: float = DEFAULT_MIN_CONFIDENCE
    max_len: int | None = DEFAULT_MAX_LEN

    def __post_init__(self) -> None:
        check_choice(self.algorithm, "algorithm", ALGORITHMS)
        object.__setattr__(self, "min_support", check_fraction(self.min_support, "min_support"))
        object.__setattr__(self, "min_confidence", check_fraction(self.min_confidence, "min_confidence"))
        if self.max_len is not None:
            object.__setattr__(self, "max_len", check_positive_int(self.max_len, "max_len"))


@dataclass(frozen=True)
class Ontology:
    """An association ontology.

    Attributes
    ----------
    params : OntologyParams
    graph : networkx.DiGraph
        Node = frequent keyword (attribute ``support``); edge A -> B with ``confidence``,
        ``support`` (of {A, B}) and ``lift``.
    itemsets : DataFrame with columns support (float), itemsets (frozenset of str)
    rules : DataFrame with columns antecedents, consequents (frozenset of str), antecedent support,
        consequent support, support, confidence, lift
    n_transactions : int
    source : str
        SHA-256 of the transactions the ontology was mined from.
    """

    params: OntologyParams
    graph: nx.DiGraph = field(repr=False)
    itemsets: pd.DataFrame = field(repr=False)
    rules: pd.DataFrame = field(repr=False)
    n_transactions: int
    source: str

    @property
    def id(self) -> str:
        """Content id: hash of the parameters and the transactions."""
        return content_id(asdict(self.params), self.source)

    @property
    def summary(self) -> dict[str, int]:
        """Counts: transactions, keywords (graph nodes), itemsets, rules, edges."""
        return {
            "transactions": self.n_transactions,
            "keywords": self.graph.number_of_nodes(),
            "itemsets": len(self.itemsets),
            "rules": len(self.rules),
            "edges": self.graph.number_of_edges(),
        }


# -- mining ---------------------------------------------------------------------------------
def to_onehot(transactions: KeywordTable | Sequence[KeywordTable] | np.ndarray, *, vocabulary: Sequence[str] | None = None) -> pd.DataFrame:
    """Transactions as mlxtend's one-hot DataFrame.

    Parameters
    ----------
    transactions : KeywordTable, sequence of KeywordTable, or ndarray of shape (n, n_keywords), bool
        Several tables are stacked over the union of their vocabularies (a keyword a table lacks
        counts as absent in its rows).
    vocabulary : sequence of str, length n_keywords, default=None
        Column names; required with an array, ignored with tables.

    Returns
    -------
    DataFrame of shape (n, n_keywords), bool, columns = keyword names
    """
    if isinstance(transactions, KeywordTable):
        present, vocabulary = transactions.present, transactions.vocabulary
    elif isinstance(transactions, np.ndarray):
        present = _check_present(transactions, vocabulary)
    else:
        present, vocabulary = stack_transactions(transactions)
    if present.shape[0] == 0:
        raise InvalidInputError("transactions are empty (0 items); add keyword rows before mining")
    return pd.DataFrame(present, columns=list(vocabulary))


def stack_transactions(tables: Sequence[KeywordTable]) -> tuple[np.ndarray, list[str]]:
    """Stack the presence of several tables over the union of their vocabularies.

    Returns
    -------
    present : ndarray of shape (sum of n_items, n_keywords), bool
    vocabulary : list of str, length n_keywords (first-seen order)
    """
    tables = list(tables)
    if not tables:
        raise InvalidInputError("no keyword tables given; pass at least one")
    vocabulary = list(dict.fromkeys(word for table in tables for word in table.vocabulary))
    column = {word: j for j, word in enumerate(vocabulary)}
    blocks = []
    for table in tables:
        block = np.zeros((table.n_items, len(vocabulary)), dtype=bool)
        block[:, [column[word] for word in table.vocabulary]] = table.present
        blocks.append(block)
    return np.vstack(blocks), vocabulary


def _check_present(present: np.ndarray, vocabulary: Sequence[str] | None) -> np.ndarray:
    if vocabulary is None:
        raise InvalidInputError("vocabulary is required with a presence array (one name per column)")
    if present.ndim != 2 or present.dtype != np.bool_:
        raise InvalidInputError(f"transactions must be a 2-D bool array (items x keywords); got {present.dtype} of shape {present.shape}")
    if present.shape[1] != len(vocabulary):
        raise InvalidInputError(f"vocabulary has {len(vocabulary)} names for {present.shape[1]} transaction columns")
    return present


def mine_itemsets(
    onehot: pd.DataFrame,
    *,
    algorithm: str = DEFAULT_ALGORITHM,
    min_support: float = DEFAULT_MIN_SUPPORT,
    max_len: int | None = None,
) -> pd.DataFrame:
    """Frequent itemsets with mlxtend's ``apriori`` or ``fpgrowth`` (identical output).

    Parameters
    ----------
    onehot : DataFrame of shape (n, n_keywords), bool
    algorithm : {'fpgrowth', 'apriori'}, default='fpgrowth'
    min_support : float in (0, 1], default=0.005
    max_len : int or None, default=None
        Largest itemset; None mines all (:func:`build_ontology` stops at pairs by default).

    Returns
    -------
    DataFrame with columns support (float), itemsets (frozenset of str), in a canonical order
    (by size, then sorted item names) so both algorithms return equal frames.

    Examples
    --------
    >>> onehot = pd.DataFrame({"sky": [1, 1, 1, 0], "tree": [1, 1, 0, 0], "sea": [0, 0, 1, 1]}, dtype=bool)
    >>> mine_itemsets(onehot, min_support=0.5)["itemsets"].map(sorted).tolist()
    [['sea'], ['sky'], ['tree'], ['sky', 'tree']]
    """
    params = OntologyParams(algorithm=algorithm, min_support=min_support, max_len=max_len)
    return _mine_itemsets(onehot, params)


def _mine_itemsets(onehot: pd.DataFrame, params: OntologyParams) -> pd.DataFrame:
    found = ALGORITHMS[params.algorithm](onehot, min_support=params.min_support, use_colnames=True, max_len=params.max_len)
    if found.empty:
        return _empty_frame(ITEMSET_COLUMNS, sets=("itemsets",))
    order = sorted(range(len(found)), key=lambda i: _itemset_key(found["itemsets"].iloc[i]))
    return found.iloc[order][ITEMSET_COLUMNS].reset_index(drop=True)


def _empty_frame(columns: Sequence[str], *, sets: Sequence[str]) -> pd.DataFrame:
    """A well-formed empty result: object columns for itemsets, float for metrics."""
    return pd.DataFrame({column: pd.Series(dtype=object if column in sets else float) for column in columns})


def _itemset_key(items: frozenset) -> tuple[int, tuple[str, ...]]:
    return len(items), tuple(sorted(items))


def mine_rules(itemsets: pd.DataFrame, *, n_transactions: int, min_confidence: float = DEFAULT_MIN_CONFIDENCE) -> pd.DataFrame:
    """Association rules with confidence >= ``min_confidence`` (mlxtend ``association_rules``).

    Parameters
    ----------
    itemsets : DataFrame from :func:`mine_itemsets`
    n_transactions : int
        Number of transactions the itemsets were mined from.
    min_confidence : float in (0, 1], default=0.1

    Returns
    -------
    DataFrame with columns antecedents, consequents (frozenset of str), antecedent support,
    consequent support, support, confidence, lift; canonical order (antecedents, then consequents).
    """
    min_confidence = check_fraction(min_confidence, "min_confidence")
    n_transactions = check_positive_int(n_transactions, "n_transactions")
    if not (itemsets["itemsets"].map(len) > 1).any():  # no pair is frequent: no rule can exist
        return _empty_frame(RULE_COLUMNS, sets=("antecedents", "consequents"))
    rules = association_rules(itemsets, num_itemsets=n_transactions, metric="confidence", min_threshold=min_confidence)
    order = sorted(range(len(rules)), key=lambda i: (_itemset_key(rules["antecedents"].iloc[i]), _itemset_key(rules["consequents"].iloc[i])))
    return rules.iloc[order][RULE_COLUMNS].reset_index(drop=True)


def build_graph(itemsets: pd.DataFrame, rules: pd.DataFrame) -> nx.DiGraph:
    """The ontology graph: frequent keywords as nodes, single-item rules as edges.

    Parameters
    ----------
    itemsets : DataFrame from :func:`mine_itemsets`
    rules : DataFrame from :func:`mine_rules`

    Returns
    -------
    networkx.DiGraph
        Node attribute ``support``; edge A -> B attributes ``confidence``, ``support``, ``lift``.
    """
    graph = nx.DiGraph()
    for items, support in zip(itemsets["itemsets"], itemsets["support"]):
        if len(items) == 1:
            graph.add_node(next(iter(items)), support=float(support))
    single = (rules["antecedents"].map(len) == 1) & (rules["consequents"].map(len) == 1)
    for _, rule in rules[single].iterrows():
        graph.add_edge(
            next(iter(rule["antecedents"])),
            next(iter(rule["consequents"])),
            confidence=float(rule["confidence"]),
            support=float(rule["support"]),
            lift=float(rule["lift"]),
        )
    return graph


def build_ontology(
    transactions: KeywordTable | Sequence[KeywordTable] | np.ndarray,
    *,
    vocabulary: Sequence[str] | None = None,
    algorithm: str = DEFAULT_ALGORITHM,
    min_support: float = DEFAULT_MIN_SUPPORT,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    max_len: int | None = DEFAULT_MAX_LEN,
) -> Ontology:
    """Mine an association ontology from keyword transactions.

    Parameters
    ----------
    transactions : KeywordTable, sequence of KeywordTable, or ndarray of shape (n, n_keywords), bool
    vocabulary : sequence of str, default=None
        Column names of an array (ignored with tables).
    algorithm : {'fpgrowth', 'apriori'}, default='fpgrowth'
    min_support : float in (0, 1], default=0.005
        support(A) = #items containing A / #items; keywords and pairs below it make no node / edge.
    min_confidence : float in (0, 1], default=0.1
        confidence(A -> B) = support(A ∪ B) / support(A); rules below it make no edge.
    max_len : int or None, default=2
        Largest itemset mined (2 is enough for the graph; longer ones only add multi-keyword rules,
        and their number explodes at low support on small workspaces; None = no limit).

    The defaults reproduce the paper's Figure 9 on its keyword file: expansion grows for four
    levels, then saturates (numbers in the module notes).

    Returns
    -------
    Ontology

    Raises
    ------
    InvalidInputError
        Support or confidence outside (0, 1], an unknown algorithm, empty transactions.
    """
    params = OntologyParams(algorithm=algorithm, min_support=min_support, min_confidence=min_confidence, max_len=max_len)
    onehot = to_onehot(transactions, vocabulary=vocabulary)
    itemsets = _mine_itemsets(onehot, params)
    rules = mine_rules(itemsets, n_transactions=len(onehot), min_confidence=params.min_confidence)
    return Ontology(
        params=params,
        graph=build_graph(itemsets, rules),
        itemsets=itemsets,
        rules=rules,
        n_transactions=len(onehot),
        source=transactions_digest(onehot.to_numpy(dtype=bool), list(onehot.columns)),
    )


# -- paths and aggregated weights -------------------------------------------------------------
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
    paths = {source: (source,)}
    if source != target:
        for layer in _layers(graph, [source], score=_scorer(graph, "product", alphas)):
            paths.update(layer)
            if target in layer:
                break
    if target not in paths:
        return None
    return _keyword_path(graph, paths[target], alphas)


def _keyword_path(graph: nx.DiGraph, nodes: tuple[str, ...], alphas: list[float]) -> KeywordPath:
    weights = path_weights(graph, nodes)
    return KeywordPath(nodes, weights, product_weight(weights), _additive(weights, alphas))


def _layers(graph: nx.DiGraph, sources: Sequence[str], *, score: Callable[[tuple[str, ...]], float]) -> Iterator[dict[str, tuple[str, ...]]]:
    """Breadth-first layers from ``sources`` along edge directions.

    Yields, per level, the newly reached nodes each with the best-scoring path (from a source)
    among the shortest ones; ties go to the alphabetically first predecessor.
    """
    paths = {node: (node,) for node in sources}
    frontier = sorted(node for node in paths if node in graph)
    while frontier:
        layer: dict[str, tuple[str, ...]] = {}
        for node in frontier:
            for successor in sorted(graph.successors(node)):
                if successor in paths:
                    continue
                candidate = paths[node] + (successor,)
                if successor not in layer or score(candidate) > score(layer[successor]):
                    layer[successor] = candidate
        if not layer:
            return
        paths.update(layer)
        frontier = sorted(layer)
        yield layer


# -- keyword expansion ------------------------------------------------------------------------
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
        return pd.DataFrame(columns=LEVEL_COLUMNS)
    sizes = np.array([expansion.sizes(maxits) for expansion in expansions])
    return pd.DataFrame(
        {"level": np.arange(maxits + 1), "min": sizes.min(axis=0), "mean": sizes.mean(axis=0), "max": sizes.max(axis=0)},
        columns=LEVEL_COLUMNS,
    )


# -- workspace --------------------------------------------------------------------------------
def save_ontology(workspace: Workspace, ontology: Ontology, *, tables: Sequence[str] = ()) -> str:
    """Store ``ontology`` (idempotent: its id is its content hash).

    The ``ontologies`` row holds the parameters, the graph as node-link JSON and a summary (counts,
    the keyword tables it came from, and the store hashes of its itemsets and rules).

    Returns
    -------
    id : str
    """
    require_permission(workspace, "build_suites")
    itemsets_hash = workspace.put_json(_itemsets_records(ontology.itemsets))
    rules_hash = workspace.put_json(_rules_records(ontology.rules))
    params = {**asdict(ontology.params), "n_transactions": ontology.n_transactions, "source": ontology.source}
    summary = {**ontology.summary, "tables": list(tables), "itemsets_hash": itemsets_hash, "rules_hash": rules_hash}
    with workspace.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO ontologies(id, params, graph, summary, created) VALUES (?, ?, ?, ?, ?)",
            (
                ontology.id,
                json.dumps(params, sort_keys=True),
                json.dumps(nx.node_link_data(ontology.graph, edges="edges")),
                json.dumps(summary, sort_keys=True),
                now(),
            ),
        )
    return ontology.id


def load_ontology(workspace: Workspace, ontology_id: str) -> Ontology:
    """The ontology stored under ``ontology_id``."""
    row = workspace.query_one("SELECT * FROM ontologies WHERE id = ?", (ontology_id,))
    if row is None:
        known = [r["id"] for r in workspace.query("SELECT id FROM ontologies ORDER BY created")]
        raise NotFoundError(f"no ontology {ontology_id!r} in {workspace.root}; known: {', '.join(known) or 'none'}")
    params, summary = json.loads(row["params"]), json.loads(row["summary"])
    n_transactions, source = params.pop("n_transactions"), params.pop("source")
    return Ontology(
        params=OntologyParams(**params),
        graph=nx.node_link_graph(json.loads(row["graph"]), directed=True, edges="edges"),
        itemsets=_itemsets_frame(_get_json(workspace, summary["itemsets_hash"])),
        rules=_rules_frame(_get_json(workspace, summary["rules_hash"])),
        n_transactions=n_transactions,
        source=source,
    )


def list_ontologies(workspace: Workspace) -> pd.DataFrame:
    """One row per stored ontology: id, algorithm, min_support, min_confidence, max_len,
    transactions, keywords, itemsets, rules, edges, tables, created."""
    records = []
    for row in workspace.query("SELECT * FROM ontologies ORDER BY created, id"):
        params, summary = json.loads(row["params"]), json.loads(row["summary"])
        records.append(
            {
                "id": row["id"],
                **{key: params[key] for key in ("algorithm", "min_support", "min_confidence", "max_len")},
                **{key: summary[key] for key in ("transactions", "keywords", "itemsets", "rules", "edges")},
                "tables": ", ".join(summary.get("tables", [])),
                "created": row["created"],
            }
        )
    columns = ["id", "algorithm", "min_support", "min_confidence", "max_len", "transactions", "keywords", "itemsets", "rules", "edges", "tables", "created"]
    return pd.DataFrame(records, columns=columns)


def ontology_record(workspace: Workspace, ontology_id: str) -> dict[str, Any]:
    """What a suite records about the ontology it used: id, mining parameters, size and sources.

    Returns
    -------
    dict with keys id (str), algorithm (str), min_support, min_confidence (float), max_len
    (int or None), keywords, edges (int), tables (list of str: the keyword tables it was mined from)
    """
    row = workspace.query_one("SELECT params, summary FROM ontologies WHERE id = ?", (ontology_id,))
    if row is None:
        raise NotFoundError(f"no ontology {ontology_id!r} in {workspace.root}")
    params, summary = json.loads(row["params"]), json.loads(row["summary"])
    return {
        "id": ontology_id,
        **{key: params[key] for key in ("algorithm", "min_support", "min_confidence", "max_len")},
        **{key: summary[key] for key in ("keywords", "edges")},
        "tables": list(summary.get("tables", [])),
    }


def ontologies_from(workspace: Workspace, tables: Sequence[str]) -> list[str]:
    """Ids of the stored ontologies mined from exactly the keyword tables ``tables`` (any order),
    newest first."""
    wanted = set(tables)
    rows = workspace.query("SELECT id, summary FROM ontologies ORDER BY created DESC, id DESC")
    return [row["id"] for row in rows if set(json.loads(row["summary"]).get("tables", [])) == wanted]


def _get_json(workspace: Workspace, digest: str) -> Any:
    """``Workspace.get_json`` that also reads the 1-element arrays ``put_json`` writes today
    (``put_array``'s ``np.ascontiguousarray`` turns its 0-d array into shape (1,))."""
    return json.loads(str(workspace.get_array(digest).reshape(-1)[0]))


def _itemsets_records(itemsets: pd.DataFrame) -> list[dict[str, Any]]:
    return [{"support": float(s), "itemsets": sorted(i)} for s, i in zip(itemsets["support"], itemsets["itemsets"])]


def _itemsets_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(records, columns=ITEMSET_COLUMNS)
    frame["itemsets"] = frame["itemsets"].map(frozenset)
    return frame


def _rules_records(rules: pd.DataFrame) -> list[dict[str, Any]]:
    records = rules.to_dict(orient="records")
    for record in records:
        record["antecedents"], record["consequents"] = sorted(record["antecedents"]), sorted(record["consequents"])
    return records


def _rules_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(records, columns=RULE_COLUMNS)
    for column in ("antecedents", "consequents"):
        frame[column] = frame[column].map(frozenset)
    return frame
