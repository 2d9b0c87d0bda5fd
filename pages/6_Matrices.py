"""Matrices: a run's four RBF variance matrices, their raw point clouds, a drill-down from a cell to
the image pairs behind it, exports, up to four models side by side (the paper's Figure 8), and the
HTML report. An expander adds the authors' embedding signals (statistics of the last convolutional map,
:data:`analytics.runs.CONV_SIGNALS`), never in place of the paper's.

The run, the interpolation preset and the compared signal live in the address (``?run=…&signal=…&preset=…``,
:mod:`ui.deeplink`), so a view can be shared by copying it; a link naming a run or value this workspace
lacks says so and falls back to the first choice. ``tab=compare`` opens on the Compare tab, prefilled
with the run's model and the suite's other models, registered real models before zoo heads.

A thin view: point clouds, matrices and drill-down are :mod:`analytics.runs`; caching, clickable
heatmaps and captions are :mod:`ui.runs`; colour ranges (the suite's fixed scale by default, per-model
autoscale as a labelled option) are :mod:`ui.colour_scale`. A Classes filter (every class by default)
builds the matrices, metrics and drill-down of both tabs from the targets of the classes picked. The page catches only
:class:`~analytics.exceptions.BackdropError`.

Issue 47.8 (the page took 16 s to open, a cell's pairs 15 s, drawn below all five matrices, off-screen):
a click opens the cell's pairs in a dialog over the matrices, where the person is looking (once per
click; a button above the matrices opens it again); the tabs and the expanders (the authors' signals,
the raw point clouds, the exports) compute and draw their charts only while open, so the browser draws
the five matrices, not seventeen charts; each matrix's clickable cell centres are drawn as one invisible
marker (:func:`ui.runs.clickable_heatmap`), not 4,096. A closed tab's picks are kept
(:func:`ui.widgets.keep_undrawn`), and the report names the Compare tab's models while it is closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import pandas as pd
import streamlit as st

from analytics.exceptions import BackdropError
from analytics.figures import difference_heatmap, point_scatter, variance_heatmap
from analytics.runs import CONV_SIGNALS, SIGNALS, cell_pairs, list_runs, matrix_difference, run_accuracies, runs_snapshot
from analytics.variance import MatrixSettings, VarianceMatrix
from analytics.workspace import Workspace
from analytics.zoo import real_models_first
from ui import colour_scale, deeplink, state, widgets
from ui import failures as failure_view
from ui import runs as view
from ui.auth import require_page
from ui.markdown import escape_markdown

RUN_KEY = f"{view.KEY}run"
SIGNAL_KEY = f"{view.KEY}compare_signal"
COMPARE_KEY = f"{view.KEY}compare"  # the Compare tab's picked runs
DIFFERENCE_KEYS = (f"{view.KEY}diff_candidate", f"{view.KEY}diff_baseline")
#: The Run tab's expanders (the authors' signals, the raw point clouds, the exports): open or closed, kept while the Compare tab is open.
RUN_TAB_KEYS = (f"{view.KEY}open.conv", f"{view.KEY}open.clouds", f"{view.KEY}open.export")
TABS = ("Run", "Compare models")
TAB_KEY = f"{view.KEY}tab"  # the open tab's label
PAIRS_SHOWN = 4  # pairs drawn as images; the table lists up to PAIRS_LISTED
PAIRS_LISTED = 12
#: The clicked cell (:data:`ui.runs.CELL`) whose pairs' dialog was opened last: a rerun for another widget
#: does not open it again, a new click (or the button) does.
SHOWN_CELL = f"{view.KEY}shown_cell"
REPORT_MIN_COUNT = 3  # composites per keyword in the report's failure table, the Failures page's default


def metrics(run: Mapping, n_points: int | None = None) -> None:
    """The run's accuracies (``run``: a runs row, or one with :func:`analytics.runs.run_accuracies` of a class filter)."""
    columns = st.columns(4 if n_points is not None else 3)
    columns[0].metric("Accuracy", f"{run['accuracy']:.1%}", help="Over all images: originals and composites.")
    columns[1].metric("Worst-case accuracy", f"{run['worst_case_accuracy']:.1%}", help="Targets correct under every one of their backgrounds.")
    columns[2].metric("Original accuracy", f"{run['original_accuracy']:.1%}")
    if n_points is not None:
        columns[3].metric("Points per matrix", f"{n_points:,}")


