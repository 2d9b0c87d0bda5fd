"""Data: browse targets, classes and backgrounds, preview a composite, bring your own data.

A thin view: reading, validating, fitting and storing images is :mod:`analytics.data.datasets` /
:mod:`analytics.data.images`; compositing is :mod:`analytics.data.compose`. The page catches only
:class:`~analytics.exceptions.BackdropError`.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import streamlit as st

from analytics.data import (
    Target,
    check_mask_share,
    fit_square,
    image_size,
    list_backgrounds,
    list_classes,
    list_targets,
    read_image,
    store_targets,
)
from analytics.exceptions import BackdropError
from analytics.workspace import Workspace
from ui import cache, class_editor, data_import, mask_review, screening, state, widgets
from ui.auth import offer, require_page
from ui.markdown import escape_markdown
from ui.uploads import saved_upload

PAGE_SIZE = 24
GRABCUT_MAX_SIDE = 512  # px; GrabCut's cost grows with pixels, and the target is stored at 256 anyway
NEW_CLASS = "New class…"
PREVIEW_BACKGROUND = "data.preview_background"  # the composite preview's background (select box and thumbnails)
PICKER_PAGE_SIZE, PICKER_COLUMNS = 12, 6
EMPTY_HINT = f"import a folder in the **Import** tab or run `{state.DEMO_COMMAND}`"


# -- browsing --------------------------------------------------------------------------------
def show_targets(workspace: Workspace) -> None:
    targets = list_targets(workspace)
    if targets.empty:
        st.info(f"No targets yet — {EMPTY_HINT}.", icon=":material/image_not_supported:")
        return
    st.caption("Each target is an image with its object mask (outlined) and class.")
    filter_column, page_column, _ = st.columns([1, 1, 2])
    with filter_column:
        chosen = widgets.class_filter(list(list_classes(workspace)), key="data.class")
    shown = targets if chosen is None else targets[targets["class_name"] == chosen]
    with page_column:
        start, stop = widgets.paginate(len(shown), page_size=PAGE_SIZE, key=f"data.targets_page.{chosen}")
    if shown.empty:
        st.info(f"No targets of class {escape_markdown(repr(chosen))} yet.")
        return
    rows = shown.iloc[start:stop]
    path = str(workspace.root)
    widgets.image_grid(
        [cache.target_thumbnail(path, row.image_hash, row.mask_hash) for row in rows.itertuples()],
        list(rows["id"]),
    )


def show_backgrounds(workspace: Workspace) -> None:
    backgrounds = list_backgrounds(workspace)
    if backgrounds.empty:
        st.info(f"No backgrounds yet — {EMPTY_HINT}.", icon=":material/image_not_supported:")
        return
    st.caption(
        "The pool of scenes targets are pasted on, with each image's source package (licences below the grid). A name such as "
        "`Aqua@0,480,1600` is a square crop of a source photo: photo `Aqua` @ top 0, left 480, side 1600 px."
    )
    page_column, _ = st.columns([1, 3])
    with page_column:
        start, stop = widgets.paginate(len(backgrounds), page_size=PAGE_SIZE, key="data.backgrounds_page")
    rows = backgrounds.iloc[start:stop]
    path = str(workspace.root)
    widgets.image_grid(
        [cache.background_thumbnail(path, row.image_hash) for row in rows.itertuples()],
        [f"{row.id} · {row.package or 'imported'}" for row in rows.itertuples()],
    )
    with st.expander("Licences of the backgrounds on this page"):
        st.dataframe(rows[["id", "package", "licence", "origin"]], hide_index=True, width="stretch")


def show_composite(workspace: Workspace) -> None:
    targets, backgrounds = list_targets(workspace), list_backgrounds(workspace)
    if targets.empty or backgrounds.empty:
        st.info(f"A preview needs at least one target and one background — {EMPTY_HINT}.")
        return
    st.caption("y = m ⊗ x + (1 − m) ⊗ b, then Laplacian-pyramid blending along the mask edge only.")
    pick_target, pick_background = st.columns(2)
    target_id = pick_target.selectbox("Target", targets["id"], key="data.preview_target")
    background_id = pick_background.selectbox(
        "Background", backgrounds["id"], key=PREVIEW_BACKGROUND, help="Type to search by name, or click a thumbnail below."
    )
    with st.expander("Blending settings"):
        levels = st.slider("Pyramid levels", 1, 6, 4, key="data.preview_levels")
        band = st.slider("Seam band half-width (px)", 1, 8, 3, key="data.preview_band")
    target = targets.set_index("id").loc[target_id]
    background_hash = backgrounds.set_index("id").loc[background_id, "image_hash"]
    path = str(workspace.root)
    hard, blended = cache.composite_preview(
        path, target["image_hash"], target["mask_hash"], background_hash, levels=levels, band=band
    )
    original = widgets.outline_mask(cache.load_array(path, target["image_hash"]), cache.load_array(path, target["mask_hash"]))
    captions = ("Original with mask outline", "Hard paste (Eq. 1)", "Blended seam")
    for column, image, caption in zip(st.columns(3), (original, hard, blended), captions):
        column.image(image, caption=caption, width="stretch")
    background_picker(path, backgrounds, background_id)


def background_picker(workspace_path: str, backgrounds, chosen: str) -> None:
    """Pool thumbnails, a page at a time, each with a button that makes it the preview's background."""
    st.markdown("**Pick the background by its picture**")
    page_column, _ = st.columns([1, 3])
    with page_column:
        start, stop = widgets.paginate(len(backgrounds), page_size=PICKER_PAGE_SIZE, key="data.preview_picker_page")
    rows = list(backgrounds.iloc[start:stop].itertuples())
    for first in range(0, len(rows), PICKER_COLUMNS):
        for column, row in zip(st.columns(PICKER_COLUMNS), rows[first : first + PICKER_COLUMNS]):
            column.image(cache.background_thumbnail(workspace_path, row.image_hash), caption=escape_markdown(row.id), width="stretch")
            in_use = row.id == chosen
            column.button(
                "In the preview" if in_use else "Use this", key=f"data.preview_pick.{row.id}", disabled=in_use,
                icon=":material/check:" if in_use else None, width="stretch",
                on_click=st.session_state.__setitem__, args=(PREVIEW_BACKGROUND, row.id),
            )  # fmt: skip


