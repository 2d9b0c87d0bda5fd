"""Streamlit helpers of the Run and Matrices pages: caches, tables, clickable heatmaps, drill-down.

Caching:

* a run's arrays and point clouds (up to 65 MB per signal at the paper's scale) are
  ``st.cache_resource``: one shared, read-only copy per run (``st.cache_data`` would pickle and copy
  them on every rerun); the key holds the run's finishing time, so a redone run is read afresh;
* matrices are read from the workspace cache (:func:`analytics.runs.run_matrices` keeps every one
  it computes, keyed by run + settings + classes), so moving an interpolation slider back re-renders at
  once; a computation runs from the cached clouds under a progress bar naming its step
  (:func:`matrices_bar`);
* composed drill-down images are ``st.cache_data`` keyed by target and background ids.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from contextlib import AbstractContextManager

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from analytics import runs
from analytics._progress import Progress
from analytics.data import background_label
from analytics.figures import SQUARE_HEIGHT, X_SYMBOL, Y_SYMBOL, variance_heatmap
from analytics.variance import CUSTOM, DEFAULT_K, DEFAULT_MATRIX_GRID, DEFAULT_SETTINGS, PRESETS, WINDOW_SHAPES, MatrixSettings, PointCloud, VarianceMatrix
from analytics.workspace import to_csv
from ui import state, widgets

KEY = "runs."
#: Session-state key of the clicked cell: {"run", "signal", "x", "y"} (distances, so the cell
#: follows the point when the grid changes).
CELL = KEY + "cell"
MAX_COMPARED = 4
SCATTER_POINTS = 5000  # per signal; four scatters of this size stay responsive in the browser
# plain words: emoji render as empty boxes on machines without an emoji font (and table cells take no icons)
STATUS_WORDS = {"done": "done", "running": "unfinished", "failed": "failed"}
STALE = "stale"  # shown after the status of a run whose weights or class mappings changed since
#: Column configuration of :func:`runs_display`'s table: short headers (the full name in their help) and
#: fixed widths for the free-text columns, so all nine columns fit a 1400 px window (#47 item 9);
#: a longer model or suite name is cut in its cell and shown whole on hover.
PERCENT = {
    "Model": st.column_config.TextColumn("Model", width=150),
    "Suite": st.column_config.TextColumn("Suite", width=205),
    "Accuracy": st.column_config.NumberColumn("Accuracy", format="percent", help="Accuracy over all images of the run: originals and composites."),
    "Worst-case accuracy": st.column_config.NumberColumn(
        "Worst case", format="percent", help="Worst-case accuracy: share of targets classified correctly under every one of their backgrounds."
    ),
    "Original accuracy": st.column_config.NumberColumn("Originals", format="percent", help="Accuracy on the original targets (their own photos)."),
    "Started": st.column_config.TextColumn("Started", help="When the run started (UTC)."),
}


#: Key prefix of :func:`interpolation_controls`; its preset radio is ``PRESET_KEY`` (a deep link's ``preset``).
INTERP = KEY + "interp"
PRESET_KEY = INTERP + ".preset"
PRESET_NAMES = (*PRESETS, CUSTOM)


def settings_label(settings: MatrixSettings) -> str:
    """``fine: window 32, σ 2, K 32, grid 128`` (no name for free settings; ``, square window`` when not the circle)."""
    name = "" if settings.preset == CUSTOM else f"{settings.preset}: "
    shape = "" if settings.window_shape == WINDOW_SHAPES[0] else f", {settings.window_shape} window"
    return f"{name}window {settings.window}, σ {settings.sigma:g}, K {settings.k}, grid {settings.grid}{shape}"


# -- tables ------------------------------------------------------------------------------------------
def runs_display(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`analytics.runs.list_runs` for display: status words (stale runs marked), progress, readable
    headers; the suite by its label, the run id last (the CLI takes it)."""
    status = table["status"].map(STATUS_WORDS).fillna(table["status"])
    return pd.DataFrame({
        "Model": table["model"], "Suite": table["suite"],
        "Status": status.where(~table["stale"].astype(bool), status + " · " + STALE),
        "Images": [f"{i} / {e}" for i, e in zip(table["images"], table["expected_images"])],
        "Accuracy": table["accuracy"], "Worst-case accuracy": table["worst_case_accuracy"],
        "Original accuracy": table["original_accuracy"], "Started": [started(c) for c in table["created"]], "Run id": table["id"],
    })  # fmt: skip


def started(created: object) -> str:
    """``2026-11-29 03:59`` of a stored ISO time (``2026-11-29T03:59:51+00:00``); anything else as it is."""
    text = "" if created is None else str(created)
    return text[:16].replace("T", " ") if len(text) >= 16 and text[10] == "T" else text


