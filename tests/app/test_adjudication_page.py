"""The Adjudication page (``pages/12_Adjudication.py``) on the judged tiny workspace: ana and ben
disagree about ``net2`` and ``net5`` on ``tiny-suite``."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from analytics.judging import blind_name, consensus_history, training_labels
from analytics.team import add_user
from analytics.variance import PRESETS
from analytics.workspace import PROJECT_ROOT
from tests.fixtures.app import APP_TIMEOUT_S
from tests.fixtures.judging import JUDGMENTS, TINY_SUITE
from tests.fixtures.team import TEAM_PASSWORD
from ui import adjudication as view
from ui import auth
from ui.judge import READING_NOTE
from ui.state import ANNOTATOR, WORKSPACE_PATH

ADJUDICATION = "pages/12_Adjudication.py"
DISAGREEING = sorted(model for model, (first, second) in JUDGMENTS.items() if first != second)


def page(workspace=None, annotator: str = "") -> AppTest:
    app = AppTest.from_file(str(PROJECT_ROOT / ADJUDICATION), default_timeout=APP_TIMEOUT_S)
    if workspace is not None:  # solo mode: the workspace and name the sidebar would give
        app.session_state[WORKSPACE_PATH] = str(workspace.root)
        app.session_state[ANNOTATOR] = annotator
    return app.run()


def record(app: AppTest, label: str, reason: str) -> AppTest:
    app.radio(key=view.LABEL).set_value(label)
    app.text_area(key=view.REASON).input(reason)
    return app.button[0].click().run()  # the form's only button: "Record consensus"


def test_lists_the_disagreeing_models_with_both_labels_and_the_matrices(judged_workspace):
    app = page(judged_workspace, "lee")
    assert not app.exception, app.exception
    listed = app.dataframe[0].value
    assert list(listed["Model"]) == DISAGREEING and set(listed["Consensus"]) == {"—"}
    assert list(listed["Shown blind as"]) == [blind_name(judged_workspace, TINY_SUITE, model) for model in DISAGREEING]  # notes may name it
    assert app.selectbox(key=view.KEY + "model").value == DISAGREEING[0]
    shown = "\n".join(m.value for m in app.markdown)
    ana, ben = JUDGMENTS[DISAGREEING[0]]
    assert "**ana**" in shown and "**ben**" in shown and f">{ana}</span>" in shown and f">{ben}</span>" in shown
    assert len(app.get("plotly_chart")) == 4
    assert app.radio(key=view.KEY + "preset").options == list(PRESETS)  # the Judge page's matrix panel
    assert any(READING_NOTE in caption.value for caption in app.caption)
    majority = app.dataframe[0].value.set_index("Model").at[DISAGREEING[0], "Majority vote"]
    assert app.radio(key=view.LABEL).value == majority  # the form starts from the majority


def test_records_a_consensus_with_a_reason_that_the_assessor_then_learns(judged_workspace):
    model = DISAGREEING[0]
    app = page(judged_workspace, "lee")
    before = training_labels(judged_workspace, TINY_SUITE)[model]
    label = "invariant" if before != "invariant" else "variant"
    app = record(app, label, "   ")
    assert not app.exception and "reason is required" in app.error[0].value
    assert consensus_history(judged_workspace).empty
    app = record(app, label, "the near backgrounds stay green")
    assert not app.exception, app.exception
    history = consensus_history(judged_workspace, TINY_SUITE)
    assert history[["model", "label", "adjudicator", "reason"]].values.tolist() == [[model, label, "lee", "the near backgrounds stay green"]]
    assert f"{model} is **{label}**" in app.success[0].value
    assert app.text_area(key=view.REASON).value == ""
    assert app.dataframe[0].value.set_index("Model").at[model, "Consensus"] == label
    assert list(app.dataframe[1].value["Consensus"]) == [label]  # the history table
    assert training_labels(judged_workspace, TINY_SUITE)[model] == label
    assert [b.proto.label for b in app.get("download_button")] == ["Export judgments + consensus (CSV)"]


@pytest.fixture
def team_server(judged_workspace, fast_hashing, monkeypatch):
    """Team mode on the judged workspace with an analyst ``lee`` and an annotator ``ann``."""
    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(judged_workspace.root))
    add_user(judged_workspace, "lee", "analyst", TEAM_PASSWORD)
    add_user(judged_workspace, "ann", "annotator", TEAM_PASSWORD)
    return judged_workspace


def sign_in(name: str) -> AppTest:
    app = page()
    app.text_input(key=f"{auth.FORM}.name").input(name)
    app.text_input(key=f"{auth.FORM}.password").input(TEAM_PASSWORD)
    return app.button[0].click().run()


def test_team_mode_refuses_an_annotator_and_signs_with_the_lead_account(team_server):
    app = sign_in("ann")
    assert not app.exception and not app.title and not app.dataframe
    assert "needs the role admin or analyst" in app.error[0].value
    app = sign_in("lee")
    assert not app.exception and [t.value for t in app.title] == ["Adjudication"]
    assert not app.text_input  # no name box: the account signs
    app = record(app, "borderline", "agreed in review")
    assert not app.exception, app.exception
    assert list(consensus_history(team_server)["adjudicator"]) == ["lee"]
