"""Issue 27.12: synchronous work on a page runs under a visible ``st.spinner`` (with its elapsed time),
so a page greyed by a long call says that it is working: Home's first load and its finding, the Suites
preview, Saliency's model and maps, a Data import. Each test watches the long call and asserts a
spinner was open while it ran. Issue 47.8: a long step says which it is and how far it got."""

from __future__ import annotations

import pytest

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


@pytest.fixture
def progress_texts(monkeypatch) -> list[str]:
    """The text of every ``st.progress`` drawn (``st.progress``) or updated (``bar.progress``) while a page runs
    under AppTest (in this process)."""
    import streamlit as st
    from streamlit.delta_generator import DeltaGenerator

    texts: list[str] = []
    update, draw = DeltaGenerator.progress, st.progress

    def updated(self, value, text=None, **kwargs):
        texts.append(str(text))
        return update(self, value, text=text, **kwargs)

    def drawn(value, text=None, **kwargs):
        texts.append(str(text))
        return draw(value, text=text, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "progress", updated)
    monkeypatch.setattr(st, "progress", drawn)
    return texts


def test_the_suites_preview_names_each_step_and_counts_the_distances(suite_workspace, app_runner, progress_texts):
    """Issue 47.8: the preview's 43 s under a spinner: the bar now names each step as it starts."""
    app = preview(app_runner("pages/4_Suites.py", suite_workspace), "ontology", 3)
    assert app.session_state[ui.suites.PREVIEW] is not None
    steps = [text for text in progress_texts if text.startswith("Step ")]
    assert steps[0].startswith("Step 1: screening the pool: 12 backgrounds"), progress_texts
    assert any("sampling 3 backgrounds for each of 3 targets" in text for text in steps), steps
    assert steps[-1].endswith("semantic distances of the preview's composites, 9 of 9"), steps  # the distance model's step, counted


def test_the_keyword_builder_counts_images_from_the_start(tiny_model_workspace, app_runner, progress_texts):
    """Issue 47.8: keyword tables took 5.7 min under "Scoring images…" without a count."""
    from analytics.data import list_backgrounds, list_targets

    app = app_runner("pages/3_Ontology.py", tiny_model_workspace)
    app.selectbox(key="ontology.kw.model").set_value("tiny")
    app.number_input(key="ontology.kw.grid").set_value(1)
    app.button(key="ontology.kw.build").click().run()
    assert not app.exception and not app.error
    n_targets, n_backgrounds = len(list_targets(tiny_model_workspace)), len(list_backgrounds(tiny_model_workspace))
    total = n_targets + n_backgrounds
    assert progress_texts[0].startswith(f"Scoring {n_targets} targets and {n_backgrounds} backgrounds: 0 of {total} images"), progress_texts
    assert f"Scoring targets: {n_targets} of {n_targets} · {n_targets} of {total} images in all" in progress_texts
    assert progress_texts[-1] == f"Scoring backgrounds: {n_backgrounds} of {n_backgrounds} · {total} of {total} images in all"
