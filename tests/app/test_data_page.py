"""The Data page (``pages/1_Data.py``): browsing, composite preview, imports and GrabCut."""

from __future__ import annotations

import inspect
import io
import zipfile
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
from streamlit.proto.SelectWidgetFilterMode_pb2 import SelectWidgetFilterMode

from analytics.data import ClassMapping, list_backgrounds, list_class_mappings, list_classes, list_targets
from analytics.workspace import Workspace, class_mapping_key
from tests.fixtures.app import as_shown
from ui.state import CREATE_WORKSPACE
from ui.widgets import OUTLINE_COLOUR, outline_mask

DATA = "pages/1_Data.py"


def texts(app) -> str:
    return "\n".join(e.value for e in [*app.markdown, *app.caption, *app.error, *app.info, *app.success, *app.warning])


def image_captions(app) -> list[str]:
    return [caption for image in app.get("image") for caption in image.captions]


def write_png(path: Path, array: np.ndarray) -> None:
    """Save a grey, RGB or RGBA uint8 array as PNG."""
    path.parent.mkdir(parents=True, exist_ok=True)
    to_bgr = {3: cv2.COLOR_RGB2BGR, 4: cv2.COLOR_RGBA2BGRA}
    ok, data = cv2.imencode(".png", cv2.cvtColor(array, to_bgr[array.shape[2]]) if array.ndim == 3 else array)
    assert ok
    path.write_bytes(data.tobytes())


