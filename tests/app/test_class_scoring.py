"""Issue 47.7: the Data page warns about the classes no registered model scores, not about every class
without a mapping: a model registered with its own class names scores the classes it names."""

from __future__ import annotations

import pytest

from analytics.data import ClassMapping, list_class_mappings
from analytics.data.datasets import add_classes
from tests.app.test_data_page import disc_image, write_png
from tests.fixtures.app import as_shown

DATA = "pages/1_Data.py"


def warnings(app) -> list[str]:
    return [as_shown(w.value) for w in app.warning]


def test_no_warning_when_the_models_own_class_names_score_every_class(tiny_model_workspace, app_runner):
    assert all(not mapping.mapped for mapping in list_class_mappings(tiny_model_workspace).values())  # disc, square unmapped
    app = app_runner(DATA, tiny_model_workspace)
    assert not app.exception
    assert not [w for w in warnings(app) if "Not mapped yet" in w or "No registered model scores" in w]


def test_only_the_class_no_model_scores_is_warned_about_until_it_is_mapped(tiny_model_workspace, app_runner):
    add_classes(tiny_model_workspace, {"coin": ClassMapping()})
    app = app_runner(DATA, tiny_model_workspace)
    assert not app.exception
    (warning,) = [w for w in warnings(app) if "Not mapped yet" in w]
    assert warning.startswith("Not mapped yet: coin. No registered model has an output for it.")
    assert "The other classes are scored by bg-only, fg-only, tiny." in warning and "disc" not in warning
    assert app.selectbox(key="data.class_edit").value == "coin"
    app.text_input(key="data.class_label.coin").set_value("disc").run()
    app.button(key="data.class_save").click().run()
    assert not app.exception
    assert list_class_mappings(tiny_model_workspace)["coin"] == ClassMapping(label="disc")
    assert not [w for w in warnings(app) if "Not mapped yet" in w or "No registered model scores" in w]


def test_without_models_the_unmapped_classes_are_warned_about_as_before(tiny_workspace, app_runner):
    app = app_runner(DATA, tiny_workspace)
    (warning,) = [w for w in warnings(app) if "Not mapped yet" in w]
    assert warning.startswith("Not mapped yet: disc, square. No model is registered yet")


@pytest.mark.parametrize(("name", "warned"), [("disc", False), ("coin", True)])
def test_the_import_summary_warns_only_about_a_class_no_model_scores(tiny_model_workspace, tmp_path, app_runner, name, warned):
    root = tmp_path / "my-targets"
    image, mask = disc_image(96, 0)
    write_png(root / "images" / name / "new.png", image)
    write_png(root / "masks" / name / "new.png", mask)
    app = app_runner(DATA, tiny_model_workspace)
    app.radio(key="data.import_kind").set_value("Target set")
    app.selectbox(key="data.import_layout").set_value("folder")
    app.text_input(key="data.import_source.path").set_value(str(root)).run()
    app.button(key="data.import_go").click().run()
    assert not app.exception
    found = [w for w in warnings(app) if "No model output is known yet" in w]
    assert bool(found) == warned and all(f"class {name}: no registered model scores it" in w for w in found)


def test_the_import_helper_names_the_imported_unscored_classes(tiny_model_workspace):
    from ui.data_import import unmapped_classes

    add_classes(tiny_model_workspace, {"coin": ClassMapping(), "ball": ClassMapping((852,))})
    assert unmapped_classes(tiny_model_workspace, ["coin", "disc", "ball", "coin"]) == ["ball", "coin"]
