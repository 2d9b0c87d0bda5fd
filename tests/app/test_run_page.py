"""The Run page (``pages/5_Run.py``): start runs with a progress bar, list them, resume one."""

from __future__ import annotations

from analytics.runs import list_runs
from tests.fixtures.models import TINY_SUITE, TINY_SUITE_N

RUN = "pages/5_Run.py"
N_IMAGES = 6 * (TINY_SUITE_N + 1)


def texts(app) -> str:
    return "\n".join(e.value for e in [*app.markdown, *app.caption, *app.error, *app.info, *app.success, *app.warning])


def test_run_page_starts_several_models_as_one_action(tiny_model_workspace, app_runner):
    app = app_runner(RUN, tiny_model_workspace)
    assert not app.exception
    assert "No runs yet" in texts(app)
    app.multiselect(key="run.models").set_value(["fg-only", "bg-only"])
    app.selectbox(key="run.suite").set_value(TINY_SUITE)
    app.button(key="run.start").click().run()
    assert not app.exception, app.exception
    runs = list_runs(tiny_model_workspace)
    assert sorted(runs["model"]) == ["bg-only", "fg-only"] and (runs["status"] == "done").all()
    assert (runs["images"] == N_IMAGES).all()
    assert "Finished 2 run(s)" in texts(app)
    shown = app.dataframe[0].value
    assert sorted(shown["Run"]) == sorted(runs["id"]) and set(shown["Images"]) == {f"{N_IMAGES} / {N_IMAGES}"}
    assert shown.set_index("Run")["Worst-case accuracy"].to_dict() == runs.set_index("id")["worst_case_accuracy"].to_dict()


def test_run_page_resumes_an_interrupted_run(run_workspace, run_ids, app_runner):
    run_id = run_ids["tiny"]
    with run_workspace.transaction() as conn:
        conn.execute("DELETE FROM run_images WHERE run_id = ? AND position > 2", (run_id,))
        conn.execute("UPDATE runs SET status = 'failed' WHERE id = ?", (run_id,))
    app = app_runner(RUN, run_workspace)
    assert not app.exception
    assert app.selectbox(key="run.resume_choice").value == run_id
    assert "failed" in app.dataframe[0].value["Status"].tolist()
    app.button(key="run.resume").click().run()
    assert not app.exception, app.exception
    row = list_runs(run_workspace, model="tiny").iloc[0]
    assert row["id"] == run_id and row["status"] == "done" and row["images"] == N_IMAGES


def test_run_page_explains_what_is_missing(tiny_workspace, app_runner):
    app = app_runner(RUN, tiny_workspace)
    assert not app.exception and "Register a model" in texts(app) and "No runs yet" in texts(app)


def test_runs_of_replaced_weights_are_marked_stale(run_workspace, run_ids, tiny_model_files, app_runner):
    from analytics.models import custom_label_space, register_torchscript

    labels = custom_label_space(tiny_model_files["labels"])
    register_torchscript(run_workspace, "tiny", checkpoint=tiny_model_files["bg-only"], label_space=labels, input_size=64, replace=True)
    app = app_runner(RUN, run_workspace)
    assert not app.exception, app.exception
    status = app.dataframe[0].value.set_index("Run")["Status"]
    assert "stale" in status[run_ids["tiny"]] and "stale" not in status[run_ids["fg-only"]]
    assert "1 run(s) used weights the model no longer has" in texts(app)


def test_run_status_is_plain_text(run_workspace, run_ids, app_runner):
    """Issue 19.7: no emoji, which render as empty boxes without an emoji font."""
    app = app_runner(RUN, run_workspace)
    assert not app.exception, app.exception
    assert app.dataframe[0].value["Status"].tolist() == ["done"] * len(run_ids)
