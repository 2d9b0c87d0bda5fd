"""The Suites page (``pages/4_Suites.py``) on the tiny workspace with keywords and an ontology.

A request is previewed first (a few targets sampled in the page's process, nothing saved), then
"Save suite" samples every target in a background job (a worker process that saves the suite): the
tests press the buttons, wait for the job with :func:`analytics.jobs.wait`, and run the page again.
"""

from __future__ import annotations

from analytics import jobs
from analytics.jobs.process import wait
from analytics.suites import list_suites, load_suite
from ui.markdown import escape_markdown
from ui.suites import PREVIEW, PREVIEW_TARGETS

PAGE = "pages/4_Suites.py"
WAIT_S = 300


def preview(app, method: str, n: int):
    """Fill the form and press Preview (sampled in the page's process)."""
    app.selectbox(key="suites.method").set_value(method)
    app.number_input(key="suites.n").set_value(n)
    app.slider(key="suites.realism").set_value(0.0)
    app = app.button(key="suites.go").click().run()
    assert not app.exception, app.exception
    return app


def save(app, workspace):
    """Press Save suite, wait for the job to end, show the page again."""
    app = app.button(key="suites.save").click().run()
    assert not app.exception, app.exception
    job_id = app.session_state["suites.job"]
    wait(workspace, job_id, timeout=WAIT_S)
    return app.run()


def submit(app, method: str, n: int, workspace):
    """Preview, then save."""
    return save(preview(app, method, n), workspace)


def test_preview_samples_a_few_targets_and_writes_no_suite(suite_workspace, app_runner):
    app = app_runner(PAGE, suite_workspace)
    before = list_suites(suite_workspace)
    app = preview(app, "ontology", 3)
    assert list_suites(suite_workspace).equals(before)  # nothing saved
    assert not jobs.list_jobs(suite_workspace).shape[0]  # and no job started
    assert any(h.value.startswith(f"Preview: ontology suite for {PREVIEW_TARGETS} of 6 targets") for h in app.subheader)
    captions = [caption for image in app.get("image") for caption in image.captions]
    assert captions[0].startswith("original") and len(captions) == 4  # the original + 3 composites
    assert all("level" in text and "d=" in text for text in captions[1:])
    assert not app.get("progress")  # the preview's bar is gone once it is shown
    assert app.button(key="suites.save")


def test_save_writes_the_previewed_suite_for_every_target(suite_workspace, app_runner):
    app = preview(app_runner(PAGE, suite_workspace), "ontology", 3)
    previewed = app.session_state[PREVIEW][1]
    before = set(list_suites(suite_workspace)["id"])
    app = save(app, suite_workspace)
    assert not app.exception
    added = set(list_suites(suite_workspace)["id"]) - before
    assert len(added) == 1
    saved = load_suite(suite_workspace, added.pop())
    assert saved.method == "ontology" and len(saved.target_ids) == 6
    for target in previewed.target_ids:  # the saved suite holds exactly what was previewed
        assert saved.target_items(target)["background_id"].tolist() == previewed.target_items(target)["background_id"].tolist()
    assert not any(h.value.startswith("Preview:") for h in app.subheader)  # the preview made way for the saved suite
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Targets"] == "6" and metrics["Backgrounds per target"] == "3"
    assert any("Saved suite" in s.value for s in app.success)
    assert len(app.get("plotly_chart")) == 1
    assert len(app.dataframe) == 1 and len(app.dataframe[0].value) == len(before) + 1


def test_page_explains_missing_keywords(tiny_model_workspace, app_runner):
    app = app_runner(PAGE, tiny_model_workspace)
    assert not app.exception
    assert any(button.label == "Compute classifier-patch keywords" for button in app.button)
    # the intro names the default keyword source (issue 47.10b); the tiny models are custom-label
    assert any("Keywords by default: classifier-patch keywords" in c.value and "none is registered yet" in c.value for c in app.caption)
    before = list_suites(tiny_model_workspace)
    app = preview(app, "keyword", 2)
    assert any("no target keyword table" in error.value for error in app.error)  # why the preview was refused
    assert not [button for button in app.button if button.key == "suites.save"]  # nothing to save
    assert list_suites(tiny_model_workspace).equals(before)


