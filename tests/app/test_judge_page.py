"""The Judge page (``pages/8_Judge.py``) on tiny models with finished runs over ``tiny-suite``."""

from __future__ import annotations

import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from analytics.judging import assign, blind_name, get_plan, judgment_history, latest_judgments
from analytics.judging.assignments import list_assignments
from analytics.team import add_user
from analytics.variance import PRESETS
from analytics.workspace import PROJECT_ROOT
from tests.fixtures.app import APP_TIMEOUT_S, as_shown, record_bar_texts
from tests.fixtures.judging import JUDGING_MODELS, TINY_SUITE, judge, run_ids_by_model
from tests.fixtures.team import TEAM_PASSWORD
from ui.auth import LAST_SEEN
from ui.judge import READING_NOTE, button_key
from ui.state import ANNOTATOR, SIGNED_IN, WORKSPACE_PATH

JUDGE = "pages/8_Judge.py"


def judge_page(workspace, annotator: str = "ana") -> AppTest:
    """The Judge page on ``workspace`` with ``annotator`` already entered (as the sidebar would)."""
    app = AppTest.from_file(str(PROJECT_ROOT / JUDGE), default_timeout=APP_TIMEOUT_S)
    app.session_state[WORKSPACE_PATH] = str(workspace.root)
    app.session_state[ANNOTATOR] = annotator
    return app.run()


def texts(app) -> str:
    return "\n".join(element.value for kind in ("markdown", "caption", "subheader") for element in app.get(kind))


def test_blind_mode_shows_an_opaque_id_and_four_matrices(judging_workspace):
    app = judge_page(judging_workspace)
    assert not app.exception, app.exception
    heading = app.subheader[0].value
    assert re.fullmatch(r"Model [0-9A-F]{6}", heading)
    assert heading in {blind_name(judging_workspace, TINY_SUITE, model) for model in JUDGING_MODELS}
    shown = texts(app)
    assert not any(re.search(rf"\b{re.escape(name)}\b", shown) for name in JUDGING_MODELS)
    charts = app.get("plotly_chart")
    assert len(charts) == 4
    assert app.radio(key="judge.preset").options == list(PRESETS) and READING_NOTE in shown  # the shared matrix panel
    assert "0 of 9" in app.get("progress")[0].proto.text


def test_matrices_are_two_a_row_with_readable_colour_bars_and_axes_in_words(judging_workspace):
    """Issue 27.14: four a row left ~140 px matrices with thin horizontal bars and axes reading only d(y_ij, x_i)."""
    import json

    from analytics.figures import SQUARE_HEIGHT

    app = judge_page(judging_workspace)
    assert not app.exception, app.exception
    holding = [column for column in app.columns if column.get("plotly_chart")]
    assert len(holding) == 4 and all(column.weight == 0.5 for column in holding)  # two a row
    for chart in app.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        layout, bar = spec["layout"], spec["data"][0]["colorbar"]
        assert layout["height"] >= SQUARE_HEIGHT
        assert "distance of background j from the original" in layout["xaxis"]["title"]["text"] and "d(y_ij, x_i)" in layout["xaxis"]["title"]["text"]
        y_title = layout["yaxis"]["title"]["text"].replace("<br>", " ")  # in short lines, so a narrow plot does not clip it
        assert "distance of background k from the original" in y_title and "d(y_ik, x_i)" in y_title
        assert bar.get("orientation", "v") == "v" and bar["thickness"] >= 14 and bar["ticktext"]


def test_a_label_button_stores_a_judgment_with_run_and_suite(judging_workspace):
    app = judge_page(judging_workspace)
    first = app.subheader[0].value
    app.text_input(key="judge.note").input("yellow at the far corner")
    app.button_group(key="judge.confidence").set_value("high")
    app.button(key=button_key("variant")).click().run()
    assert not app.exception, app.exception
    stored = latest_judgments(judging_workspace)
    assert len(stored) == 1
    row = stored.iloc[0]
    assert (row["annotator"], row["label"], row["suite_id"]) == ("ana", "variant", TINY_SUITE)
    assert row["run_id"] and row["model"] in JUDGING_MODELS
    assert (row["note"], row["confidence"]) == ("yellow at the far corner", 1.0)
    assert app.text_input(key="judge.note").value == ""  # cleared for the next model
    assert app.subheader[0].value != first  # the next model of the queue
    assert "1 of 9" in app.get("progress")[0].proto.text
    assert "is **variant**" in app.success[0].value


