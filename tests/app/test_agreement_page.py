"""The Agreement page (``pages/9_Agreement.py``): κ, α, sample sizes and intervals, pairs, annotators
against the majority, per-model table, confusion, history."""

from __future__ import annotations

import time

import pytest
from streamlit.testing.v1 import AppTest

from analytics.judging import MIN_SHARED_MODELS, add_judgment, latest_judgments, measure_agreement
from analytics.workspace import PROJECT_ROOT
from tests.fixtures.app import APP_TIMEOUT_S
from tests.fixtures.judging import JUDGMENTS, TINY_SUITE
from ui.auth import LAST_SEEN
from ui.state import SIGNED_IN

AGREEMENT = "pages/9_Agreement.py"


def test_page_shows_fleiss_and_cohen_kappa(judged_workspace_to_read, app_runner):
    app = app_runner(AGREEMENT, judged_workspace_to_read)
    assert not app.exception, app.exception
    expected = measure_agreement(latest_judgments(judged_workspace_to_read, TINY_SUITE))
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Fleiss' κ"] == f"{expected.fleiss_kappa:.2f}"
    assert metrics["Annotators"] == "2"
    assert any("chance" in caption.value for caption in app.caption)  # the one-line explanation
    pairs = app.dataframe[0].value
    assert pairs[["Annotator A", "Annotator B"]].values.tolist() == [["ana", "ben"]]
    assert pairs["Cohen's κ"].iloc[0] == pytest.approx(expected.cohen_kappa[("ana", "ben")])
    assert pairs["Shared models"].iloc[0] == len(JUDGMENTS)
    assert len(app.get("plotly_chart")) == 2  # Cohen heatmap and confusion


def test_per_model_table_and_majority(judged_workspace_to_read, app_runner):
    app = app_runner(AGREEMENT, judged_workspace_to_read)
    table = app.dataframe[-1].value.set_index("Model")
    assert table.loc["net2", "Majority vote"] == "variant"  # variant vs borderline: the cautious label
    assert table.loc["net5", "Share agreeing"] == pytest.approx(0.5)
    assert table.loc["fg-only", "Share agreeing"] == pytest.approx(1.0)
    assert "2 invariant · 3 borderline · 3 variant" in "\n".join(m.value for m in app.markdown)


def test_confusion_between_the_chosen_annotators(judged_workspace, app_runner):
    add_judgment(judged_workspace, annotator="cleo", model="net1", label="variant", suite_id=TINY_SUITE)
    app = app_runner(AGREEMENT, judged_workspace)
    app.selectbox(key="agreement.second").set_value("cleo").run()
    assert not app.exception, app.exception
    figure = app.get("plotly_chart")[-1].proto.spec
    assert '"ana' in figure and "cleo" in figure
    app.selectbox(key="agreement.second").set_value("ana").run()
    assert "two different annotators" in app.info[0].value


def test_history_download_holds_every_row(judged_workspace, app_runner):
    add_judgment(judged_workspace, annotator="ana", model="net5", label="variant", suite_id=TINY_SUITE)  # a changed judgment
    app = app_runner(AGREEMENT, judged_workspace)
    button = app.get("download_button")[0]
    assert "17 rows" in button.proto.label


def test_one_annotator_gets_an_explicit_empty_state(judging_workspace, app_runner):
    add_judgment(judging_workspace, annotator="ana", model="tiny", label="variant", suite_id=TINY_SUITE)
    app = app_runner(AGREEMENT, judging_workspace)
    assert not app.exception, app.exception
    assert "at least two annotators" in app.info[0].value
    assert {m.label: m.value for m in app.metric}["Fleiss' κ"] == "N/A"


def test_no_judgments_says_where_to_judge(judging_workspace, app_runner):
    app = app_runner(AGREEMENT, judging_workspace)
    assert not app.exception, app.exception
    assert "Judge" in app.info[0].value


