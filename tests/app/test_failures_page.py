"""The Failures page (``pages/16_Failures.py``): pick a run, see its keyword failure table (minimum count
slider), the keyword x model heat map of the suite and the report download; a workspace without runs
says what to do; in team mode annotators (who judge blind) are refused."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from analytics.failures import failure_table
from analytics.keywords import save_keyword_table
from analytics.team.accounts import add_user
from analytics.workspace import PROJECT_ROOT
from tests.fixtures.app import APP_TIMEOUT_S
from tests.fixtures.suites import BACKGROUND_KEYWORDS, BACKGROUND_TABLE, onehot_table
from tests.fixtures.team import TEAM_PASSWORD
from ui import auth

FAILURES_PAGE = "pages/16_Failures.py"


@pytest.fixture
def keyword_run_workspace(run_workspace):
    """``run_workspace`` (runs of tiny, fg-only, bg-only) with the suite fixtures' background keyword table."""
    backgrounds = [row["id"] for row in run_workspace.query("SELECT id FROM backgrounds ORDER BY id")]
    save_keyword_table(run_workspace, onehot_table(backgrounds, BACKGROUND_KEYWORDS), name=BACKGROUND_TABLE, item_kind="background")
    return run_workspace


def test_page_shows_the_keyword_table_heat_map_and_report_button(app_runner, keyword_run_workspace, run_ids):
    app = app_runner(FAILURES_PAGE, keyword_run_workspace)
    assert not app.exception
    assert app.title[0].value == "Failures"
    run_id = app.selectbox(key="failures.run").value
    expected = failure_table(keyword_run_workspace, run_id, min_count=3).keywords
    shown = app.dataframe[0].value
    assert list(shown["Keyword"]) == list(expected["keyword"])
    assert list(shown["Composites"]) == list(expected["count"])
    assert len(app.get("plotly_chart")) == 1
    assert set(app.multiselect(key="failures.models").value) == set(run_ids)
    assert any(e.proto.label == "Download report (HTML)" for e in app.get("download_button"))

    app.slider(key="failures.min_count").set_value(50).run()
    assert not app.exception
    assert app.dataframe[0].value.empty
    assert any("No keyword has that many composites" in info.value for info in app.info)


def test_other_run_and_fewer_models(app_runner, keyword_run_workspace, run_ids):
    app = app_runner(FAILURES_PAGE, keyword_run_workspace)
    app.selectbox(key="failures.run").set_value(run_ids["bg-only"]).run()
    expected = failure_table(keyword_run_workspace, run_ids["bg-only"], min_count=3).keywords
    assert list(app.dataframe[0].value["Error rate"]) == pytest.approx(list(expected["error_rate"]))
    app.multiselect(key="failures.models").set_value([]).run()
    assert not app.exception
    assert len(app.get("plotly_chart")) == 0


def test_workspace_without_runs_says_what_to_do(app_runner, tiny_workspace):
    app = app_runner(FAILURES_PAGE, tiny_workspace)
    assert not app.exception
    assert "No finished run yet" in app.info[0].value


@pytest.fixture
def team_failures(keyword_run_workspace, fast_hashing, monkeypatch):
    """Team mode on the keyword run workspace with a viewer ``vi`` and an annotator ``ann``."""
    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(keyword_run_workspace.root))
    add_user(keyword_run_workspace, "vi", "viewer", TEAM_PASSWORD)
    add_user(keyword_run_workspace, "ann", "annotator", TEAM_PASSWORD)
    return keyword_run_workspace


def signed_in(name: str) -> AppTest:
    app = AppTest.from_file(str(PROJECT_ROOT / FAILURES_PAGE), default_timeout=APP_TIMEOUT_S).run()
    app.text_input(key=f"{auth.FORM}.name").input(name)
    app.text_input(key=f"{auth.FORM}.password").input(TEAM_PASSWORD)
    return app.button[0].click().run()


def test_team_mode_refuses_annotators_who_judge_blind(team_failures):
    app = signed_in("ann")
    assert not app.exception and not app.title and not app.dataframe
    assert "needs the role" in app.error[0].value
    app = signed_in("vi")
    assert not app.exception and [t.value for t in app.title] == ["Failures"]
    assert app.dataframe
