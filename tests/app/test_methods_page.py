"""The Methods page (``pages/11_Methods.py``) on tiny models with keyword tables and an ontology.

A comparison runs as a background job (a worker process): the tests press the button, wait for the
job with :func:`analytics.jobs.wait`, and run the page again to see its result.
"""

from __future__ import annotations

import pytest

from analytics import jobs
from analytics.comparison import PAPER_TABLE
from analytics.jobs.process import wait

METHODS = "pages/11_Methods.py"
WAIT_S = 300


def compare(app, *, model: str, methods: list[str], recall: str = "embedding", both: bool = False, threshold: float | None = None):
    """Fill the form, press Compare, wait for the job to end and show the page again."""
    app.selectbox(key="methods.model").set_value(model)
    app.multiselect(key="methods.methods").set_value(methods)
    app.radio(key="methods.recall").set_value(recall)
    app.number_input(key="methods.seeds").set_value(2)
    app.number_input(key="methods.n").set_value(4)
    app.checkbox(key="methods.both").set_value(both)
    if threshold is not None:
        app.slider(key="methods.threshold").set_value(threshold)
    app = app.button(key="methods.go").click().run()
    assert not app.exception, app.exception
    return app, app.session_state["methods.job"]


def finish(app, workspace, job_id):
    assert wait(workspace, job_id, timeout=WAIT_S).status in ("done", "failed")
    return app.run()


def test_page_compares_methods_beside_the_papers_table(suite_workspace, app_runner):
    app = app_runner(METHODS, suite_workspace)
    assert not app.exception, app.exception
    assert "Compare methods" in app.info[0].value
    assert app.multiselect(key="methods.methods").value == ["random", "ontology"]  # the small default
    assert any("Estimated time" in c.value for c in app.caption)
    app, job_id = compare(app, model="tiny", methods=["random", "ontology"])
    assert any("Method comparison" in p.proto.text for p in app.get("progress"))  # its progress while it runs
    app = finish(app, suite_workspace, job_id)
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
    assert not app.get("progress")  # the bar is gone once the job is done


def test_a_new_threshold_reuses_the_comparison(suite_workspace, app_runner):
    app, job_id = compare(app_runner(METHODS, suite_workspace), model="tiny", methods=["random"])
    app = finish(app, suite_workspace, job_id)
    before = app.dataframe[0].value
    app, job_id = compare(app, model="tiny", methods=["random"], threshold=0.1)
    app = finish(app, suite_workspace, job_id)
    after = app.dataframe[0].value
    assert after["Recall"].iloc[0] >= before["Recall"].iloc[0]
    assert jobs.get_job(suite_workspace, job_id).result["table"][0]["suite_ids"] == list(
        jobs.list_jobs(suite_workspace, kind="methods")["result"].iloc[1]["table"][0]["suite_ids"]
    )  # the same suites: reused, not rebuilt


def test_all_layers_on_a_network_with_activations(suite_workspace, tiny_cnn_workspace, app_runner):
    app, job_id = compare(app_runner(METHODS, suite_workspace), model="tiny-cnn", methods=["random"], recall="all", both=True)
    app = finish(app, suite_workspace, job_id)
    row = app.dataframe[0].value.iloc[0]
    assert 0 <= row["Coverage: all layers"] <= 1 and 0 <= row["Coverage: embedding"] <= 1
    assert row["Recall"] == pytest.approx(row["Coverage: all layers"])


def test_a_model_without_activation_modules_gets_a_clear_error_and_resume(suite_workspace, app_runner):
    app, job_id = compare(app_runner(METHODS, suite_workspace), model="tiny", methods=["random"], recall="all", both=True)
    app = finish(app, suite_workspace, job_id)
    assert not app.exception, app.exception
    assert "no activation module" in app.warning[0].value and "Failed" in app.warning[0].value
    assert app.button(key=f"methods.resume.{job_id}")  # a failed job offers Resume


def test_methods_missing_inputs_say_what_they_need(tiny_model_workspace, app_runner):
    app = app_runner(METHODS, tiny_model_workspace)
    assert not app.exception, app.exception
    assert app.multiselect(key="methods.methods").value == ["random"]
    assert any("keyword" in c.value and "needs keyword tables" in c.value for c in app.caption)


def test_a_viewer_is_refused_before_anything_starts(suite_workspace, fast_hashing, app_runner, monkeypatch):
    from analytics.team import add_user

    viewer = add_user(suite_workspace, "vic", "viewer", "correct horse")
    import ui.state

    monkeypatch.setattr(ui.state, "current_workspace", lambda: suite_workspace.acting_as(viewer))
    app = app_runner(METHODS, suite_workspace)
    app = app.button(key="methods.go").click().run()
    assert not app.exception, app.exception
    assert "may not build" in app.error[0].value and jobs.list_jobs(suite_workspace).empty