def heatmaps(run_id: str, matrices: Mapping[str, VarianceMatrix], ranges: Mapping[str, tuple], selected: tuple | None) -> None:
    for column, (signal, label) in zip(widgets.grid_columns(len(SIGNALS)), SIGNALS.items()):
        figure = view.clickable_heatmap(matrices[signal], title=label, zmin=ranges[signal][0], zmax=ranges[signal][1])
        if selected and selected[0] == signal:
            view.mark_cell(figure, matrices[signal], *selected[1:])
        key = f"{view.KEY}heatmap.{signal}"
        with column:
            st.plotly_chart(
                figure, key=key, on_select=partial(view.remember_click, key, run_id, signal), selection_mode="points",
                config={"displayModeBar": False},
            )  # fmt: skip


def open_pairs(workspace_path: str, run: Mapping, matrices: Mapping[str, VarianceMatrix], selected: tuple, classes: tuple[str, ...] | None) -> None:
    """The clicked cell's pairs in a dialog over the matrices, once per click (its button above the matrices opens it again)."""
    cell = st.session_state.get(view.CELL)
    again = st.button(
        f"Image pairs of the marked cell ({SIGNALS[selected[0]]})", key=f"{view.KEY}pairs_again", icon=":material/photo_library:",
        help="The cell clicked last, outlined in red; a click on another cell opens its pairs.",
    )  # fmt: skip
    if again or st.session_state.get(SHOWN_CELL) != cell:
        st.session_state[SHOWN_CELL] = cell
        st.dialog(f"{SIGNALS[selected[0]]}: a cell of the matrix", width="large")(drill_down)(workspace_path, run, matrices, selected, classes)


def drill_down(workspace_path: str, run: Mapping, matrices: Mapping[str, VarianceMatrix], selected: tuple, classes: tuple[str, ...] | None) -> None:
    signal, row, col = selected
    matrix = matrices[signal]
    data, clouds = view.run_clouds(workspace_path, run["id"], run["finished"], classes)
    pairs = cell_pairs(state.open_workspace(workspace_path), run["id"], signal, matrix, row, col, limit=PAIRS_LISTED, data=data, cloud=clouds[signal], nearest=True)
    e, raw_mean = matrix.edges, pairs.attrs["raw_mean"]
    st.subheader("Image pairs behind the cell")
    st.caption(
        f"{SIGNALS[signal]} · d(y_ij) in [{e[col]:.3f}, {e[col + 1]:.3f}], d(y_ik) in [{e[row]:.3f}, {e[row + 1]:.3f}] · "
        f"cell value {matrix.matrix[row, col]:.4f}, RBF-smoothed: interpolated from the points around the cell (the kernel window and "
        f"the K nearest), so it can differ from the pairs below · {pairs.attrs['n_points']} points in the cell (a pair and its mirror count twice)"
        + (f", raw mean {raw_mean:.4f}." if pd.notna(raw_mean) else ".")  # NaN: no point in the cell
    )
    if pairs.attrs["nearest"]:
        st.info("No point falls into this cell; its value comes from the nearest points (K nearest and the kernel). Showing the pairs nearest to its centre.")
    for pair in pairs.head(PAIRS_SHOWN).to_dict("records"):
        images = view.pair_images(workspace_path, pair["target_id"], ("", pair["background_j"], pair["background_k"]))
        original, first, second, about = st.columns([1, 1, 1, 2])
        original.image(images[0], caption=escape_markdown(f"original x · {data.predicted[data.target_ids.index(pair['target_id']), 0]}"), width="stretch")
        first.image(images[1], caption=escape_markdown("j: " + view.image_caption(pair, "j")), width="stretch")
        second.image(images[2], caption=escape_markdown("k: " + view.image_caption(pair, "k")), width="stretch")
        about.markdown(f"**{escape_markdown(pair['target_id'])}**  \n|S(y_ij) − S(y_ik)| = **{pair['value']:.4f}**")
    st.dataframe(pairs, hide_index=True, width="stretch", key=f"{view.KEY}pairs")


def scatters(data_clouds) -> None:
    _, clouds = data_clouds
    for column, (signal, label) in zip(widgets.grid_columns(len(SIGNALS)), SIGNALS.items()):
        figure = point_scatter(clouds[signal].points, clouds[signal].values, max_points=view.SCATTER_POINTS, title=label)
        figure.update_layout(title={"font": {"size": 13}})
        column.plotly_chart(figure, key=f"{view.KEY}scatter.{signal}", config={"displayModeBar": False})