def grabcut_target(workspace: Workspace) -> None:
    st.caption(
        "For an image without a mask: OpenCV GrabCut separates the object from its background. "
        "Check the outline, adjust the box, then add it as a target."
    )
    controls, preview = st.columns([1, 2], gap="large")
    with controls:
        upload = st.file_uploader("Image", type=["png", "jpg", "jpeg", "webp", "bmp"], key="data.grabcut_upload")
        if upload is None:
            preview.info("Upload a photo of one object to see GrabCut's mask here.", icon=":material/upload:")
            return
        try:
            image = read_upload(upload)
        except BackdropError as err:
            st.error(escape_markdown(err))
            return
        height, width = image.shape[:2]
        box = widgets.box_selector(width, height, key="data.grabcut_box")
        iterations = st.slider("GrabCut iterations", 1, 10, 5, key="data.grabcut_iterations")
    mask = cache.grabcut_preview(image, box, iterations)
    shown = widgets.outline_mask(image, mask)
    if box is not None:
        x, y, w, h = box
        cv2.rectangle(shown, (x, y), (x + w - 1, y + h - 1), (255, 255, 255), 1)
    outline, cutout = preview.columns(2)
    outline.image(shown, caption="GrabCut mask outline" + (" (white: your box)" if box else ""), width="stretch")
    cutout.image(np.where(mask[..., None], image, 0).astype(np.uint8), caption=f"Object only: {mask.mean():.1%} of the image", width="stretch")
    with controls:
        add_grabcut_target(workspace, image, mask, default_id=Path(upload.name).stem)


def read_upload(upload) -> np.ndarray:
    """An uploaded image as RGB, shrunk to at most :data:`GRABCUT_MAX_SIDE` px on its long side."""
    with saved_upload(upload) as saved:  # a refusal names the upload, not its temporary copy
        image = read_image(saved)
    factor = GRABCUT_MAX_SIDE / max(image.shape[:2])
    if factor >= 1:
        return image
    return cv2.resize(image, (round(image.shape[1] * factor), round(image.shape[0] * factor)), interpolation=cv2.INTER_AREA)


def add_grabcut_target(workspace: Workspace, image: np.ndarray, mask: np.ndarray, *, default_id: str) -> None:
    classes = list(list_classes(workspace))
    pick, name = st.columns(2)
    choice = pick.selectbox("Class", [*classes, NEW_CLASS], index=None, placeholder="Choose a class", key="data.grabcut_class")
    class_name = name.text_input("New class name", key="data.grabcut_new_class").strip() if choice == NEW_CLASS else choice
    if not class_name:
        st.caption("Choose the object's class (or name a new one) to add it as a target.")
        return
    target_id = f"{class_name}/{default_id}"
    if not st.button(f"Add as target {escape_markdown(target_id)}", type="primary", key="data.grabcut_add"):
        return
    try:
        check_mask_share(mask, target_id)
        square, square_mask = fit_square(image, mask, image_size(workspace))
        target = Target(target_id, class_name, square, square_mask, origin=f"grabcut:{default_id}")
        added = store_targets(workspace, [target], classes=data_import.new_classes(workspace, [class_name]))
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    if added:
        st.success(f"Added target {escape_markdown(target_id)}.")
    else:
        st.warning(f"A target {escape_markdown(target_id)} exists already; rename the file to add another.")


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Data")
    workspace = state.current_workspace()
    # adding targets or backgrounds: admins (the library refuses others too); the others are told why there is no Import tab
    importing = offer(user, "import_data", "Importing targets and backgrounds (the Import and GrabCut tabs)")
    tabs = st.tabs(["Targets", "Classes", "Backgrounds", "Composite preview", *(["Import", "GrabCut"] if importing else [])])
    with tabs[0]:
        show_targets(workspace)
    with tabs[1]:
        class_editor.show(workspace, user)
    with tabs[2]:
        show_backgrounds(workspace)
    with tabs[3]:
        show_composite(workspace)
    if not importing:
        return
    with tabs[4]:
        data_import.import_data(workspace)
        data_import.show_last_import()  # full width: the reasons of rejected files stay readable
        mask_review.show(workspace)
    with tabs[5]:
        grabcut_target(workspace)


main()

# -- pool backgrounds kept out of each class's suites (analytics.suites.screening), below the tabs -------
screening.show_exclusions(state.current_workspace())
