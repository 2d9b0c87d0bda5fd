"""The Saliency page (``pages/7_Saliency.py``) on tiny registered models and a tiny suite."""

from __future__ import annotations

import numpy as np

from tests.fixtures.models import TINY_SUITE, TINY_SUITE_N
from ui.saliency import LEGEND_CAPTION

SALIENCY = "pages/7_Saliency.py"


def test_page_explains_the_original_and_its_composites(tiny_cnn_workspace, app_runner):
    app = app_runner(SALIENCY, tiny_cnn_workspace)
    assert not app.exception
    app.sidebar.selectbox(key="saliency.model").set_value("tiny-cnn")
    app.sidebar.selectbox(key="saliency.method").set_value("gradcam")
    app.sidebar.selectbox(key="saliency.suite").set_value(TINY_SUITE).run()
    app.sidebar.number_input(key="saliency.n_composites").set_value(2).run()
    assert not app.exception, app.exception
    target = app.sidebar.selectbox(key="saliency.target").value
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


def test_page_compares_inside_share_on_originals_and_composites(tiny_cnn_workspace, app_runner):
    app = app_runner(SALIENCY, tiny_cnn_workspace)
    app.sidebar.selectbox(key="saliency.model").set_value("tiny-cnn")
    app.sidebar.selectbox(key="saliency.suite").set_value(TINY_SUITE)
    app.sidebar.selectbox(key="saliency.method").set_value("saliency").run()  # TorchScript fg-only has no Grad-CAM
    app.multiselect(key="saliency.compare_models").set_value(["tiny-cnn", "fg-only"])
    app.number_input(key="saliency.compare_targets").set_value(2)
    app.button(key="saliency.compare").click().run()
    assert not app.exception, app.exception
    comparison = app.dataframe[-1].value
    assert comparison["Model"].tolist() == ["tiny-cnn", "fg-only"]
    assert comparison["Originals"].tolist() == [2, 2]
    assert comparison["Composites"].tolist() == [2 * TINY_SUITE_N] * 2  # 5 asked for, the suite has TINY_SUITE_N
    assert app.get("plotly_chart")


def test_page_reports_methods_a_model_cannot_run(tiny_model_workspace, app_runner):
    app = app_runner(SALIENCY, tiny_model_workspace)
    app.sidebar.selectbox(key="saliency.method").set_value("gradcam").run()
    assert not app.exception
    assert "TorchScript" in app.error[0].value


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
    app.sidebar.selectbox(key="saliency.model").set_value("tiny-cnn").run()
    assert not app.exception, app.exception
    assert app.sidebar.selectbox(key="saliency.method").value == "gradcam" and not app.error
    assert LEGEND_CAPTION in [c.value for c in app.caption]
    legend = app.get("image")[0].proto.imgs[0]
    assert not legend.caption  # the legend strip comes before the captioned overlays


def test_comparison_follows_the_pages_method(tiny_cnn_workspace, app_runner):
    app = app_runner(SALIENCY, tiny_cnn_workspace)
    assert app.multiselect(key="saliency.compare_methods").value == ["gradcam"]
    app.sidebar.selectbox(key="saliency.method").set_value("input_x_gradient").run()
    assert not app.exception, app.exception
    assert app.multiselect(key="saliency.compare_methods").value == ["input_x_gradient"]


def test_suite_picker_names_suites_as_the_run_page_does(tiny_cnn_workspace, app_runner):
    saliency = app_runner(SALIENCY, tiny_cnn_workspace)
    run = app_runner("pages/5_Run.py", tiny_cnn_workspace)
    label = run.selectbox(key="run.suite").options[0]
    assert label.startswith(f"{TINY_SUITE} · random, n = {TINY_SUITE_N},")
    assert saliency.sidebar.selectbox(key="saliency.suite").options == ["(originals only)", label]
