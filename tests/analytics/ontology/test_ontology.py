"""Ontology: itemsets, rules, graph, paths, aggregated weights, expansion, storage, CLI.

Hand-computed values refer to the four transactions of ``tests/fixtures/keywords.py``::

    t0 sky tree | t1 sky tree grass | t2 sky sea | t3 sea sand

support: sky 3/4, tree 2/4, sea 2/4, grass 1/4, sand 1/4; {sky, tree} 2/4, every other pair 1/4.
With min_confidence 0.5 the edges are sky->tree 2/3, tree->sky 1, tree->grass 1/2, grass->sky 1,
grass->tree 1, sea->sky 1/2, sea->sand 1/2, sand->sea 1 (sky->sea and sky->grass have 1/3).
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

from analytics.cli import main
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.keywords import save_keyword_table
from analytics.ontology import (
    ALGORITHMS,
    DEFAULT_MAX_LEN,
    DEFAULT_MAXITS,
    DEFAULT_MIN_CONFIDENCE,
    DEFAULT_MIN_SUPPORT,
    OntologyParams,
    build_ontology,
    class_keywords,
    expand_table,
    level_statistics,
    list_ontologies,
    load_ontology,
    mine_itemsets,
    ontology_labels,
    rules_table,
    save_ontology,
    to_onehot,
)
from analytics.ontology.expansion import expand_keywords
from analytics.ontology.mining import DEFAULT_ALGORITHM
from analytics.ontology.paths import additive_weight, product_weight, shortest_path
from analytics.workspace import Workspace
from tests.fixtures.keywords import make_keyword_table

EDGES = {
    ("sky", "tree"): 2 / 3,
    ("tree", "sky"): 1.0,
    ("tree", "grass"): 0.5,
    ("grass", "sky"): 1.0,
    ("grass", "tree"): 1.0,
    ("sea", "sky"): 0.5,
    ("sea", "sand"): 0.5,
    ("sand", "sea"): 1.0,
}


@pytest.fixture
def tiny_ontology(tiny_keywords):
    return build_ontology(tiny_keywords, min_support=0.25, min_confidence=0.5, max_len=None)  # keeps the triple


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_supports_by_hand(tiny_keywords, algorithm):
    itemsets = mine_itemsets(to_onehot(tiny_keywords), algorithm=algorithm, min_support=0.25)
    support = {frozenset(items): s for items, s in zip(itemsets["itemsets"], itemsets["support"])}
    assert support[frozenset({"sky"})] == 0.75 and support[frozenset({"sand"})] == 0.25
    assert support[frozenset({"sky", "tree"})] == 0.5 and support[frozenset({"sky", "tree", "grass"})] == 0.25
    assert frozenset({"tree", "sea"}) not in support
    assert len(mine_itemsets(to_onehot(tiny_keywords), algorithm=algorithm, min_support=0.5)) == 4  # sky tree sea {sky,tree}


def test_graph_by_hand(tiny_ontology):
    graph = tiny_ontology.graph
    assert dict(graph.nodes(data="support")) == {"sky": 0.75, "tree": 0.5, "grass": 0.25, "sea": 0.5, "sand": 0.25}
    assert {edge: pytest.approx(w) for edge, w in EDGES.items()} == {(a, b): w for a, b, w in graph.edges(data="confidence")}
    # the triple {sky, tree, grass} gives multi-item rules that stay in the rules table only
    multi = tiny_ontology.rules[(tiny_ontology.rules["antecedents"].map(len) > 1) | (tiny_ontology.rules["consequents"].map(len) > 1)]
    assert len(multi) > 0
    assert tiny_ontology.summary == {"transactions": 4, "keywords": 5, "itemsets": 11, "rules": len(tiny_ontology.rules), "edges": 8}


def test_rules_table_filters_by_keyword_and_to_the_graphs_edges(tiny_ontology):
    every = rules_table(tiny_ontology)
    assert list(every.columns) == ["antecedents", "consequents", "support", "confidence", "lift"] and len(every) == len(tiny_ontology.rules)
    assert list(every["confidence"]) == sorted(every["confidence"], reverse=True)
    edges = rules_table(tiny_ontology, edges_only=True)
    assert {(a, c): pytest.approx(w) for a, c, w in edges[["antecedents", "consequents", "confidence"]].itertuples(index=False)} == EDGES
    sand = rules_table(tiny_ontology, keywords=["sand"])
    assert set(zip(sand["antecedents"], sand["consequents"])) == {("sea", "sand"), ("sand", "sea")}
    assert "grass, sky" in set(rules_table(tiny_ontology, keywords=["grass"])["antecedents"])  # a multi-item rule, as text


def test_paths_and_aggregated_weights(tiny_ontology):
    path = shortest_path(tiny_ontology.graph, "sand", "tree")
    assert path.nodes == ("sand", "sea", "sky", "tree") and path.hops == 3
    assert path.product == pytest.approx(1 * 0.5 * 2 / 3)
    assert path.additive == pytest.approx(1 - (1 - 0.5) - (1 - 2 / 3))
    assert shortest_path(tiny_ontology.graph, "tree", "sea") is None  # sky->sea is below min_confidence
    same = shortest_path(tiny_ontology.graph, "sky", "sky")
    assert (same.hops, same.product, same.additive) == (0, 1.0, 1.0)
    with pytest.raises(NotFoundError, match="'moon' is not in the ontology"):
        shortest_path(tiny_ontology.graph, "moon", "sky")


def test_shortest_path_prefers_the_strongest_of_equal_length():
    graph = nx.DiGraph()
    for a, b, w in [("a", "b", 0.9), ("a", "c", 0.5), ("b", "d", 0.5), ("c", "d", 1.0), ("a", "e", 0.1), ("e", "f", 1.0), ("f", "d", 1.0)]:
        graph.add_edge(a, b, confidence=w)
    path = shortest_path(graph, "a", "d")
    assert path.nodes == ("a", "c", "d") and path.product == pytest.approx(0.5) and path.additive == pytest.approx(0.5)


def test_additive_weight_reading():
    assert additive_weight([0.9]) == pytest.approx(0.9)  # one hop: the confidence itself, not min(0, .)
    assert additive_weight([0.9, 0.5]) == pytest.approx(0.4)
    assert additive_weight([0.9, 0.5], alpha=2) == pytest.approx(0.65)  # alpha > 1 softens the penalty
    assert additive_weight([0.9, 0.5, 0.5], alpha=[1, 3]) == pytest.approx(0.9 - 0.5 - 0.125)
    assert additive_weight([0.2, 0.1]) == 0.0  # floored at 0
    assert product_weight([0.9, 0.5]) == pytest.approx(0.45) and product_weight([]) == 1.0
    with pytest.raises(InvalidInputError, match="alpha must be a number >= 1"):
        additive_weight([0.5], alpha=0.5)


def test_expansion_levels_and_paths(tiny_ontology):
    expansion = expand_keywords(tiny_ontology.graph, ["sand"], maxits=5)
    assert [(e.keyword, e.level) for e in expansion.keywords] == [("sand", 0), ("sea", 1), ("sky", 2), ("tree", 3), ("grass", 4)]
    grass = expansion.keywords[-1]
    assert grass.path == ("sand", "sea", "sky", "tree", "grass") and grass.product == pytest.approx(0.5 * 2 / 3 * 0.5)
    assert expansion.sizes(5) == [1, 2, 3, 4, 5, 5] and expansion.levels == 4  # level 5 would add nothing
    assert not expansion.fallback and expansion.note == ""


def test_expansion_stops_at_minkws_and_maxits(tiny_ontology):
    assert expand_keywords(tiny_ontology.graph, ["sand"], minkws=3).sizes(5) == [1, 2, 3, 3, 3, 3]
    assert expand_keywords(tiny_ontology.graph, ["sand"], maxits=1).sizes(3) == [1, 2, 2, 2]
    assert expand_keywords(tiny_ontology.graph, ["sand"], maxits=0).sizes(1) == [1, 1]


def test_expansion_ranks_within_a_level_by_weight(tiny_ontology):
    expansion = expand_keywords(tiny_ontology.graph, ["tree"])
    assert [(e.keyword, e.level, e.product) for e in expansion.keywords] == [("tree", 0, 1.0), ("sky", 1, 1.0), ("grass", 1, 0.5)]
    unknown = expand_keywords(tiny_ontology.graph, ["moon"])
    assert [(e.keyword, e.level) for e in unknown.keywords] == [("moon", 0)]


def test_fallback_to_class_keywords(tiny_ontology):
    table = make_keyword_table([["sky", "tree"], ["sky", "tree", "grass"], ["sky", "sea"], []], ["forest", "forest", "beach", "beach"])
    assert class_keywords(table, top=2) == {"forest": ["sky", "tree"], "beach": ["sky", "sea"]}
    expansions = expand_table(tiny_ontology, table, maxits=2)
    empty = expansions[3]
    assert empty.fallback and "class 'beach'" in empty.note and empty.seeds == ("sky", "sea")
    assert [e.level for e in empty.keywords][:2] == [0, 0]
    assert not any(e.fallback for e in expansions[:3])
    unlabelled = make_keyword_table([["sky"], []])
    last = expand_table(tiny_ontology, unlabelled)[1]
    assert not last.keywords and "no class keywords" in last.note


def test_level_statistics(tiny_ontology, tiny_keywords):
    stats = level_statistics(expand_table(tiny_ontology, tiny_keywords, maxits=3), maxits=3)
    assert stats.columns.tolist() == ["level", "min", "mean", "max"] and stats["level"].tolist() == [0, 1, 2, 3]
    assert stats.loc[0, "mean"] == pytest.approx((2 + 3 + 2 + 2) / 4)
    assert stats["mean"].is_monotonic_increasing and stats["max"].iloc[-1] <= 5


@pytest.mark.parametrize(
    "params, match",
    [
        ({"min_support": 0.0}, r"min_support must be in \(0, 1\]; got 0.0"),
        ({"min_support": 1.5}, r"min_support must be in \(0, 1\]; got 1.5"),
        ({"min_confidence": -0.1}, r"min_confidence must be in \(0, 1\]"),
        ({"min_confidence": float("nan")}, "min_confidence must be a number"),
        ({"algorithm": "eclat"}, "algorithm must be one of 'apriori', 'fpgrowth'; got 'eclat'"),
    ],
)
def test_bad_parameters(tiny_keywords, params, match):
    with pytest.raises(InvalidInputError, match=match):
        build_ontology(tiny_keywords, **params)


def test_bad_transactions():
    with pytest.raises(InvalidInputError, match="vocabulary is required"):
        build_ontology(np.ones((2, 2), bool))
    with pytest.raises(InvalidInputError, match="2-D bool array"):
        build_ontology(np.ones((2, 2)), vocabulary=["a", "b"])
    with pytest.raises(InvalidInputError, match="transactions are empty"):
        build_ontology(np.ones((0, 2), bool), vocabulary=["a", "b"])


def test_high_support_gives_well_formed_empty_results(tiny_keywords):
    ontology = build_ontology(tiny_keywords, min_support=1.0)
    assert ontology.summary == {"transactions": 4, "keywords": 0, "itemsets": 0, "rules": 0, "edges": 0}
    assert "confidence" in ontology.rules.columns


def test_stacked_tables_union_vocabularies(tiny_keywords):
    other = make_keyword_table([["sea"]])
    ontology = build_ontology([tiny_keywords, other], min_support=0.2, min_confidence=0.5)
    assert ontology.n_transactions == 5 and ontology.graph.nodes["sea"]["support"] == pytest.approx(3 / 5)


def test_save_and_load(tmp_path, tiny_ontology):
    workspace = Workspace(tmp_path / "ws")
    ontology_id = save_ontology(workspace, tiny_ontology, tables=["tiny"])
    assert ontology_id == tiny_ontology.id == save_ontology(workspace, tiny_ontology)  # content id: idempotent
    back = load_ontology(workspace, ontology_id)
    assert back.params == tiny_ontology.params and back.id == ontology_id
    assert nx.utils.graphs_equal(back.graph, tiny_ontology.graph)
    assert back.itemsets["itemsets"].tolist() == tiny_ontology.itemsets["itemsets"].tolist()
    assert back.rules.equals(tiny_ontology.rules)
    assert list_ontologies(workspace)["id"].tolist() == [ontology_id]
    assert build_ontology(make_keyword_table([["sky"]]), min_support=0.5).id != ontology_id
    with pytest.raises(NotFoundError, match="no ontology 'nope'"):
        load_ontology(workspace, "nope")


# -- the real reference keywords (1712 IN-9 images) ------------------------------------------
REAL = {"min_support": 0.01, "min_confidence": 0.1}


@pytest.fixture(scope="module")
def real_table(reference_keywords_path):
    from analytics.keywords import read_keyword_file

    return read_keyword_file(reference_keywords_path)


def test_real_apriori_and_fpgrowth_agree(real_table):
    a = build_ontology(real_table, algorithm="apriori", **REAL)
    f = build_ontology(real_table, algorithm="fpgrowth", **REAL)
    assert len(f.itemsets) > 100 and len(f.rules) > 100
    assert a.itemsets["itemsets"].tolist() == f.itemsets["itemsets"].tolist()
    np.testing.assert_allclose(a.itemsets["support"], f.itemsets["support"], rtol=0, atol=1e-12)
    assert a.rules[["antecedents", "consequents"]].equals(f.rules[["antecedents", "consequents"]])
    np.testing.assert_allclose(a.rules["confidence"], f.rules["confidence"], rtol=0, atol=1e-12)
    assert nx.utils.graphs_equal(a.graph, f.graph)


def test_real_expansion_rises_then_flattens(real_table):
    ontology = build_ontology(real_table, **REAL)
    stats = level_statistics(expand_table(ontology, real_table, maxits=5), maxits=5)
    mean = stats["mean"].to_numpy()
    assert (np.diff(mean) >= 0).all() and (np.diff(stats["min"]) >= 0).all()
    first_gain, late_gain = mean[1] - mean[0], mean[5] - mean[4]
    assert first_gain > 1.0  # the ontology adds keywords ...
    assert late_gain <= 0.05 * first_gain  # ... and the gain has saturated by level 4 (paper Figure 9)


def test_default_expansion_grows_for_three_levels_on_the_reference_file(real_table):
    """Issue 18.4: the defaults reproduce the paper's Figure 9 on its own keyword file: each of levels
    1, 2 and 3 adds more than one keyword per image on average, the gain then saturates, and the
    expansion offers a 32-background suite a keyword per background (0.01 / 0.3 gave 5.3, 8.4, 9.2,
    9.2: flat from level 2)."""
    ontology = build_ontology(real_table)
    assert ontology.params == OntologyParams()  # build_ontology and the stored parameters agree
    mean = level_statistics(expand_table(ontology, real_table), maxits=DEFAULT_MAXITS)["mean"].to_numpy()
    gains = np.diff(mean)
    assert (gains[:3] > 1.0).all()  # strictly increasing 0 -> 1 -> 2 -> 3, by real keywords
    assert gains[-1] <= 0.05 * gains[0]  # ... and saturated by the last level
    assert mean[-1] >= 32


def test_cli_defaults_are_the_library_defaults(tmp_path, tiny_keywords, capsys):
    workspace = Workspace(tmp_path / "ws")
    save_keyword_table(workspace, tiny_keywords, name="tiny")
    assert main(["ontology", "--workspace", str(workspace.root), "--json"]) == 0
    row = list_ontologies(workspace).set_index("id").loc[json.loads(capsys.readouterr().out)["ontology"]]
    assert (row["algorithm"], row["min_support"], row["min_confidence"], row["max_len"]) == (
        DEFAULT_ALGORITHM, DEFAULT_MIN_SUPPORT, DEFAULT_MIN_CONFIDENCE, DEFAULT_MAX_LEN
    )


def test_cli_ontology_and_expand_on_a_file(tmp_path, tiny_keywords, capsys):
    from analytics.keywords.readers import write_keyword_file

    path = write_keyword_file(tiny_keywords, tmp_path / "tiny.h5")
    n_rules = len(build_ontology(tiny_keywords, min_support=0.25, min_confidence=0.5).rules)
    assert main(["ontology", "--keywords", str(path), "--algorithm", "apriori", "--min-support", "0.25", "--min-confidence", "0.5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"transactions": 4, "keywords": 5, "itemsets": 10, "rules": n_rules, "edges": 8}
    assert main(["ontology", "--keywords", str(path), "--min-support", "0.25", "--min-confidence", "0.5", "--max-len", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["itemsets"] == 11  # 0 = no limit: the triple {sky, tree, grass} too
    assert main(["expand", "--keywords", str(path), "--min-support", "0.25", "--min-confidence", "0.5", "--maxits", "2", "--json"]) == 0
    levels = json.loads(capsys.readouterr().out)
    assert [row["level"] for row in levels] == [0, 1, 2] and set(levels[0]) == {"level", "min", "mean", "max"}
    assert main(["ontology", "--keywords", str(path), "--min-support", "2", "--json"]) == 2
    assert "min_support must be in (0, 1]" in capsys.readouterr().err


def test_cli_ontology_from_a_workspace_saves_it(tmp_path, tiny_keywords, capsys):
    workspace = Workspace(tmp_path / "ws")
    save_keyword_table(workspace, tiny_keywords, name="tiny")
    assert main(["ontology", "--workspace", str(workspace.root), "--min-support", "0.25", "--min-confidence", "0.5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["edges"] == 8 and list_ontologies(workspace)["id"].tolist() == [result["ontology"]]
    assert main(["ontology", "--workspace", str(workspace.root), "--table", "nope", "--json"]) == 2
    assert "no keyword table 'nope'" in capsys.readouterr().err


def test_a_stored_ontology_reads_as_its_algorithm_thresholds_and_size(tmp_path, tiny_keywords):
    workspace = Workspace(tmp_path / "ws")
    ontology = build_ontology(tiny_keywords, algorithm="apriori", min_support=0.25, min_confidence=0.5)
    saved = save_ontology(workspace, ontology)
    row = list_ontologies(workspace).set_index("id").loc[saved]
    minute = row["created"].replace("T", " ")[:16]
    assert row["label"] == f"Apriori, support 0.25, confidence 0.5: {row['keywords']} keywords, {len(ontology.rules)} rules · mined {minute}"
    assert saved not in row["label"] and ontology_labels(workspace) == {saved: row["label"]}
    other = save_ontology(workspace, build_ontology(tiny_keywords, min_support=0.5, min_confidence=0.5))
    labels = ontology_labels(workspace)
    assert labels[other].startswith("FP-Growth, support 0.5, ") and len(set(labels.values())) == 2
