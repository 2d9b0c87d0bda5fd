"""``ui.failures.report_button``, the report download any page may place: a build button first, a
progress bar while :func:`analytics.findings.report.build_report` runs, then the download of the built file,
kept across reruns until the request (model, compare, suite, minimum count) changes; a model
without a run shows the library's message instead of a download."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.fixtures.app import APP_TIMEOUT_S

KEY = "matrices.report"  # as another page would pass it


def page(workspace_path: str, key: str) -> None:
    """A page placing the button, its model chosen by a selectbox."""
    import streamlit as st

    from analytics.workspace import Workspace
    from ui.failures import report_button

    model = st.selectbox("Model", ["tiny", "fg-only", "nobody"], key="model")
    report_button(Workspace(workspace_path), model, ["bg-only"], None, key=key)


def downloads(app: AppTest) -> list[str]:
    return [element.proto.label for element in app.get("download_button")]


def test_build_then_download_and_rebuild_on_another_model(run_workspace):
    app = AppTest.from_function(page, args=(str(run_workspace.root), KEY), default_timeout=APP_TIMEOUT_S * 3).run()
    assert not app.exception
    assert downloads(app) == []
    app.button(key=KEY + ".build").click().run()
    assert not app.exception
    assert downloads(app) == ["Download report (HTML)"]
    request, data = app.session_state[KEY + ".built"]
    assert request[1:] == ("tiny", ("bg-only",), None, 3)
    assert data.startswith(b"<!DOCTYPE html>") and b"<section id='provenance'>" in data
    app.run()  # a rerun keeps the built file on offer
    assert downloads(app) == ["Download report (HTML)"]
    app.selectbox(key="model").set_value("fg-only").run()
    assert downloads(app) == [] and app.button(key=KEY + ".build").label == "Build report (HTML)"


def test_a_model_without_a_run_shows_why(run_workspace):
    app = AppTest.from_function(page, args=(str(run_workspace.root), KEY), default_timeout=APP_TIMEOUT_S).run()
    app.selectbox(key="model").set_value("nobody").run()
    app.button(key=KEY + ".build").click().run()
    assert not app.exception
    assert downloads(app) == []
    assert any("model 'nobody' has no current finished run" in error.value for error in app.error)
