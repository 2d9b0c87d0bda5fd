"""Small reusable widgets. Each draws itself and returns plain values (str, int, tuples), never
Streamlit objects, so pages stay a readable sequence of "ask → compute → show"."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager

import cv2
import numpy as np
import streamlit as st

from analytics._progress import Progress
from ui.markdown import escape_markdown

#: Square charts (matrices, point clouds) per row: four in a row were too small to read (~170 px heatmaps).
SQUARE_COLUMNS = 2

ALL_CLASSES = "All classes"
#: Help of every keyword-table picker: what a computed table's name says.
KEYWORD_TABLE_HELP = (
    "A computed table is named `<backend>/<rows>/<id>`: `classifier-patch/background/<id>` holds the scene keywords an "
    "ImageNet classifier finds on the patches of every pool background; `<id>` is a hash of its settings and images. "
    "Tables read from a file keep the name given at import."
)
OUTLINE_COLOUR = (0, 230, 255)  # cyan over a dark underlay: readable on light and dark objects alike


def outline_mask(image: np.ndarray, mask: np.ndarray, *, colour: tuple[int, int, int] = OUTLINE_COLOUR) -> np.ndarray:
    """Draw the outline of a foreground mask onto a copy of the image (OpenCV contours).

    Parameters
    ----------
    image : ndarray of shape (height, width, 3), uint8
        RGB image.
    mask : ndarray of shape (height, width), bool
        True on the object.
    colour : (int, int, int), default=OUTLINE_COLOUR
        RGB colour of the outline.

    Returns
    -------
    outlined : ndarray of shape (height, width, 3), uint8
        The image with the mask's outer and inner borders drawn (a ``colour`` line on a dark
        underlay); ``image`` is unchanged.
    """
    outlined = np.ascontiguousarray(image).copy()
    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_LIST, cv2.CHAIN_APPROX_NONE)
    thickness = max(1, min(image.shape[:2]) // 128)  # 1 px on 64-128 px images, 2 px on 256 px
    cv2.drawContours(outlined, contours, -1, (20, 20, 20), thickness + 2)
    cv2.drawContours(outlined, contours, -1, colour, thickness)
    return outlined


def prefill(key: str, value: object, *, follows: Hashable) -> None:
    """Set widget ``key``'s value to ``value`` when ``follows`` changed since the last run (or the
    widget has no state yet); draw the widget afterwards, with ``key`` and without a default.

    A keyed widget keeps its state when its default changes, and drops choices that are no longer
    among its options, so without this a picker stays empty (or stale) after the choice it depends
    on (a run, a method) has changed.

    Parameters
    ----------
    key : str
        The widget's key.
    value : object
        Its value after a change of ``follows`` (for a multiselect, a list of options).
    follows : hashable
        What the value depends on (a run id, a method key).
    """
    marker = f"{key}.follows"
    if key not in st.session_state or st.session_state.get(marker) != follows:
        st.session_state[key] = value
        st.session_state[marker] = follows


def class_filter(classes: Sequence[str], *, key: str, label: str = "Class") -> str | None:
    """A select box over ``classes`` plus "All classes".

    Returns
    -------
    str or None
        The chosen class, or None for all classes.
    """
    choice = st.selectbox(label, [ALL_CLASSES, *classes], key=key)
    return None if choice == ALL_CLASSES else choice


def paginate(n_items: int, *, page_size: int, key: str) -> tuple[int, int]:
    """A page picker for a list of ``n_items``; shows which items are on screen.

    Returns
    -------
    (start, stop) : (int, int)
        Slice bounds of the items on the chosen page (``(0, 0)`` for an empty list).
    """
    n_pages = max(1, -(-n_items // page_size))
    page = 1
    if n_pages > 1:
        page = int(st.number_input(f"Page (of {n_pages})", min_value=1, max_value=n_pages, step=1, key=key))
    start, stop = min((page - 1) * page_size, n_items), min(page * page_size, n_items)
    if n_items:
        st.caption(f"Showing {start + 1}–{stop} of {n_items}")
    return start, stop


def image_grid(images: Sequence[np.ndarray], captions: Sequence[str], *, n_columns: int = 6) -> None:
    """Images in rows of ``n_columns``, each with its caption.

    Parameters
    ----------
    images : sequence of ndarray of shape (height, width, 3), uint8
    captions : sequence of str, one per image
        Plain text: shown as written, Markdown escaped (they carry user-supplied names).
    n_columns : int, default=6
    """
    for row in range(0, len(images), n_columns):
        columns = st.columns(n_columns)
        for column, image, caption in zip(columns, images[row : row + n_columns], captions[row : row + n_columns]):
            column.image(image, caption=escape_markdown(caption), width="stretch")


def box_selector(width: int, height: int, *, key: str) -> tuple[int, int, int, int] | None:
    """Optional rectangle around the object, chosen as horizontal and vertical percentage ranges.

    Percentages make the box independent of the image's resolution; it is returned in pixels.

    Returns
    -------
    (x, y, box_width, box_height) or None
        The box in pixels of a ``width`` x ``height`` image, or None when no box is wanted.
    """
    if not st.checkbox("Draw a box around the object", key=f"{key}.use"):
        return None
    left, right = st.slider("Box: left to right (% of width)", 0, 100, (5, 95), key=f"{key}.x")
    top, bottom = st.slider("Box: top to bottom (% of height)", 0, 100, (5, 95), key=f"{key}.y")
    x, y = round(width * left / 100), round(height * top / 100)
    return x, y, max(1, round(width * right / 100) - x), max(1, round(height * bottom / 100) - y)


def persistent_text_input(label: str, *, key: str, **kwargs) -> str:
    """A text input whose value lives in ``st.session_state[key]``, also on runs that do not draw it.

    Streamlit forgets a widget's state when a run does not draw the widget (a page run on its own,
    say); the value is therefore kept under ``key`` and the widget uses a shadow key, copied back
    on every change. ``key`` must have a value already (see :func:`ui.state.init_state`).

    Returns
    -------
    str
        The current value.
    """
    shadow = shadow_key(key)
    st.session_state[shadow] = st.session_state[key]
    return st.text_input(label, key=shadow, on_change=_copy_state, args=(shadow, key), **kwargs)


def shadow_key(key: str) -> str:
    """The widget key :func:`persistent_text_input` draws ``key`` with (tests type into it)."""
    return f"{key}.widget"


def _copy_state(source: str, destination: str) -> None:
    st.session_state[destination] = st.session_state[source]


def keep_undrawn(*keys: str) -> None:
    """Keep the values of widgets this run does not draw (a closed lazy tab's) for the run that draws them again.

    Streamlit forgets a keyed widget's state at the end of a run that did not draw it; a value written
    through ``st.session_state`` is the session's own and stays. Call it on runs that do not draw the
    widgets (one with a default warns when its key was also written in the same run); a key without a
    value is left alone.
    """
    for key in keys:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def grid_columns(n: int) -> list:
    """``n`` chart slots, :data:`SQUARE_COLUMNS` per row (four in a row are too small to read)."""
    return [column for start in range(0, n, SQUARE_COLUMNS) for column in st.columns(SQUARE_COLUMNS, gap="medium")][:n]


def pick_classes(present: Sequence[str], *, key: str) -> tuple[str, ...] | None:
    """A "Classes" multiselect over ``present``, empty (every class) by default and again when the
    classes on offer change; None when none or all are picked, the picked ones otherwise.

    Empty rather than every class picked: fifteen class chips overflow the box at 1400 px, which
    then scrolls sideways and hides most of them, so the user could not see what was counted."""
    prefill(key, [], follows=tuple(present))
    picked = st.multiselect(
        "Classes", present, key=key, placeholder="Every class: pick some to count only theirs",
        help="Count only the composites of these classes: pick your own class to see only its results.",
    )  # fmt: skip
    return None if not picked or set(picked) == set(present) else tuple(sorted(picked))


@contextmanager
def step_bar(title: str) -> Iterator[Progress]:
    """A progress bar for a library call's ``progress``: ``title…`` at first, then ``title: step…`` for a
    step without a count (``progress(0, 0, step)``) and ``title: 20 of 60 targets`` for a counted one
    (``progress(done, total, "targets")``); removed when the block ends."""
    bar = st.progress(0.0, text=f"{title}…")

    def report(done: int, total: int, step: str = "", /) -> None:
        if total:
            bar.progress(min(done / total, 1.0), text=f"{title}: {done:,} of {total:,} {step}")
        else:
            bar.progress(0.0, text=f"{title}: {step}…")

    try:
        yield report
    finally:
        bar.empty()
