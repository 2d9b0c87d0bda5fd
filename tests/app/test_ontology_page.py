"""The Ontology page (``pages/3_Ontology.py``) on a workspace with a tiny keyword table."""

from __future__ import annotations

import json

import pytest

from analytics.keywords import list_keyword_tables, load_keyword_table, save_keyword_table
from analytics.keywords.readers import write_keyword_file
from analytics.ontology import build_ontology, list_ontologies
from analytics.workspace import Workspace
from tests.fixtures.app import as_shown
from tests.fixtures.keywords import TINY_TRANSACTIONS, make_keyword_table

PAGE = "pages/3_Ontology.py"


@pytest.fixture
def keyword_workspace(tmp_path, tiny_keywords) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    save_keyword_table(workspace, tiny_keywords, name="tiny")
    return workspace


def metrics(app) -> dict[str, str]:
    return {metric.label: metric.value for metric in app.metric}


def markdown(app) -> str:
    return "\n".join(element.value for element in app.markdown)


def test_page_builds_the_ontology_and_shows_the_rules(keyword_workspace, tiny_keywords, app_runner):
    app = app_runner(PAGE, keyword_workspace)
    assert not app.exception
    app.number_input(key="ontology.min_support").set_value(0.25).run()
    app.number_input(key="ontology.min_confidence").set_value(0.5).run()
    assert not app.exception
    n_rules = len(build_ontology(tiny_keywords, min_support=0.25, min_confidence=0.5).rules)
    # 10 itemsets: the form's default max itemset size is 2 (pairs), so the triple {sky, tree, grass} is not mined
    assert metrics(app) == {"Transactions": "4", "Keywords": "5", "Itemsets": "10", "Rules": str(n_rules), "Edges": "8"}
    rules = app.dataframe[0].value
    assert list(rules.columns) == ["antecedents", "consequents", "support", "confidence", "lift"]
    assert len(rules) == int(metrics(app)["Rules"]) and rules["confidence"].min() >= 0.5
    assert len(app.get("plotly_chart")) == 1  # the network view


def test_rules_filter_keeps_rules_that_mention_the_keyword(keyword_workspace, app_runner):
    app = app_runner(PAGE, keyword_workspace)
    app.number_input(key="ontology.min_support").set_value(0.25).run()
    app.multiselect(key="ontology.rule_keywords").set_value(["sand"]).run()
    rules = app.dataframe[0].value
    assert set(zip(rules["antecedents"], rules["consequents"])) == {("sand", "sea"), ("sea", "sand")}


def test_expansion_explorer_shows_levels_with_paths(keyword_workspace, app_runner):
    app = app_runner(PAGE, keyword_workspace)
    app.number_input(key="ontology.min_support").set_value(0.25).run()
    app.number_input(key="ontology.min_confidence").set_value(0.5).run()
    app.selectbox(key="ontology.explore_row").set_value(3).run()  # t3: sea, sand
    assert not app.exception
    text = markdown(app)
    assert "**Detected keywords (level 0):** sea, sand" in text and "**Level 1**" in text
    paths = [path for frame in app.dataframe[1:] if "path" in frame.value for path in frame.value["path"]]
    assert "sea → sky" in paths and "sea → sky → tree" in paths


def test_expansion_explorer_opens_on_an_item_with_keywords(tmp_path, app_runner):
    """A pool's first backgrounds often have no keywords: the explorer opened on one, with a warning
    and nothing to expand, as a newcomer's first sight of it."""
    workspace = Workspace(tmp_path / "ws")
    save_keyword_table(workspace, make_keyword_table([[], [], *TINY_TRANSACTIONS]), name="pool")  # unlabelled, as backgrounds are
    app = app_runner(PAGE, workspace)
    app.number_input(key="ontology.min_support").set_value(0.25).run()
    assert not app.exception and not app.warning
    assert app.selectbox(key="ontology.explore_row").value == 2
    assert "**Detected keywords (level 0):** sky, tree" in markdown(app)
    app.selectbox(key="ontology.explore_row").set_value(0).run()  # an item without keywords still says why it has nothing
    assert [w.value for w in app.warning] == ["no keywords detected and no class keywords to fall back on"]


def test_save_ontology_button_stores_it(keyword_workspace, app_runner):
    app = app_runner(PAGE, keyword_workspace)
    app.button(key="ontology.save").click().run()
    assert not app.exception
    assert len(list_ontologies(keyword_workspace)) == 1
    assert list_ontologies(keyword_workspace)["id"][0] in app.success[0].value