def test_change_my_last_judgment_adds_a_row(judging_workspace):
    app = judge_page(judging_workspace)
    app.button(key=button_key("invariant")).click().run()
    app.button(key=button_key("borderline", change=True)).click().run()
    assert not app.exception, app.exception
    history = judgment_history(judging_workspace)
    assert history["label"].tolist() == ["invariant", "borderline"]
    assert history["model"].nunique() == 1
    assert latest_judgments(judging_workspace)["label"].tolist() == ["borderline"]


def test_without_blind_mode_the_name_and_accuracy_show(judging_workspace):
    app = judge_page(judging_workspace)
    app.toggle(key="judge.blind").set_value(False).run()
    assert not app.exception, app.exception
    assert as_shown(app.subheader[0].value) in JUDGING_MODELS
    assert "worst-case accuracy" in texts(app)


def test_queue_skips_judged_models_and_ends(judging_workspace):
    judge(judging_workspace, "ana", {model: "invariant" for model in JUDGING_MODELS[:-1]})
    app = judge_page(judging_workspace)
    assert "8 of 9" in app.get("progress")[0].proto.text
    app.button(key=button_key("borderline")).click().run()
    assert not app.exception, app.exception
    assert "judged all 9 models" in app.success[-1].value
    assert set(latest_judgments(judging_workspace)["model"]) == set(JUDGING_MODELS)


def test_without_a_name_the_page_asks_for_one(judging_workspace):
    app = judge_page(judging_workspace, annotator="")
    assert not app.exception, app.exception
    assert "Who is judging" in app.info[0].value
    app.text_input(key="judge.name").input("cleo")
    app.button[0].click().run()
    assert not app.exception, app.exception
    assert app.session_state[ANNOTATOR] == "cleo"
    assert app.subheader[0].value.startswith("Model ")


def test_without_runs_the_page_says_what_to_do(tiny_model_workspace):
    app = judge_page(tiny_model_workspace)
    assert not app.exception, app.exception
    assert "Nothing to judge yet" in app.info[0].value


def test_saliency_summary_on_demand_stays_blind(judging_workspace):
    app = judge_page(judging_workspace)
    assert not app.metric
    app.toggle(key="judge.saliency").set_value(True).run()
    assert not app.exception, app.exception
    shares = {metric.label: metric.value for metric in app.metric}
    assert set(shares) == {"Attribution on the object: originals", "Attribution on the object: composites"}
    assert all(value.endswith("%") for value in shares.values())
    assert not any(re.search(rf"\b{re.escape(name)}\b", texts(app)) for name in JUDGING_MODELS)



def test_a_click_for_a_model_judged_meanwhile_saves_nothing(judging_workspace):
    app = judge_page(judging_workspace)
    app.toggle(key="judge.blind").set_value(False).run()
    shown = as_shown(app.subheader[0].value)
    judge(judging_workspace, "ana", {shown: "invariant"})  # as a click that landed during a page update did
    app.button(key=button_key("variant")).click().run()
    assert not app.exception, app.exception
    assert "Nothing saved" in app.warning[0].value
    history = judgment_history(judging_workspace)
    assert history["label"].tolist() == ["invariant"] and history["model"].tolist() == [shown]


def test_the_queue_is_per_suite(judging_workspace):
    from analytics.runs import start_runs
    from tests.fixtures.models import insert_suite

    judge(judging_workspace, "ana", {model: "invariant" for model in JUDGING_MODELS})
    other = insert_suite(judging_workspace, "other-suite", seed=1)
    start_runs(judging_workspace, ["tiny", "fg-only"], other)
    app = judge_page(judging_workspace)
    assert "judged all 9 models" in app.success[-1].value  # tiny-suite: most runs, listed first
    app.selectbox(key="judge.suite").set_value(other).run()
    assert not app.exception, app.exception
    assert "0 of 2" in app.get("progress")[0].proto.text  # judged on tiny-suite, still to judge here
    app.button(key=button_key("variant")).click().run()
    assert set(latest_judgments(judging_workspace, other)["suite_id"]) == {other}


