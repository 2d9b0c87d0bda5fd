"""Association ontology over scene keywords: frequent itemsets and rules with mlxtend, the graph
and the :class:`Ontology` record (docs/method.md, 'Association ontology'; Liao & Chen, "Background Invariance Testing According
to Semantic Proximity", §4.1.2 and Appendix A).

Pipeline, one small function per step over mlxtend's shared formats::

    transactions (KeywordTable / bool matrix) -> to_onehot -> mine_itemsets (apriori | fpgrowth)
    -> mine_rules (confidence) -> build_graph -> Ontology

**Graph** (the paper leaves it open). Nodes are the frequent keywords (frequent 1-itemsets) with
their ``support``; an edge A -> B carries ``confidence(A -> B)`` (plus ``support`` of {A, B} and
``lift``) for every rule with one antecedent and one consequent that passes ``min_confidence``.
Rules with several antecedents or consequents stay in :attr:`Ontology.rules` (shown in the rules
table) but make no edge: an edge relates two keywords, and every frequent pair {A, B} already
yields its own single-item rules.

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
* ``maxits = 5`` and ``minkws = None`` of the expansion: :mod:`analytics.ontology.expansion`.

Keywords per image on the reference file, levels 0..5 (``python -m analytics expand --keywords
FILE``): these defaults (113 keywords, 511 edges) 5.3, 16.2, 27.4, 35.8, 39.1, 39.2, growing for four
levels and then saturating as in Figure 9, with more keywords per image than the 32 backgrounds of a
suite; the former 0.01 / 0.3 (65 keywords, 171 edges) 5.3, 8.4, 9.2, 9.2, flat from level 2, so a
32-background suite cycled about nine keywords.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import networkx as nx
import numpy as np
import pandas as pd
from mlxtend.frequent_patterns import apriori, association_rules, fpgrowth

from analytics._choices import DEFAULT_ALGORITHM, DEFAULT_MAX_LEN, DEFAULT_MIN_CONFIDENCE, DEFAULT_MIN_SUPPORT
from analytics._validation import check_choice, check_fraction, check_positive_int
from analytics.exceptions import InvalidInputError
from analytics.keywords import KeywordTable, transactions_digest
from analytics.workspace import content_id

ALGORITHMS: dict[str, Callable[..., pd.DataFrame]] = {"apriori": apriori, "fpgrowth": fpgrowth}
ITEMSET_COLUMNS = ["support", "itemsets"]
RULE_COLUMNS = ["antecedents", "consequents", "antecedent support", "consequent support", "support", "confidence", "lift"]


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


def rules_table(ontology: Ontology, *, keywords: Sequence[str] = (), edges_only: bool = False) -> pd.DataFrame:
    """The ontology's rules as text, strongest first (confidence, then support).

    Parameters
    ----------
    ontology : Ontology
    keywords : sequence of str, default=()
        Keep the rules that mention any of them (every rule when empty).
    edges_only : bool, default=False
        Keep the rules with one keyword on each side (the graph's edges).

    Returns
    -------
    DataFrame
        Columns antecedents, consequents (str: the keywords, sorted, comma-separated), support,
        confidence, lift (float).
    """
    rules = ontology.rules
    keep = np.ones(len(rules), dtype=bool)
    if keywords:
        wanted = set(keywords)
        keep &= [bool(wanted & (a | c)) for a, c in zip(rules["antecedents"], rules["consequents"])]
    if edges_only:
        keep &= (rules["antecedents"].map(len) == 1).to_numpy() & (rules["consequents"].map(len) == 1).to_numpy()
    shown = rules[keep].copy()
    for column in ("antecedents", "consequents"):
        shown[column] = shown[column].map(lambda items: ", ".join(sorted(items)))
    columns = ["antecedents", "consequents", "support", "confidence", "lift"]
    return shown[columns].sort_values(["confidence", "support"], ascending=False).reset_index(drop=True)


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