def disc_image(size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A bright disc (the object) on noise, and its 0/255 mask."""
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 90, (size, size, 3), dtype=np.uint8)
    yy, xx = np.mgrid[:size, :size]
    mask = (yy - size / 2) ** 2 + (xx - size / 2) ** 2 < (size / 4) ** 2
    image[mask] = (230, 200, 40)
    return image, mask.astype(np.uint8) * 255


@pytest.fixture
def target_folder(tmp_path) -> Path:
    """Layout ``folder``: one good target of a new class, one whose mask has the wrong size."""
    root = tmp_path / "my-targets"
    image, mask = disc_image(96, 0)
    write_png(root / "images" / "coin" / "good.png", image)
    write_png(root / "masks" / "coin" / "good.png", mask)
    write_png(root / "images" / "coin" / "bad.png", image)
    write_png(root / "masks" / "coin" / "bad.png", mask[:50])
    return root


def import_targets(app, source: Path):
    app.radio(key="data.import_kind").set_value("Target set")
    app.selectbox(key="data.import_layout").set_value("folder")
    app.text_input(key="data.import_source.path").set_value(str(source)).run()
    app.button(key="data.import_go").click().run()
    return app


def test_data_page_shows_targets_classes_and_backgrounds(tiny_workspace, app_runner):
    app = app_runner(DATA, tiny_workspace)
    assert not app.exception
    targets, backgrounds = list_targets(tiny_workspace), list_backgrounds(tiny_workspace)
    assert app.selectbox(key="data.class").options == ["All classes", *list_classes(tiny_workspace)]
    captions = image_captions(app)
    assert set(targets["id"]) <= set(captions)
    assert {c.split(" · ")[0] for c in captions} >= set(backgrounds["id"])
    assert f"Showing 1–{len(targets)} of {len(targets)}" in texts(app)
    # no ImageNet classifier and classes without ImageNet indices: the pool cannot be screened, and the page says so
    assert any(as_shown(w.value).startswith("pool screening skipped for disc, square: no ImageNet classifier") for w in app.warning)


def test_class_filter_shows_only_that_class(tiny_workspace, app_runner):
    app = app_runner(DATA, tiny_workspace)
    chosen = list(list_classes(tiny_workspace))[0]
    app.selectbox(key="data.class").set_value(chosen).run()
    assert not app.exception
    expected = set(list_targets(tiny_workspace, class_name=chosen)["id"])
    shown = {c for c in image_captions(app) if "/" in c}
    assert shown == expected


def test_composite_preview_shows_hard_and_blended(tiny_workspace, app_runner):
    app = app_runner(DATA, tiny_workspace)
    app.selectbox(key="data.preview_background").set_value(list_backgrounds(tiny_workspace)["id"].iloc[-1])
    app.slider(key="data.preview_band").set_value(5).run()
    assert not app.exception
    assert {"Original with mask outline", "Hard paste (Eq. 1)", "Blended seam"} <= set(image_captions(app))


@pytest.mark.parametrize("script", [DATA, "app.py"])
def test_missing_workspace_shows_guidance(script, missing_workspace, app_runner):
    app = app_runner(script, missing_workspace)
    assert not app.exception
    assert "python -m analytics demo" in app.info[0].value


def test_empty_workspace_explains_what_to_do(tmp_path, app_runner):
    app = app_runner(DATA, Workspace(tmp_path / "empty"))
    assert not app.exception
    shown = texts(app)
    assert "No targets yet" in shown and "No backgrounds yet" in shown
    assert "python -m analytics demo" in shown


def test_import_folder_reports_accepted_and_rejected(tiny_workspace, target_folder, app_runner):
    before = len(list_targets(tiny_workspace))
    app = import_targets(app_runner(DATA, tiny_workspace), target_folder)
    assert not app.exception
    assert "1 new of 1 accepted" in texts(app) and "1 rejected" in texts(app)
    (accepted,) = [t.value for t in app.dataframe if list(t.value.columns) == ["id"]]
    (rejected,) = [t.value for t in app.get("table")]  # a static table: long reasons wrap, no sideways scrolling
    assert accepted["id"].tolist() == ["coin/good"]
    assert [as_shown(f) for f in rejected.index] == ["images/coin/bad.png"]  # shown relative to the imported folder
    assert "mask is 96x50" in as_shown(rejected["reason"].iloc[0])
    assert len(list_targets(tiny_workspace)) == before + 1
    assert "coin" in list_classes(tiny_workspace)
    assert "coin/good" in image_captions(app)  # the grid was redrawn with the new target


def test_switching_the_import_kind_clears_the_last_import_result(tiny_workspace, target_folder, app_runner):
    # a target import's result under the background form read as the background import's (issue 42.11e)
    app = import_targets(app_runner(DATA, tiny_workspace), target_folder)
    assert "1 new of 1 accepted" in texts(app)
    app.radio(key="data.import_kind").set_value("Background pool").run()
    assert not app.exception, app.exception
    assert "1 new of 1 accepted" not in texts(app) and not [t for t in app.get("table")]
    assert "The result of an import shows here" in texts(app)
    app.radio(key="data.import_kind").set_value("Target set").run()
    assert "1 new of 1 accepted" not in texts(app)  # gone, not hidden: switching back does not bring it back


def test_import_with_nothing_valid_leaves_workspace_unchanged(tiny_workspace, target_folder, app_runner):
    (target_folder / "images" / "coin" / "good.png").unlink()
    before = list_targets(tiny_workspace)
    app = import_targets(app_runner(DATA, tiny_workspace), target_folder)
    assert not app.exception
    assert "Nothing valid to add" in app.error[0].value
    assert list_targets(tiny_workspace).equals(before)
    assert "coin" not in list_classes(tiny_workspace)


def test_import_wrong_layout_shows_error(tiny_workspace, target_folder, app_runner):
    app = app_runner(DATA, tiny_workspace)
    app.selectbox(key="data.import_layout").set_value("bgchallenge")
    app.text_input(key="data.import_source.path").set_value(str(target_folder)).run()
    app.button(key="data.import_go").click().run()
    assert not app.exception
    assert "original/val" in app.error[0].value


def test_import_background_zip_upload_records_licence(tiny_workspace, tmp_path, app_runner, monkeypatch):
    from analytics.data import importing

    given = []  # what the page's import hands store_backgrounds: a generator decoding one photo at a time, never a list of the pool
    store = importing.store_backgrounds
    monkeypatch.setattr(importing, "store_backgrounds", lambda workspace, backgrounds: given.append(backgrounds) or store(workspace, backgrounds))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for seed in range(2):
            ok, data = cv2.imencode(".png", disc_image(128, seed)[0])
            archive.writestr(f"scenes/scene{seed}.png", data.tobytes())
    app = app_runner(DATA, tiny_workspace)
    app.radio(key="data.import_kind").set_value("Background pool")
    app.radio(key="data.import_from").set_value("Uploaded zip").run()
    app.file_uploader(key="data.import_source.upload").set_value(("scenes.zip", buffer.getvalue(), "application/zip"))
    app.text_input(key="data.import_licence").set_value("CC0-1.0").run()
    app.button(key="data.import_go").click().run()
    assert not app.exception
    assert "2 new of 2 accepted" in texts(app)
    added = list_backgrounds(tiny_workspace).set_index("id").loc[["scene0", "scene1"]]
    assert added["licence"].tolist() == ["CC0-1.0", "CC0-1.0"]
    assert added["origin"].tolist() == ["scenes.zip/scenes/scene0.png", "scenes.zip/scenes/scene1.png"]  # never the server's temporary copy
    assert len(given) == 1 and inspect.isgenerator(given[0])


def test_grabcut_adds_reviewed_target_of_new_class(tiny_workspace, app_runner):
    image, truth = disc_image(120, 3)
    ok, data = cv2.imencode(".png", image[..., ::-1])
    app = app_runner(DATA, tiny_workspace)
    app.file_uploader(key="data.grabcut_upload").set_value(("lemon.png", data.tobytes(), "image/png")).run()
    assert not app.exception
    assert any("Object only" in c for c in image_captions(app))
    assert "data.grabcut_add" not in [button.key for button in app.button]  # no class chosen yet
    app.selectbox(key="data.grabcut_class").set_value("New class…").run()
    app.text_input(key="data.grabcut_new_class").set_value("lemon").run()
    app.button(key="data.grabcut_add").click().run()
    assert not app.exception
    assert "Added target lemon/lemon" in texts(app)
    stored = list_targets(tiny_workspace).set_index("id").loc["lemon/lemon"]
    mask = tiny_workspace.get_array(stored["mask_hash"])
    # GrabCut recovers the disc: the stored mask covers about the disc's share of the image
    assert abs(mask.mean() - (truth > 0).mean()) < 0.05


def test_import_cutouts_pasted_on_chosen_home_background(tiny_workspace, tmp_path, app_runner):
    rgba = np.zeros((80, 80, 4), np.uint8)
    rgba[20:60, 25:55] = (250, 40, 40, 255)  # an opaque red block; the rest transparent
    write_png(tmp_path / "cutouts" / "block" / "red.png", rgba)
    home_id = list_backgrounds(tiny_workspace)["id"].iloc[0]
    app = app_runner(DATA, tiny_workspace)
    app.selectbox(key="data.import_layout").set_value("cutouts").run()
    app.selectbox(key="data.import_home").set_value(home_id)
    app.text_input(key="data.import_source.path").set_value(str(tmp_path / "cutouts")).run()
    app.button(key="data.import_go").click().run()
    assert not app.exception
    stored = list_targets(tiny_workspace).set_index("id").loc["block/red"]
    image, mask = tiny_workspace.get_array(stored["image_hash"]), tiny_workspace.get_array(stored["mask_hash"])
    home = tiny_workspace.get_array(list_backgrounds(tiny_workspace).set_index("id").loc[home_id, "image_hash"])
    assert np.array_equal(image[~mask], home[~mask])  # outside the object: the chosen home photo


def test_outline_mask_draws_only_along_the_mask_border():
    image = np.full((64, 64, 3), 100, np.uint8)
    mask = np.zeros((64, 64), bool)
    mask[16:48, 16:48] = True
    outlined = outline_mask(image, mask)
    assert (image == 100).all()  # the input is left alone
    changed = (outlined != image).any(axis=-1)
    kernel = np.ones((7, 7), np.uint8)  # a band of 3 px on each side of the mask's edge
    border = cv2.dilate(mask.astype(np.uint8), kernel).astype(bool) & ~cv2.erode(mask.astype(np.uint8), kernel).astype(bool)
    assert changed.any() and not (changed & ~border).any()
    assert (outlined[changed] == OUTLINE_COLOUR).all(axis=-1).any()


# -- class editor ----------------------------------------------------------------------------
def class_table(app) -> pd.DataFrame:
    (table,) = [t.value for t in app.dataframe if "IN-9" in t.value.columns]
    return table.set_index("class")


def test_class_editor_maps_a_class_to_imagenet_indices_found_by_search(tiny_workspace, app_runner):
    key = class_mapping_key(tiny_workspace, ["disc"])
    app = app_runner(DATA, tiny_workspace)
    assert not app.exception
    assert class_table(app).loc["disc", "ImageNet"] == ""
    assert "Not mapped yet: disc, square" in texts(app)
    app.selectbox(key="data.class_edit").set_value("disc").run()
    app.text_input(key="data.class_search").set_value("tennis").run()
    (found,) = [t.value for t in app.dataframe if "WordNet id" in t.value.columns]
    assert found.iloc[0].tolist() == [852, "n04409515", "tennis ball"]
    app.session_state["data.class_search_pick"] = {"selection": {"rows": [0], "columns": []}}  # a click on the row
    app.run()
    assert app.multiselect(key="data.class_imagenet.disc").value == [852]  # the clicked result fills the index
    app.button(key="data.class_save").click().run()
    assert not app.exception
    assert list_class_mappings(tiny_workspace)["disc"] == ClassMapping((852,))
    assert class_mapping_key(tiny_workspace, ["disc"]) != key  # runs of the old mapping become stale
    assert r"Saved disc: ImageNet \[852\]\." in texts(app)
    assert class_table(app).loc["disc", "ImageNet"] == "852 tennis ball"


def typed_then_enter(widget, typed: str) -> list[str]:
    """The option labels the browser adds when ``typed`` is typed into ``widget`` (an AppTest multiselect)
    and Enter pressed, as Streamlit's frontend filters (``filter_mode``: fuzzy = in-order subsequence,
    contains, prefix; case-insensitive) and puts a "Select N matches" entry first when ``select_all``
    allows (unset: up to 1000 matches; 0: never), which Enter then takes."""
    proto, text = widget.proto, typed.lower()
    mode = SelectWidgetFilterMode.Name(proto.filter_mode)
    unselected = [label for label in proto.options if label not in widget.value]

    def matches(label: str) -> bool:
        label = label.lower()
        if mode == "FILTER_MODE_CONTAINS":
            return text in label
        if mode == "FILTER_MODE_PREFIX":
            return label.startswith(text)
        found = 0
        for char in text:  # fuzzy
            found = label.find(char, found) + 1
            if not found:
                return False
        return True

    found = [label for label in unselected if matches(label)]
    threshold = proto.select_all if proto.HasField("select_all") else 1000
    if len(found) >= 2 and (threshold == -1 or 0 < threshold and len(found) <= threshold):
        return found  # the bulk entry
    assert mode != "FILTER_MODE_FUZZY" or len(found) <= 1, "fuzzy matches are sorted by a score this helper does not model"
    return found[:1]


def test_typing_an_imagenet_index_and_enter_adds_that_class_only(tiny_workspace, app_runner):
    # typing 207 + Enter added 85 classes: the fuzzy filter's "Select 85 matches" entry (issue 42.11a)
    app = app_runner(DATA, tiny_workspace)
    app.selectbox(key="data.class_edit").set_value("disc").run()
    widget = app.multiselect(key="data.class_imagenet.disc")
    assert typed_then_enter(widget, "207") == ["207 · golden retriever"]
    assert all(typed_then_enter(widget, str(index)) == [widget.proto.options[index]] for index in range(1000))
    assert typed_then_enter(widget, "tennis") == ["852 · tennis ball"]  # names still filter


def test_class_editor_maps_to_in9_or_a_label_and_refuses_an_empty_mapping(tiny_workspace, app_runner):
    app = app_runner(DATA, tiny_workspace)
    app.selectbox(key="data.class_edit").set_value("square").run()
    app.selectbox(key="data.class_in9.square").set_value("instrument")
    app.text_input(key="data.class_label.square").set_value("box")
    app.button(key="data.class_save").click().run()
    assert not app.exception
    assert list_class_mappings(tiny_workspace)["square"] == ClassMapping(in9="instrument", label="box")
    app.selectbox(key="data.class_in9.square").set_value("(none)")
    app.text_input(key="data.class_label.square").set_value("")
    app.checkbox(key="data.class_replace.square").check().run()  # square is mapped now: replacing it asks first
    app.button(key="data.class_save").click().run()
    assert "give ImageNet indices, an IN-9 class or a custom label" in as_shown(app.error[0].value)
    assert list_class_mappings(tiny_workspace)["square"] == ClassMapping(in9="instrument", label="box")


def test_import_maps_new_classes_with_the_shared_resolver(tiny_workspace, target_folder, app_runner):
    (target_folder / "images" / "coin").rename(target_folder / "images" / "tennis_ball")
    (target_folder / "masks" / "coin").rename(target_folder / "masks" / "tennis_ball")
    app = import_targets(app_runner(DATA, tiny_workspace), target_folder)
    assert not app.exception
    assert list_class_mappings(tiny_workspace)["tennis_ball"] == ClassMapping((852,))
    assert not any("No model output is known yet" in w.value for w in app.warning)


def test_import_of_an_unmapped_class_points_to_the_class_editor(tiny_workspace, target_folder, app_runner):
    app = import_targets(app_runner(DATA, tiny_workspace), target_folder)
    assert not app.exception
    assert list_class_mappings(tiny_workspace)["coin"] == ClassMapping()
    assert any("class coin" in w.value and "**Classes** tab" in w.value for w in app.warning)


def test_background_names_are_explained(tiny_workspace, app_runner):
    """Issue 19.7: "Aqua@0,480,1600" = source photo @ crop box."""
    app = app_runner(DATA, tiny_workspace)
    assert not app.exception
    assert "square crop of a source photo: photo `Aqua` @ top 0, left 480, side 1600 px" in texts(app)


# -- issue 19.4: a workspace path that does not exist is no dead end --------------------------------------------
def test_missing_workspace_can_be_created_and_imported_into(missing_workspace, target_folder, app_runner):
    app = app_runner(DATA, missing_workspace)
    assert not app.exception and not missing_workspace.exists()  # looking creates nothing
    assert not app.get("tab")  # the page stops before its tabs
    app.button(key=CREATE_WORKSPACE).click().run()
    assert not app.exception and not app.error
    workspace = Workspace(missing_workspace, create=False)  # raises if the click created nothing
    assert list_targets(workspace).empty
    assert app.button(key="data.import_go").label == "Import"  # the page goes on to its import form
    app = import_targets(app, target_folder)
    assert not app.exception
    assert "1 new of 1 accepted" in texts(app) and list_targets(workspace)["id"].tolist() == ["coin/good"]


def test_team_mode_offers_no_workspace_creation(missing_workspace, monkeypatch, app_runner):
    from analytics.team.server import TEAM_ENV_VAR
    from analytics.workspace import ENV_VAR

    monkeypatch.setenv(TEAM_ENV_VAR, "1")
    monkeypatch.setenv(ENV_VAR, str(missing_workspace))  # team mode serves the server's workspace only
    app = app_runner(DATA, missing_workspace)
    assert not app.exception
    assert not [button for button in app.button if button.key == CREATE_WORKSPACE] and not missing_workspace.exists()


# -- issue 19.7: the preview's background is picked by clicking its thumbnail ------------------------------------
def test_clicking_a_background_thumbnail_uses_it_in_the_preview(tiny_workspace, app_runner):
    ids = list_backgrounds(tiny_workspace)["id"].tolist()
    app = app_runner(DATA, tiny_workspace)
    first_hard = next(i for i in app.get("image") if "Hard paste (Eq. 1)" in i.captions)
    assert app.selectbox(key="data.preview_background").value == ids[0]
    assert app.button(key=f"data.preview_pick.{ids[0]}").disabled  # the one in use
    assert set(ids) <= set(image_captions(app))  # 12 thumbnails (one picker page) named by id
    app.button(key=f"data.preview_pick.{ids[5]}").click().run()
    assert not app.exception
    assert app.selectbox(key="data.preview_background").value == ids[5]
    assert app.button(key=f"data.preview_pick.{ids[5]}").disabled and not app.button(key=f"data.preview_pick.{ids[0]}").disabled
    hard = next(i for i in app.get("image") if "Hard paste (Eq. 1)" in i.captions)
    assert hard.proto.imgs[0].url != first_hard.proto.imgs[0].url  # the composite was redrawn on the new background


def upload_targets(app, layout: str, files: dict[str, np.ndarray], name: str = "upload.zip"):
    """Upload a zip of ``files`` (member -> image array, written as PNG/JPEG) as a target set in ``layout``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, array in files.items():
            to_bgr = {3: cv2.COLOR_RGB2BGR, 4: cv2.COLOR_RGBA2BGRA}
            _, data = cv2.imencode(Path(member).suffix, cv2.cvtColor(array, to_bgr[array.shape[2]]) if array.ndim == 3 else array)
            archive.writestr(member, data.tobytes())
    app.radio(key="data.import_kind").set_value("Target set")
    app.radio(key="data.import_from").set_value("Uploaded zip").run()
    app.selectbox(key="data.import_layout").set_value(layout).run()
    app.file_uploader(key="data.import_source.upload").set_value((name, buffer.getvalue(), "application/zip")).run()
    app.button(key="data.import_go").click().run()
    assert not app.exception, app.exception
    return app


