"""The Run page (``pages/5_Run.py``): start runs as a background job, list them, resume one.

A click starts a worker process (:mod:`analytics.jobs`); the tests wait for the job and run the
page again to see what it shows then.
"""

from __future__ import annotations

from analytics import jobs
from analytics.jobs.process import wait
from analytics.runs import list_runs
from analytics.suites import list_suites, suite_labels_of
from tests.fixtures.app import as_shown
from tests.fixtures.models import TINY_SUITE, TINY_SUITE_N
from ui.markdown import escape_markdown

RUN = "pages/5_Run.py"
N_IMAGES = 6 * (TINY_SUITE_N + 1)
WAIT_S = 300


def click_and_wait(app, key: str, workspace):
    """Press the button, check the job's bar and Cancel are shown, wait for the job, show the page again."""
    app = app.button(key=key).click().run()
    assert not app.exception, app.exception
    job_id = app.session_state["run.job"]
    job = jobs.get_job(workspace, job_id)
    if job.active:  # a fast machine may have finished already
        assert app.get("progress") and app.button(key=f"run.cancel.{job_id}")
    assert wait(workspace, job_id, timeout=WAIT_S).status == "done"
    return app.run()


def texts(app) -> str:
    return "\n".join(e.value for e in [*app.markdown, *app.caption, *app.error, *app.info, *app.success, *app.warning])


def test_run_page_starts_several_models_as_one_action(tiny_model_workspace, app_runner):
    app = app_runner(RUN, tiny_model_workspace)
    assert not app.exception
    assert "No runs yet" in texts(app)
    app.multiselect(key="run.models").set_value(["fg-only", "bg-only"])
    app.selectbox(key="run.suite").set_value(TINY_SUITE)
    app = click_and_wait(app, "run.start", tiny_model_workspace)
    assert not app.exception, app.exception
    assert jobs.get_job(tiny_model_workspace, app.session_state["run.job"]).params["batch_size"] is None  # left empty: the device's default
    runs = list_runs(tiny_model_workspace)
    assert sorted(runs["model"]) == ["bg-only", "fg-only"] and (runs["status"] == "done").all()
    assert (runs["images"] == N_IMAGES).all()
    finished = next(line for line in texts(app).splitlines() if line.startswith("Finished 2 run(s): "))
    assert all(escape_markdown(label) in finished for label in runs["label"]) and not any(i in finished for i in runs["id"])
    shown = app.dataframe[0].value
    assert sorted(shown["Run id"]) == sorted(runs["id"]) and set(shown["Images"]) == {f"{N_IMAGES} / {N_IMAGES}"}
    assert shown.set_index("Run id")["Worst-case accuracy"].to_dict() == runs.set_index("id")["worst_case_accuracy"].to_dict()
    # issue 27.10: the suite by its label, in the table and the picker; the id is the table's last column
    label = list_suites(tiny_model_workspace).set_index("id").at[TINY_SUITE, "label"]
    assert set(shown["Suite"]) == {label} and shown.columns[-1] == "Run id" and TINY_SUITE not in label
    assert label in app.selectbox(key="run.suite").options


def test_run_page_resumes_an_interrupted_run(run_workspace, run_ids, app_runner):
    run_id = run_ids["tiny"]
    with run_workspace.transaction() as conn:
        conn.execute("DELETE FROM run_images WHERE run_id = ? AND position > 2", (run_id,))
        conn.execute("UPDATE runs SET status = 'failed' WHERE id = ?", (run_id,))
    app = app_runner(RUN, run_workspace)
    assert not app.exception
    assert app.selectbox(key="run.resume_choice").value == run_id
    assert "failed" in app.dataframe[0].value["Status"].tolist()
    app = click_and_wait(app, "run.resume", run_workspace)
    assert not app.exception, app.exception
    row = list_runs(run_workspace, model="tiny").iloc[0]
    assert row["id"] == run_id and row["status"] == "done" and row["images"] == N_IMAGES