def test_a_replaced_model_is_back_in_the_queue_with_its_new_run(judging_workspace, tiny_model_files):
    from analytics.data import custom_label_space
    from analytics.models import register_torchscript
    from analytics.runs import start_runs

    judge(judging_workspace, "ana", {model: "invariant" for model in JUDGING_MODELS})
    labels = custom_label_space(tiny_model_files["labels"])
    register_torchscript(judging_workspace, "tiny", checkpoint=tiny_model_files["bg-only"], label_space=labels, input_size=64, replace=True)
    app = judge_page(judging_workspace)
    assert "8 of 8" in app.get("progress")[0].proto.text  # the stale run of the old weights is not judged again
    (new_run,) = start_runs(judging_workspace, ["tiny"], TINY_SUITE)
    app = judge_page(judging_workspace)
    app.toggle(key="judge.blind").set_value(False).run()
    assert app.subheader[0].value == "tiny" and "8 of 9" in app.get("progress")[0].proto.text
    app.button(key=button_key("variant")).click().run()
    row = latest_judgments(judging_workspace, TINY_SUITE).set_index("model").loc["tiny"]
    assert (row["run_id"], row["label"]) == (new_run, "variant")


# -- team mode ---------------------------------------------------------------------------------------
@pytest.fixture
def team_judging(judging_workspace, fast_hashing, monkeypatch):
    """Team mode on ``judging_workspace`` with lead ``lee`` (analyst), annotator ``ann`` and viewer ``vic``."""
    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(judging_workspace.root))
    for name, role in (("lee", "analyst"), ("ann", "annotator"), ("vic", "viewer")):
        add_user(judging_workspace, name, role, TEAM_PASSWORD)
    return judging_workspace


def signed_in_judge_page(name: str) -> AppTest:
    """The Judge page in a session where ``name`` has signed in (as the sign-in form would leave it)."""
    app = AppTest.from_file(str(PROJECT_ROOT / JUDGE), default_timeout=APP_TIMEOUT_S)
    app.session_state[SIGNED_IN] = name
    app.session_state[LAST_SEEN] = time.time()
    return app.run()


def everything_shown(app: AppTest) -> str:
    """Every text and option the page shows (main area and sidebar)."""
    parts = [texts(app)] + [e.value for kind in ("success", "info", "warning", "error") for e in app.get(kind)]
    parts += [p.proto.text for p in app.get("progress")] + [str(o) for box in app.selectbox for o in box.options]
    return "\n".join(parts)


