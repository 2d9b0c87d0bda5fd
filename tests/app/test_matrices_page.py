"""The Matrices page (``pages/6_Matrices.py``) on finished tiny runs."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from analytics.figures import MIN_HEIGHT, SQUARE_HEIGHT
from analytics.runs import SIGNALS, cell_pairs, list_runs, run_matrices, run_point_clouds, suite_colour_scale
from analytics.suites.store import name_suite
from tests.fixtures.app import as_shown, record_bar_texts
from tests.fixtures.models import TINY_SUITE, TINY_SUITE_N
from ui.colour_scale import AUTOSCALE, SUITE
from ui.markdown import escape_markdown
from ui.runs import CELL
from ui.widgets import SQUARE_COLUMNS

MATRICES = "pages/6_Matrices.py"


def texts(app) -> str:
    return "\n".join(e.value for e in [*app.markdown, *app.caption, *app.error, *app.info, *app.success, *app.warning])


def charts(app) -> list:
    return app.get("plotly_chart")


def open_compare(app):
    """Open the Compare tab as a click would (lazy tabs: a rerun draws the open one only)."""
    app.session_state["runs.tab"] = "Compare models"
    return app.run()


def test_page_shows_four_matrices_and_the_accuracies(run_workspace, run_ids, app_runner):
    app = app_runner(MATRICES, run_workspace)
    assert not app.exception, app.exception
    app.selectbox(key="runs.run").set_value(run_ids["bg-only"]).run()
    assert not app.exception
    row = list_runs(run_workspace).set_index("id").loc[run_ids["bg-only"]]
    metrics = {m.label: m.value for m in app.tabs[0].metric}
    assert metrics["Accuracy"] == f"{row['accuracy']:.1%}" and metrics["Worst-case accuracy"] == f"{row['worst_case_accuracy']:.1%}"
    # issue 47.8: the closed expanders and the closed Compare tab send nothing: the run's heatmaps only, each
    # with one clickable point per cell drawn as a single invisible marker (thousands of drawn markers cost seconds)
    assert len(charts(app)) == len(SIGNALS)
    for chart, (signal, matrix) in zip(charts(app), run_matrices(run_workspace, run_ids["bg-only"]).items()):
        cells = next(t for t in json.loads(chart.proto.spec)["data"] if t["type"] == "scatter")
        assert cells["marker"]["maxdisplayed"] == 1 and len(typed_array(cells["x"])) == matrix.grid**2, signal
        np.testing.assert_allclose(typed_array(cells["customdata"]), matrix.matrix.ravel(), rtol=1e-6)
    assert "no last convolutional map" not in texts(app)
    for expander in ("conv", "clouds", "export"):  # opened: they compute and draw
        app.session_state[f"runs.open.{expander}"] = True
    app.run()
    assert not app.exception, app.exception
    assert len(charts(app)) == 2 * len(SIGNALS)  # the heatmaps and the scatters of the run
    # the authors' conv-map signals are an extra, and a TorchScript model says why it has none (no chart, no crash)
    assert "Last conv map (authors'): max: model 'bg-only' has no last convolutional map (it is TorchScript" in as_shown(texts(app))
    assert [button.label for button in app.get("download_button")][:2] == ["PNG", ".npy"]
    # issue 19.3: two square charts per row, each at least SQUARE_HEIGHT tall (four in a row were ~170 px)
    heights = [json.loads(chart.proto.spec)["layout"]["height"] for chart in charts(app)]
    assert min(heights) >= SQUARE_HEIGHT >= MIN_HEIGHT
    holding_charts = [column for column in app.tabs[0].columns if column.get("plotly_chart")]
    assert [column.weight for column in holding_charts] == [1 / SQUARE_COLUMNS] * 2 * len(SIGNALS)  # heatmaps, then clouds
    assert "smooth: window 32, σ 10" in texts(app)
    app.radio(key="runs.interp.preset").set_value("fine").run()
    assert not app.exception and "fine: window 32, σ 2" in texts(app)
    app.radio(key="runs.interp.preset").set_value("custom").run()
    app.slider(key="runs.interp.sigma").set_value(4.0).run()
    assert not app.exception and "window 32, σ 4, K 32, grid 128" in texts(app)


def test_clicked_cell_shows_the_image_pairs(run_workspace, run_ids, app_runner):
    run_id = run_ids["bg-only"]
    matrix = run_matrices(run_workspace, run_id)["true_prob"]
    app = app_runner(MATRICES, run_workspace)
    app.selectbox(key="runs.run").set_value(run_id).run()
    x, y = map(float, run_point_clouds(run_workspace, run_id)["true_prob"].points[0])  # a cell with a point in it
    app.session_state[CELL] = {"run": run_id, "signal": "true_prob", "x": x, "y": y}
    app.run()
    assert not app.exception, app.exception
    assert "Image pairs behind the cell" in [h.value for h in app.subheader]
    # issue 47.3: the cell value is said to be RBF-smoothed, with the raw mean of the cell's points beside it
    row, col = matrix.cell_at(x, y)
    expected = cell_pairs(run_workspace, run_id, "true_prob", matrix, row, col, nearest=True).attrs
    caption = next(c.value for c in app.caption if "cell value" in c.value)
    assert f"cell value {matrix.matrix[row, col]:.4f}, RBF-smoothed: interpolated" in caption
    assert f"{expected['n_points']} points in the cell" in caption
    assert expected["n_points"] > 0 and f"raw mean {expected['raw_mean']:.4f}." in caption
    pairs = app.dataframe[0].value
    assert 0 < len(pairs) <= 12
    images = app.get("image")
    assert len(images) >= 3 * min(4, len(pairs))
    captions = [caption for image in images for caption in image.captions]
    assert any(c.startswith("original x") for c in captions) and any(c.startswith("j: ") for c in captions)
    # issue 47.8: the pairs open in a dialog over the matrices (not below all five), once per click
    (dialog,) = dialogs(app)
    assert "Image pairs behind the cell" in [h.value for h in dialog.subheader]
    app.run()  # a rerun for another widget leaves it closed
    assert not dialogs(app) and "Image pairs behind the cell" not in [h.value for h in app.subheader]
    app.button(key="runs.pairs_again").click().run()  # the button above the matrices opens it again
    assert not app.exception, app.exception
    assert len(dialogs(app)) == 1


def dialogs(app) -> list:
    """The open dialogs of the page (Streamlit's ``dialog`` blocks)."""
    found, blocks = [], [app._tree]
    while blocks:
        block = blocks.pop()
        if getattr(block, "type", None) == "dialog":
            found.append(block)
        blocks += [child for child in getattr(block, "children", {}).values()]
    return found


def test_page_without_finished_runs_points_to_the_run_page(tiny_model_workspace, app_runner):
    app = app_runner(MATRICES, tiny_model_workspace)
    assert not app.exception and "start one on the Run page" in texts(app)


def test_page_on_a_missing_workspace_explains(missing_workspace, app_runner):
    app = app_runner(MATRICES, missing_workspace)
    assert not app.exception and "no workspace" in app.error[0].value


def compared_heatmaps(app) -> list[dict]:
    """The heatmap trace of every model's chart of the Compare tab (one per compared model, the chosen signal; not the difference)."""
    return [t for t in _tab_heatmaps(app) if t.get("name") != "difference"]


def typed_array(value) -> np.ndarray:
    """A trace's array as sent: plotly's typed-array form (base64 bytes, dtype, shape) or a list."""
    if not isinstance(value, dict):
        return np.asarray(value)
    shown = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return shown.reshape([int(v) for v in str(value["shape"]).split(",")]) if "shape" in value else shown


def _tab_heatmaps(app) -> list[dict]:
    specs = [json.loads(chart.proto.spec) for chart in app.tabs[1].get("plotly_chart")]
    return [next(t for t in spec["data"] if t["type"] == "heatmap") for spec in specs]


def test_compare_tab_draws_candidate_minus_baseline_on_a_diverging_scale_centred_on_0(run_workspace, run_ids, app_runner):
    app = open_compare(app_runner(MATRICES, run_workspace))
    assert not app.exception, app.exception
    assert len(app.tabs[0].get("plotly_chart")) == 0  # the closed Run tab sends no chart
    app.radio(key="runs.compare_signal").set_value("true_prob").run()
    app.selectbox(key="runs.diff_candidate").set_value(run_ids["bg-only"]).run()
    app.selectbox(key="runs.diff_baseline").set_value(run_ids["fg-only"]).run()
    assert not app.exception, app.exception
    (trace,) = [t for t in _tab_heatmaps(app) if t.get("name") == "difference"]
    expected = run_matrices(run_workspace, run_ids["bg-only"])["true_prob"].matrix - run_matrices(run_workspace, run_ids["fg-only"])["true_prob"].matrix
    z = trace["z"]  # plotly's typed-array form: base64 bytes, dtype and shape
    shown = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape([int(v) for v in str(z["shape"]).split(",")])
    np.testing.assert_allclose(shown, expected)
    assert trace["zmid"] == 0 and trace["zmin"] == -trace["zmax"] == pytest.approx(-abs(expected).max())
    assert trace["colorscale"][0][1] != trace["colorscale"][-1][1]  # diverging: blue to red
    assert "Difference: candidate − baseline" in [h.value for h in app.subheader]


def test_compare_tab_draws_every_model_on_the_suite_scale_by_default(run_workspace, run_ids, app_runner):
    app = open_compare(app_runner(MATRICES, run_workspace))
    assert not app.exception, app.exception
    assert app.radio(key="runs.scale").value == SUITE  # the default, before any click
    assert sorted(app.multiselect(key="runs.compare").value) == sorted(run_ids.values())
    scale = suite_colour_scale(run_workspace, "tiny-suite")
    assert scale.frozen is None  # the Matrices page never freezes it; the Judge page does
    for signal in SIGNALS:
        app.radio(key="runs.compare_signal").set_value(signal).run()
        per_model = compared_heatmaps(app)
        assert [trace["zmin"] for trace in per_model] == [0.0] * 3
        assert [trace["zmax"] for trace in per_model] == pytest.approx([scale.tops[signal]] * 3)
    assert scale.tops["true_prob"] == 1.0
    assert "Colours: suite scale (live until judging starts)" in texts(app)


def test_autoscale_is_an_explicit_labelled_option(run_workspace, run_ids, app_runner):
    app = open_compare(app_runner(MATRICES, run_workspace))
    app.radio(key="runs.scale").set_value(AUTOSCALE).run()
    assert not app.exception, app.exception
    assert "not comparable" in AUTOSCALE and "per-model autoscale" in texts(app)
    assert all("zmax" not in trace for trace in compared_heatmaps(app))  # each matrix spans its own range


def test_compare_picker_is_prefilled_after_the_run_changes_to_another_suite(run_workspace, run_ids, app_runner):
    from analytics.runs import start_runs
    from tests.fixtures.models import insert_suite

    insert_suite(run_workspace, "other-suite", seed=1)
    (other,) = start_runs(run_workspace, ["tiny"], "other-suite", device="cpu")
    app = app_runner(MATRICES, run_workspace)
    other_suite = f"random, N = {TINY_SUITE_N}, seed 1, 6 targets"  # issue 27.10: runs read as model on suite, no ids
    assert f"tiny on {other_suite}" in app.selectbox(key="runs.run").options  # times have 1 s resolution: no "newest first"
    app.selectbox(key="runs.run").set_value(run_ids["bg-only"]).run()  # to a suite with three models
    open_compare(app)
    assert not app.exception, app.exception
    chosen = app.multiselect(key="runs.compare").value
    assert chosen[:1] == [run_ids["bg-only"]] and sorted(chosen) == sorted(run_ids.values())
    assert len(compared_heatmaps(app)) == 3
    app.selectbox(key="runs.run").set_value(other).run()  # back to the suite only "tiny" ran over
    assert not app.exception, app.exception
    assert app.multiselect(key="runs.compare").value == [other]
    assert any(f"Only tiny has a finished current run over suite {other_suite}" in i.value for i in app.info)
    app.multiselect(key="runs.compare").set_value([]).run()  # an emptied picker says what to do
    assert not app.exception and "Pick up to 4 models" in texts(app)


def test_the_closed_compare_tab_keeps_its_picks_and_the_report_names_them(run_workspace, run_ids, app_runner):
    """Issue 47.8: the Compare tab draws only while open; its picks outlive runs that do not draw it."""
    app = app_runner(MATRICES, run_workspace)
    app.selectbox(key="runs.run").set_value(run_ids["bg-only"]).run()
    open_compare(app)
    app.multiselect(key="runs.compare").set_value([run_ids["bg-only"], run_ids["tiny"]]).run()
    app.radio(key="runs.compare_signal").set_value("emb_max").run()
    app.selectbox(key="runs.diff_baseline").set_value(run_ids["bg-only"]).run()
    app.session_state["runs.tab"] = "Run"
    app.run().run()  # two runs that do not draw the Compare tab (Streamlit forgets an undrawn widget after one)
    assert not app.exception, app.exception
    assert len(charts(app)) == len(SIGNALS) and not app.tabs[1].get("plotly_chart")
    assert app.query_params["signal"] == "emb_max"
    caption = next(as_shown(c.value) for c in app.caption if as_shown(c.value).startswith("bg-only over suite"))
    assert "compared with tiny (the Compare tab's models)" in caption
    open_compare(app)
    assert app.multiselect(key="runs.compare").value == [run_ids["bg-only"], run_ids["tiny"]]
    assert app.radio(key="runs.compare_signal").value == "emb_max" and app.selectbox(key="runs.diff_baseline").value == run_ids["bg-only"]
    assert not app.warning, [w.value for w in app.warning]


def test_runs_and_suites_read_as_labels_not_hex_ids(run_workspace, run_ids, app_runner):
    """Issue 27.10: the run picker and the compare tab name a run by model and suite label, the suite by
    the name the user gave it (escaped: a name is untrusted text), never by a hex id."""
    name_suite(run_workspace, TINY_SUITE, "Shapes #1 _plain_")
    suite = f"Shapes #1 _plain_ (random, N = {TINY_SUITE_N}, seed 0, 6 targets)"
    app = open_compare(app_runner(MATRICES, run_workspace))
    assert not app.exception, app.exception
    options = app.selectbox(key="runs.run").options
    assert sorted(options) == sorted(f"{model} on {suite}" for model in run_ids)
    assert not any(run_id in option or TINY_SUITE in option for run_id in run_ids.values() for option in options)
    compare = app.multiselect(key="runs.compare")
    assert compare.label == f"Models with runs over suite {escape_markdown(suite)} (up to 4)" and "\\_plain\\_" in compare.label


# -- issue 16.3: deep links (run, signal, preset in the address) and the report -------------------------------
def linked_app(workspace, **params):
    """The Matrices page opened from an address carrying ``params`` (as ``?run=…&signal=…``)."""
    from streamlit.testing.v1 import AppTest

    from analytics.workspace import PROJECT_ROOT
    from tests.fixtures.app import APP_TIMEOUT_S
    from ui.state import WORKSPACE_PATH

    app = AppTest.from_file(str(PROJECT_ROOT / MATRICES), default_timeout=APP_TIMEOUT_S)
    app.session_state[WORKSPACE_PATH] = str(workspace.root)
    app.query_params.update(params)
    return app.run()


def test_a_link_opens_its_run_signal_and_preset(run_workspace, run_ids, app_runner):
    first = app_runner(MATRICES, run_workspace).selectbox(key="runs.run").value
    linked = next(r for r in run_ids.values() if r != first)  # not the page's default
    app = linked_app(run_workspace, run=linked, signal="emb_max", preset="fine")
    assert not app.exception, app.exception
    assert app.selectbox(key="runs.run").value == linked
    assert app.radio(key="runs.interp.preset").value == "fine" and "fine: window 32, σ 2" in texts(app)
    assert app.query_params["signal"] == "emb_max"  # the closed Compare tab keeps the link's signal ...
    open_compare(app)  # ... for when it opens
    assert app.radio(key="runs.compare_signal").value == "emb_max"
    assert not app.warning
    # the address follows the widgets, and a later rerun does not pull the old link back over a choice
    app.radio(key="runs.compare_signal").set_value("true_prob").run()
    app.selectbox(key="runs.run").set_value(first).run()
    assert not app.exception, app.exception
    assert app.query_params["run"] == first and app.query_params["signal"] == "true_prob" and app.query_params["preset"] == "fine"
    assert app.selectbox(key="runs.run").value == first


def test_a_page_opened_without_a_link_writes_its_view_to_the_address(run_workspace, run_ids, app_runner):
    app = app_runner(MATRICES, run_workspace)
    assert app.query_params["run"] == app.selectbox(key="runs.run").value
    assert app.query_params["signal"] == "true_prob" and app.query_params["preset"] == "smooth"


def test_a_link_to_an_unknown_run_warns_and_falls_back(run_workspace, run_ids):
    app = linked_app(run_workspace, run="no-such-run", signal="no-such-signal")
    assert not app.exception, app.exception
    warnings = [as_shown(w.value) for w in app.warning]
    assert any("run 'no-such-run'" in w for w in warnings) and any("signal 'no-such-signal'" in w for w in warnings)
    shown = app.selectbox(key="runs.run").value
    assert shown in run_ids.values() and app.query_params["run"] == shown  # the address names what is shown
    assert app.query_params["signal"] == "true_prob"
    assert open_compare(app).radio(key="runs.compare_signal").value == "true_prob"


def test_report_button_names_the_compared_models(run_workspace, run_ids, app_runner):
    app = app_runner(MATRICES, run_workspace)
    assert app.button(key="runs.report.build").label == "Build report (HTML)"  # the download follows the build
    model = list_runs(run_workspace).set_index("id").loc[app.selectbox(key="runs.run").value, "model"]
    others = sorted(set(run_ids) - {model})
    caption = next(as_shown(c.value) for c in app.caption if as_shown(c.value).startswith(f"{model} over suite"))
    assert all(other in caption for other in others)



def test_the_homes_link_opens_the_comparison_with_its_model_first_and_real_models_before_the_zoo(run_workspace, run_ids):
    from tests.fixtures.runs import mark_as_zoo_head

    newest_first = [r for r in list_runs(run_workspace)["id"] if r != run_ids["tiny"]]
    zoo = {v: k for k, v in run_ids.items()}[newest_first[0]]  # the one the newest-first order would show second
    mark_as_zoo_head(run_workspace, zoo)
    app = linked_app(run_workspace, run=run_ids["tiny"], tab="compare")
    assert not app.exception, app.exception
    assert app.multiselect(key="runs.compare").value == [run_ids["tiny"], newest_first[1], newest_first[0]]
    assert len(compared_heatmaps(app)) == 3


def test_picking_one_class_builds_the_matrices_and_metrics_from_its_targets(run_workspace, run_ids, app_runner):
    """Issue 27.9: a newcomer inspects their own class only."""
    from analytics.runs import load_run, run_of_classes

    run_id = run_ids["bg-only"]
    app = app_runner(MATRICES, run_workspace)
    app.selectbox(key="runs.run").set_value(run_id).run()
    assert app.multiselect(key="runs.classes").value == []  # every class by default: none picked
    app.multiselect(key="runs.classes").set_value(["disc"]).run()
    assert not app.exception, app.exception
    discs = run_of_classes(load_run(run_workspace, run_id), ["disc"])
    metrics = {m.label: m.value for m in app.tabs[0].metric}
    assert metrics["Accuracy"] == f"{discs.correct.mean():.1%}" and metrics["Points per matrix"] == f"{discs.n_points:,}"
    expected = run_matrices(run_workspace, run_id, classes=["disc"])["true_prob"].matrix
    z = json.loads(charts(app)[list(SIGNALS).index("true_prob")].proto.spec)["data"][0]["z"]  # plotly's typed-array form
    shown = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape([int(v) for v in str(z["shape"]).split(",")])
    np.testing.assert_allclose(shown, expected, atol=1e-6)


def test_a_class_filter_shows_the_librarys_worst_case_accuracy_which_leaves_the_original_out(run_workspace, run_ids, app_runner):
    """Issue 39.3: the page once counted the original in the worst case under a Classes filter (a
    stricter number than the run's). Every disc here is wrong on its own photo and right on every
    composite: worst-case accuracy 100% (the original is reported as the original accuracy)."""
    from analytics.runs import load_run, run_accuracies

    run_id = run_ids["bg-only"]
    with run_workspace.transaction() as conn:
        conn.execute(
            "UPDATE run_images SET correct = (position > 0) WHERE run_id = ? AND target_id IN (SELECT id FROM targets WHERE class_name = 'disc')",
            (run_id,),
        )
    app = app_runner(MATRICES, run_workspace)
    app.selectbox(key="runs.run").set_value(run_id).run()
    row = list_runs(run_workspace).set_index("id").loc[run_id]
    metrics = {m.label: m.value for m in app.tabs[0].metric}
    assert metrics["Worst-case accuracy"] == f"{row['worst_case_accuracy']:.1%}"  # every class: the run's own number
    app.multiselect(key="runs.classes").set_value(["disc"]).run()
    assert not app.exception, app.exception
    expected = run_accuracies(load_run(run_workspace, run_id), classes=["disc"])
    assert expected["worst_case_accuracy"] == 1.0 and expected["original_accuracy"] == 0.0
    metrics = {m.label: m.value for m in app.tabs[0].metric}
    assert [metrics[label] for label in ("Accuracy", "Worst-case accuracy", "Original accuracy")] == [
        f"{expected[key]:.1%}" for key in ("accuracy", "worst_case_accuracy", "original_accuracy")
    ]


def test_the_first_view_on_cold_caches_counts_the_targets_it_interpolates(run_workspace, app_runner, monkeypatch):
    """A first view whose matrices are not in the workspace cache computes them under a bar naming
    each step (a fresh server's first use of the compiled kernel took 3.7 s under a plain spinner,
    with an empty Numba cache), then the targets counted; the numbers are the library's, and a
    second view reads them back without a bar."""
    from analytics.runs import cached_matrices, load_run
    from analytics.runs.matrices import matrices_from_clouds
    from analytics.variance import DEFAULT_SETTINGS, _circle_sums

    with run_workspace.transaction() as conn:  # cold: the runs' jobs stored their default matrices
        conn.execute("DELETE FROM cache WHERE key LIKE 'runs/matrices/%'")
    monkeypatch.setattr(_circle_sums, "NUMPY_MAX_WORK", 0)  # the compiled path, as the demo's runs take
    texts_shown = record_bar_texts(monkeypatch)
    app = app_runner(MATRICES, run_workspace)
    assert not app.exception, app.exception
    run_id = app.selectbox(key="runs.run").value
    n_targets = len(load_run(run_workspace, run_id).target_ids)
    assert texts_shown[:2] == ["Computing the matrices…", "Computing the matrices: loading the compiled interpolation kernel…"]
    counts = texts_shown[2:]
    assert counts and counts[-1] == f"Computing the matrices: {n_targets} of {n_targets} targets", texts_shown
    assert all(text.startswith("Computing the matrices: ") and text.endswith(f" of {n_targets} targets") for text in counts)
    assert not app.get("progress")  # the bar is gone once the matrices are drawn
    expected = matrices_from_clouds(run_point_clouds(run_workspace, run_id), settings=DEFAULT_SETTINGS)
    stored = cached_matrices(run_workspace, run_id)
    for chart, (signal, matrix) in zip(charts(app), expected.items()):
        np.testing.assert_array_equal(stored[signal].matrix, matrix.matrix)
        cells = next(t for t in json.loads(chart.proto.spec)["data"] if t["type"] == "scatter")
        np.testing.assert_allclose(typed_array(cells["customdata"]), matrix.matrix.ravel(), rtol=1e-6)  # float32 on the wire
    texts_shown.clear()
    app.run()
    assert not app.exception and texts_shown == []  # read back from the workspace cache


def test_a_view_at_other_settings_counts_the_runs_its_colour_scale_reads(run_workspace, monkeypatch):
    """The suite scale at other settings than the default computes every run's matrices first (4.4 s
    for the demo's 39 zoo runs under a plain spinner): a bar counts the runs; the colours are the library's."""
    from analytics.runs import current_runs
    from analytics.variance import MatrixSettings
    from ui.colour_scale import describe

    texts_shown = record_bar_texts(monkeypatch)
    app = linked_app(run_workspace, preset="fine")
    assert not app.exception, app.exception
    suite_id = list_runs(run_workspace).set_index("id").loc[app.selectbox(key="runs.run").value, "suite_id"]
    n_runs = current_runs(run_workspace, suite_id=suite_id)["model"].nunique()
    what = "Setting the suite's colour scale from its runs' matrices"
    assert texts_shown == [f"{what}…", *(f"{what}: {done} of {n_runs} runs" for done in range(1, n_runs + 1))]
    assert not app.get("progress")
    scale = suite_colour_scale(run_workspace, suite_id, settings=MatrixSettings.of("fine"))
    assert describe(scale, autoscale=False) in [caption.value for caption in app.caption]
    texts_shown.clear()
    app.run()
    assert not app.exception and texts_shown == []  # the quantiles are stored: no bar, the cached scale