def test_page_without_a_workspace_says_how_to_get_one(missing_workspace, app_runner):
    app = app_runner(PAGE, missing_workspace)
    assert not app.exception
    assert app.error and "no workspace" in app.error[0].value


def test_page_shows_the_top_up_share_and_what_a_suite_came_from(suite_workspace, app_runner):
    """Issue 18.4 / 11.3: with 8 backgrounds, 12 of 48 are random top-ups (see test_suites)."""
    app = submit(app_runner(PAGE, suite_workspace), "ontology", 8, suite_workspace)
    assert not app.exception
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Topped up"] == "25%"
    assert any("ontology `" in caption.value and "tiny-targets" in caption.value for caption in app.caption)
    saved = app.dataframe[0].value
    assert saved.set_index("method").loc["ontology", "topup_share"] == 0.25


def test_sampling_reports_progress_and_can_be_cancelled(suite_workspace, app_runner):
    """Issue 19.1 / 19.6: the job's bar and Cancel while it samples; a cancelled job offers Resume."""
    app = submit(app_runner(PAGE, suite_workspace), "random", 2, suite_workspace)
    job = jobs.get_job(suite_workspace, app.session_state["suites.job"])
    assert job.status == "done" and job.total > 0 and job.done == job.total  # distances reported per batch
    assert not app.get("progress")  # the bar is gone once the suite is shown
    started = jobs.start(suite_workspace, "suite", {"method": "nearest", "n": 3, "seed": 5})
    app.session_state["suites.job"] = started.id
    app = app.run()
    if jobs.get_job(suite_workspace, started.id).active:  # a fast machine may have finished already
        assert app.get("progress") and app.button(key=f"suites.cancel.{started.id}")
    if jobs.cancel(suite_workspace, started.id).status == "cancelled":
        app = app.run()
        assert "Cancelled" in app.warning[0].value and app.button(key=f"suites.resume.{started.id}")


def cave_tables(workspace, caves: set[str]) -> None:
    """Keyword tables (and their ontology) where the targets ``caves`` detect only ``cave``, a keyword
    no background carries and no rule leaves: their ontology expansion reaches nothing in the pool."""
    from dataclasses import replace

    import numpy as np

    from analytics.keywords import save_keyword_table
    from analytics.ontology import build_ontology, save_ontology
    from tests.fixtures.suites import BACKGROUND_KEYWORDS, TARGET_KEYWORDS, onehot_table

    rows = workspace.query("SELECT id, class_name FROM targets ORDER BY id")
    ids = [row["id"] for row in rows]
    base = onehot_table(ids, [TARGET_KEYWORDS[row["class_name"]] for row in rows], [row["class_name"] for row in rows])
    cave = np.array([[item in caves] for item in ids])
    present = np.hstack([base.present & ~cave, cave])
    targets = replace(base, vocabulary=[*base.vocabulary, "cave"], present=present, scores=np.where(present, 0.9, 0.05).astype(np.float32))
    pool = onehot_table([row["id"] for row in workspace.query("SELECT id FROM backgrounds ORDER BY id")], BACKGROUND_KEYWORDS)
    pool = replace(pool, vocabulary=[*pool.vocabulary, "cave"], present=np.hstack([pool.present, np.zeros((pool.n_items, 1), bool)]),
                   scores=np.hstack([pool.scores, np.full((pool.n_items, 1), 0.05, np.float32)]))  # fmt: skip
    save_keyword_table(workspace, targets, name="cave-targets", item_kind="target")
    save_keyword_table(workspace, pool, name="cave-backgrounds", item_kind="background")
    save_ontology(workspace, build_ontology([targets, pool], min_support=0.1, min_confidence=0.3), tables=["cave-targets", "cave-backgrounds"])