def cutout_rgba(seed: int) -> np.ndarray:
    image, mask = disc_image(96, seed)
    return np.dstack([image, mask])


def test_zips_as_people_make_them_are_imported(tiny_workspace, app_runner):
    """Issue 27.2: a cut-outs zip `my_ball/*.png` (once "Accepted (0) Rejected (0)") and a folder-layout
    zip `images/my_ball/*.jpg` with masks at the top (once "expected a folder images/<class>/")."""
    app = upload_targets(app_runner(DATA, tiny_workspace), "cutouts", {f"my_ball/b{i}.png": cutout_rgba(i) for i in range(2)})
    assert "2 new of 2 accepted, 0 rejected" in texts(app)
    stored = list_targets(tiny_workspace).set_index("id")
    assert stored.loc[["my_ball/b0", "my_ball/b1"], "origin"].tolist() == ["upload.zip/my_ball/b0.png", "upload.zip/my_ball/b1.png"]
    files = {f"images/my_cup/c{i}.jpg": disc_image(96, i)[0] for i in range(2)} | {f"masks/my_cup/c{i}.png": disc_image(96, i)[1] for i in range(2)}
    app = upload_targets(app_runner(DATA, tiny_workspace), "folder", files)
    assert "2 new of 2 accepted, 0 rejected" in texts(app)


