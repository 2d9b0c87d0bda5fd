"""The Saliency page (``pages/7_Saliency.py``) on tiny registered models and a tiny suite."""

from __future__ import annotations

import time

import numpy as np
from streamlit.testing.v1 import AppTest

from analytics import jobs
from analytics.data import list_targets
from analytics.jobs.process import wait
from analytics.jobs.records import _worker_alive
from analytics.models import load_model
from analytics.saliency import METHODS, available_methods
from analytics.workspace import PROJECT_ROOT
from tests.fixtures.app import APP_TIMEOUT_S, as_shown
from tests.fixtures.models import TINY_SUITE, TINY_SUITE_N
from ui.saliency import LEGEND_CAPTION
from ui.state import WORKSPACE_PATH

SALIENCY = "pages/7_Saliency.py"
WAIT_S = 300  # a worker imports torch first: slow on a busy 2-core machine


def wait_for(condition, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_page_explains_the_original_and_its_composites(tiny_cnn_workspace, app_runner):
    app = app_runner(SALIENCY, tiny_cnn_workspace)
    assert not app.exception
    app.selectbox(key="saliency.model").set_value("tiny-cnn").run()  # its methods are offered once it is chosen
    app.selectbox(key="saliency.method").set_value("gradcam")
    app.selectbox(key="saliency.suite").set_value(TINY_SUITE).run()
    app.number_input(key="saliency.n_composites").set_value(2).run()
    assert not app.exception, app.exception
    target = app.selectbox(key="saliency.target").value
    backgrounds = [
        r["background_id"]
        for r in tiny_cnn_workspace.query(
            "SELECT background_id FROM suite_items WHERE suite_id = ? AND target_id = ? ORDER BY position LIMIT 2", (TINY_SUITE, target)
        )
    ]
    captions = [caption for image in app.get("image")[1:] for caption in image.captions]  # image 0: the colour legend
    assert [c.split(" · ")[0] for c in captions] == ["original", *backgrounds]
    assert all("true class" in c for c in captions)
    table = app.dataframe[0].value
    assert table["Image"].tolist() == ["original", *backgrounds]
    assert ((table["Inside share"] >= 0) & (table["Inside share"] <= 1)).all()
    assert np.isfinite(table["Insertion AUC"]).all()


def test_page_compares_inside_share_as_a_background_job(tiny_cnn_workspace, app_runner):
    app = app_runner(SALIENCY, tiny_cnn_workspace)
    app.selectbox(key="saliency.model").set_value("tiny-cnn")
    app.selectbox(key="saliency.suite").set_value(TINY_SUITE).run()
    app.multiselect(key="saliency.compare_models").set_value(["tiny-cnn", "fg-only"])
    app.multiselect(key="saliency.compare_methods").set_value(["saliency", "gradcam"])
    app.number_input(key="saliency.compare_targets").set_value(2)
    app.button(key="saliency.compare").click().run()
    assert not app.exception, app.exception
    job = jobs.latest_job(tiny_cnn_workspace, "saliency")
    assert job is not None and job.params["target_ids"] == list_targets(tiny_cnn_workspace)["id"].tolist()[:2]
    assert wait(tiny_cnn_workspace, job.id, timeout=WAIT_S).status == "done", jobs.get_job(tiny_cnn_workspace, job.id).message
    app.run()
    assert not app.exception, app.exception
    comparison = app.dataframe[-1].value
    # TorchScript fg-only cannot run Grad-CAM: that pair is skipped and named, not an error
    gradient, cam = METHODS["saliency"].name, METHODS["gradcam"].name
    assert list(zip(comparison["Model"], comparison["Method"])) == [("tiny-cnn", gradient), ("tiny-cnn", cam), ("fg-only", gradient)]
    assert comparison["Originals"].tolist() == [2, 2, 2]
    assert comparison["Composites"].tolist() == [2 * TINY_SUITE_N] * 3  # 5 asked for, the suite has TINY_SUITE_N
    assert app.get("plotly_chart") and not app.error
    assert any("fg-only · Grad-CAM" in as_shown(c.value) for c in app.caption)


def test_a_running_comparison_shows_on_the_page_and_cancel_stops_it(tiny_cnn_workspace, app_runner):
    targets = list_targets(tiny_cnn_workspace)["id"].tolist()
    slow = {"n_masks": 100_000}  # steps of many seconds: the job is caught mid-way
    job = jobs.start(tiny_cnn_workspace, "saliency", {"models": ["tiny-cnn"], "methods": ["rise"], "target_ids": targets, "settings": {"rise": slow}})
    wait_for(lambda: jobs.get_job(tiny_cnn_workspace, job.id).status == "running")
    app = app_runner(SALIENCY, tiny_cnn_workspace)
    assert not app.exception, app.exception
    assert any(job.id in p.proto.text for p in app.get("progress"))
    app.button(key=f"saliency.cancel.{job.id}").click().run()
    assert not app.exception, app.exception
    cancelled = jobs.get_job(tiny_cnn_workspace, job.id)
    assert cancelled.status == "cancelled" and cancelled.done < len(targets)
    assert not _worker_alive(job.pid, job.id)  # the worker process is gone
    assert jobs.list_jobs(tiny_cnn_workspace, active_only=True).empty


def test_a_torchscript_model_is_offered_only_the_methods_it_can_run(tiny_model_workspace, app_runner):
    app = app_runner(SALIENCY, tiny_model_workspace)  # its first model, bg-only, is TorchScript
    assert not app.exception, app.exception
    model = load_model(tiny_model_workspace, app.selectbox(key="saliency.model").value, device="cpu")
    method = app.selectbox(key="saliency.method")
    assert method.options == [METHODS[k].name for k in available_methods(model)]
    assert not {"Grad-CAM", "Grad-CAM++", "Guided Backprop"} & set(method.options) and METHODS["saliency"].name in method.options
    assert method.value == available_methods(model)[0]  # the clearest it can run
    assert not app.error
    assert LEGEND_CAPTION in [c.value for c in app.caption]
    assert app.dataframe[0].value["Image"].tolist() == ["original"]


def test_a_link_opens_the_runs_model_suite_class_target_and_method(run_workspace, run_ids, app_runner):
    targets = list_targets(run_workspace)
    target = targets.iloc[-1]
    app = AppTest.from_file(str(PROJECT_ROOT / SALIENCY), default_timeout=APP_TIMEOUT_S)
    app.session_state[WORKSPACE_PATH] = str(run_workspace.root)
    app.query_params.update(run=run_ids["fg-only"], target=target["id"], method="integrated_gradients", **{"class": target["class_name"]})
    app.run()
    assert not app.exception, app.exception
    assert app.selectbox(key="saliency.model").value == "fg-only"
    assert app.selectbox(key="saliency.suite").value == TINY_SUITE
    assert app.selectbox(key="saliency.class").value == target["class_name"]
    assert app.selectbox(key="saliency.target").value == target["id"]
    assert app.selectbox(key="saliency.method").value == "integrated_gradients"
    assert not app.error
    app.selectbox(key="saliency.model").set_value("bg-only").run()  # the address follows the page
    assert app.query_params["run"] == run_ids["bg-only"] and app.query_params["model"] == "bg-only"
    assert app.query_params["method"] == "integrated_gradients" and app.query_params["target"] == target["id"]


def test_a_link_to_a_method_the_model_cannot_run_says_so(tiny_model_workspace, app_runner):
    app = AppTest.from_file(str(PROJECT_ROOT / SALIENCY), default_timeout=APP_TIMEOUT_S)
    app.session_state[WORKSPACE_PATH] = str(tiny_model_workspace.root)
    app.query_params.update(model="fg-only", method="gradcam")
    app.run()
    assert not app.exception and not app.error
    assert "cannot run the linked method 'gradcam'" in app.warning[0].value
    assert app.selectbox(key="saliency.method").value != "gradcam"


def test_page_without_models_says_what_to_do(tiny_workspace, app_runner):
    app = app_runner(SALIENCY, tiny_workspace)
    assert not app.exception
    assert "needs a registered model" in app.info[0].value


def test_page_without_workspace_explains(missing_workspace, app_runner):
    app = app_runner(SALIENCY, missing_workspace)
    assert not app.exception
    assert "no workspace" in app.error[0].value and not missing_workspace.exists()


def test_page_defaults_to_grad_cam_with_a_colour_legend(tiny_cnn_workspace, app_runner):
    app = app_runner(SALIENCY, tiny_cnn_workspace)
    app.selectbox(key="saliency.model").set_value("tiny-cnn").run()
    assert not app.exception, app.exception
    assert app.selectbox(key="saliency.method").value == "gradcam" and not app.error
    assert LEGEND_CAPTION in [c.value for c in app.caption]
    legend = app.get("image")[0].proto.imgs[0]
    assert not legend.caption  # the legend strip comes before the captioned overlays


def test_comparison_follows_the_pages_method(tiny_cnn_workspace, app_runner):
    app = app_runner(SALIENCY, tiny_cnn_workspace)
    app.selectbox(key="saliency.model").set_value("tiny-cnn").run()
    assert app.multiselect(key="saliency.compare_methods").value == ["gradcam"]
    app.selectbox(key="saliency.method").set_value("input_x_gradient").run()
    assert not app.exception, app.exception
    assert app.multiselect(key="saliency.compare_methods").value == ["input_x_gradient"]


def test_suite_picker_names_suites_as_the_run_page_does(tiny_cnn_workspace, app_runner):
    saliency = app_runner(SALIENCY, tiny_cnn_workspace)
    run = app_runner("pages/5_Run.py", tiny_cnn_workspace)
    label = run.selectbox(key="run.suite").options[0]
    assert label == f"random, N = {TINY_SUITE_N}, seed 0, 6 targets"  # issue 27.10: a label, not the suite's id
    assert saliency.selectbox(key="saliency.suite").options == ["(originals only)", label]


def test_the_page_opens_on_a_model_that_can_score_the_classes_with_its_pickers_in_the_page(tiny_model_workspace, tiny_model_files, tmp_path, app_runner):
    """Issue 42.9: the page opened on the first model (one without outputs for the classes) and showed only an error; its
    pickers sat in the sidebar below the page links."""
    from analytics.data import custom_label_space
    from analytics.models import register_torchscript

    labels = tmp_path / "pets.txt"
    labels.write_text("cat\ndog\n")
    register_torchscript(tiny_model_workspace, "a-pets", checkpoint=tiny_model_files["tiny"], label_space=custom_label_space(labels), input_size=64)
    app = app_runner(SALIENCY, tiny_model_workspace)
    assert not app.exception and not app.error
    picker = app.selectbox(key="saliency.model")
    assert picker.value == "bg-only" and picker.options[0].startswith("a-pets (cannot score")
    assert app.multiselect(key="saliency.compare_models").value == ["bg-only"]  # the object-share comparison too (issue 47.10d)
    assert not [box for box in app.sidebar.selectbox if box.key and box.key.startswith("saliency.")]