def test_run_page_explains_what_is_missing(tiny_workspace, app_runner):
    app = app_runner(RUN, tiny_workspace)
    assert not app.exception and "Register a model" in texts(app) and "No runs yet" in texts(app)


def test_runs_of_replaced_weights_are_marked_stale(run_workspace, run_ids, tiny_model_files, app_runner):
    from analytics.data import custom_label_space
    from analytics.models import register_torchscript

    labels = custom_label_space(tiny_model_files["labels"])
    register_torchscript(run_workspace, "tiny", checkpoint=tiny_model_files["bg-only"], label_space=labels, input_size=64, replace=True)
    app = app_runner(RUN, run_workspace)
    assert not app.exception, app.exception
    status = app.dataframe[0].value.set_index("Run id")["Status"]
    assert "stale" in status[run_ids["tiny"]] and "stale" not in status[run_ids["fg-only"]]
    assert "1 run(s) used weights the model no longer has" in texts(app)


def test_run_status_is_plain_text(run_workspace, run_ids, app_runner):
    """Issue 19.7: no emoji, which render as empty boxes without an emoji font."""
    app = app_runner(RUN, run_workspace)
    assert not app.exception, app.exception
    assert app.dataframe[0].value["Status"].tolist() == ["done"] * len(run_ids)


def test_a_cancelled_runs_job_can_be_resumed_from_the_page(tiny_model_workspace, app_runner):
    app = app_runner(RUN, tiny_model_workspace)
    job = jobs.start(tiny_model_workspace, "runs", {"model_names": ["fg-only"], "suite_id": TINY_SUITE})
    assert jobs.cancel(tiny_model_workspace, job.id).status == "cancelled"
    app.session_state["run.job"] = job.id
    app = app.run()
    assert not app.exception, app.exception
    assert "Cancelled" in app.warning[0].value
    app = app.button(key=f"run.resume.{job.id}").click().run()
    assert not app.exception, app.exception
    assert wait(tiny_model_workspace, job.id, timeout=WAIT_S).status == "done"
    runs = list_runs(tiny_model_workspace)
    assert runs["model"].tolist() == ["fg-only"] and runs["status"].tolist() == ["done"] and runs["images"].tolist() == [N_IMAGES]


def test_home_lists_active_jobs_with_cancel(tiny_workspace, app_runner):
    """Issue 19.1: long work running in the background is visible on Home and can be stopped there."""
    from tests.analytics.jobs.test_jobs import stubborn  # noqa: F401 (registers the kind that only a signal stops)

    job = jobs.start(tiny_workspace, "stubborn", {"seconds": 600})
    try:
        app = app_runner("app.py", tiny_workspace)
        assert not app.exception, app.exception
        assert any("Running in the background" in m.value for m in app.markdown)
        assert any(job.id in p.proto.text for p in app.get("progress"))
        app = app.button(key=f"home.jobs.cancel.{job.id}").click().run()
        assert not app.exception, app.exception
        assert jobs.get_job(tiny_workspace, job.id).status == "cancelled"
        assert not any("Running in the background" in m.value for m in app.markdown)
    finally:
        jobs.cancel(tiny_workspace, job.id, grace=0.5)


