"""The Backgrounds Challenge page (``pages/13_Backgrounds_Challenge.py``): evaluate several models,
variant table and charts, categories, example grid, adversarial gallery, CSV."""

from __future__ import annotations

import pytest

from analytics.data import custom_label_space
from analytics.models import register_torchscript
from analytics.robustness.bgchallenge import evaluate_variants, gaps, workspace_data
from analytics.workspace import Workspace
from tests.fixtures.app import as_shown

PAGE = "pages/13_Backgrounds_Challenge.py"


def texts(app) -> str:
    return "\n".join(e.value for e in [*app.markdown, *app.caption, *app.error, *app.info, *app.success, *app.warning])


def test_page_asks_for_models_first(tiny_workspace, app_runner):
    app = app_runner(PAGE, tiny_workspace)
    assert not app.exception, app.exception
    assert "No models yet" in texts(app)


def test_page_evaluates_several_models(tiny_model_workspace, app_runner):
    app = app_runner(PAGE, tiny_model_workspace)
    assert not app.exception, app.exception
    assert "press **Evaluate**" in texts(app)
    app.multiselect(key="bgchallenge.models").set_value(["fg-only", "bg-only"])
    app.toggle(key="bgchallenge.adversarial").set_value(True)
    app.button(key="bgchallenge.run").click().run()
    assert not app.exception, app.exception
    table = app.dataframe[0].value.set_index("Model")
    assert list(table.index) == ["fg-only", "bg-only"]
    expected = gaps(evaluate_variants(tiny_model_workspace, "bg-only", workspace_data(tiny_model_workspace), seed=0, device="cpu"))
    assert table.loc["bg-only", "BG-Gap"] == pytest.approx(expected["bg_gap"])
    assert len(app.get("plotly_chart")) == 3  # one bar chart per model and the categories chart
    captions = [as_shown(caption) for image in app.get("image") for caption in image.captions]
    variant_captions = [c for c in captions if c.split(" ")[0] in {"Original", "Only-BG-B", "Only-BG-T", "No-FG", "Only-FG", "Mixed-Same", "Mixed-Rand", "Mixed-Next"}]
    assert len(variant_captions) == 8  # the first target across all eight variants
    assert any(c.startswith("Mixed-Rand (bg ") and "fg-only:" in c for c in variant_captions)  # provenance and predictions
    assert any("fools" in c for c in captions)  # the adversarial gallery of the first model
    assert "Adversarial backgrounds" in [h.value for h in app.subheader]
    assert len(app.get("download_button")) == 1
    n = len(workspace_data(tiny_model_workspace).ids)
    assert f"on every target's Only-BG-T background ({n} per foreground" in texts(app)  # the official pool: the own background too
    app.toggle(key="bgchallenge.exclude_own").set_value(True).run()
    assert not app.exception, app.exception
    assert f"on every other target's Only-BG-T background ({n - 1} per foreground" in texts(app)


def test_a_revisit_shows_the_stored_evaluation_without_pressing_evaluate(tiny_model_workspace, app_runner, monkeypatch):
    # the page showed nothing on a revisit until Evaluate was pressed again (issue 42.11c)
    data = workspace_data(tiny_model_workspace)
    stored = {name: evaluate_variants(tiny_model_workspace, name, data, seed=0, device="cpu") for name in ["fg-only", "bg-only"]}
    monkeypatch.setattr("analytics.robustness.bgchallenge.evaluation.load_model", lambda *a, **k: pytest.fail("showing stored results loads no model"))
    app = app_runner(PAGE, tiny_model_workspace)  # a new session: nothing pressed
    app.multiselect(key="bgchallenge.models").set_value(["fg-only", "bg-only", "tiny"]).run()
    assert not app.exception, app.exception
    assert "Pick models and press" not in texts(app)
    assert "Stored results of fg-only, bg-only with these settings." in as_shown(texts(app))
    assert "Not evaluated with them yet: tiny." in as_shown(texts(app))  # tiny's evaluation is not stored
    table = app.dataframe[0].value.set_index("Model")
    assert list(table.index) == ["fg-only", "bg-only"]
    assert table.loc["bg-only", "BG-Gap"] == pytest.approx(gaps(stored["bg-only"])["bg_gap"])
    assert len(app.get("download_button")) == 1
    app.toggle(key="bgchallenge.blend").set_value(True).run()  # other settings: nothing stored for them
    assert not app.exception, app.exception
    assert "press **Evaluate**" in texts(app) and not app.dataframe


def test_page_shows_library_errors(tiny_model_files, tmp_path, app_runner):
    workspace = Workspace(tmp_path / "empty")
    labels = custom_label_space(tiny_model_files["labels"])
    register_torchscript(workspace, "tiny", checkpoint=tiny_model_files["tiny"], label_space=labels, input_size=64)
    app = app_runner(PAGE, workspace)
    app.button(key="bgchallenge.run").click().run()
    assert not app.exception, app.exception
    assert "has no targets" in app.error[0].value
