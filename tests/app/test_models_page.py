"""The Models page (``pages/2_Models.py``): registry table, registration form, zoo training (a
background job), accuracy."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from analytics import jobs
from analytics.inference import evaluate
from analytics.jobs.process import wait
from analytics.models import list_models
from analytics.team import DATA_ROOTS_ENV_VAR, add_user
from analytics.workspace import PROJECT_ROOT, Workspace
from tests.fixtures.app import APP_TIMEOUT_S, as_shown
from tests.fixtures.team import TEAM_PASSWORD
from tests.fixtures.zoo import ZOO_BACKBONE
from ui import auth

MODELS = "pages/2_Models.py"
WAIT_S = 300  # a job's worker imports torch first: slow on a busy 2-core machine


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


def _fill_zoo_form(app, *, strengths: list[float], seeds: int, augment: bool, family: bool):
    app.selectbox(key="models.zoo.backbone").set_value(ZOO_BACKBONE)
    app.multiselect(key="models.zoo.strengths").set_value(strengths)
    app.number_input(key="models.zoo.seeds").set_value(seeds)
    app.checkbox(key="models.zoo.augment").set_value(augment)
    app.checkbox(key="models.zoo.family").set_value(family)
    return app.run()


def test_zoo_trains_as_a_background_job_and_lists_its_heads(zoo_workspace, app_runner):
    app = app_runner(MODELS, zoo_workspace)
    assert not app.exception, app.exception
    assert [tab.label for tab in app.tabs] == ["Registered", "Register", "Zoo", "Accuracy"]
    assert app.selectbox(key="models.zoo.backbone").options[0] == ZOO_BACKBONE  # registered networks first
    assert "39 heads" in texts(app)  # the default grid (5 strengths x 2 x 3 seeds) and the figure-8 family (3 x 3)
    app = _fill_zoo_form(app, strengths=[0.0, 1.0], seeds=1, augment=False, family=False)
    assert "2 heads" in texts(app)
    app = app.button(key="models.zoo.go").click().run()
    assert not app.exception, app.exception
    job = jobs.get_job(zoo_workspace, app.session_state["models.zoo.job"])
    assert job.kind == "zoo" and job.params["strengths"] == [0.0, 1.0] and job.params["temperatures"] == []
    if jobs.get_job(zoo_workspace, job.id).active:  # a fast machine may have finished already
        assert any("Zoo training" in bar.proto.text for bar in app.get("progress"))
    assert wait(zoo_workspace, job.id, timeout=WAIT_S).status == "done"
    app = app.run()
    assert not app.exception, app.exception
    assert "The zoo has 2 heads; 2 trained now, 0 kept." in texts(app)
    heads = next(frame.value for frame in app.dataframe if "Head" in frame.value.columns)
    assert heads["Head"].tolist() == ["zoo-s0.00-plain-seed0", "zoo-s1.00-plain-seed0"] and heads["Trained now"].all()
    assert {"zoo-s0.00-plain-seed0", "zoo-s1.00-plain-seed0"} <= {spec.name for spec in list_models(zoo_workspace)}


def test_a_cancelled_zoo_job_offers_resume(zoo_workspace, app_runner):
    app = _fill_zoo_form(app_runner(MODELS, zoo_workspace), strengths=[0.0, 0.5, 1.0], seeds=2, augment=True, family=True)
    app = app.button(key="models.zoo.go").click().run()
    job_id = app.session_state["models.zoo.job"]
    if jobs.cancel(zoo_workspace, job_id).status != "cancelled":  # a fast machine may have finished already
        return
    app = app.run()
    assert any(w.value.startswith("Cancelled: Zoo training") for w in app.warning)
    app = app.button(key=f"models.zoo.resume.{job_id}").click().run()
    assert not app.exception, app.exception
    assert wait(zoo_workspace, job_id, timeout=WAIT_S).status == "done"
    assert "The zoo has 18 heads" in texts(app.run())


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
    assert "Registered 'tiny\\-again'" in texts(app)  # escaped Markdown (issue 25.11)
    assert "tiny-again" in [spec.name for spec in list_models(tiny_model_workspace)]
    assert "tiny-again" in app.dataframe[0].value["Model"].tolist()


def open_tab(app) -> str:
    """The label of the tab the browser shows: the tab bar's ``default_tab_index`` (a stateful tab bar sends the chosen one)."""

    def tab_bars(node):
        for child in getattr(node, "children", {}).values():
            proto = getattr(child, "proto", None)
            if getattr(proto, "HasField", None) and hasattr(proto, "tab_container") and proto.HasField("tab_container"):
                yield child
            yield from tab_bars(child)

    (bar,) = tab_bars(app._tree)
    return [tab.label for tab in bar.children.values()][bar.proto.tab_container.default_tab_index]


