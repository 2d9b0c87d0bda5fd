"""The Failures page (``pages/16_Failures.py``): pick a run, see its keyword failure table (minimum count
slider), the galleries (fooling backgrounds per class, flips with saliency overlays on request), the
keyword x model heat map of the suite and the report download; links set run, class, keyword and
method; a workspace without runs says what to do; in team mode annotators (who judge blind) are refused."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from analytics.findings import failure_table, flips, fooling_backgrounds, keyword_changes
from analytics.keywords import save_keyword_table
from analytics.team import add_user
from analytics.workspace import PROJECT_ROOT
from tests.fixtures.app import APP_TIMEOUT_S
from tests.fixtures.runs import MARKDOWN_NAME
from tests.fixtures.suites import BACKGROUND_KEYWORDS, BACKGROUND_TABLE, onehot_table
from tests.fixtures.team import TEAM_PASSWORD
from ui import auth
from ui import failures as failures_view
from ui.markdown import escape_markdown
from ui.state import WORKSPACE_PATH

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
    assert any(button.label == "Build report (HTML)" for button in app.button)  # the download follows the build

    app.slider(key="failures.min_count").set_value(50).run()
    assert not app.exception
    assert app.dataframe[0].value.empty
    assert any("No keyword has that many composites" in info.value for info in app.info)


def test_a_suite_of_many_models_opens_the_heat_map_on_the_runs_model_and_the_newest(app_runner, keyword_run_workspace, run_ids, monkeypatch):
    """Issue 28: the heat map read every model's run table on opening, ~20 s for a suite of 250 models
    at 200 targets; it opens on at most HEATMAP_MODELS of them (the run's own among them) and says so."""
    monkeypatch.setattr(failures_view, "HEATMAP_MODELS", 2)
    app = app_runner(FAILURES_PAGE, keyword_run_workspace)
    assert not app.exception
    shown_model = {run_id: model for model, run_id in run_ids.items()}[app.selectbox(key="failures.run").value]
    picked = app.multiselect(key="failures.models").value
    assert len(picked) == 2 and shown_model in picked
    assert any(f"2 of the suite's {len(run_ids)} models" in caption.value for caption in app.caption)
    app.multiselect(key="failures.models").set_value(list(run_ids)).run()  # every model, on request
    assert not app.exception and len(app.get("plotly_chart")) == 1
    assert not any("of the suite's" in caption.value for caption in app.caption)


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


# -- galleries and flips ----------------------------------------------------------------------------
def open_page(workspace, query: dict[str, str] | None = None) -> AppTest:
    """The page on ``workspace`` opened from an address with ``query`` as its query string."""
    app = AppTest.from_file(str(PROJECT_ROOT / FAILURES_PAGE), default_timeout=APP_TIMEOUT_S)
    app.session_state[WORKSPACE_PATH] = str(workspace.root)
    app.query_params.update(query or {})
    return app.run()


def gallery_table(app: AppTest):
    """The gallery's table (the one with a background keywords column)."""
    return next(frame.value for frame in app.dataframe if "Background keywords" in frame.value.columns)


def image_captions(app: AppTest) -> list[str]:
    return [caption for image in app.image for caption in image.captions]


def test_gallery_and_flips_show_for_a_tiny_run(keyword_run_workspace, run_ids):
    run_id = run_ids["bg-only"]  # reads only background corners: its backgrounds move its probabilities
    app = open_page(keyword_run_workspace, {"run": run_id})
    assert not app.exception
    class_name = app.selectbox(key="failures.class").value
    gallery = fooling_backgrounds(keyword_run_workspace, run_id, per_class=4)[class_name]
    items = gallery.hurt
    flipped = flips(keyword_run_workspace, run_id, limit=4, class_name=class_name)
    assert items and flipped, "the fixture's bg-only run has backgrounds that fool it and flips"
    shown = gallery_table(app)
    assert list(shown["Target"]) == [item.target_id for item in items]
    assert list(shown["Background"]) == [item.background_id for item in items]
    assert list(shown["Drop"]) == pytest.approx([item.drop for item in items])
    assert list(shown["Background keywords"]) == [", ".join(item.keywords) for item in items]
    assert len(set(shown["Target"])) == len(shown)  # issue 47.4: one place per target
    captions = image_captions(app)
    n_gallery = len(items) + len(gallery.already_wrong)
    assert len(captions) == 2 * n_gallery + 2 * len(flipped)  # composite + original per gallery item and per flip
    flip_captions = captions[2 * n_gallery :]
    assert [c.split()[1] for c in flip_captions[::2]] == [item.target_id for item in flipped]
    assert all(f"on {item.background_id} · predicted {item.predicted}" in c for item, c in zip(flipped, flip_captions[1::2]))
    assert app.query_params["run"] == run_id and app.query_params["class"] == class_name
    # issue 47.4: the targets already wrong on their original (bg-only gets its squares wrong) in a part of their own
    wrong_class, wrong_gallery = next((name, part) for name, part in fooling_backgrounds(keyword_run_workspace, run_id).items() if part.already_wrong)
    app.selectbox(key="failures.class").set_value(wrong_class).run()
    assert not app.exception and "**Already wrong on the original**" in [m.value for m in app.markdown]
    wrong = [frame.value for frame in app.dataframe if "Background keywords" in frame.value.columns][-1]
    assert list(wrong["Target"]) == [item.target_id for item in wrong_gallery.already_wrong]
    assert not {item.target_id for item in wrong_gallery.already_wrong} & {item.target_id for item in wrong_gallery.hurt}


def test_keyword_narrows_the_gallery_and_goes_into_the_address(keyword_run_workspace, run_ids):
    run_id = run_ids["bg-only"]
    app = open_page(keyword_run_workspace, {"run": run_id})
    class_name = app.selectbox(key="failures.class").value
    top = fooling_backgrounds(keyword_run_workspace, run_id, per_class=1)[class_name].hurt[0]
    keyword = top.keywords[-1]
    app.selectbox(key="failures.keyword").set_value(keyword).run()
    assert not app.exception
    items = fooling_backgrounds(keyword_run_workspace, run_id, per_class=4, keyword=keyword)[class_name].hurt
    assert items[0] == top and all(keyword in item.keywords for item in items)
    assert list(gallery_table(app)["Target"]) == [item.target_id for item in items]
    assert app.query_params["keyword"] == keyword
    app.selectbox(key="failures.keyword").set_value(app.selectbox(key="failures.keyword").options[0]).run()  # any keyword
    assert "keyword" not in app.query_params


def test_saliency_overlays_on_request_with_the_methods_the_model_can_run(keyword_run_workspace, run_ids):
    run_id = run_ids["bg-only"]
    app = open_page(keyword_run_workspace, {"run": run_id, "method": "saliency"})  # a link with a method turns the overlays on
    assert not app.exception
    assert app.toggle(key="failures.saliency").value and app.selectbox(key="failures.method").value == "saliency"
    assert "Grad-CAM" not in app.selectbox(key="failures.method").options  # TorchScript: no hooks
    flipped = flips(keyword_run_workspace, run_id, limit=4, class_name=app.selectbox(key="failures.class").value)
    with_overlays = image_captions(app)
    assert sum(c.endswith(" · composite") for c in with_overlays) == sum(c.endswith(" · original") for c in with_overlays) == len(flipped)
    app.toggle(key="failures.saliency").set_value(False).run()
    assert not app.exception
    assert len(image_captions(app)) == len(with_overlays) - 1 - 2 * len(flipped)  # no colour legend, no overlays
    assert "method" not in app.query_params


def test_a_link_selects_run_class_and_keyword(keyword_run_workspace, run_ids):
    run_id = run_ids["tiny"]
    app = open_page(keyword_run_workspace, {"run": run_id, "class": "square", "keyword": "sea"})
    assert not app.exception
    assert app.selectbox(key="failures.run").value == run_id
    assert app.selectbox(key="failures.class").value == "square"
    assert app.selectbox(key="failures.keyword").value == "sea"
    assert not app.warning


def test_a_link_to_an_unknown_run_says_so(keyword_run_workspace, run_ids):
    app = open_page(keyword_run_workspace, {"run": "nope"})
    assert not app.exception
    assert "'nope'" in app.warning[0].value
    assert app.selectbox(key="failures.run").value in set(run_ids.values())


def test_a_model_name_with_markdown_is_shown_as_written(app_runner, markdown_name_workspace):
    """Issue 25.11: the run of a model named ``**bold** [x](http://e.x) $a$``: its name is text everywhere."""
    backgrounds = [row["id"] for row in markdown_name_workspace.query("SELECT id FROM backgrounds ORDER BY id")]
    save_keyword_table(markdown_name_workspace, onehot_table(backgrounds, BACKGROUND_KEYWORDS), name=BACKGROUND_TABLE, item_kind="background")
    (run_id,) = [row["id"] for row in markdown_name_workspace.query("SELECT id FROM runs WHERE model = ?", (MARKDOWN_NAME,))]
    app = app_runner(FAILURES_PAGE, markdown_name_workspace)
    app.selectbox(key="failures.run").set_value(run_id).run()
    assert not app.exception, app.exception
    sources = [e.value for e in [*app.markdown, *app.caption, *app.info, *app.warning]]
    assert any(source.startswith(escape_markdown(MARKDOWN_NAME) + " over suite") for source in sources)  # the report's caption
    assert not any("**bold**" in source or "[x](http://e.x)" in source for source in sources)


def test_against_a_baseline_lists_the_keywords_whose_error_rate_rose_most(app_runner, keyword_run_workspace, run_ids):
    app = app_runner(FAILURES_PAGE, keyword_run_workspace)
    app.selectbox(key="failures.run").set_value(run_ids["bg-only"]).run()
    app.selectbox(key="failures.baseline").set_value(run_ids["fg-only"]).run()
    assert not app.exception, app.exception
    assert "Against a baseline" in [h.value for h in app.subheader]
    expected = keyword_changes(keyword_run_workspace, run_ids["bg-only"], run_ids["fg-only"], min_count=3)
    (shown,) = [frame.value for frame in app.dataframe if "Rise" in frame.value.columns]
    assert list(shown["Keyword"]) == list(expected["keyword"]) and list(shown["Rise"]) == pytest.approx(list(expected["rise"]))
    assert list(shown["Rise"]) == sorted(shown["Rise"], reverse=True)
    assert {"Error rate", "Rate 95%", "Baseline error rate", "Baseline 95%", "McNemar p"} <= set(shown.columns)  # each interval one column (#47.9)
    assert shown["Baseline 95%"].iloc[0] == f"{expected['baseline_low'].iloc[0]:.2f}–{expected['baseline_high'].iloc[0]:.2f}"


def test_page_opens_on_the_suite_of_most_real_models_with_the_heat_map_of_all_first(judging_workspace, app_runner):
    """Nine models over tiny-suite, one over a newer suite (as a Methods job makes): the page opens on
    tiny-suite, its heat map first and over every model (more than the eight the page used to pick)."""
    from datetime import datetime, timedelta

    from analytics.runs import current_runs, start_runs
    from tests.fixtures.judging import JUDGING_MODELS
    from tests.fixtures.models import insert_suite

    insert_suite(judging_workspace, "newer-suite", seed=1)
    (newer,) = start_runs(judging_workspace, ["tiny"], "newer-suite", device="cpu")
    latest = max(datetime.fromisoformat(r["created"]) for r in judging_workspace.query("SELECT created FROM runs"))
    with judging_workspace.transaction() as conn:  # the newest run of all, whatever the clock's resolution
        conn.execute("UPDATE runs SET created = ? WHERE id = ?", ((latest + timedelta(minutes=1)).isoformat(), newer))
    assert current_runs(judging_workspace)["id"].iloc[0] == newer
    app = app_runner(FAILURES_PAGE, judging_workspace)
    assert not app.exception, app.exception
    assert app.selectbox(key="failures.run").value != newer
    assert sorted(app.multiselect(key="failures.models").value) == sorted(JUDGING_MODELS)
    headers = [h.value for h in app.subheader]
    assert headers.index("Keyword × model") < next(i for i, h in enumerate(headers) if h.endswith("every keyword"))


def test_picking_one_class_narrows_the_tables_the_heat_map_and_the_galleries(keyword_run_workspace, run_ids):
    """Issue 27.9: a newcomer looks at their own class only."""
    run_id = run_ids["bg-only"]
    app = open_page(keyword_run_workspace, {"run": run_id})
    assert app.multiselect(key="failures.classes").value == []  # every class by default: none picked
    app.multiselect(key="failures.classes").set_value(["square"]).run()
    assert not app.exception, app.exception
    expected = failure_table(keyword_run_workspace, run_id, min_count=3, classes=["square"])
    assert expected.composites < failure_table(keyword_run_workspace, run_id, min_count=3).composites
    assert any(f"{expected.composites} composites" in text.value for text in app.markdown)
    assert app.dataframe[0].value["Keyword"].tolist() == expected.keywords["keyword"].tolist()
    assert app.selectbox(key="failures.class").options == ["square"]  # the galleries offer only the class picked
    assert any(h.value.endswith("every keyword of square") for h in app.subheader)