def test_agreement_is_per_suite(judged_workspace, app_runner):
    from tests.fixtures.models import insert_suite

    other = insert_suite(judged_workspace, "other-suite", seed=1)
    add_judgment(judged_workspace, annotator="cleo", model="net1", label="variant", suite_id=other)
    app = app_runner(AGREEMENT, judged_workspace)
    assert not app.exception, app.exception
    assert app.selectbox(key="agreement.suite").value == TINY_SUITE  # the suite with the most judged models first
    assert {m.label: m.value for m in app.metric}["Annotators"] == "2"  # cleo judged another suite
    app.selectbox(key="agreement.suite").set_value(other).run()
    assert not app.exception, app.exception
    assert {m.label: m.value for m in app.metric}["Annotators"] == "1"
    assert "at least two annotators" in app.info[0].value


def test_statistics_show_their_sample_size_interval_and_a_warning(judged_workspace_to_read, app_runner):
    app = app_runner(AGREEMENT, judged_workspace_to_read)
    assert not app.exception, app.exception
    expected = measure_agreement(latest_judgments(judged_workspace_to_read, TINY_SUITE))
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Krippendorff's α"] == f"{expected.alpha['ordinal'].value:.2f}"
    captions = "\n".join(caption.value for caption in app.caption)
    shared = len(JUDGMENTS)  # 8 models judged by both: below the minimum
    assert captions.count(f"{shared} shared models (fewer than {MIN_SHARED_MODELS})") >= 3  # κ, ordinal α, nominal α
    assert f"95% CI {expected.fleiss.low:.2f} to {expected.fleiss.high:.2f}" in captions
    assert len(app.warning) == 1 and f"Only {shared} model(s)" in app.warning[0].value
    pairs = app.dataframe[0].value
    assert pairs["Shared models"].iloc[0] == shared and pairs["Strength"].iloc[0].endswith("(few models)")
    low, high = expected.cohen[("ana", "ben")].low, expected.cohen[("ana", "ben")].high
    assert pairs["95% CI"].iloc[0] == f"{low:.2f} to {high:.2f}"


def test_each_annotator_against_the_majority(judged_workspace_to_read, app_runner):
    app = app_runner(AGREEMENT, judged_workspace_to_read)
    table = app.dataframe[1].value.set_index("Annotator")
    # two annotators: the others' majority is the other one's label, so both agree on 6 of 8 models
    assert table.loc["ana", "With the others' majority"] == pytest.approx(6 / 8)
    assert table.loc["ben", "Shared models"] == len(JUDGMENTS)
    # everyone's majority breaks the two ties (net2, net5) towards the cautious label, which ana gave once (net2)
    assert table.loc["ana", "With everyone's majority"] == pytest.approx(7 / 8)
    assert table.loc["ben", "With everyone's majority"] == pytest.approx(7 / 8)


def test_no_warning_with_enough_shared_models(judged_workspace, app_runner):
    from tests.fixtures.judgments import register_models

    register_models(judged_workspace, ["extra1", "extra2"])
    extra = [("ana", "extra1", "variant"), ("ben", "extra1", "variant"), ("ana", "extra2", "invariant"), ("ben", "extra2", "borderline")]
    for annotator, model, label in extra:
        add_judgment(judged_workspace, annotator=annotator, model=model, label=label, suite_id=TINY_SUITE)
    app = app_runner(AGREEMENT, judged_workspace)
    assert not app.exception, app.exception
    assert not app.warning
    captions = "\n".join(caption.value for caption in app.caption)
    assert f"{MIN_SHARED_MODELS} shared models ·" in captions and "shared models (fewer than" not in captions


def test_empty_state_says_how_to_judge_in_each_mode(tiny_workspace, team_workspace, app_runner, monkeypatch):
    solo = app_runner(AGREEMENT, tiny_workspace)
    assert not solo.exception, solo.exception
    assert "enter your name in the sidebar" in solo.info[0].value  # solo mode's sidebar has "Your name"
    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(team_workspace.root))
    team = AppTest.from_file(str(PROJECT_ROOT / AGREEMENT), default_timeout=APP_TIMEOUT_S)
    team.session_state[SIGNED_IN] = "ada"
    team.session_state[LAST_SEEN] = time.time()
    team.run()
    assert not team.exception, team.exception
    shown = team.info[0].value  # team mode's sidebar has no name field: the account signs judgments
    assert "sidebar" not in shown and "signed in as admin or analyst or annotator" in shown