def test_a_zip_with_nothing_to_import_says_why(tiny_workspace, app_runner):
    app = upload_targets(app_runner(DATA, tiny_workspace), "folder", {f"my_ball/b{i}.png": cutout_rgba(i) for i in range(2)})
    (error,) = [e.value for e in app.error]
    assert error.startswith("upload\\.zip: no targets for layout 'folder' found") and "/tmp" not in error
    assert "my\\_ball/ \\(2 images\\)" in error and "It looks like layout 'cutouts'" in error


def test_the_class_editor_starts_on_an_unmapped_class_and_asks_before_replacing_a_mapping(tiny_model_workspace, app_runner):
    """Issue 27.3: once "Class to map" opened on a mapped class and one click overwrote it."""
    from analytics.data import set_class_mapping
    from analytics.runs import current_runs, start_runs
    from tests.fixtures.models import TINY_SUITE
    from tests.fixtures.runs import RUN_MODELS

    set_class_mapping(tiny_model_workspace, "disc", label="disc")
    start_runs(tiny_model_workspace, RUN_MODELS, TINY_SUITE, device="cpu")
    app = app_runner(DATA, tiny_model_workspace)
    assert app.selectbox(key="data.class_edit").value == "square"  # the unmapped one
    app.selectbox(key="data.class_edit").set_value("disc").run()
    assert app.button(key="data.class_save").disabled
    (confirm,) = [box for box in app.checkbox if box.key == "data.class_replace.disc"]
    assert "no run's scoring changes" in as_shown(confirm.label)
    # issue 47.7: an ImageNet index (to screen the background pool) is read by no custom-label model
    app.multiselect(key="data.class_imagenet.disc").set_value([430]).run()
    assert "no run's scoring changes" in as_shown(app.checkbox(key="data.class_replace.disc").label)
    assert app.button(key="data.class_save").disabled  # no save without the tick
    app.checkbox(key="data.class_replace.disc").check().run()
    app.button(key="data.class_save").click().run()
    assert not app.exception
    assert list_class_mappings(tiny_model_workspace)["disc"].imagenet == (430,)
    assert len(current_runs(tiny_model_workspace)) == 3  # the runs stay current
    assert not app.checkbox(key="data.class_replace.disc").value  # the next replacement asks again
    app.text_input(key="data.class_label.disc").set_value("round thing").run()  # a label the models lack: scored otherwise
    assert "3 runs scored with it (bg-only, fg-only, tiny) turn stale" in as_shown(app.checkbox(key="data.class_replace.disc").label)
    app.checkbox(key="data.class_replace.disc").check().run()
    app.button(key="data.class_save").click().run()
    assert not app.exception
    assert current_runs(tiny_model_workspace).empty  # the runs it named are stale now


