"""Home (``app.py``) on real workspaces: counts, classes, next steps, sidebar state, guidance."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analytics.data import list_backgrounds, list_classes, list_targets
from analytics.demo import CACHE_ENV_VAR, load_catalogue
from analytics.demo.assets import COMPLETE_MARKER
from analytics.keywords import save_keyword_table
from analytics.workspace import Workspace
from tests.fixtures.runs import MARKDOWN_NAME
from tests.fixtures.suites import BACKGROUND_KEYWORDS, BACKGROUND_TABLE, onehot_table
from ui.markdown import escape_markdown
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
    assert escape_markdown(missing_workspace) in app.error[0].value
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
def composite_accuracies(workspace) -> pd.Series:
    """Model -> composite accuracy of its run (the headline's measure, issue 47.1)."""
    from analytics.findings import composite_outcomes
    from analytics.runs import list_runs

    runs = list_runs(workspace)
    return pd.Series({run.model: composite_outcomes(workspace, run.id).mean() for run in runs.itertuples()})


def test_home_with_finished_runs_leads_to_the_matrices_with_the_finding(run_workspace, app_runner):
    app = app_runner("app.py", run_workspace)
    assert not app.exception, app.exception
    assert "Start here" in [header.value for header in app.subheader]
    # issue 47.1: the measure by name; the tiny runs' 24 composites cannot tell the three models apart, so none is ranked
    accuracy = composite_accuracies(run_workspace).sort_values(kind="stable")
    sentence = next(m.value for m in app.markdown if "On suite" in m.value)
    assert "(3 models), composite accuracy (the share of the suite's composites" in sentence and "does not tell the models apart" in sentence
    assert f"from {accuracy.iloc[0]:.0%} (**{escape_markdown(accuracy.index[0])}**) to {accuracy.iloc[-1]:.0%}" in sentence
    assert "McNemar's exact test on 24 paired composites" in sentence and "hit hardest" not in sentence and "least" not in sentence
    links = [link.proto.page for link in app.get("page_link")]
    assert links[0] == "Matrices"  # the call to action (its URL path) comes before the workflow's steps


def test_the_headline_sentence_names_the_measure_and_the_model_hit_hardest():
    """Issue 47.1's two models: team-v2 (a background shortcut, lower originals) is named, by composite accuracy, with the test."""
    from analytics.findings import headline
    from ui.story import headline_sentence

    runs = pd.DataFrame({
        "id": ["v2", "v1"], "model": ["team-v2", "team-v1"], "suite_id": "s", "suite": "main", "status": "done", "stale": False,
        "construction": None, "original_accuracy": [0.80, 0.90], "worst_case_accuracy": [0.40, 0.45],
    })  # fmt: skip
    index = pd.MultiIndex.from_tuples([(f"t{i}", 1) for i in range(100)])
    correct = {"v1": np.arange(100) < 62, "v2": (np.arange(100) >= 30) & (np.arange(100) < 70)}
    sentence = headline_sentence(headline(runs, lambda run_id: pd.Series(correct[run_id], index=index)))
    assert sentence.startswith("On suite main (2 models), by composite accuracy")
    v1, v2 = escape_markdown("team-v1"), escape_markdown("team-v2")
    assert f"**{v2}** is hit hardest by the backgrounds: 40% of the composites right (80% of the targets on their own photos)" in sentence
    assert f"**{v1}** least: 62% of the composites right (90%" in sentence and "McNemar's exact test on 100 paired composites: p = 0.00" in sentence


def test_home_without_runs_has_no_start_here(tiny_workspace, app_runner):
    app = app_runner("app.py", tiny_workspace)
    assert not app.exception and "Start here" not in [header.value for header in app.subheader]


# -- issue 27.6: the real models lead, the zoo is explained, the call to action opens the comparison ----------
def test_home_leads_with_the_real_models_and_explains_the_zoo(run_workspace, run_ids, app_runner):
    from tests.fixtures.runs import mark_as_zoo_head
    from ui.story import ZOO_NOTE

    accuracy = composite_accuracies(run_workspace)
    zoo = accuracy.idxmin()  # the model with the fewest composites right becomes a zoo head: the headline must not name it
    mark_as_zoo_head(run_workspace, zoo)
    real = accuracy.drop(index=zoo).sort_values(kind="stable")
    app = app_runner("app.py", run_workspace)
    assert not app.exception, app.exception
    sentence = next(m.value for m in app.markdown if "On suite" in m.value)
    assert "(2 real models and 1 zoo head)" in sentence and f"**{escape_markdown(zoo)}**" not in sentence
    assert f"from {real.iloc[0]:.0%} (**{escape_markdown(real.index[0])}**)" in sentence
    assert [tab.label for tab in app.tabs][-1] == escape_markdown(zoo)  # real models' tabs first
    assert ZOO_NOTE in [c.value for c in app.caption]
    page, query = link_targets(app)[0]  # the call to action: Compare tab, the headline's model first
    assert page == "Matrices" and query == f"run={run_ids[real.index[0]]}&tab=compare"


# -- issue 16.3: the story view, what breaks each model, first on Home -------------------------------------
@pytest.fixture
def keyword_run_workspace(run_workspace):
    """``run_workspace`` (runs of fg-only, bg-only, tiny) with the suite fixtures' background keyword table."""
    backgrounds = [row["id"] for row in run_workspace.query("SELECT id FROM backgrounds ORDER BY id")]
    save_keyword_table(run_workspace, onehot_table(backgrounds, BACKGROUND_KEYWORDS), name=BACKGROUND_TABLE, item_kind="background")
    return run_workspace


def link_targets(app) -> list[tuple[str, str]]:
    """``(page url path, query string)`` of every page link."""
    return [(link.proto.page, link.proto.query_string) for link in app.get("page_link")]


def first_flip_target(workspace, run_id) -> str:
    from analytics.findings import flips

    return flips(workspace, run_id, limit=1)[0].target_id


def test_home_story_shows_each_models_keywords_matrix_and_flips(keyword_run_workspace, run_ids, app_runner):
    from analytics.findings import failure_table, flips
    from analytics.runs import list_runs
    from ui.story import KEYWORD_HEADERS, N_FLIPS, TOP_KEYWORDS, story_runs

    app = app_runner("app.py", keyword_run_workspace)
    assert not app.exception, app.exception
    assert "What breaks each model" in [header.value for header in app.subheader]
    shown = story_runs(str(keyword_run_workspace.root), list_runs(keyword_run_workspace))
    assert list(shown["composite_accuracy"]) == sorted(shown["composite_accuracy"])  # the headline's measure, lowest first (issue 47.1)
    assert [tab.label for tab in app.tabs] == [escape_markdown(model) for model in shown["model"]]
    first = shown.iloc[0]
    # the open (first) tab: the worst keywords of its run, by error rate, with counts and intervals
    expected = failure_table(keyword_run_workspace, first["id"], min_count=3).keywords.head(TOP_KEYWORDS)
    (table,) = [t.value for t in app.tabs[0].dataframe]
    assert list(table.columns) == KEYWORD_HEADERS
    assert list(table["Keyword"]) == list(expected["keyword"]) and list(table["Composites"]) == list(expected["count"])
    assert table["95% interval"].iloc[0] == f"{expected['error_low'].iloc[0]:.2f}–{expected['error_high'].iloc[0]:.2f}"
    # one matrix on the suite's fixed scale, and its run's flips as original + composite pairs
    (chart,) = app.tabs[0].get("plotly_chart")
    heatmap = json.loads(chart.proto.spec)["data"][0]
    assert heatmap["type"] == "heatmap" and heatmap["zmin"] == 0.0
    n_flips = len(flips(keyword_run_workspace, first["id"], limit=N_FLIPS))
    assert n_flips > 0  # the fixture's most variant model has flips
    images = app.tabs[0].get("image")
    assert len(images) == 2 * n_flips and images[0].captions[0].startswith(first_flip_target(keyword_run_workspace, first["id"]))
    # the other tabs stay unread until opened (lazy tabs keep Home fast)
    assert all(not tab.get("plotly_chart") for tab in app.tabs[1:])
    # deep links to the full views of this run
    links = link_targets(app)
    assert ("Failures", f"run={first['id']}") in links
    matrices = next(query for page, query in links if page == "Matrices" and "signal=" in query)  # the story's link, not the call to action
    assert f"run={first['id']}" in matrices and "signal=" in matrices and "preset=smooth" in matrices


def test_story_picks_the_signal_that_fills_most_of_the_scale(run_workspace, run_ids):
    from analytics.findings import telling_signal
    from analytics.runs import SIGNALS, run_matrices, suite_colour_scale

    matrices = run_matrices(run_workspace, run_ids["bg-only"])
    tops = suite_colour_scale(run_workspace, "tiny-suite").tops
    chosen = telling_signal(matrices, tops)
    ratios = {signal: float(np.mean(matrices[signal].matrix)) / tops[signal] for signal in SIGNALS}
    assert ratios[chosen] == max(ratios.values())
    # a scale whose top of that signal is far higher makes it the least telling one
    assert telling_signal(matrices, {**tops, chosen: tops[chosen] * 1e6}) != chosen


def test_team_annotators_get_no_story_they_judge_blind(keyword_run_workspace, fast_hashing, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from analytics.team import add_user
    from analytics.workspace import PROJECT_ROOT
    from tests.fixtures.app import APP_TIMEOUT_S
    from tests.fixtures.team import TEAM_PASSWORD
    from ui.auth import FORM

    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(keyword_run_workspace.root))
    for name, role in {"ann": "annotator", "vic": "viewer"}.items():
        add_user(keyword_run_workspace, name, role, TEAM_PASSWORD)
    headers = {}
    for name in ("ann", "vic"):
        app = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=APP_TIMEOUT_S).run()
        app.text_input(key=f"{FORM}.name").input(name)
        app.text_input(key=f"{FORM}.password").input(TEAM_PASSWORD)
        app = app.button[0].click().run()
        assert not app.exception, app.exception
        headers[name] = [header.value for header in app.subheader]
    assert "Start here" not in headers["ann"] and "What breaks each model" not in headers["ann"]
    assert "Start here" in headers["vic"] and "What breaks each model" in headers["vic"]


def test_a_model_name_with_markdown_is_shown_as_written(markdown_name_workspace, app_runner):
    """Issue 25.11: a model named ``**bold** [x](http://e.x) $a$`` is text, not bold, a link and LaTeX."""
    app = app_runner("app.py", markdown_name_workspace)
    assert not app.exception, app.exception
    escaped = escape_markdown(MARKDOWN_NAME)
    assert escaped in [tab.label for tab in app.tabs]  # the story view's tab of the model
    sources = [e.value for e in [*app.markdown, *app.caption, *app.subheader]] + [tab.label for tab in app.tabs]
    assert not any(MARKDOWN_NAME in source for source in sources)
    assert not any("[x](http://e.x)" in source or "**bold**" in source for source in sources)