def test_the_chosen_tab_stays_open_after_registering(tiny_model_workspace, tiny_model_files, app_runner):
    # the rerun after an action reopened "Registered" (issue 42.11b)
    app = app_runner(MODELS, tiny_model_workspace)
    assert open_tab(app) == "Registered"
    app.session_state["models.tab"] = "Register"  # the user opens the Register tab
    app = _fill_torchscript_form(app, "tiny-again", tiny_model_files["tiny"], tiny_model_files["labels"])
    assert not app.exception, app.exception
    assert "Registered 'tiny\\-again'" in texts(app)  # the action ran and the page reran
    assert open_tab(app) == "Register"


def test_register_form_reports_a_bad_file(tiny_model_workspace, tiny_model_files, app_runner):
    before = [spec.name for spec in list_models(tiny_model_workspace)]
    app = _fill_torchscript_form(app_runner(MODELS, tiny_model_workspace), "broken", tiny_model_files["labels"], tiny_model_files["labels"])
    assert not app.exception
    assert "labels.txt" in as_shown(app.error[0].value) and "TorchScript" in app.error[0].value
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


@pytest.mark.parametrize(("name", "tabs"), [("al", ["Registered", "Zoo", "Accuracy"]), ("vi", ["Registered", "Accuracy"])])
def test_roles_without_registration_see_no_register_tab(team_models, name, tabs):
    app = signed_in(name)
    assert not app.exception and [t.value for t in app.title] == ["Models"]
    assert [tab.label for tab in app.tabs] == tabs  # analysts may train the zoo (run_models), viewers may not
    assert not [w for w in app.text_input if w.key == "models.checkpoint.path"]


def test_admin_registers_only_from_inside_the_data_roots(team_models, tiny_model_files, tmp_path, monkeypatch):
    app = signed_in("ada")
    assert [tab.label for tab in app.tabs] == ["Registered", "Register", "Zoo", "Accuracy"]
    app.radio(key="models.kind").set_value("TorchScript file").run()
    assert not app.exception and "models.checkpoint.path" not in [box.key for box in app.text_input]  # team mode, no --data-root: uploads only
    monkeypatch.setenv(DATA_ROOTS_ENV_VAR, str(tmp_path / "elsewhere"))
    app = _fill_torchscript_form(app, "from-server", tiny_model_files["tiny"], tiny_model_files["labels"])
    assert "outside the data roots" in app.error[0].value and str(tiny_model_files["tiny"]) in as_shown(app.error[0].value)
    assert "from-server" not in [spec.name for spec in list_models(team_models)]
    monkeypatch.setenv(DATA_ROOTS_ENV_VAR, str(tiny_model_files["tiny"].parent))
    app = _fill_torchscript_form(app, "from-server", tiny_model_files["tiny"], tiny_model_files["labels"])
    assert not app.exception and "Registered 'from\\-server'" in texts(app)
    assert "from-server" in [spec.name for spec in list_models(team_models)]


def test_a_nul_byte_in_a_typed_path_is_one_line_without_a_traceback(team_models, tiny_model_files, monkeypatch):
    """Issue 42.2: ``…/x\\0`` in "TorchScript file" raised ValueError (embedded null byte) past the page's handler."""
    monkeypatch.setenv(DATA_ROOTS_ENV_VAR, str(tiny_model_files["tiny"].parent))
    app = _fill_torchscript_form(signed_in("ada"), "nul", tiny_model_files["tiny"].parent / "x\0", tiny_model_files["labels"])
    assert not app.exception
    (error,) = [box.value for box in app.error]
    assert "NUL byte" in error and "\n" not in error.strip()
    assert "nul" not in [spec.name for spec in list_models(team_models)]