def test_photos_without_masks_are_reviewed_in_a_grid_and_imported_in_one_go(tiny_workspace, app_runner):
    """Issue 27.4: three ordinary photos (no masks): each gets a GrabCut mask from a centred box, one is
    redrawn from a wider margin, one dropped, and the other two are stored with one click."""
    from analytics.data.masking import centred_box
    from ui.mask_review import REVIEW

    app = app_runner(DATA, tiny_workspace)
    app.radio(key="data.import_kind").set_value("Target set").run()
    app.checkbox(key="data.import_propose").check()
    app = upload_targets(app, "folder", {f"images/my_ball/p{i}.jpg": disc_image(96, i)[0] for i in range(3)})
    assert "3 photos without a mask got a proposed GrabCut mask" in texts(app)
    assert not app.error and not app.get("table")  # nothing rejected
    assert [as_shown(c) for c in image_captions(app) if "margin" in c][:3] == [f"my_ball/p{i} · margin 10%" for i in range(3)]
    app.slider(key="data.review.margin.1").set_value(0.4).run()  # a box inside the disc: no background to learn from
    app.button(key="data.review.redraw.1").click().run()
    assert "found no object" in as_shown(app.error[0].value) and "smaller margin" in as_shown(app.error[0].value)
    app.slider(key="data.review.margin.1").set_value(0.2).run()
    app.button(key="data.review.redraw.1").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    redrawn = app.session_state[REVIEW][1]
    assert redrawn.margin == 0.2 and "my_ball/p1 · margin 20%" in [as_shown(c) for c in image_captions(app)]
    inset = centred_box(redrawn.target.mask.shape[0], 0.2)[0]
    assert inset > 0 and not redrawn.target.mask[:inset].any()  # nothing outside the box 20 % in from the edge
    app.radio(key="data.review.decision.2").set_value("Drop").run()
    assert app.button(key="data.review.import").label == "Import 2 accepted targets"
    app.button(key="data.review.import").click().run()
    assert not app.exception
    assert "Imported 2 new of 2 accepted targets with reviewed masks (1 dropped)" in texts(app)
    ids = set(list_targets(tiny_workspace)["id"])
    assert {"my_ball/p0", "my_ball/p1"} <= ids and "my_ball/p2" not in ids
    assert "my_ball" in list_classes(tiny_workspace)
    assert REVIEW not in app.session_state


