"""The Suites page (``pages/4_Suites.py``) on the tiny workspace with keywords and an ontology."""

from __future__ import annotations

from analytics.suites import list_suites

PAGE = "pages/4_Suites.py"


def submit(app, method: str, n: int):
    app.selectbox(key="suites.method").set_value(method)
    app.number_input(key="suites.n").set_value(n)
    app.slider(key="suites.realism").set_value(0.0)
    return app.button(key="suites.go").click().run()


def test_page_previews_and_saves_an_ontology_suite(suite_workspace, app_runner):
    app = app_runner(PAGE, suite_workspace)
    assert not app.exception
    app = submit(app, "ontology", 3)
    assert not app.exception
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Targets"] == "6" and metrics["Backgrounds per target"] == "3"
    captions = [caption for image in app.get("image") for caption in image.captions]
    assert captions[0].startswith("original") and len(captions) == 4  # the original + 3 composites
    assert all("level" in text and "d=" in text for text in captions[1:])
    before = set(list_suites(suite_workspace)["id"])
    app.button(key="suites.save").click().run()
    assert not app.exception
    added = set(list_suites(suite_workspace)["id"]) - before
    assert len(added) == 1 and list_suites(suite_workspace).set_index("id").loc[added.pop(), "method"] == "ontology"
    assert len(app.get("plotly_chart")) == 1
    assert len(app.dataframe) == 1 and len(app.dataframe[0].value) == len(before) + 1


def test_page_explains_missing_keywords(tiny_model_workspace, app_runner):
    app = app_runner(PAGE, tiny_model_workspace)
    assert not app.exception
    assert any(button.label == "Compute classifier-patch keywords" for button in app.button)
    app = submit(app, "keyword", 2)
    assert not app.exception
    assert any("no target keyword table" in error.value for error in app.error)


def test_page_without_a_workspace_says_how_to_get_one(missing_workspace, app_runner):
    app = app_runner(PAGE, missing_workspace)
    assert not app.exception
    assert app.error and "no workspace" in app.error[0].value


def test_page_shows_the_top_up_share_and_what_a_suite_came_from(suite_workspace, app_runner):
    """Issue 18.4 / 11.3: with 8 backgrounds, 12 of 48 are random top-ups (see test_suites)."""
    app = submit(app_runner(PAGE, suite_workspace), "ontology", 8)
    assert not app.exception
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Topped up at random"] == "25%"
    assert any("ontology `" in caption.value and "tiny-targets" in caption.value for caption in app.caption)
    app.button(key="suites.save").click().run()
    saved = app.dataframe[0].value
    assert saved.set_index("method").loc["ontology", "topup_share"] == 0.25


def test_sampling_reports_progress_to_a_bar(suite_workspace, app_runner, monkeypatch):
    """Issue 19.6: a progress bar fed by build_suite's callback, not a bare spinner."""
    import ui.suites

    reported = []

    def build_suite(*args, progress=None, **kwargs):
        reported.append(progress)
        progress(1, 2)  # the page's callback moves its bar (the library calls it per batch of distances)
        return original(*args, progress=progress, **kwargs)

    original = ui.suites.build_suite
    monkeypatch.setattr(ui.suites, "build_suite", build_suite)
    app = submit(app_runner(PAGE, suite_workspace), "random", 2)
    assert not app.exception, app.exception
    assert len(reported) == 1 and callable(reported[0])
    assert not app.get("progress")  # the bar is gone once the suite is shown
    assert {metric.label: metric.value for metric in app.metric}["Backgrounds per target"] == "2"
