"""The background jobs on Home in team mode (issue 25.4 and 25.5): Cancel only for the job's owner or
a lead, and nothing that can name a model for an annotator, who judges blind."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from analytics import jobs
from analytics.team import active_user, add_user
from analytics.workspace import PROJECT_ROOT
from tests.fixtures.app import APP_TIMEOUT_S, as_shown
from tests.fixtures.team import TEAM_PASSWORD
from ui.auth import FORM

SECRET_MODEL = "effnet-secret-7"


def signed_in_home(name: str) -> AppTest:
    app = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=APP_TIMEOUT_S).run()
    app.text_input(key=f"{FORM}.name").input(name)
    app.text_input(key=f"{FORM}.password").input(TEAM_PASSWORD)
    app = app.button[0].click().run()
    assert not app.exception, app.exception
    return app


def shown_text(app: AppTest) -> str:
    elements = [*app.markdown, *app.caption, *app.error, *app.warning, *app.info]
    return as_shown("\n".join([e.value for e in elements] + [p.proto.text for p in app.get("progress")]))


@pytest.fixture
def team_job(team_workspace, monkeypatch):
    """A job of the admin ``ada`` running on the team workspace, whose message names a model."""
    from tests.analytics.jobs.test_jobs import stubborn  # noqa: F401 (registers the kind that only a signal stops)

    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(team_workspace.root))
    add_user(team_workspace, "ana", "analyst", TEAM_PASSWORD)
    job = jobs.start(team_workspace.acting_as(active_user(team_workspace, "ada")), "stubborn", {"seconds": 600})
    with team_workspace.transaction() as conn:  # as a saliency job reports: its message names the model
        conn.execute("UPDATE jobs SET message = ? WHERE id = ?", (f"saliency of {SECRET_MODEL}", job.id))
    yield job
    jobs.cancel(team_workspace, job.id, grace=0.5)


def test_an_annotator_sees_the_job_blind_and_without_cancel(team_workspace, team_job):
    app = signed_in_home("ann")
    text = shown_text(app)
    assert "Running in the background" in text and team_job.id in text and "by ada" in text  # kind, status, progress
    assert SECRET_MODEL not in text
    assert f"home.jobs.cancel.{team_job.id}" not in [button.key for button in app.button]
    assert jobs.get_job(team_workspace, team_job.id).active


def test_a_lead_sees_the_message_and_may_cancel_anyones_job(team_workspace, team_job):
    app = signed_in_home("ana")  # an analyst: a lead, though not the job's owner
    assert SECRET_MODEL in shown_text(app)
    app = app.button(key=f"home.jobs.cancel.{team_job.id}").click().run()
    assert not app.exception, app.exception
    assert jobs.get_job(team_workspace, team_job.id).status == "cancelled"