def test_class_to_map_moves_to_a_class_imported_while_the_page_is_open(tiny_workspace, app_runner):
    """Issue 27.3 in the browser: the editor was drawn before the import (on a mapped class), so the
    widget kept that class; a newly unmapped class now takes over, and a class the user picks stays."""
    from analytics.data import set_class_mapping, store_targets
    from tests.fixtures.workspace import make_target

    for name in ("disc", "square"):
        set_class_mapping(tiny_workspace, name, label=name)
    app = app_runner(DATA, tiny_workspace)
    assert app.selectbox(key="data.class_edit").value == "disc"
    ball = [replace(make_target("disc", i, np.random.default_rng(i)), class_name="my_ball", id=f"my_ball/b{i}") for i in range(2)]
    store_targets(tiny_workspace, ball, classes={"my_ball": []})  # what an import in this session does
    app = app.run()
    assert not app.exception, app.exception
    assert app.selectbox(key="data.class_edit").value == "my_ball"
    app.selectbox(key="data.class_edit").set_value("square").run()
    assert app.run().selectbox(key="data.class_edit").value == "square"  # the user's pick is kept


NO_USER = "~nosuchuser-backdrop"  # '~' of an account the machine does not have: pathlib raises a RuntimeError


def test_a_path_of_no_users_home_is_one_error_box(tiny_workspace, app_runner):
    app = app_runner(DATA, tiny_workspace)
    app.radio(key="data.import_kind").set_value("Target set")
    app.text_input(key="data.import_source.path").set_value(f"{NO_USER}/targets").run()
    assert not app.exception and not app.button(key="data.import_go").disabled  # the form is drawn, Import included
    app.button(key="data.import_go").click().run()
    assert not app.exception
    assert [as_shown(e.value) for e in app.error] == [
        f"server path '{NO_USER}/targets': '{NO_USER}' names no home folder on this machine (no such user); type the full path without '~'"
    ]