def with_cave_tables(app):
    app.selectbox(key="suites.target_table").set_value("cave-targets")
    app.selectbox(key="suites.background_table").set_value("cave-backgrounds")
    return app


def test_the_preview_sample_does_not_decide_and_a_suite_builds_without_a_preview(suite_workspace, app_runner):
    """Issue 27.1: the 3 previewed targets expand to nothing the pool carries, the other 3 do (half of
    the suite, enough): the preview is shown, and "Build" saves the suite for every target at once."""
    from analytics.comparison import comparison_targets

    cave_tables(suite_workspace, set(comparison_targets(suite_workspace, PREVIEW_TARGETS)))
    app = preview(with_cave_tables(app_runner(PAGE, suite_workspace)), "ontology", 3)
    assert not app.error, [e.value for e in app.error]
    assert any(h.value.startswith("Preview: ontology suite") for h in app.subheader)
    before = set(list_suites(suite_workspace)["id"])
    app = with_cave_tables(app_runner(PAGE, suite_workspace))  # a fresh session: no preview at all
    app.selectbox(key="suites.method").set_value("ontology")
    app.number_input(key="suites.n").set_value(3)
    app = app.button(key="suites.build").click().run()
    assert not app.exception, app.exception
    wait(suite_workspace, app.session_state["suites.job"], timeout=WAIT_S)
    app = app.run()
    assert not app.exception and any("Saved suite" in s.value for s in app.success)
    (added,) = set(list_suites(suite_workspace)["id"]) - before
    saved = load_suite(suite_workspace, added)
    assert saved.method == "ontology" and len(saved.target_ids) == 6
    assert saved.params["keyword_tables"]["target"]["name"] == "cave-targets"


def test_a_refused_ontology_says_what_to_change_on_the_page(suite_workspace, app_runner):
    """Issue 27.1: when the ontology mined from these very tables expands too few targets, the message
    names the page's settings to change instead of "mine an ontology from these tables"."""
    cave_tables(suite_workspace, {row["id"] for row in suite_workspace.query("SELECT id FROM targets ORDER BY id")[:4]})
    app = preview(with_cave_tables(app_runner(PAGE, suite_workspace)), "ontology", 3)
    (error,) = [e.value for e in app.error]
    assert "expands only 2 of 6 targets" in error
    assert "Mine an ontology from these tables" not in error  # the old, circular advice
    assert "Min confidence" in error and "Method 'keyword'" in error
    assert not [button for button in app.button if button.key == "suites.save"]


def test_picking_one_class_previews_and_saves_only_its_targets(suite_workspace, app_runner):
    """Issue 27.9: a newcomer tests only their own class; the preview and the saved suite hold only
    its targets, and the saved suite says which classes it covers."""
    from analytics.data import list_targets

    squares = list_targets(suite_workspace, class_name="square")["id"].tolist()
    app = app_runner(PAGE, suite_workspace)
    assert app.multiselect(key="suites.classes").value == ["disc", "square"]  # every class by default
    app.multiselect(key="suites.classes").set_value(["square"])
    app = preview(app, "random", 2)
    previewed = app.session_state[PREVIEW][1]
    assert set(previewed.target_ids) <= set(squares) and previewed.target_ids
    assert any(h.value.startswith(f"Preview: random suite for {len(previewed.target_ids)} of {len(squares)} targets") for h in app.subheader)
    before = set(list_suites(suite_workspace)["id"])
    app = save(app, suite_workspace)
    (added,) = set(list_suites(suite_workspace)["id"]) - before
    saved = load_suite(suite_workspace, added)
    assert saved.target_ids == squares and saved.params["selection"]["classes"] == ["square"]
    assert {metric.label: metric.value for metric in app.metric}["Targets"] == str(len(squares))
    assert any("Only the classes square" in caption.value for caption in app.caption)


