"""The Data page's import with layout ``coco``: a COCO JSON and its images, named on the server or
uploaded; what was skipped shown by reason; a bad entry one error naming the upload, nothing imported."""

from __future__ import annotations

import io
import zipfile

from analytics.data import list_classes, list_targets
from analytics.data.instances import CROWD, NOT_LARGEST, OTHER_CATEGORY, TOO_SMALL
from tests.fixtures.app import as_shown

DATA = "pages/1_Data.py"


def texts(app) -> str:
    return "\n".join(e.value for e in [*app.markdown, *app.caption, *app.error, *app.info, *app.success, *app.warning])


def choose_coco(app):
    app.radio(key="data.import_kind").set_value("Target set")
    return app.selectbox(key="data.import_layout").set_value("coco").run()


def test_a_coco_export_on_the_server_is_imported_with_the_skips_listed(tiny_workspace, coco_export, app_runner):
    app = choose_coco(app_runner(DATA, tiny_workspace))
    assert not app.checkbox(key="data.import_all_instances").value  # the largest instance of each image by default
    assert not [box for box in app.checkbox if box.key == "data.import_propose"]  # GrabCut proposals are for photos without masks
    app.text_input(key="data.import_coco.path").set_value(str(coco_export.annotations))
    app.text_input(key="data.import_source.path").set_value(str(coco_export.images)).run()
    app.button(key="data.import_go").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert "3 new of 3 accepted, 0 rejected, 3 skipped" in texts(app)
    (accepted,) = [t.value for t in app.dataframe if list(t.value.columns) == ["id"]]
    assert accepted["id"].tolist() == ["tennis_ball/a-1", "widget/b-5", "widget/c-6"]
    (skipped,) = [t.value for t in app.get("table")]
    assert {as_shown(reason): count for reason, count in skipped["count"].items()} == {CROWD: 1, TOO_SMALL: 1, NOT_LARGEST: 1}
    assert as_shown(skipped["first entries"].iloc[0]) == "annotation 3 (image 1, a.png)"
    assert {"tennis_ball/a-1", "widget/b-5", "widget/c-6"} <= set(list_targets(tiny_workspace)["id"])


def test_every_instance_of_chosen_categories(tiny_workspace, coco_export, app_runner):
    app = choose_coco(app_runner(DATA, tiny_workspace))
    app.checkbox(key="data.import_all_instances").check()
    app.text_input(key="data.import_classes").set_value("tennis_ball")
    app.text_input(key="data.import_coco.path").set_value(str(coco_export.annotations))
    app.text_input(key="data.import_source.path").set_value(str(coco_export.images)).run()
    app.button(key="data.import_go").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert "2 new of 2 accepted, 0 rejected, 4 skipped" in texts(app)
    (skipped,) = [t.value for t in app.get("table")]
    assert {as_shown(reason) for reason in skipped.index} == {CROWD, OTHER_CATEGORY}
    assert "widget" not in list_classes(tiny_workspace)


def test_an_uploaded_export_with_a_bad_annotation_is_refused_in_one_line(tiny_workspace, coco_export, broken_coco, app_runner):
    broken_coco(coco_export, "unknown image")
    before = list_targets(tiny_workspace)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in coco_export.images.iterdir():
            archive.write(path, f"images/{path.name}")
    app = choose_coco(app_runner(DATA, tiny_workspace))
    app.radio(key="data.import_from").set_value("Uploaded zip").run()
    assert app.button(key="data.import_go").disabled  # both files are needed
    app.file_uploader(key="data.import_coco.upload").set_value(("instances.json", coco_export.annotations.read_bytes(), "application/json")).run()
    assert app.button(key="data.import_go").disabled
    app.file_uploader(key="data.import_source.upload").set_value(("export.zip", buffer.getvalue(), "application/zip")).run()
    app.button(key="data.import_go").click().run()
    assert not app.exception
    (error,) = [as_shown(e.value) for e in app.error]
    assert error.startswith("instances.json: annotation 2: image_id 99 is not in the file's images") and "/tmp" not in error
    assert list_targets(tiny_workspace).equals(before)


def test_a_voc_tree_on_the_server_is_imported_with_its_split(tiny_workspace, tmp_path, app_runner):
    """Layout ``voc`` on the Data page: the tree's folder, a split, the instance choices of COCO; no GrabCut offer."""
    from tests.analytics.data.test_voc import FIRST, write_voc

    voc = write_voc(tmp_path / "VOCdevkit" / "VOC2012")
    split = voc.root / "ImageSets" / "Segmentation" / "val.txt"
    split.parent.mkdir(parents=True)
    split.write_text(f"{FIRST}\n")
    app = app_runner(DATA, tiny_workspace)
    app.radio(key="data.import_kind").set_value("Target set")
    app = app.selectbox(key="data.import_layout").set_value("voc").run()
    assert not [box for box in app.checkbox if box.key == "data.import_propose"]
    app.checkbox(key="data.import_all_instances").check()
    app.text_input(key="data.import_split").set_value("val")
    app.text_input(key="data.import_source.path").set_value(str(tmp_path / "VOCdevkit")).run()
    app.button(key="data.import_go").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert "2 new of 2 accepted, 0 rejected, 1 skipped" in texts(app)  # the person and the cat of the split's one image; the bottle is too small
    assert {f"person/{FIRST}-1", f"cat/{FIRST}-2"} <= set(list_targets(tiny_workspace)["id"])


def test_a_smaller_instance_area_lowers_the_mask_floor(tiny_workspace, coco_export, app_runner):
    """Issue 48: the 4-pixel instance (0.17 %, under the 0.2 % floor of a target's mask) imports once
    the form's smallest instance is below it, as ``--min-area`` does."""
    app = choose_coco(app_runner(DATA, tiny_workspace))
    area = app.number_input(key="data.import_min_area")
    assert "0.2 %" in area.help
    area.set_value(0.0)
    app.checkbox(key="data.import_all_instances").check()
    app.text_input(key="data.import_coco.path").set_value(str(coco_export.annotations))
    app.text_input(key="data.import_source.path").set_value(str(coco_export.images)).run()
    app.button(key="data.import_go").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert "5 new of 5 accepted, 0 rejected, 1 skipped" in texts(app)
    assert "widget/a-4" in set(list_targets(tiny_workspace)["id"])