# -- cached data -------------------------------------------------------------------------------------
@st.cache_resource(max_entries=4, show_spinner="Reading the run…")
def run_clouds(
    workspace_path: str, run_id: str, finished: str, classes: tuple[str, ...] | None = None
) -> tuple[runs.RunData, dict[str, PointCloud]]:
    """The run's arrays and its four point clouds, of the targets of ``classes`` (None = every one;
    shared, read-only; ``finished`` keys the cache)."""
    workspace = state.open_workspace(workspace_path)
    data = runs.load_run(workspace, run_id)
    data = data if classes is None else runs.run_of_classes(data, classes)
    return data, runs.run_point_clouds(workspace, run_id, data=data)


def run_matrices(
    workspace_path: str, run_id: str, finished: str, settings: MatrixSettings, classes: tuple[str, ...] | None = None
) -> dict[str, VarianceMatrix]:
    """:func:`analytics.runs.run_matrices` (of ``classes``; None = every class): read from the workspace
    cache (~1 ms), else computed from the cached clouds under :func:`matrices_bar`.

    No ``st.cache_data``: the bar must be drawn outside a cached function (Streamlit replays what one
    draws), and the workspace cache already keeps every result. A first computation in a process loads
    Numba's compiled kernel, ~4 s when it is compiled anew (measured with an empty Numba cache on the
    demo's main suite), which the bar names as its own step."""
    workspace = state.open_workspace(workspace_path)
    found = runs.cached_matrices(workspace, run_id, settings=settings, classes=classes)
    if found is not None:
        return found
    _, clouds = run_clouds(workspace_path, run_id, finished, classes)
    with matrices_bar() as progress:
        return runs.run_matrices(workspace, run_id, settings=settings, clouds=clouds, classes=classes, progress=progress)


def matrices_bar() -> AbstractContextManager[Progress]:
    """:func:`ui.widgets.step_bar` for :func:`analytics.runs.run_matrices` (``Computing the matrices:
    reading the run…``, ``Computing the matrices: 20 of 60 targets``)."""
    return widgets.step_bar("Computing the matrices")


@st.cache_data(max_entries=16, show_spinner="Interpolating the authors' conv-map matrices…")
def conv_matrices(
    workspace_path: str, run_id: str, finished: str, settings: MatrixSettings, classes: tuple[str, ...] | None = None
) -> dict[str, VarianceMatrix]:
    """:func:`analytics.runs.run_matrices` of the authors' :data:`analytics.runs.CONV_SIGNALS` (``finished`` keys the cache).

    Raises
    ------
    InvalidInputError
        The run lacks them (its model has no convolutional map, or the run predates them): the message says which and what to do.
    """
    return runs.run_matrices(state.open_workspace(workspace_path), run_id, settings=settings, classes=classes, signals=tuple(runs.CONV_SIGNALS))


@st.cache_data(max_entries=128, show_spinner=False)
def pair_images(workspace_path: str, target_id: str, background_ids: tuple[str, ...]) -> np.ndarray:
    """:func:`analytics.runs.compose_images` (cached): ndarray of shape (len(ids), s, s, 3), uint8."""
    return runs.compose_images(state.open_workspace(workspace_path), target_id, background_ids)


@st.cache_data(max_entries=16, show_spinner=False)
def image_csv(workspace_path: str, run_id: str, finished: str) -> bytes:
    """The run's per-image table as CSV bytes."""
    return to_csv(runs.image_table(state.open_workspace(workspace_path), run_id)).encode()


def matrix_png(matrix: np.ndarray) -> bytes:
    """PNG bytes of :func:`analytics.runs.render_matrix`."""
    import cv2

    ok, encoded = cv2.imencode(".png", runs.render_matrix(matrix)[..., ::-1])
    return encoded.tobytes() if ok else b""


def matrix_npy(matrix: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(matrix), allow_pickle=False)
    return buffer.getvalue()


# -- widgets -----------------------------------------------------------------------------------------
def interpolation_controls(key: str = INTERP) -> MatrixSettings:
    """Preset (the paper's three) or free settings; returns the chosen settings.

    The preset radio starts on :data:`analytics.variance.DEFAULT_SETTINGS` through session state (no ``index``), so a
    page may set it first, e.g. from a link (:func:`ui.deeplink.adopt`), without Streamlit's warning.
    """
    st.session_state.setdefault(f"{key}.preset", DEFAULT_SETTINGS.preset)
    preset = st.radio(
        "Interpolation", PRESET_NAMES, horizontal=True, key=f"{key}.preset",
        format_func=lambda n: f"{n} ({PRESETS[n][0]}, σ {PRESETS[n][1]:g})" if n in PRESETS else "free settings",
        help=(
            "The paper's presets: Gaussian RBF over a circular window (diameter in cells) with σ in cells; K nearest points give every cell a base value. "
            f"One cell = 1/grid of the largest distance (default grid {DEFAULT_MATRIX_GRID}: smooth reaches ±1/8 of the axis with σ ≈ 0.08 of it)."
        ),
    )  # fmt: skip
    window, sigma = PRESETS.get(preset, PRESETS["smooth"])
    grid, k, shape = DEFAULT_MATRIX_GRID, DEFAULT_K, WINDOW_SHAPES[0]
    if preset == CUSTOM:
        columns = st.columns(4)
        window = columns[0].slider("Window (cells)", 2, 64, window, key=f"{key}.window")
        sigma = columns[1].slider("σ (cells)", 0.5, 20.0, float(sigma), 0.5, key=f"{key}.sigma")
        k = columns[2].slider("K nearest", 1, 128, k, key=f"{key}.k")
        grid = columns[3].select_slider("Grid (cells per axis)", [16, 32, 64, 96, 128], grid, key=f"{key}.grid")
        shape = st.radio(
            "Window shape", WINDOW_SHAPES, horizontal=True, key=f"{key}.shape",
            help="The paper's circle (window = its diameter), or a square of side window (Backdrop's reading before issue 41).",
        )  # fmt: skip
    return MatrixSettings(preset, int(grid), int(window), float(sigma), int(k), shape)