def exports(workspace_path: str, run: Mapping, matrices: Mapping[str, VarianceMatrix]) -> None:
    columns = st.columns(len(SIGNALS) + 1)
    for column, (signal, label) in zip(columns, SIGNALS.items()):
        column.caption(label)
        column.download_button("PNG", view.matrix_png(matrices[signal].matrix), f"{run['id']}-{signal}.png", "image/png", key=f"{view.KEY}png.{signal}")
        column.download_button(".npy", view.matrix_npy(matrices[signal].matrix), f"{run['id']}-{signal}.npy", "application/octet-stream", key=f"{view.KEY}npy.{signal}")
    columns[-1].caption("Per-image table")
    columns[-1].download_button(
        "CSV", view.image_csv(workspace_path, run["id"], run["finished"]), f"{run['id']}-images.csv", "text/csv", key=f"{view.KEY}csv"
    )


def explore(workspace_path: str, run: Mapping, settings: MatrixSettings, ranges: Mapping[str, tuple], classes: tuple[str, ...] | None) -> None:
    try:
        data_clouds = view.run_clouds(workspace_path, run["id"], run["finished"], classes)
        matrices = view.run_matrices(workspace_path, run["id"], run["finished"], settings, classes)
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    metrics(run if classes is None else {**run, **run_accuracies(data_clouds[0])}, data_clouds[0].n_points)  # data: the classes' targets
    if data_clouds[0].excluded:
        st.warning(f"{len(data_clouds[0].excluded)} target(s) with fewer backgrounds than the others are left out: {escape_markdown(', '.join(data_clouds[0].excluded[:5]))}")
    selected = view.clicked_cell(run["id"], matrices)
    st.caption(f"{view.settings_label(settings)} · green = low variance, yellow = high · click a cell to see the image pairs behind it.")
    if selected:  # the button to open the pairs again sits above the matrices, the dialog over them
        open_pairs(workspace_path, run, matrices, selected, classes)
    heatmaps(run["id"], matrices, ranges, selected)
    # lazy: an expander's charts are computed and sent only while it is open (each costs the browser seconds)
    conv = st.expander("The authors' last-conv-map signals", key=RUN_TAB_KEYS[0], on_change="rerun")
    if conv.open:
        with conv:
            conv_heatmaps(workspace_path, run, settings, classes)
    clouds = st.expander("Raw point clouds", key=RUN_TAB_KEYS[1], on_change="rerun")
    if clouds.open:
        with clouds:
            st.caption(f"A random {view.SCATTER_POINTS:,} points per signal over the density (grey) of all {data_clouds[0].n_points:,}.")
            scatters(data_clouds)
    export = st.expander("Export", key=RUN_TAB_KEYS[2], on_change="rerun")
    if export.open:
        with export:
            exports(workspace_path, run, matrices)


def conv_heatmaps(workspace_path: str, run: Mapping, settings: MatrixSettings, classes: tuple[str, ...] | None) -> None:
    """The matrices of the authors' embedding signals (their code: statistics of the last convolutional map), beside the paper's."""
    st.caption(
        "The paper's embedding signals (above) read the top-k neurons of the embedding; the authors' code reads statistics of the last "
        "convolutional map instead: its largest value and the mean of its channels' largest values. Offered to reproduce their numbers; "
        "each matrix on its own colour range (the suite scale covers the paper's signals), not judged on the Judge page."
    )
    try:
        matrices = view.conv_matrices(workspace_path, run["id"], run["finished"], settings, classes)
    except BackdropError as err:
        st.info(escape_markdown(err))
        return
    for column, (signal, label) in zip(widgets.grid_columns(len(CONV_SIGNALS)), CONV_SIGNALS.items()):
        column.plotly_chart(variance_heatmap(matrices[signal], title=label), key=f"{view.KEY}conv.{signal}", config={"displayModeBar": False})


def pick_classes(workspace_path: str, run: Mapping) -> tuple[str, ...] | None:
    """The Classes filter over the run's classes (none shown for a run of one class or without a cloud)."""
    try:
        present = sorted(set(view.run_clouds(workspace_path, run["id"], run["finished"])[0].class_names or []))
    except BackdropError:  # explore() says why
        return None
    return widgets.pick_classes(present, key=f"{view.KEY}classes") if len(present) > 1 else None


