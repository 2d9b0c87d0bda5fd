"""The Repository page (``pages/17_Repository.py``): making a repository from registered models (the
zoo preset), the models table with the assessor's verdict, filters, links and CSV export, a run of
the whole repository as a background job, and the role gates of team mode."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from analytics import jobs
from analytics.assessor import features_table, fit_assessor, human_labels, predict
from analytics.exceptions import InvalidInputError
from analytics.jobs.process import wait
from analytics.judging import add_judgment, judgeable_runs
from analytics.repository import add_repository, create_repository, get_repository, list_repositories, run_repository
from analytics.team import add_user
from analytics.variance import MatrixSettings
from analytics.workspace import PROJECT_ROOT
from analytics.zoo import build_zoo, list_zoo
from tests.analytics.repository.test_repository import ARCH, write_checkpoint
from tests.analytics.zoo.test_zoo import SMALL
from tests.fixtures.app import APP_TIMEOUT_S
from tests.fixtures.judging import JUDGING_MODELS, UNJUDGED
from tests.fixtures.models import SIZE, TINY_SUITE, TINY_SUITE_N, insert_suite
from tests.fixtures.team import TEAM_PASSWORD
from tests.fixtures.zoo import ZOO_BACKBONE
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
    assert list(shown["Matrices"]) == [f"Matrices?run={run}" for run in shown["Run"]]  # the table's links to each run's matrices
    assert set(shown["Verdict"]) == {"no assessor"} and shown["Confidence"].isna().all()
    assert "2 done" in texts(app) and "No assessor: 1 model(s) judged on this suite" in texts(app) and "Assessor page" in texts(app)
    assert "not shown" not in texts(app)
    app.text_input(key="repository.filter").input("ADAM").run()
    assert list(app.dataframe[0].value["Model"]) == ["net-b"]
    app.text_input(key="repository.filter").input("").run()
    app.multiselect(key="repository.statuses").set_value(["failed"]).run()
    assert app.dataframe[0].value.empty
    app.multiselect(key="repository.statuses").set_value(["done"]).run()
    assert not app.exception
    assert app.session_state["runs.run"] == app.dataframe[0].value["Run"].iloc[0]  # the Matrices page opens on net-a's run
    assert app.get("download_button"), "no CSV download button"


def test_csv_export_leaves_out_the_page_links(repo_page_workspace):
    from ui.repository import csv_bytes, models_table

    table, _ = models_table(repo_page_workspace, "zoo", TINY_SUITE)
    exported = pd.read_csv(io.BytesIO(csv_bytes(table)))
    assert "Matrices" not in exported.columns and list(exported["Model"]) == ["net-a", "net-b"]


def make(app: AppTest, name: str, models: list[str]) -> AppTest:
    app.text_input(key="repository.new_name").input(name)
    app.multiselect(key="repository.members").set_value(models)
    return app.button(key="repository.make").click().run()


def test_make_a_repository_from_registered_models(tiny_model_workspace, app_runner):
    app = app_runner(PAGE, tiny_model_workspace)
    assert set(app.multiselect(key="repository.members").options) == {"tiny", "fg-only", "bg-only"}
    assert not [b for b in app.button if b.key == "repository.zoo"]  # no zoo, no preset
    app = make(app, "", ["tiny"])
    assert "repository name must be" in app.error[0].value and list_repositories(tiny_model_workspace) == []
    app = make(app, "pair", ["tiny", "bg-only"])
    assert not app.exception, app.exception
    assert get_repository(tiny_model_workspace, "pair")["models"] == ["tiny", "bg-only"]
    assert app.selectbox(key="repository.name").value == "pair" and "Repository pair: 2 models" in texts(app)
    assert list(app.dataframe[0].value["Model"]) == ["tiny", "bg-only"] and set(app.dataframe[0].value["Status"]) == {"pending"}


@pytest.fixture
def zoo_page_workspace(zoo_workspace):
    """``zoo_workspace`` with two zoo heads on ``fg-bg`` and the suite ``tiny-suite``."""
    build_zoo(zoo_workspace, strengths=(0, 1), augment=(False,), seeds=(0,), **SMALL)
    insert_suite(zoo_workspace)
    return zoo_workspace


def test_zoo_preset_makes_the_zoo_a_repository(zoo_page_workspace, app_runner):
    heads = sorted(list_zoo(zoo_page_workspace)["name"])
    app = app_runner(PAGE, zoo_page_workspace)
    app = app.button(key="repository.zoo").click().run()
    assert app.multiselect(key="repository.members").value == [ZOO_BACKBONE, *heads]
    assert app.text_input(key="repository.new_name").value == "zoo"
    app = app.button(key="repository.make").click().run()
    assert not app.exception, app.exception
    assert get_repository(zoo_page_workspace, "zoo")["models"] == [ZOO_BACKBONE, *heads]
    shown = app.dataframe[0].value.set_index("Model")
    assert list(shown.index) == [ZOO_BACKBONE, *heads]
    assert shown.loc[heads, "strength"].tolist() == sorted(list_zoo(zoo_page_workspace).set_index("name").loc[heads, "strength"])
    assert pd.isna(shown.loc[ZOO_BACKBONE, "strength"])  # the backbone has no construction


def test_verdicts_of_a_trained_assessor_and_the_verdict_filter(judged_workspace, app_runner):
    create_repository(judged_workspace, "all", JUDGING_MODELS)
    app = app_runner(PAGE, judged_workspace)
    assert not app.exception, app.exception
    shown = app.dataframe[0].value.set_index("Model")
    runs = judgeable_runs(judged_workspace, TINY_SUITE)
    labels = human_labels(judged_workspace, TINY_SUITE)
    features = features_table(judged_workspace, list(runs["id"]), settings=MatrixSettings.of("smooth"))
    # issue 39.3: the release gate's assessor, a judged model's verdict from the other judged models (leave-one-out)
    expected = {UNJUDGED: predict(fit_assessor(features, labels), features.loc[[UNJUDGED]]).at[UNJUDGED, "label"]}
    for model in labels.index:
        try:
            expected[model] = predict(fit_assessor(features.drop(index=model), labels.drop(index=model)), features.loc[[model]]).at[model, "label"]
        except InvalidInputError:  # fg-only and net1: one invariant model is left without its own label
            expected[model] = "no assessor"
    assert shown["Verdict"].to_dict() == expected and list(expected.values()).count("no assessor") == 2
    assert shown.loc[UNJUDGED, "Judgments"] == 0
    assert shown.loc[shown["Verdict"] != "no assessor", "Confidence"].between(1 / 3, 1).all()
    assert shown.loc[shown["Verdict"] == "no assessor", "Confidence"].isna().all()
    assert "its own label left out" in texts(app)
    verdict = expected[UNJUDGED]
    app.multiselect(key="repository.verdicts").set_value([verdict]).run()
    assert set(app.dataframe[0].value["Verdict"]) == {verdict} and UNJUDGED in set(app.dataframe[0].value["Model"])


def test_run_button_runs_the_repository_as_a_job(repo_page_workspace, app_runner):
    app = app_runner(PAGE, repo_page_workspace)
    assert set(app.dataframe[0].value["Status"]) == {"pending"}
    app = app.button(key="repository.run").click().run()
    assert not app.exception, app.exception
    job_id = app.session_state["repository.job"]
    assert jobs.get_job(repo_page_workspace, job_id).kind == "repository"
    assert wait(repo_page_workspace, job_id, timeout=WAIT_S).status == "done"
    app = app.run()
    assert not app.exception, app.exception
    assert set(app.dataframe[0].value["Status"]) == {"done"}
    assert "2 run now, 0 finished before, 0 failed" in texts(app)


def test_the_table_refreshes_itself_while_a_job_runs_the_repository(repo_page_workspace, app_runner):
    """Issue 27.12: the models table redraws itself (a fragment run every few seconds) while a job runs
    this repository over this suite, and stops once it has ended."""
    from analytics.workspace import now
    from ui import jobs as job_view
    from ui import repository as view

    assert view.table_refresh_s(repo_page_workspace, "zoo", TINY_SUITE) is None
    with repo_page_workspace.transaction() as conn:  # a job whose worker is starting (queued, no pid yet)
        conn.execute(
            "INSERT INTO jobs(id, kind, params, status, owner, created, updated) VALUES ('j1', 'repository', ?, 'queued', '', ?, ?)",
            (f'{{"name": "zoo", "suite_id": "{TINY_SUITE}"}}', now(), now()),
        )
    assert view.table_refresh_s(repo_page_workspace, "zoo", TINY_SUITE) == job_view.REFRESH_S
    assert view.table_refresh_s(repo_page_workspace, "zoo", "another-suite") is None
    app = app_runner(PAGE, repo_page_workspace)
    assert not app.exception, app.exception
    assert set(app.dataframe[0].value["Status"]) == {"pending"}
    with repo_page_workspace.transaction() as conn:
        conn.execute("UPDATE jobs SET status = 'done' WHERE id = 'j1'")
    assert view.table_refresh_s(repo_page_workspace, "zoo", TINY_SUITE) is None


def signed_in(name: str) -> AppTest:
    app = AppTest.from_file(str(PROJECT_ROOT / PAGE), default_timeout=APP_TIMEOUT_S).run()
    app.text_input(key=f"{auth.FORM}.name").input(name)
    app.text_input(key=f"{auth.FORM}.password").input(TEAM_PASSWORD)
    return app.button[0].click().run()


def test_team_mode_gates(repo_page_workspace, fast_hashing, monkeypatch):
    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(repo_page_workspace.root))
    for name, role in (("ad", "admin"), ("al", "analyst"), ("vi", "viewer"), ("ann", "annotator")):
        add_user(repo_page_workspace, name, role, TEAM_PASSWORD)
    admin, analyst, viewer, annotator = signed_in("ad"), signed_in("al"), signed_in("vi"), signed_in("ann")
    assert [b for b in admin.button if b.key == "repository.make"] and not [b for b in analyst.button if b.key == "repository.make"]
    assert [b for b in analyst.button if b.key == "repository.run"]
    assert not viewer.exception and viewer.dataframe and not [b for b in viewer.button if b.key == "repository.run"]
    assert not annotator.dataframe and "This page needs the role" in annotator.error[0].value

