"""Issue 27.12: synchronous work on a page runs under a visible ``st.spinner`` (with its elapsed time),
so a page greyed by a long call says that it is working: Home's first load and its finding, the Suites
preview, Saliency's model and maps, a Data import. Each test watches the long call and asserts a
spinner was open while it ran."""

from __future__ import annotations

import ui.data_import
import ui.saliency
import ui.suites
from tests.app.test_data_page import import_targets, target_folder  # noqa: F401 (the fixture)
from tests.app.test_suites_page import preview
from tests.fixtures.models import TINY_SUITE


def test_home_reads_its_finding_under_a_spinner(run_workspace, app_runner, spinner_watch):
    import ui.story

    calls = spinner_watch(ui.story, "show_story")
    app = app_runner("app.py", run_workspace)
    assert not app.exception, app.exception
    assert len(calls) == 1 and any("finding on the main suite" in text for text in calls[0]), calls


def test_the_suites_preview_samples_under_a_spinner(suite_workspace, app_runner, spinner_watch):
    calls = spinner_watch(ui.suites, "build_suite")
    app = preview(app_runner("pages/4_Suites.py", suite_workspace), "ontology", 3)
    assert app.session_state[ui.suites.PREVIEW] is not None
    assert len(calls) == 1 and any("Sampling the ontology preview" in text for text in calls[0]), calls


def test_saliency_loads_the_model_and_explains_under_spinners(tiny_cnn_workspace, app_runner, spinner_watch):
    loading = spinner_watch(ui.saliency, "runnable_methods")
    explaining = spinner_watch(ui.saliency, "explain_target")
    app = app_runner("pages/7_Saliency.py", tiny_cnn_workspace)
    app.selectbox(key="saliency.model").set_value("tiny-cnn").run()
    app.selectbox(key="saliency.suite").set_value(TINY_SUITE).run()
    assert not app.exception, app.exception
    assert loading and all(any(text.startswith("Loading ") for text in call) for call in loading), loading
    assert explaining and all(any(text.startswith("Explaining ") for text in call) for call in explaining), explaining
    assert any("composites with" in text for text in explaining[-1])  # with a suite: its composites too


def test_a_data_import_reads_the_files_under_a_spinner(tiny_workspace, target_folder, app_runner, spinner_watch):  # noqa: F811
    calls = spinner_watch(ui.data_import, "import_files")
    app = import_targets(app_runner("pages/1_Data.py", tiny_workspace), target_folder)
    assert not app.exception, app.exception
    assert len(calls) == 1 and any("Reading and checking the files" in text for text in calls[0]), calls