# -- figures -----------------------------------------------------------------------------------------
def clickable_heatmap(
    matrix: VarianceMatrix, *, title: str | None = None, zmin: float | None = None, zmax: float | None = None, height: int = SQUARE_HEIGHT
) -> go.Figure:
    """:func:`analytics.figures.variance_heatmap` plus one invisible, clickable point per cell centre.

    Streamlit's selection events come from point traces, not from heatmaps, so clicks land on
    the points (nearest to the pointer); each reports its cell centre ``(x, y)``.

    Issue 47.8: the points are drawn as one SVG marker (``marker.maxdisplayed``), not one per point.
    Plotly finds the hovered and clicked point in the trace's data, never in its markers, so every cell
    stays clickable, while 4,096 drawn (invisible) markers per chart kept the browser busy for seconds
    (five charts: 4.3–6.9 s to draw against 2.3–2.8 s with one marker each). Their coordinates and
    values travel as float32 (hover shows 3 and 4 decimals): half the bytes of float64.
    """
    figure = variance_heatmap(matrix, title=title, zmin=zmin, zmax=zmax)
    figure.update_traces(hoverinfo="skip", hovertemplate=None, selector={"type": "heatmap"})  # colour bar: analytics.figures
    cx, cy = np.meshgrid(matrix.centres, matrix.centres)  # [row, col]
    figure.add_trace(
        go.Scatter(
            x=cx.ravel().astype(np.float32), y=cy.ravel().astype(np.float32), mode="markers", name="cells", showlegend=False,
            customdata=matrix.matrix.ravel().astype(np.float32),
            marker={"size": max(4, 240 // matrix.grid), "symbol": "square", "opacity": 0, "color": "black", "maxdisplayed": 1},
            selected={"marker": {"opacity": 0}}, unselected={"marker": {"opacity": 0}},
            hovertemplate=f"{X_SYMBOL} ≈ %{{x:.3f}}<br>{Y_SYMBOL} ≈ %{{y:.3f}}<br>value %{{customdata:.4f}}<extra>click for pairs</extra>",
        )
    )  # fmt: skip
    figure.update_layout(height=height, title={"font": {"size": 13}}, clickmode="event+select", dragmode=False)  # axes: variance_heatmap's shared style
    return figure


def mark_cell(figure: go.Figure, matrix: VarianceMatrix, row: int, col: int) -> go.Figure:
    """Outline cell ``(row, col)`` in red."""
    e = matrix.edges
    figure.add_shape(type="rect", x0=e[col], x1=e[col + 1], y0=e[row], y1=e[row + 1], line={"color": "#d62728", "width": 2})
    return figure


# -- the clicked cell --------------------------------------------------------------------------------
def remember_click(chart_key: str, run_id: str, signal: str) -> None:
    """``on_select`` callback: store the clicked cell centre of ``chart_key`` under :data:`CELL`."""
    event = st.session_state.get(chart_key)
    points = event["selection"]["points"] if event else []
    if points:
        st.session_state[CELL] = {"run": run_id, "signal": signal, "x": float(points[0]["x"]), "y": float(points[0]["y"])}


def clicked_cell(run_id: str, matrices: Mapping[str, VarianceMatrix]) -> tuple[str, int, int] | None:
    """``(signal, row, col)`` of the cell clicked on this run's matrices, or None."""
    cell = st.session_state.get(CELL)
    if not cell or cell.get("run") != run_id or cell.get("signal") not in matrices:
        return None
    matrix = matrices[cell["signal"]]
    x, y = min(cell["x"], matrix.d_max), min(cell["y"], matrix.d_max)
    return (cell["signal"], *matrix.cell_at(x, y))


def image_caption(pair: Mapping, side: str) -> str:
    """Caption of image ``j`` or ``k`` of a pair: position, background, distance, signal, prediction."""
    position, background = int(pair[side]), pair[f"background_{side}"]
    what = "original" if position == 0 else f"#{position} · {background_label(background)}"
    mark = "✓" if pair[f"correct_{side}"] else "✗"
    return f"{what} · d {pair[f'distance_{side}']:.3f} · S {pair[f'signal_{side}']:.3f} · {pair[f'predicted_{side}']} {mark}"
