"""The Scenarios page (``pages/14_Scenarios.py``): evaluate two models, see the tables, the heat map,
the regression and the example grid; a re-render reuses the cached evaluation."""

from __future__ import annotations

from analytics.robustness import scenarios as sc
from tests.fixtures.app import as_shown

PAGE = "pages/14_Scenarios.py"
KEY = "scenarios."


def texts(app) -> str:
    return "\n".join(e.value for e in [*app.markdown, *app.caption, *app.error, *app.info, *app.success, *app.warning])


def test_scenarios_page_evaluates_and_shows_every_view(tiny_model_workspace, app_runner, monkeypatch):
    app = app_runner(PAGE, tiny_model_workspace)
    assert not app.exception, app.exception
    assert "Choose models and scenarios" in texts(app)
    app.multiselect(key=KEY + "models").set_value(["tiny", "bg-only"])
    app.multiselect(key=KEY + "names").set_value(["image_grey", "segmented_image", "random_background"])
    app.button(key=KEY + "evaluate").click().run()
    assert not app.exception, app.exception
    accuracy = app.dataframe[0].value
    assert list(accuracy.columns) == ["Scenario", "tiny", "bg-only"] and len(accuracy) == 4
    assert accuracy["Scenario"].iloc[0] == "Original"
    assert set(app.dataframe[1].value["Model"]) == {"tiny", "bg-only"}
    assert app.radio(key=KEY + "score_over").value == "table3"  # the paper's Table 3 set by default
    terms = app.dataframe[2].value["Variable"].tolist()
    assert terms[0] == "Intercept" and "Model Name[bg-only]" in terms and "Image Scenario[random_background]" in terms
    assert "R² =" in texts(app)
    assert len(app.get("plotly_chart")) == 1
    captions = [as_shown(caption) for image in app.get("image") for caption in image.captions]  # the example grid
    assert len(captions) == 4 and captions[0].startswith("Original — tiny: ") and "bg-only: " in captions[0]

    def refuse(*args, **kwargs):
        raise AssertionError("a re-render evaluated again")

    monkeypatch.setattr(sc, "_predict", refuse)
    app.selectbox(key=KEY + "heat_model").set_value("bg-only").run()
    assert not app.exception, app.exception
    app.radio(key=KEY + "score_over").set_value("all").run()
    assert not app.exception and (app.dataframe[1].value["Scenarios"] == 3).all()
    assert app.dataframe[0].value.shape == accuracy.shape


def test_scenarios_page_explains_what_is_missing(tiny_workspace, app_runner):
    app = app_runner(PAGE, tiny_workspace)
    assert not app.exception and "Register a model" in texts(app)
