"""The Ontology page (``pages/3_Ontology.py``) on a workspace with a tiny keyword table."""

from __future__ import annotations

import pytest

from analytics.keywords import list_keyword_tables, save_keyword_table, write_keyword_file
from analytics.ontology import build_ontology, list_ontologies
from analytics.workspace import Workspace

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
    assert metrics(app) == {"Transactions": "4", "Keywords": "5", "Itemsets": "11", "Rules": str(n_rules), "Edges": "8"}
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
    assert any("bad.txt: unknown format" in error.value for error in app.error)