def warn_unknown(what: str, text: str | None, shown: str) -> None:
    """Say that a link named ``text`` for ``what``, which is not among the choices, and what is shown instead."""
    if text is not None:
        st.warning(escape_markdown(f"The link names {what} {text!r}, which this workspace does not offer here; showing {shown} instead."))


def comparable(done: pd.DataFrame, run: Mapping) -> dict[str, dict]:
    """The runs the Compare tab offers, by id: one per model over the run's suite, the chosen run for its model
    (first), the newest current one for the others, registered real models before zoo heads, so the
    prefilled comparison shows the models people deploy."""
    same_suite = done[(done["suite_id"] == run["suite_id"]) & ((done["id"] == run["id"]) | ~done["stale"].astype(bool))]
    others = real_models_first(same_suite)
    same_suite = pd.concat([same_suite[same_suite["id"] == run["id"]], others]).drop_duplicates("model")
    return same_suite.set_index("id").to_dict("index")


def compared_runs(records: Mapping[str, Mapping], run: Mapping) -> list[str]:
    """The Compare tab's picked runs, also while the tab is closed (the report names them): the suite's
    first :data:`ui.runs.MAX_COMPARED` models after a new run, the person's picks otherwise."""
    widgets.prefill(COMPARE_KEY, list(records)[: view.MAX_COMPARED], follows=run["id"])  # a new run: its suite's models, it first
    return [r for r in st.session_state[COMPARE_KEY] if r in records]


def compare(
    workspace_path: str, records: Mapping[str, Mapping], run: Mapping, settings: MatrixSettings, ranges: Mapping[str, tuple], classes: tuple[str, ...] | None
) -> list[str]:
    """The Compare tab, after :func:`compared_runs`; returns the compared run ids."""
    if len(records) == 1:
        st.info(
            f"Only {escape_markdown(run['model'])} has a finished current run over suite {escape_markdown(run['suite'])}: run other models over it on the "
            "Run page to compare them here."
        )
    chosen = st.multiselect(
        f"Models with runs over suite {escape_markdown(run['suite'])} (up to {view.MAX_COMPARED})", list(records), max_selections=view.MAX_COMPARED,
        format_func=lambda r: records[r]["model"], key=COMPARE_KEY,
    )  # fmt: skip
    if not chosen:
        st.caption(f"Pick up to {view.MAX_COMPARED} models above to see their matrices side by side.")
        return chosen
    try:
        matrices = {r: view.run_matrices(workspace_path, r, records[r]["finished"], settings, classes) for r in chosen}
    except BackdropError as err:
        st.error(escape_markdown(err))
        return chosen
    signal = st.radio("Signal", list(SIGNALS), format_func=SIGNALS.get, horizontal=True, key=SIGNAL_KEY)
    st.caption("Same suite and colour scale, one matrix per model: equal (worst-case) accuracy can hide different patterns.")
    for column, run_id in zip(widgets.grid_columns(len(chosen)), chosen):
        record = records[run_id]
        title = f"{record['model']} · accuracy {record['accuracy']:.0%} · worst-case {record['worst_case_accuracy']:.0%}"
        # no clickable markers (nothing to drill into here): the heatmap's own hover names each cell's value
        figure = variance_heatmap(matrices[run_id][signal], title=title, zmin=ranges[signal][0], zmax=ranges[signal][1])
        figure.update_layout(title={"font": {"size": 13}}, dragmode=False)
        column.plotly_chart(figure, key=f"{view.KEY}compare.{run_id}.{signal}", config={"displayModeBar": False})
    if len(chosen) >= 2:
        difference(chosen, records, matrices, signal)
    return chosen


def difference(chosen: list[str], records: Mapping[str, Mapping], matrices: Mapping[str, Mapping[str, VarianceMatrix]], signal: str) -> None:
    """Candidate − baseline: two of the compared models' matrices of the signal, subtracted cell by cell."""
    st.subheader("Difference: candidate − baseline")
    left, right = st.columns(2)
    candidate = left.selectbox("Candidate", chosen, index=0, format_func=lambda r: records[r]["model"], key=DIFFERENCE_KEYS[0])
    baseline = right.selectbox("Baseline (e.g. the last release)", chosen, index=1, format_func=lambda r: records[r]["model"], key=DIFFERENCE_KEYS[1])
    try:
        diff = matrix_difference(matrices[candidate][signal], matrices[baseline][signal])
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    st.caption("Diverging scale centred on 0: red where the candidate's matrix is higher (more variance), blue where it is lower.")
    column = widgets.grid_columns(1)[0]
    column.plotly_chart(difference_heatmap(diff, title=f"{records[candidate]['model']} − {records[baseline]['model']}"), key=f"{view.KEY}difference.{signal}", config={"displayModeBar": False})


