"""The association ontology of scene keywords, in pipeline order: ``mining`` (frequent itemsets and
rules with mlxtend, the graph, :class:`Ontology`), ``paths`` (shortest paths, aggregated weights),
``expansion`` (keyword expansion level by level), ``store`` (ontologies in the workspace) and
``layout`` (what a network chart draws, and where).
"""

from .expansion import DEFAULT_MAXITS, Expansion, class_keywords, expand_item, expand_table, level_statistics
from .layout import (
    best_connected,
    graph_layout,
    neighbourhood,
    radial_layout,
    strongest_edges,
    without_isolates,
)
from .mining import ALGORITHMS, DEFAULT_MAX_LEN, DEFAULT_MIN_CONFIDENCE, DEFAULT_MIN_SUPPORT, Ontology, OntologyParams, build_ontology, mine_itemsets, rules_table, to_onehot
from .paths import WEIGHTS
from .store import list_ontologies, load_ontology, ontologies_from, ontology_labels, ontology_record, save_ontology

__all__ = [
    "ALGORITHMS",
    "DEFAULT_MAXITS",
    "DEFAULT_MAX_LEN",
    "DEFAULT_MIN_CONFIDENCE",
    "DEFAULT_MIN_SUPPORT",
    "Expansion",
    "Ontology",
    "OntologyParams",
    "WEIGHTS",
    "best_connected",
    "build_ontology",
    "class_keywords",
    "expand_item",
    "expand_table",
    "graph_layout",
    "level_statistics",
    "list_ontologies",
    "load_ontology",
    "mine_itemsets",
    "neighbourhood",
    "ontologies_from",
    "ontology_labels",
    "ontology_record",
    "radial_layout",
    "rules_table",
    "save_ontology",
    "strongest_edges",
    "to_onehot",
    "without_isolates",
]
