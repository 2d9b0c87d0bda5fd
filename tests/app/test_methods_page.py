"""The Methods page (``pages/11_Methods.py``) on tiny models with keyword tables and an ontology."""

from __future__ import annotations

import pytest

from analytics.methods import PAPER_TABLE

METHODS = "pages/11_Methods.py"


def compare(app, *, model: str, methods: list[str], recall: str = "embedding", both: bool = False):
    app.selectbox(key="methods.model").set_value(model)
    app.multiselect(key="methods.methods").set_value(methods)
    app.radio(key="methods.recall").set_value(recall)
    app.number_input(key="methods.seeds").set_value(2)
    app.number_input(key="methods.n").set_value(4)
    app.checkbox(key="methods.both").set_value(both)
    return app.button[0].click().run()


def test_page_compares_methods_beside_the_papers_table(suite_workspace, app_runner):
    app = app_runner(METHODS, suite_workspace)
    assert not app.exception, app.exception
    assert "Compare methods" in app.info[0].value
    assert app.multiselect(key="methods.methods").value == ["random", "nearest", "interval", "keyword", "ontology"]
    app = compare(app, model="tiny", methods=["random", "ontology"])
    assert not app.exception, app.exception
    ours, paper = app.dataframe[0].value, app.dataframe[1].value
    assert ours["Method"].tolist() == ["random", "ontology"]
    assert ours["Recall"].between(0, 1).all() and ours["Consistency"].between(0, 1).all()
    assert (ours["Precision (Fleiss' κ)"] == "N/A").all() and (ours["F1"] == "N/A").all()  # nobody judged these runs yet
    assert paper["Recall"].tolist() == [row.recall for row in PAPER_TABLE.values()]
    markdown = "\n".join(m.value for m in app.markdown)
    assert "not ours" in markdown
    assert any("Consistency" in c.value and "1 − mean |A − B|" in c.value for c in app.caption)
    assert app.get("plotly_chart")


def test_a_new_threshold_reuses_the_comparison(suite_workspace, app_runner):
    app = compare(app_runner(METHODS, suite_workspace), model="tiny", methods=["random"])
    before = app.dataframe[0].value["Recall"].iloc[0]
    app.slider(key="methods.threshold").set_value(0.1).run()
    assert not app.exception, app.exception
    assert app.dataframe[0].value["Recall"].iloc[0] >= before


def test_all_layers_on_a_network_with_activations(suite_workspace, tiny_cnn_workspace, app_runner):
    app = compare(app_runner(METHODS, suite_workspace), model="tiny-cnn", methods=["random"], recall="all", both=True)
    assert not app.exception, app.exception
    row = app.dataframe[0].value.iloc[0]
    assert 0 <= row["Coverage: all layers"] <= 1 and 0 <= row["Coverage: embedding"] <= 1
    assert row["Recall"] == pytest.approx(row["Coverage: all layers"])


def test_a_model_without_activation_modules_gets_a_clear_error(suite_workspace, app_runner):
    app = compare(app_runner(METHODS, suite_workspace), model="tiny", methods=["random"], recall="all", both=True)
    assert not app.exception, app.exception
    assert "no activation module" in app.error[0].value


def test_methods_missing_inputs_say_what_they_need(tiny_model_workspace, app_runner):
    app = app_runner(METHODS, tiny_model_workspace)
    assert not app.exception, app.exception
    assert app.multiselect(key="methods.methods").value == ["random", "nearest", "interval"]
    assert any("keyword" in c.value and "needs keyword tables" in c.value for c in app.caption)