def report(workspace: Workspace, run: Mapping, compared: list[str], records: Mapping[str, Mapping]) -> None:
    """The HTML report of the run's model, with the other compared models."""
    others = list(dict.fromkeys(records[r]["model"] for r in compared if r in records and records[r]["model"] != run["model"]))
    st.subheader("Report")
    st.caption(escape_markdown(f"{run['model']} over suite {run['suite']}, compared with {', '.join(others) or 'no other model'} (the Compare tab's models)."))
    failure_view.report_button(workspace, run["model"], others, run["suite_id"], min_count=REPORT_MIN_COUNT, key=f"{view.KEY}report")


def main() -> None:
    require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Matrices")
    workspace = state.current_workspace()
    table = list_runs(workspace)
    done = table[table["status"] == "done"]
    if done.empty:
        st.info("No finished run yet: start one on the Run page (a registered model over a saved suite).")
        st.stop()
    records = done.set_index("id").to_dict("index")
    unknown_run = deeplink.adopt("run", RUN_KEY, list(records))
    run_id = st.selectbox("Run", list(records), format_func=lambda r: records[r]["label"], key=RUN_KEY)
    run = {"id": run_id, **records[run_id]}
    warn_unknown("run", unknown_run, f"run {run['label']}")
    unknown_preset = deeplink.adopt("preset", view.PRESET_KEY, view.PRESET_NAMES)
    left, right = st.columns([4, 1])
    with left:
        settings = view.interpolation_controls()
    warn_unknown("the interpolation preset", unknown_preset, settings.preset)
    choice = right.radio(
        "Colour scale", colour_scale.CHOICES, key=f"{view.KEY}scale",
        help="Suite scale: per signal one fixed range for every model of the suite, the one the Judge page shows. "
        "Autoscale: each matrix from its own minimum to its own maximum (shows a pattern, hides its level).",
    )  # fmt: skip
    suite_runs = tuple(sorted(done.loc[done["suite_id"] == run["suite_id"], "id"]))
    try:
        scale = colour_scale.suite_scale(str(workspace.root), run["suite_id"], suite_runs, settings)
    except BackdropError as err:
        st.error(escape_markdown(err))
        st.stop()
    autoscale = choice == colour_scale.AUTOSCALE
    ranges = colour_scale.ranges(scale, autoscale)
    st.caption(colour_scale.describe(scale, autoscale))
    classes = pick_classes(str(workspace.root), run)
    # the Compare tab's signal (a link's, else the first), also while the tab is closed: the address names it
    unknown_signal = deeplink.adopt("signal", SIGNAL_KEY, list(SIGNALS))
    signal = st.session_state.setdefault(SIGNAL_KEY, next(iter(SIGNALS)))
    warn_unknown("the signal", unknown_signal, SIGNALS[signal])
    comparable_runs = comparable(done, run)
    compared = compared_runs(comparable_runs, run)
    # lazy tabs (issue 47.8): only the open tab computes and sends its charts; ?tab=compare (Home's "models side by side") opens the comparison
    one, several = st.tabs(TABS, default=TABS[1] if st.query_params.get("tab") == "compare" else TABS[0], key=TAB_KEY, on_change="rerun")
    if one.open:
        with one:
            explore(str(workspace.root), run, settings, ranges, classes)
    else:
        widgets.keep_undrawn(*RUN_TAB_KEYS)
    if several.open:
        with several:
            compared = compare(str(workspace.root), comparable_runs, run, settings, ranges, classes)
        signal = st.session_state[SIGNAL_KEY]
    else:
        widgets.keep_undrawn(COMPARE_KEY, SIGNAL_KEY, *DIFFERENCE_KEYS)
    report(workspace, run, compared, records)
    deeplink.publish(run=run_id, preset=settings.preset, signal=signal)  # after every widget: the address names what is on screen


with runs_snapshot():  # the runs are listed once per rerun, however many parts ask
    main()
