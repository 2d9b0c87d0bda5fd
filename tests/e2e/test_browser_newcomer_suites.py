"""Issue 27, stopper 1, in the browser: the paper's own method built from the Suites page.

The workspace's keyword tables make the three targets the preview samples expand to a keyword no
background carries (``cave``), while the other three expand fine: half of the suite, enough for the
ontology to fit. Before the fix the preview judged the fit on its own three targets, failed with
"expands only 0 of 3 targets" and offered no way to save. Now the newcomer picks Method "ontology"
and N = 8, previews, and saves the suite for every target.
"""

from __future__ import annotations

import re
import shutil

import pytest
from playwright.sync_api import Page, expect

from analytics.comparison import comparison_targets
from analytics.suites import list_suites, load_suite
from analytics.workspace import Workspace
from tests.app.test_suites_page import cave_tables
from tests.e2e.test_browser_own_data import LONG_MS, choose, open_page, settle
from tests.fixtures.models import add_tiny_models, write_tiny_model_files
from ui.suites import PREVIEW_TARGETS

N = 8


@pytest.fixture
def cave_server(server_per_test, e2e_workspace, tmp_path):
    """The small e2e workspace with the tiny models (for semantic distances) and the cave keyword tables
    and their ontology, the only ones: the page's defaults ("newest") pick them. Each attempt at the
    module's one test gets its own (a rerun's suite would be the first attempt's, saved already)."""
    shutil.copytree(e2e_workspace.root, tmp_path / "ws")
    workspace = add_tiny_models(Workspace(tmp_path / "ws", create=False), write_tiny_model_files(tmp_path / "models"))
    cave_tables(workspace, set(comparison_targets(workspace, PREVIEW_TARGETS)))
    return server_per_test(workspace)


def test_an_ontology_suite_of_n_8_is_previewed_and_saved_from_the_page(page: Page, cave_server):
    workspace = Workspace(cave_server.workspace, create=False)
    before = set(list_suites(workspace)["id"])
    open_page(page, f"{cave_server.url}/Suites", "Suites")
    form = page.get_by_test_id("stForm")
    choose(page, form, "Method", re.compile(r"^ontology — "))
    n = form.get_by_role("spinbutton", name="Backgrounds per target (N)")
    n.fill(str(N))
    realism = form.get_by_role("slider")
    realism.focus()
    realism.press("Home")  # realism threshold 0: the synthetic backgrounds all pass
    form.get_by_role("button", name="Preview").click()
    expect(page.get_by_role("heading", name=re.compile(r"^Preview: ontology suite for 3 of 6 targets"))).to_be_visible(timeout=LONG_MS)
    settle(page)  # no error box: the preview's three targets do not decide the fit
    page.get_by_role("button", name="Save suite").click()
    expect(page.get_by_text(re.compile(r"^Saved suite ontology, N = 8, .+ \(48 backgrounds\)"))).to_be_visible(timeout=LONG_MS)
    settle(page)
    (added,) = set(list_suites(workspace)["id"]) - before
    suite = load_suite(workspace, added)
    assert suite.method == "ontology" and len(suite.target_ids) == 6 and len(suite.items) == 6 * N
    assert suite.params["keyword_tables"]["target"]["name"] == "cave-targets"