def test_keyword_file_can_be_loaded_and_saved_without_tables(tmp_path, tiny_keywords, app_runner):
    workspace = Workspace(tmp_path / "empty")
    path = write_keyword_file(tiny_keywords, tmp_path / "mine.h5")
    app = app_runner(PAGE, workspace)
    app.text_input(key="ontology.path").set_value(str(path)).run()
    assert not app.exception
    assert metrics(app)["Transactions"] == "4"
    app.text_input(key="ontology.table_name").set_value("from-file")
    app.button(key="ontology.save_table_go").click().run()
    assert not app.exception
    assert list_keyword_tables(workspace)["name"].tolist() == ["from-file"]


def test_bad_keyword_file_shows_an_error(tmp_path, app_runner, missing_workspace):
    bad = tmp_path / "bad.txt"
    bad.write_text("not keywords")
    app = app_runner(PAGE, missing_workspace)
    app.text_input(key="ontology.path").set_value(str(bad)).run()
    assert not app.exception
    assert any("bad.txt: unknown format" in as_shown(error.value) for error in app.error)


def test_uploaded_csv_builds_the_workspace_keyword_tables(tiny_workspace, app_runner):
    csv = "image,keyword\ndisc/0,sky\ndisc/0,tree\nsquare/2,sea\nbg01,sky\nbg02,sea\nghost,sand\n"
    app = app_runner(PAGE, tiny_workspace)
    app.radio(key="ontology.kw.backend").set_value("precomputed").run()
    app.file_uploader(key="ontology.kw.upload").set_value(("mine.csv", csv.encode(), "text/csv"))
    app.button(key="ontology.kw.build").click().run()
    assert not app.exception and not app.error
    listed = list_keyword_tables(tiny_workspace).set_index("item_kind")
    assert set(listed.index) == {"target", "background"}
    targets = load_keyword_table(tiny_workspace, listed.loc["target", "name"])
    assert targets.keywords_of(targets.ids.index("disc/0")) == ["sky", "tree"]
    assert targets.keywords_of(targets.ids.index("square/2")) == ["sea"]
    pool = load_keyword_table(tiny_workspace, listed.loc["background", "name"])
    assert pool.keywords_of(pool.ids.index("bg02")) == ["sea"]
    assert listed.loc["target", "name"] in app.success[0].value
    warnings = " ".join(w.value for w in app.warning)
    assert "1 image names of the file match no target or background" in warnings and "'ghost'" in warnings
    assert "4 targets have no row in the file" in warnings
    shown = app.table[0].value
    assert set(shown["source"]) == {"file mine.csv (csv-long)"}
    assert set(shown["vocabulary"]) == {"4 keywords: sky, tree, sea, sand"}
    # the new tables are the page's transactions now: 6 targets + 12 backgrounds
    assert metrics(app)["Transactions"] == "18"


def test_broken_upload_is_named_in_the_error(tiny_workspace, app_runner):
    app = app_runner(PAGE, tiny_workspace)
    app.radio(key="ontology.kw.backend").set_value("precomputed").run()
    app.file_uploader(key="ontology.kw.upload").set_value(("broken.csv", b"image,keyword\ndisc/0,\n", "text/csv"))
    app.button(key="ontology.kw.build").click().run()
    assert not app.exception
    assert any("broken.csv: empty 'keyword' on line 2" in as_shown(error.value) for error in app.error)
    assert list_keyword_tables(tiny_workspace).empty


def test_classifier_patch_tables_show_their_model_and_vocabulary(tiny_model_workspace, app_runner):
    app = app_runner(PAGE, tiny_model_workspace)
    app.selectbox(key="ontology.kw.model").set_value("tiny")
    app.number_input(key="ontology.kw.grid").set_value(1)
    app.radio(key="ontology.kw.items").set_value("targets")
    app.button(key="ontology.kw.build").click().run()
    assert not app.exception and not app.error
    listed = list_keyword_tables(tiny_model_workspace)
    assert listed["item_kind"].tolist() == ["target"] and listed["backend"].tolist() == ["classifier-patch"]
    shown = app.table[0].value
    assert shown["source"].tolist() == ["model tiny"]
    vocabulary = shown["vocabulary"].iloc[0]  # '2 keywords (<the backend's vocabulary param>): disc, square'
    assert vocabulary.startswith("2 keywords") and vocabulary.endswith(": disc, square")


def test_expansion_settings_have_plain_labels_and_the_papers_terms_in_help(keyword_workspace, app_runner):
    """Issue 19.7: no bare MAXITS / MINKWS labels."""
    app = app_runner(PAGE, keyword_workspace)
    levels, stop = app.number_input(key="ontology.maxits"), app.number_input(key="ontology.minkws")
    assert (levels.label, stop.label) == ("Expansion levels", "Stop at this many keywords (0 = no limit)")
    assert "MAXITS" in levels.help and "MINKWS" in stop.help