def test_a_new_click_shows_the_new_job_never_the_previous_finished_one(tiny_model_workspace, app_runner, monkeypatch):
    """Issue 27.12: the job starts in the button's callback, before the page is drawn, so the run that
    handles the click already shows the new job (before: the previous job's "Finished", then a rerun)."""
    import ui.jobs

    previous = jobs.start(tiny_model_workspace, "runs", {"model_names": ["fg-only"], "suite_id": TINY_SUITE})
    assert wait(tiny_model_workspace, previous.id, timeout=WAIT_S).status == "done"
    app = app_runner(RUN, tiny_model_workspace)
    app.session_state["run.job"] = previous.id
    app = app.run()
    label = escape_markdown(f"fg-only on {suite_labels_of(tiny_model_workspace)[TINY_SUITE]}")
    assert f"Finished: Runs “{label}” · done" in texts(app) and previous.id in texts(app)
    drawn = []
    show_job = ui.jobs.show_job
    monkeypatch.setattr(ui.jobs, "show_job", lambda workspace, job_id, *, key: drawn.append(job_id) or show_job(workspace, job_id, key=key))
    app.multiselect(key="run.models").set_value(["bg-only"])
    app.selectbox(key="run.suite").set_value(TINY_SUITE)
    app.number_input(key="run.batch_size").set_value(8)
    app = app.run()
    drawn.clear()
    app = app.button(key="run.start").click().run()
    assert not app.exception, app.exception
    new = app.session_state["run.job"]
    assert new != previous.id and drawn and set(drawn) == {new}, drawn
    assert previous.id not in texts(app)
    assert wait(tiny_model_workspace, new, timeout=WAIT_S).status == "done"
    assert jobs.get_job(tiny_model_workspace, new).params["model_names"] == ["bg-only"]
    assert jobs.get_job(tiny_model_workspace, new).params["batch_size"] == 8


def test_a_refused_start_replaces_the_previous_jobs_status(tiny_model_workspace, app_runner, monkeypatch):
    from analytics.exceptions import PermissionDeniedError

    previous = jobs.start(tiny_model_workspace, "runs", {"model_names": ["fg-only"], "suite_id": TINY_SUITE})
    assert wait(tiny_model_workspace, previous.id, timeout=WAIT_S).status == "done"
    app = app_runner(RUN, tiny_model_workspace)
    app.session_state["run.job"] = previous.id
    app = app.run()

    def refuse(*args, **kwargs):
        raise PermissionDeniedError("bob (viewer) may not run models; ask an admin")

    monkeypatch.setattr(jobs, "start", refuse)
    app = app.button(key="run.start").click().run()
    assert not app.exception, app.exception
    assert [as_shown(e.value) for e in app.error] == ["bob (viewer) may not run models; ask an admin"]
    assert previous.id not in texts(app) and "run.job" not in app.session_state


def _add_model_of_other_classes(workspace, tiny_model_files, tmp_path) -> str:
    """``a-pets``: the tiny network with labels 'cat' and 'dog', so it cannot score 'disc' and 'square'
    (named to sort first, where the page used to preselect it)."""
    from analytics.data import custom_label_space
    from analytics.models import register_torchscript

    labels = tmp_path / "pets.txt"
    labels.write_text("cat\ndog\n")
    register_torchscript(workspace, "a-pets", checkpoint=tiny_model_files["tiny"], label_space=custom_label_space(labels), input_size=64)
    return "a-pets"


def test_a_model_that_cannot_score_the_classes_is_not_preselected_and_does_not_stop_the_others(tiny_model_workspace, tiny_model_files, tmp_path, app_runner):
    """Issue 42.7: one model without an output for a class failed the whole job, and the page preselected it."""
    other = _add_model_of_other_classes(tiny_model_workspace, tiny_model_files, tmp_path)
    app = app_runner(RUN, tiny_model_workspace)
    assert not app.exception and app.multiselect(key="run.models").value == ["bg-only"]  # the first that can
    assert escape_markdown(other) in texts(app)  # named as one that cannot score every class
    app.multiselect(key="run.models").set_value([other, "fg-only"])
    app.selectbox(key="run.suite").set_value(TINY_SUITE)
    app = click_and_wait(app, "run.start", tiny_model_workspace)
    assert not app.exception, app.exception
    runs = list_runs(tiny_model_workspace)
    assert list(runs["model"]) == ["fg-only"] and (runs["status"] == "done").all()
    (warning,) = [w.value for w in app.warning]
    assert warning.startswith(escape_markdown(other)) and "has no output" in warning
