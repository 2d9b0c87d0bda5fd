"""The Judge page (``pages/8_Judge.py``) on tiny models with finished runs over ``tiny-suite``."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from analytics.judgments import judgment_history, latest_judgments
from analytics.workspace import PROJECT_ROOT
from tests.fixtures.app import APP_TIMEOUT_S
from tests.fixtures.judging import JUDGING_MODELS, TINY_SUITE, judge
from ui.judge import button_key
from ui.state import ANNOTATOR, WORKSPACE_PATH

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
    assert re.fullmatch(rf"Model #\d+ of {len(JUDGING_MODELS)}", heading)
    shown = texts(app)
    assert not any(re.search(rf"\b{re.escape(name)}\b", shown) for name in JUDGING_MODELS)
    charts = app.get("plotly_chart")
    assert len(charts) == 4
    assert "0 of 9" in app.get("progress")[0].proto.text


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
    assert app.subheader[0].value in JUDGING_MODELS
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
    assert app.subheader[0].value.startswith("Model #")


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
    shown = app.subheader[0].value
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
    from analytics.models import custom_label_space, register_torchscript
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
