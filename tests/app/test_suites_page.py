"""The Suites page (``pages/4_Suites.py``) on the tiny workspace with keywords and an ontology.

Sampling runs as a background job (a worker process that saves the suite): the tests press the
button, wait for the job with :func:`analytics.jobs.wait`, and run the page again to see the suite.
"""

from __future__ import annotations

from analytics import jobs
from analytics.suites import list_suites

PAGE = "pages/4_Suites.py"
WAIT_S = 300


def submit(app, method: str, n: int, workspace):
    """Fill the form, press the button, wait for the job to end, show the page again."""
    app.selectbox(key="suites.method").set_value(method)
    app.number_input(key="suites.n").set_value(n)
    app.slider(key="suites.realism").set_value(0.0)
    app = app.button(key="suites.go").click().run()
    assert not app.exception, app.exception
    job_id = app.session_state["suites.job"]
    jobs.wait(workspace, job_id, timeout=WAIT_S)
    return app.run()


def test_page_samples_saves_and_previews_an_ontology_suite(suite_workspace, app_runner):
    app = app_runner(PAGE, suite_workspace)
    assert not app.exception
    before = set(list_suites(suite_workspace)["id"])
    app = submit(app, "ontology", 3, suite_workspace)
    assert not app.exception
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Targets"] == "6" and metrics["Backgrounds per target"] == "3"
    captions = [caption for image in app.get("image") for caption in image.captions]
    assert captions[0].startswith("original") and len(captions) == 4  # the original + 3 composites
    assert all("level" in text and "d=" in text for text in captions[1:])
    added = set(list_suites(suite_workspace)["id"]) - before
    assert len(added) == 1 and list_suites(suite_workspace).set_index("id").loc[added.pop(), "method"] == "ontology"
    assert any("Saved suite" in s.value for s in app.success)
    assert len(app.get("plotly_chart")) == 1
    assert len(app.dataframe) == 1 and len(app.dataframe[0].value) == len(before) + 1


def test_page_explains_missing_keywords(tiny_model_workspace, app_runner):
    app = app_runner(PAGE, tiny_model_workspace)
    assert not app.exception
    assert any(button.label == "Compute classifier-patch keywords" for button in app.button)
    app = submit(app, "keyword", 2, tiny_model_workspace)
    assert not app.exception
    assert any("no target keyword table" in warning.value for warning in app.warning)  # why the job failed


def test_page_without_a_workspace_says_how_to_get_one(missing_workspace, app_runner):
    app = app_runner(PAGE, missing_workspace)
    assert not app.exception
    assert app.error and "no workspace" in app.error[0].value


def test_page_shows_the_top_up_share_and_what_a_suite_came_from(suite_workspace, app_runner):
    """Issue 18.4 / 11.3: with 8 backgrounds, 12 of 48 are random top-ups (see test_suites)."""
    app = submit(app_runner(PAGE, suite_workspace), "ontology", 8, suite_workspace)
    assert not app.exception
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Topped up at random"] == "25%"
    assert any("ontology `" in caption.value and "tiny-targets" in caption.value for caption in app.caption)
    saved = app.dataframe[0].value
    assert saved.set_index("method").loc["ontology", "topup_share"] == 0.25


def test_sampling_reports_progress_and_can_be_cancelled(suite_workspace, app_runner):
    """Issue 19.1 / 19.6: the job's bar and Cancel while it samples; a cancelled job offers Resume."""
    app = submit(app_runner(PAGE, suite_workspace), "random", 2, suite_workspace)
    job = jobs.get_job(suite_workspace, app.session_state["suites.job"])
    assert job.status == "done" and job.total > 0 and job.done == job.total  # distances reported per batch
    assert not app.get("progress")  # the bar is gone once the suite is shown
    started = jobs.start(suite_workspace, "suite", {"method": "nearest", "n": 3, "seed": 5})
    app.session_state["suites.job"] = started.id
    app = app.run()
    if jobs.get_job(suite_workspace, started.id).active:  # a fast machine may have finished already
        assert app.get("progress") and app.button(key=f"suites.cancel.{started.id}")
    if jobs.cancel(suite_workspace, started.id).status == "cancelled":
        app = app.run()
        assert "Cancelled" in app.warning[0].value and app.button(key=f"suites.resume.{started.id}")
