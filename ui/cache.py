"""Caches between the pages and the library.

* ``st.cache_data`` for arrays, keyed on the workspace path plus content hashes. A hash names its
  bytes forever, so a cached image can never be stale, and two workspaces never share an entry by
  accident.
* ``st.cache_resource`` for loaded models (one shared object per workspace, model name and content
  key, :func:`analytics.workspace.model_keys`).

Only paths and hashes go into keys; no cached function holds a SQLite connection (each opens a
short-lived one through :class:`~analytics.workspace.Workspace`, which stores paths only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import cv2
import numpy as np
import streamlit as st

from analytics.data import composite, grabcut_mask
from ui import state
from ui.widgets import outline_mask

if TYPE_CHECKING:
    from analytics.models import LoadedModel

THUMBNAIL_SIZE = 192  # px; sharp in a six-column grid and small enough to send dozens per page
# Entry limits bound memory: a 256 px RGB image is 192 KiB, a 192 px thumbnail 108 KiB.
MAX_ARRAYS = 256
MAX_THUMBNAILS = 1024


@st.cache_data(max_entries=MAX_ARRAYS, show_spinner=False)
def load_array(workspace_path: str, digest: str) -> np.ndarray:
    """An array from the workspace's content-addressed store (image, mask, ...)."""
    return _read(workspace_path, digest)


@st.cache_data(max_entries=MAX_THUMBNAILS, show_spinner=False)
def target_thumbnail(workspace_path: str, image_hash: str, mask_hash: str, size: int = THUMBNAIL_SIZE) -> np.ndarray:
    """A target image with its mask outline, shrunk to at most ``size`` px.

    Returns
    -------
    thumbnail : ndarray of shape (s, s, 3), uint8, with s = min(size, image side)
    """
    # read directly: caching the full-size arrays too would hold every browsed image twice
    image, mask = _read(workspace_path, image_hash), _read(workspace_path, mask_hash)
    return _shrink(outline_mask(image, mask), size)


@st.cache_data(max_entries=MAX_THUMBNAILS, show_spinner=False)
def background_thumbnail(workspace_path: str, image_hash: str, size: int = THUMBNAIL_SIZE) -> np.ndarray:
    """A background image shrunk to at most ``size`` px: ndarray of shape (s, s, 3), uint8."""
    return _shrink(_read(workspace_path, image_hash), size)


@st.cache_data(max_entries=64, show_spinner=False)
def composite_preview(
    workspace_path: str, image_hash: str, mask_hash: str, background_hash: str, *, levels: int, band: int
) -> tuple[np.ndarray, np.ndarray]:
    """One target pasted on one background, hard (Eq. 1) and with Laplacian-pyramid blending.

    Returns
    -------
    hard, blended : ndarray of shape (size, size, 3), uint8
    """
    image = load_array(workspace_path, image_hash)[None]
    mask = load_array(workspace_path, mask_hash)[None]
    background = load_array(workspace_path, background_hash)[None]
    hard = composite(image, mask, background, blend=False)[0]
    blended = composite(image, mask, background, blend=True, levels=levels, band=band)[0]
    return hard, blended


@st.cache_data(max_entries=16, show_spinner="Running GrabCut…")
def grabcut_preview(image: np.ndarray, box: tuple[int, int, int, int] | None, iterations: int) -> np.ndarray:
    """GrabCut's foreground mask of an uploaded image (cached: sliders rerun the page often).

    Parameters
    ----------
    image : ndarray of shape (height, width, 3), uint8
    box : (x, y, width, height) in pixels, or None for the image minus a 5 % border

    Returns
    -------
    mask : ndarray of shape (height, width), bool
    """
    return grabcut_mask(image, box, iterations=iterations)


def load_model(workspace_path: str, name: str) -> LoadedModel:
    """The model registered as ``name`` in the workspace, loaded once per content key and shared by
    all sessions: re-registering the model with other weights (or a head's backbone) loads it afresh.

    Callers must not change the returned model (it is shared); inference needs no changes.
    """
    from analytics.workspace import model_keys

    return _loaded_model(workspace_path, name, model_keys(state.open_workspace(workspace_path)).keys.get(name, ""))


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def _loaded_model(workspace_path: str, name: str, model_key: str) -> LoadedModel:
    """:func:`analytics.models.load_model` (``model_key`` only keys the cache)."""
    from analytics.models import load_model as _load_model  # heavy (torch); only pages with models pay

    return _load_model(state.open_workspace(workspace_path), name)


def _read(workspace_path: str, digest: str) -> np.ndarray:
    return state.open_workspace(workspace_path).get_array(digest)


def _shrink(image: np.ndarray, size: int) -> np.ndarray:
    if max(image.shape[:2]) <= size:
        return image
    return cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA)
