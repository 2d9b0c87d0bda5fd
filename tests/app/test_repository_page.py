"""The Repository page (``pages/17_Repository.py``): the models table with filters and CSV export, a
run of the whole repository as a background job, and the role gates of team mode."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from analytics import jobs
from analytics.judgments import add_judgment
from analytics.repository import add_repository, run_repository
from analytics.team.accounts import add_user
from analytics.workspace import PROJECT_ROOT
from tests.analytics.test_repository import ARCH, write_checkpoint
from tests.fixtures.app import APP_TIMEOUT_S
from tests.fixtures.models import SIZE, TINY_SUITE, TINY_SUITE_N
from tests.fixtures.team import TEAM_PASSWORD
from ui import auth

PAGE = "pages/17_Repository.py"
N_IMAGES = 6 * (TINY_SUITE_N + 1)
WAIT_S = 300


@pytest.fixture
def repo_page_workspace(tiny_model_workspace, tiny_model_files, tmp_path):
    """``tiny_model_workspace`` with the repository ``zoo``: ``net-a`` (sgd) and ``net-b`` (adam), not run."""
    folder = tmp_path / "repo"
    folder.mkdir()
    write_checkpoint(folder / "a.pt", 0)
    write_checkpoint(folder / "b.pt", 1)
    labels = tiny_model_files["labels"]
    (folder / "zoo.csv").write_text(
        f"name,architecture,checkpoint,label_space,input_size,optimiser\nnet-a,{ARCH},a.pt,{labels},{SIZE},sgd\nnet-b,{ARCH},b.pt,{labels},{SIZE},adam\n"
    )
    assert add_repository(tiny_model_workspace, folder / "zoo.csv").registered == ["net-a", "net-b"]
    return tiny_model_workspace


def texts(app) -> str:
    return "\n".join(e.value for e in [*app.markdown, *app.caption, *app.error, *app.info, *app.success, *app.warning])


def test_without_a_repository_the_page_says_how_to_add_one(tiny_model_workspace, app_runner):
    app = app_runner(PAGE, tiny_model_workspace)
    assert not app.exception and "repository add MANIFEST" in texts(app)


def test_table_filters_export_and_matrices_link(repo_page_workspace, app_runner):
    run_repository(repo_page_workspace, "zoo", TINY_SUITE, device="cpu")
    add_judgment(repo_page_workspace, annotator="ana", model="net-a", label="invariant", suite_id=TINY_SUITE)
    app = app_runner(PAGE, repo_page_workspace)
    assert not app.exception, app.exception
    shown = app.dataframe[0].value
    assert list(shown["Model"]) == ["net-a", "net-b"] and set(shown["Status"]) == {"done"}
    assert list(shown["Judgments"]) == [1, 0] and shown["Labels"].iloc[0] == "invariant ×1"
    assert list(shown["optimiser"]) == ["sgd", "adam"] and set(shown["Images"]) == {f"{N_IMAGES} / {N_IMAGES}"}
    assert shown["Worst-case accuracy"].between(0, 1).all()
    assert "2 done" in texts(app) and "assessor's verdict is not shown" in texts(app)
    app.text_input(key="repository.filter").input("ADAM").run()
    assert list(app.dataframe[0].value["Model"]) == ["net-b"]
    app.text_input(key="repository.filter").input("").run()
    app.multiselect(key="repository.statuses").set_value(["failed"]).run()
    assert app.dataframe[0].value.empty
    app.multiselect(key="repository.statuses").set_value(["done"]).run()
    assert not app.exception
    assert app.session_state["runs.run"] == app.dataframe[0].value["Run"].iloc[0]  # the Matrices page opens on net-a's run
    assert app.get("download_button"), "no CSV download button"


def test_run_button_runs_the_repository_as_a_job(repo_page_workspace, app_runner):
    app = app_runner(PAGE, repo_page_workspace)
    assert set(app.dataframe[0].value["Status"]) == {"pending"}
    app = app.button(key="repository.run").click().run()
    assert not app.exception, app.exception
    job_id = app.session_state["repository.job"]
    assert jobs.get_job(repo_page_workspace, job_id).kind == "repository"
    assert jobs.wait(repo_page_workspace, job_id, timeout=WAIT_S).status == "done"
    app = app.run()
    assert not app.exception, app.exception
    assert set(app.dataframe[0].value["Status"]) == {"done"}
    assert "2 run now, 0 finished before, 0 failed" in texts(app)


def signed_in(name: str) -> AppTest:
    app = AppTest.from_file(str(PROJECT_ROOT / PAGE), default_timeout=APP_TIMEOUT_S).run()
    app.text_input(key=f"{auth.FORM}.name").input(name)
    app.text_input(key=f"{auth.FORM}.password").input(TEAM_PASSWORD)
    return app.button[0].click().run()


def test_team_mode_gates(repo_page_workspace, fast_hashing, monkeypatch):
    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(repo_page_workspace.root))
    for name, role in (("al", "analyst"), ("vi", "viewer"), ("ann", "annotator")):
        add_user(repo_page_workspace, name, role, TEAM_PASSWORD)
    analyst, viewer, annotator = signed_in("al"), signed_in("vi"), signed_in("ann")
    assert [b for b in analyst.button if b.key == "repository.run"]
    assert not viewer.exception and viewer.dataframe and not [b for b in viewer.button if b.key == "repository.run"]
    assert not annotator.dataframe and "This page needs the role" in annotator.error[0].value

