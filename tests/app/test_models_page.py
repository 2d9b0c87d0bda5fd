"""The Models page (``pages/2_Models.py``): registry table, registration form, accuracy."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from analytics.inference import evaluate
from analytics.models import list_models
from analytics.team.accounts import add_user
from analytics.team.paths import DATA_ROOTS_ENV_VAR
from analytics.workspace import PROJECT_ROOT, Workspace
from tests.fixtures.app import APP_TIMEOUT_S
from tests.fixtures.team import TEAM_PASSWORD
from ui import auth

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


@pytest.fixture
def team_models(tiny_model_workspace, fast_hashing, monkeypatch):
    """Team mode on ``tiny_model_workspace`` with an admin ``ada``, an analyst ``al`` and a viewer ``vi``."""
    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(tiny_model_workspace.root))
    monkeypatch.delenv(DATA_ROOTS_ENV_VAR, raising=False)
    for name, role in (("ada", "admin"), ("al", "analyst"), ("vi", "viewer")):
        add_user(tiny_model_workspace, name, role, TEAM_PASSWORD)
    return tiny_model_workspace


def signed_in(name: str) -> AppTest:
    app = AppTest.from_file(str(PROJECT_ROOT / MODELS), default_timeout=APP_TIMEOUT_S).run()
    app.text_input(key=f"{auth.FORM}.name").input(name)
    app.text_input(key=f"{auth.FORM}.password").input(TEAM_PASSWORD)
    return app.button[0].click().run()


@pytest.mark.parametrize("name", ["al", "vi"])
def test_roles_without_registration_see_no_register_tab(team_models, name):
    app = signed_in(name)
    assert not app.exception and [t.value for t in app.title] == ["Models"]
    assert [tab.label for tab in app.tabs] == ["Registered", "Accuracy"]
    assert not [w for w in app.text_input if w.key == "models.checkpoint.path"]


def test_admin_registers_only_from_inside_the_data_roots(team_models, tiny_model_files, tmp_path, monkeypatch):
    app = signed_in("ada")
    assert [tab.label for tab in app.tabs] == ["Registered", "Register", "Accuracy"]
    app = _fill_torchscript_form(app, "from-server", tiny_model_files["tiny"], tiny_model_files["labels"])
    assert not app.exception and "no data roots configured" in app.error[0].value  # team mode, no --data-root
    monkeypatch.setenv(DATA_ROOTS_ENV_VAR, str(tmp_path / "elsewhere"))
    app = _fill_torchscript_form(app, "from-server", tiny_model_files["tiny"], tiny_model_files["labels"])
    assert "outside the data roots" in app.error[0].value and str(tiny_model_files["tiny"]) in app.error[0].value
    assert "from-server" not in [spec.name for spec in list_models(team_models)]
    monkeypatch.setenv(DATA_ROOTS_ENV_VAR, str(tiny_model_files["tiny"].parent))
    app = _fill_torchscript_form(app, "from-server", tiny_model_files["tiny"], tiny_model_files["labels"])
    assert not app.exception and "Registered 'from-server'" in texts(app)
    assert "from-server" in [spec.name for spec in list_models(team_models)]
