"""Home (``app.py``) on real workspaces: counts, classes, next steps, sidebar state, guidance."""

from __future__ import annotations

from analytics.assets import CACHE_ENV_VAR, COMPLETE_MARKER
from analytics.datasets import list_backgrounds, list_classes, list_targets
from analytics.demo import load_catalogue
from analytics.workspace import Workspace
from ui.state import ANNOTATOR, WORKSPACE_PATH
from ui.widgets import shadow_key


def metrics(app) -> dict[str, str]:
    return {metric.label: metric.value for metric in app.metric}


def texts(app) -> str:
    return "\n".join(e.value for e in [*app.markdown, *app.caption, *app.error, *app.info])


def test_home_shows_workspace_counts_and_classes(tiny_workspace, app_runner):
    app = app_runner("app.py", tiny_workspace)
    assert not app.exception
    shown = metrics(app)
    assert shown["Targets"] == str(len(list_targets(tiny_workspace)))
    assert shown["Backgrounds"] == str(len(list_backgrounds(tiny_workspace)))
    assert shown["Classes"] == str(len(list_classes(tiny_workspace)))
    assert shown["Models"] == shown["Runs"] == shown["Judgments"] == "0"
    page_text = texts(app)
    for name in list_classes(tiny_workspace):
        assert f"{name} ({(list_targets(tiny_workspace)['class_name'] == name).sum()})" in page_text
    assert str(tiny_workspace.root) in page_text
    assert f"schema version {tiny_workspace.schema_version}" in page_text


def test_home_next_step_follows_workspace_state(tiny_workspace, tmp_path, app_runner):
    with_data = texts(app_runner("app.py", tiny_workspace))
    assert "Add a classifier" in with_data  # data present, no model yet: registering one is next
    empty = app_runner("app.py", Workspace(tmp_path / "empty"))
    assert not empty.exception
    assert set(metrics(empty).values()) == {"0"}
    empty_text = texts(empty)
    assert "python -m analytics demo" in empty_text and "Add a classifier" not in empty_text
    assert "No images yet" in empty_text


def test_home_lists_sources_and_licences(tiny_workspace, app_runner):
    app = app_runner("app.py", tiny_workspace)
    (sources,) = [table.value for table in app.dataframe if "licence" in table.value.columns]
    assert sources[["targets", "backgrounds"]].sum().tolist() == [len(list_targets(tiny_workspace)), len(list_backgrounds(tiny_workspace))]


def test_home_reports_which_demo_packages_are_cached(tiny_workspace, tmp_path, monkeypatch, app_runner):
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "assets"))
    packages = list(load_catalogue().packages)
    assert f"0 of {len(packages)}" in texts(app_runner("app.py", tiny_workspace))
    marker = tmp_path / "assets" / packages[0] / COMPLETE_MARKER
    marker.parent.mkdir(parents=True)
    marker.touch()
    app = app_runner("app.py", tiny_workspace)
    assert f"1 of {len(packages)}" in texts(app)
    (table,) = [t.value for t in app.dataframe if "in cache" in t.value.columns]
    assert table.set_index("package")["in cache"].to_dict() == {p: p == packages[0] for p in packages}


def test_missing_workspace_shows_guidance_not_traceback(missing_workspace, app_runner):
    app = app_runner("app.py", missing_workspace)
    assert not app.exception
    assert str(missing_workspace) in app.error[0].value
    assert "python -m analytics demo" in app.info[0].value
    assert not app.metric
    assert not missing_workspace.exists()  # looking must not create a workspace


def test_sidebar_selects_workspace_and_keeps_annotator(tiny_workspace, tmp_path, app_runner):
    app = app_runner("app.py", tiny_workspace)
    app.text_input(key=shadow_key(ANNOTATOR)).set_value("ada").run()
    other = Workspace(tmp_path / "other")
    app.text_input(key=shadow_key(WORKSPACE_PATH)).set_value(str(other.root)).run()
    assert not app.exception
    assert metrics(app)["Targets"] == "0"
    app.switch_page("pages/1_Data.py").run()
    assert not app.exception
    assert app.session_state[ANNOTATOR] == "ada"
    assert app.session_state[WORKSPACE_PATH] == str(other.root)


# -- issue 19.4: a finished demo leads to its finding, not only to ticked steps -------------------------------
def test_home_with_finished_runs_leads_to_the_matrices_with_the_finding(run_workspace, app_runner):
    from analytics.runs import list_runs

    app = app_runner("app.py", run_workspace)
    assert not app.exception, app.exception
    assert "Start here" in [header.value for header in app.subheader]
    runs = list_runs(run_workspace).assign(drop=lambda t: t["original_accuracy"] - t["worst_case_accuracy"])
    most, least = runs.loc[runs["drop"].idxmax()], runs.loc[runs["drop"].idxmin()]
    sentence = next(m.value for m in app.markdown if "varies most" in m.value)
    assert f"**{most['model']}** varies most" in sentence and f"**{least['model']}** varies least" in sentence
    assert f"({len(runs)} models)" in sentence and f"{most['worst_case_accuracy']:.0%} right under every background" in sentence
    links = [link.proto.page for link in app.get("page_link")]
    assert links[0] == "Matrices"  # the call to action (its URL path) comes before the workflow's steps


def test_home_without_runs_has_no_start_here(tiny_workspace, app_runner):
    app = app_runner("app.py", tiny_workspace)
    assert not app.exception and "Start here" not in [header.value for header in app.subheader]
