"""The Models page (``pages/2_Models.py``): registry table, registration form, accuracy."""

from __future__ import annotations

from analytics.inference import evaluate
from analytics.models import list_models
from analytics.workspace import Workspace

MODELS = "pages/2_Models.py"


def texts(app) -> str:
    return "\n".join(e.value for e in [*app.markdown, *app.caption, *app.error, *app.info, *app.success, *app.warning])


def test_models_page_lists_models_and_shows_accuracy(tiny_model_workspace, app_runner):
    app = app_runner(MODELS, tiny_model_workspace)
    assert not app.exception
    registry = app.dataframe[0].value
    assert sorted(registry["Model"]) == ["bg-only", "fg-only", "tiny"]
    assert set(registry["Source"]) == {"torchscript"}
    shown = app.selectbox(key="models.evaluate").value
    expected = evaluate(tiny_model_workspace, shown)
    assert app.metric[0].value == f"{expected.accuracy:.1%}"
    per_class = app.dataframe[1].value
    assert per_class["Class"].tolist() == ["disc", "square"] and per_class["Accuracy"].tolist() == list(expected.per_class.values())
    assert app.get("plotly_chart")
    top = app.dataframe[-1].value
    assert len(top) == 2 and set(top["output"]) == {"disc", "square"}


def _fill_torchscript_form(app, name: str, checkpoint, labels):
    app.radio(key="models.kind").set_value("TorchScript file").run()
    app.text_input(key="models.name").set_value(name)
    app.text_input(key="models.checkpoint.path").set_value(str(checkpoint))
    app.radio(key="models.labels").set_value("Custom class list").run()
    app.text_input(key="models.label_file.path").set_value(str(labels))
    app.number_input(key="models.input_size").set_value(64)
    app.button(key="models.register").click().run()
    return app


def test_register_form_adds_a_torchscript_model(tiny_model_workspace, tiny_model_files, app_runner):
    app = _fill_torchscript_form(app_runner(MODELS, tiny_model_workspace), "tiny-again", tiny_model_files["tiny"], tiny_model_files["labels"])
    assert not app.exception
    assert "Registered 'tiny-again'" in texts(app)
    assert "tiny-again" in [spec.name for spec in list_models(tiny_model_workspace)]
    assert "tiny-again" in app.dataframe[0].value["Model"].tolist()


def test_register_form_reports_a_bad_file(tiny_model_workspace, tiny_model_files, app_runner):
    before = [spec.name for spec in list_models(tiny_model_workspace)]
    app = _fill_torchscript_form(app_runner(MODELS, tiny_model_workspace), "broken", tiny_model_files["labels"], tiny_model_files["labels"])
    assert not app.exception
    assert "labels.txt" in app.error[0].value and "TorchScript" in app.error[0].value
    assert [spec.name for spec in list_models(tiny_model_workspace)] == before


def test_empty_workspace_explains_how_to_add_models(tmp_path, app_runner):
    app = app_runner(MODELS, Workspace(tmp_path / "empty"))
    assert not app.exception
    assert "No models yet" in texts(app) and "add-model" in texts(app)