# -- the network (issue 19.3: the main cluster drawn on itself, overlapping labels, isolates taking half the canvas) --
def network(app) -> dict:
    """The drawn keywords of the Network tab's chart: {name: label text}, and the figure's layout."""
    spec = json.loads(app.get("plotly_chart")[0].proto.spec)
    nodes = next(trace for trace in spec["data"] if trace.get("name") == "keywords")
    return {"labels": dict(zip(nodes["customdata"], nodes["text"])), "layout": spec["layout"]}


def captions(app) -> str:
    return "\n".join(caption.value for caption in app.caption)


def test_network_centres_on_a_searchable_keyword_with_its_neighbourhood(keyword_workspace, app_runner):
    app = app_runner(PAGE, keyword_workspace)
    app.number_input(key="ontology.min_support").set_value(0.25).run()
    app.number_input(key="ontology.min_confidence").set_value(0.5).run()
    assert app.radio(key="ontology.network_view").value == "Around one keyword"  # the default view
    centre = app.selectbox(key="ontology.centre")
    assert centre.value == "sky"  # the best-connected keywords (sky, tree: 4 edges each) come first, by name
    centre.set_value("sand").run()  # t3: sand <-> sea only
    assert not app.exception
    assert network(app)["labels"] == {"sand": "sand", "sea": "sea"}
    app.radio(key="ontology.depth").set_value(2).run()  # sky is one more edge away (sea -> sky)
    drawn = network(app)
    assert drawn["labels"] == {"sand": "sand", "sea": "sea", "sky": ""}  # ring 2: hover only, no label
    assert drawn["layout"]["height"] >= 700 and drawn["layout"]["dragmode"] == "pan"
    assert "3 keywords within 2 edges of **sand**" in captions(app)


def test_scrolling_over_the_network_scrolls_the_page_in_both_views(keyword_workspace, app_runner):
    app = app_runner(PAGE, keyword_workspace)
    app.number_input(key="ontology.min_support").set_value(0.25).run()
    for view in ("Around one keyword", "Whole graph"):
        app.radio(key="ontology.network_view").set_value(view).run()
        assert not app.exception
        assert json.loads(app.get("plotly_chart")[0].proto.config)["scrollZoom"] is False, view
        assert "Scroll to zoom" not in captions(app)


def test_keywords_without_edges_are_hidden_and_counted(keyword_workspace, app_runner):
    app = app_runner(PAGE, keyword_workspace)
    app.number_input(key="ontology.min_support").set_value(0.3).run()  # sky, tree, sea; only sky <-> tree are an edge
    assert not app.exception
    assert "1 keyword without edges hidden" in captions(app)
    assert set(network(app)["labels"]) == {"sky", "tree"}
    app.radio(key="ontology.network_view").set_value("Whole graph").run()
    assert not app.exception
    assert set(network(app)["labels"]) == {"sky", "tree"} and "1 keyword without edges hidden" in captions(app)


def test_whole_graph_overview_labels_only_the_best_connected(keyword_workspace, app_runner, monkeypatch):
    from ui import ontology

    monkeypatch.setattr(ontology, "OVERVIEW_LABELS", 2)
    ontology.cached_network_figure.clear()  # a figure cached with the real number must not answer
    app = app_runner(PAGE, keyword_workspace)
    app.number_input(key="ontology.min_support").set_value(0.25).run()
    app.number_input(key="ontology.min_confidence").set_value(0.5).run()
    app.radio(key="ontology.network_view").set_value("Whole graph").run()
    assert not app.exception
    labels = network(app)["labels"]
    assert set(labels) == {"sky", "tree", "grass", "sea", "sand"}
    assert sorted(text for text in labels.values() if text) == ["sky", "tree"]  # edges: sky 4, tree 4, grass 3, sea 3, sand 2


def test_without_keyword_tables_the_page_offers_no_file_of_its_own(tmp_path, app_runner):
    """Issue 42.13: the page once filled the keyword file in with the test reference data beside the
    checkout (``../shared/reference/…``); the product offers only the workspace's data and what the user names."""
    app = app_runner(PAGE, Workspace(tmp_path / "ws"))
    assert not app.exception, app.exception
    assert app.radio(key="ontology.source").options == ["Keyword file on the server"]
    assert app.text_input(key="ontology.path").value == ""
    assert not app.dataframe and not app.metric  # nothing mined until a file is named