def test_annotator_sees_only_assigned_models_under_aliases(team_judging):
    assign(team_judging, TINY_SUITE, ["tiny", "net1"], ["ann"])
    runs = run_ids_by_model(team_judging)
    app = signed_in_judge_page("ann")
    assert not app.exception, app.exception
    assert app.subheader[0].value in {blind_name(team_judging, TINY_SUITE, "tiny"), blind_name(team_judging, TINY_SUITE, "net1")}
    shown = everything_shown(app)
    assert not any(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", shown) for name in JUDGING_MODELS)  # "tiny-suite" is the suite
    assert not any(run_id in shown for run_id in runs.values())
    assert "0 of 2" in app.get("progress")[0].proto.text and "judgments wanted" in shown
    assert "judge.blind" not in [t.key for t in app.toggle]  # blind, without a way out
    assert "Assignments" not in [e.label for e in app.expander]
    app.button(key=button_key("variant")).click().run()
    assert not app.exception, app.exception
    assert "1 of 2" in app.get("progress")[0].proto.text
    stored = latest_judgments(team_judging, TINY_SUITE)
    assert stored["annotator"].tolist() == ["ann"] and stored["model"].iloc[0] in {"tiny", "net1"}


def test_annotator_without_assignments_is_told_to_ask_a_lead(team_judging):
    app = signed_in_judge_page("ann")
    assert not app.exception, app.exception
    assert "Nothing is assigned to you" in app.info[0].value and not app.get("plotly_chart")


def test_viewer_is_refused_with_the_role_needed(team_judging):
    app = signed_in_judge_page("vic")
    assert not app.exception, app.exception
    assert not app.title and not app.get("plotly_chart")
    assert "needs the role admin or analyst or annotator" in app.error[0].value


def test_analyst_sees_names_and_assigns(team_judging):
    app = signed_in_judge_page("lee")
    assert not app.exception, app.exception
    assert "Assignments" in [e.label for e in app.expander]
    app.toggle(key="judge.blind").set_value(False).run()
    assert as_shown(app.subheader[0].value) in JUDGING_MODELS
    app.multiselect(key="judge.assign_models").set_value(["net1", "net2"])
    app.multiselect(key="judge.assign_people").set_value(["ann"])
    app.button(key="judge.assign").click().run()
    assert not app.exception, app.exception
    assert {(a.model, a.annotator, a.assigned_by) for a in list_assignments(team_judging, TINY_SUITE)} == {("net1", "ann", "lee"), ("net2", "ann", "lee")}
    assert "Assigned: 2" in app.success[0].value
    app.number_input(key="judge.plan_k").set_value(3)
    app.button(key="judge.plan").click().run()
    assert not app.exception, app.exception
    assert get_plan(team_judging, TINY_SUITE).judgments_wanted == 3
    assert "0 of 9" in signed_in_judge_page("ann").get("progress")[0].proto.text  # everyone judges everything now


def _listings(statements) -> int:
    return sum(s.sql.startswith("SELECT r.id, r.model, r.suite_id, r.status, r.summary") for s in statements)


def test_a_rerun_lists_the_runs_once(judging_workspace, sql_trace):
    """Issue 28.3: suites, queue and progress all need the runs; the page lists them once per rerun."""
    app = judge_page(judging_workspace)
    assert not app.exception, app.exception
    assert _listings(sql_trace) == 1
    sql_trace.clear()
    app.button(key=button_key("variant")).click().run()
    assert not app.exception, app.exception
    assert _listings(sql_trace) == 1


def test_the_page_says_which_signals_differ_most_between_the_models(judging_workspace):
    """Issue 47.11: the page names the signals in which the suite's models' matrices differ most, in the
    library's order, on the colour scale the heatmaps use (and says how that scale was chosen)."""
    from analytics.runs import EMBEDDING_RANGE, suite_colour_scale, suite_signal_differences
    from ui.judge import JUDGED_SIGNALS, SHORT_TITLES

    app = judge_page(judging_workspace)
    assert not app.exception, app.exception
    sentence = next(element.value for element in app.markdown if "differ most" in element.value)
    scale = suite_colour_scale(judging_workspace, TINY_SUITE)  # frozen by the page
    assert scale.frozen is not None
    runs = sorted(run_ids_by_model(judging_workspace).values())
    ranking = suite_signal_differences(judging_workspace, runs, scale, signals=JUDGED_SIGNALS)
    assert sentence.startswith(f"Where the {len(JUDGING_MODELS)} models of this suite differ most: **{SHORT_TITLES[ranking['signal'][0]]} ")
    shares = [sentence.index(f"{SHORT_TITLES[signal]} {share:.0%}") for signal, share in zip(ranking["signal"], ranking["difference"])]
    assert len(shares) == len(JUDGED_SIGNALS) and shares == sorted(shares)  # every judged signal, largest first
    assert EMBEDDING_RANGE in texts(app)  # how the scale was chosen


def test_matrices_not_in_the_workspace_cache_are_computed_under_a_bar_counting_targets(judging_workspace, monkeypatch):
    """The Judge page's matrices come from the workspace cache; a run's that are not there are computed
    under a bar that names the step and counts the targets (was a plain spinner), and are the library's."""
    import numpy as np

    from analytics.runs import cached_matrices, load_run, run_point_clouds
    from analytics.runs.matrices import matrices_from_clouds
    from analytics.variance import DEFAULT_SETTINGS
    from ui.judge import JUDGED_SIGNALS

    with judging_workspace.transaction() as conn:
        conn.execute("DELETE FROM cache WHERE key LIKE 'runs/matrices/%'")
    texts_shown = record_bar_texts(monkeypatch)
    app = judge_page(judging_workspace)
    assert not app.exception, app.exception
    counted = [text for text in texts_shown if text and text.startswith("Computing the matrices: ") and text.endswith(" targets")]
    assert counted, texts_shown
    computed = {run_id: found for run_id in run_ids_by_model(judging_workspace).values() if (found := cached_matrices(judging_workspace, run_id))}
    assert len(computed) == 1, list(computed)  # the model shown, computed once and kept in the workspace
    (run_id, stored), = computed.items()
    n_targets = len(load_run(judging_workspace, run_id).target_ids)
    assert f"Computing the matrices: {n_targets} of {n_targets} targets" in counted
    expected = matrices_from_clouds(run_point_clouds(judging_workspace, run_id), settings=DEFAULT_SETTINGS)  # not through the cache
    for signal in JUDGED_SIGNALS:
        np.testing.assert_array_equal(stored[signal].matrix, expected[signal].matrix)
    texts_shown.clear()
    app.run()
    assert not app.exception and not [text for text in texts_shown if text and text.startswith("Computing the matrices")]  # read back