def test_picking_no_class_is_refused_on_the_form(suite_workspace, app_runner):
    app = app_runner(PAGE, suite_workspace)
    app.multiselect(key="suites.classes").set_value([])
    app = preview(app, "random", 2)
    assert any("Pick at least one class" in w.value for w in app.warning)
    assert not any(h.value.startswith("Preview:") for h in app.subheader) and not jobs.list_jobs(suite_workspace).shape[0]


# -- issue 27.10: names, not hex ids ---------------------------------------------------------------------
NAME = "My cups #1 _v2_"  # allowed characters that Markdown would otherwise render (heading, italics)


def test_a_named_suite_is_saved_and_reopened_by_its_label(suite_workspace, app_runner):
    app = app_runner(PAGE, suite_workspace)
    app.text_input(key="suites.name").set_value(NAME)
    app.selectbox(key="suites.method").set_value("random")
    app.number_input(key="suites.n").set_value(2)
    app = app.button(key="suites.build").click().run()
    assert not app.exception, app.exception
    job_id = app.session_state["suites.job"]
    wait(suite_workspace, job_id, timeout=WAIT_S)
    app = app.run()
    assert not app.exception, app.exception
    suite = list_suites(suite_workspace).iloc[0]  # newest first
    label = f"{NAME} (random, N = 2, seed 0, 6 targets)"
    assert suite["name"] == NAME and suite["label"] == label and jobs.get_job(suite_workspace, job_id).result["suite"] == label
    # the job's message and the success name the suite as every listing does, escaped
    assert any(escape_markdown(label) in s.value and suite["id"] not in s.value for s in app.success)
    assert any(escape_markdown(label) in c.value for c in app.caption)  # the finished job's line
    picker = app.selectbox(key="suites.open")
    assert picker.value == suite["id"] and list(picker.options) == list(list_suites(suite_workspace)["label"])
    assert not any(i in option for i in list_suites(suite_workspace)["id"] for option in picker.options)
    assert app.query_params["suite"] == suite["id"]  # the address opens it again
    assert any(m.value.startswith(f"**{escape_markdown(label)}**") for m in app.markdown)
    table = app.dataframe[0].value
    assert table.columns[0] == "suite" and table.columns[-1] == "id" and table.iloc[0]["suite"] == label


def test_a_bad_name_is_refused_on_the_form(suite_workspace, app_runner):
    app = app_runner(PAGE, suite_workspace)
    app.text_input(key="suites.name").set_value("<b>cups</b>")
    app = preview(app, "random", 2)
    assert any("suite name" in e.value and "use letters, digits" in e.value for e in app.error)
    assert not any(h.value.startswith("Preview:") for h in app.subheader) and not jobs.list_jobs(suite_workspace).shape[0]


def test_a_link_opens_a_saved_suite(suite_workspace):
    from streamlit.testing.v1 import AppTest

    from analytics.suites import build_suite
    from analytics.workspace import PROJECT_ROOT
    from tests.fixtures.app import APP_TIMEOUT_S
    from ui.state import WORKSPACE_PATH

    older = build_suite(suite_workspace, method="random", n=2, seed=3, realism_threshold=0.0)
    build_suite(suite_workspace, method="random", n=2, seed=4, realism_threshold=0.0)  # the newest: the default
    app = AppTest.from_file(str(PROJECT_ROOT / PAGE), default_timeout=APP_TIMEOUT_S)
    app.session_state[WORKSPACE_PATH] = str(suite_workspace.root)
    app.query_params["suite"] = older.id
    app = app.run()
    assert not app.exception, app.exception
    assert app.selectbox(key="suites.open").value == older.id
    assert any(m.value.startswith("**random, N = 2, seed 3, 6 targets**") for m in app.markdown)