def test_a_workspace_path_of_no_users_home_is_one_error_box(app_runner):
    app = app_runner(DATA, Path(f"{NO_USER}/ws"))
    assert not app.exception
    assert [as_shown(e.value) for e in app.error] == [
        f"workspace '{NO_USER}/ws': '{NO_USER}' names no home folder on this machine (no such user); type the full path without '~'"
    ]
    assert CREATE_WORKSPACE not in [button.key for button in app.button]  # nothing to create at a path that does not expand


def test_an_uploaded_zips_rejections_name_the_upload_not_its_temporary_copy(tiny_workspace, app_runner):
    image, mask = disc_image(96, 0)
    files = {"images/coin/good.png": image, "masks/coin/good.png": mask, "images/coin/blank.png": image, "masks/coin/blank.png": np.zeros_like(mask)}
    app = upload_targets(app_runner(DATA, tiny_workspace), "folder", files, name="coins.zip")
    assert "1 new of 1 accepted, 1 rejected" in texts(app)
    (rejected,) = [t.value for t in app.get("table")]
    reasons = {as_shown(file): as_shown(reason) for file, reason in rejected["reason"].items()}
    assert list(reasons) == ["images/coin/blank.png"]
    assert reasons["images/coin/blank.png"].startswith("coins.zip/masks/coin/blank.png: mask is empty"), reasons
    assert "backdrop-upload" not in str(reasons) + texts(app)
