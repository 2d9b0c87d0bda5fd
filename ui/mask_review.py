"""Review the GrabCut masks proposed for an import of photos without masks (Data page, Import tab).

An import with "Propose GrabCut masks" ticked leaves its photos without a mask in
``ImportResult.proposed`` (:func:`analytics.data.read_targets`); this module keeps them for review in
``st.session_state`` (the fitted 256 px square images and masks of this one import: the review
belongs to this session and ends with it), shows them in a grid where each mask is accepted,
redrawn from another box margin, or dropped, and stores the accepted ones in one go.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import streamlit as st

from analytics.data import DEFAULT_MARGIN, MAX_MARGIN, Target, propose_mask, store_targets
from analytics.exceptions import BackdropError
from analytics.workspace import Workspace
from ui import data_import, widgets
from ui.markdown import escape_markdown

REVIEW = "data.mask_review"  # session-state key: the list of ReviewItem of the import under review
DONE = "data.mask_review_done"  # session-state key: what the last review stored, shown after the rerun
KEY = "data.review."  # prefix of the grid's widget keys
N_COLUMNS = 4
ACCEPT, DROP = "Accept", "Drop"


@dataclass(frozen=True)
class ReviewItem:
    """A photo with its proposed mask and the margin of the box GrabCut started from."""

    target: Target
    margin: float = DEFAULT_MARGIN


def show(workspace: Workspace) -> None:
    """The grid of proposals (accept / redraw / drop each), then one button that imports the accepted.

    A new import's proposals (:data:`ui.data_import.PROPOSED`) replace the review under way."""
    if message := st.session_state.pop(DONE, None):
        st.success(message)
    if (proposed := st.session_state.pop(data_import.PROPOSED, None)) is not None:
        for key in [k for k in st.session_state if str(k).startswith(KEY)]:
            del st.session_state[key]  # widget values of the previous review
        st.session_state[REVIEW] = [ReviewItem(target) for target in proposed]
    items: list[ReviewItem] | None = st.session_state.get(REVIEW)
    if not items:
        return
    st.subheader(f"Review {len(items)} proposed masks")
    st.caption(
        "GrabCut's guess of the object in each photo, outlined, from a box centred on the photo. Accept a good outline, "
        f"redraw a poor one from a box further in (larger margin, at most {MAX_MARGIN:.0%}) or closer to the edge, or drop the photo."
    )
    for start_index in range(0, len(items), N_COLUMNS):
        for column, index in zip(st.columns(N_COLUMNS), range(start_index, min(start_index + N_COLUMNS, len(items)))):
            with column:
                review_cell(items, index)
    keep = [item.target for i, item in enumerate(items) if st.session_state.get(f"{KEY}decision.{i}", ACCEPT) == ACCEPT]
    left, right = st.columns(2)
    if left.button(f"Import {len(keep)} accepted targets", type="primary", disabled=not keep, key=KEY + "import", icon=":material/save:"):
        try:
            added = store_targets(workspace, keep, classes=data_import.new_classes(workspace, [t.class_name for t in keep]))
        except BackdropError as err:
            st.error(escape_markdown(err))
            return
        finish(f"Imported {added} new of {len(keep)} accepted targets with reviewed masks ({len(items) - len(keep)} dropped).")
    if right.button("Drop them all", key=KEY + "discard", icon=":material/delete:"):
        finish("Dropped the proposed masks; nothing was imported from them.")


def review_cell(items: list[ReviewItem], index: int) -> None:
    """One photo: its outlined mask, Accept / Drop, and a redraw from another margin."""
    item = items[index]
    st.image(widgets.outline_mask(item.target.image, item.target.mask), caption=escape_markdown(f"{item.target.id} · margin {item.margin:.0%}"))
    st.radio("Decision", [ACCEPT, DROP], horizontal=True, key=f"{KEY}decision.{index}", label_visibility="collapsed")
    margin = st.slider("Box margin", 0.02, MAX_MARGIN, item.margin, 0.02, key=f"{KEY}margin.{index}", help="Of the side, from each edge.")
    if st.button("Redraw", key=f"{KEY}redraw.{index}", icon=":material/refresh:"):
        try:
            mask = propose_mask(item.target.image, margin=margin, origin=item.target.id)
        except BackdropError as err:
            st.error(escape_markdown(err))
            return
        items[index] = ReviewItem(replace(item.target, mask=mask), margin)
        st.rerun()


def finish(message: str) -> None:
    st.session_state.pop(REVIEW, None)
    st.session_state[DONE] = message
    st.rerun()  # so the grids and counts include the new targets
