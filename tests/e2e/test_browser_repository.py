"""The zoo as a repository, entirely in the browser: on a tiny workspace with two zoo heads on a tiny
backbone, the Repository page makes the repository "zoo" with the "All models of the zoo" preset,
runs it over the suite as a background job with its progress bar, and then lists every model done
(read back from the page's CSV export); the table's link to a run's matrices opens the Matrices page."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from playwright.sync_api import Page, expect

from analytics.suites import suite_labels_of
from analytics.workspace import Workspace
from analytics.zoo import build_zoo, list_zoo
from tests.analytics.zoo.test_zoo import SMALL
from tests.e2e.test_browser_own_data import LONG_MS, open_page, settle
from tests.fixtures.models import TINY_SUITE, insert_suite
from tests.fixtures.zoo import ZOO_BACKBONE


@pytest.fixture
def zoo_server(server_per_test, zoo_workspace):
    """A server on ``zoo_workspace`` with two zoo heads (strength 0 and 1) and the suite ``tiny-suite``,
    and the zoo's models (backbone first)."""
    build_zoo(zoo_workspace, strengths=(0, 1), augment=(False,), seeds=(0,), **SMALL)
    insert_suite(zoo_workspace)
    return server_per_test(zoo_workspace), [ZOO_BACKBONE, *sorted(list_zoo(zoo_workspace)["name"])]


def status_caption(page: Page, done: int, pending: int, total: int):
    return page.get_by_test_id("stCaptionContainer").filter(has_text=f"{done} done · 0 running · 0 failed · {pending} pending of {total} models")


def test_make_the_zoo_a_repository_and_run_it(page, zoo_server):
    server, models = zoo_server
    open_page(page, f"{server.url}/Repository", "Repository")
    page.get_by_role("button", name="All models of the zoo").click()
    settle(page)
    # the form sends what the browser shows: wait until the preset is drawn before submitting
    expect(page.get_by_role("textbox", name="Repository name")).to_have_value("zoo")
    for model in models:
        expect(page.get_by_test_id("stMultiSelect")).to_contain_text(model)
    page.get_by_role("button", name="Make the repository").click()
    expect(page.get_by_text(f"Repository zoo: {len(models)} models")).to_be_visible()
    settle(page)
    expect(status_caption(page, 0, len(models), len(models))).to_be_visible()

    page.get_by_role("button", name="Run the repository").click()
    expect(page.get_by_test_id("stProgress")).to_be_visible()  # the job's progress while it runs
    suite = suite_labels_of(Workspace(server.workspace, create=False))[TINY_SUITE]
    expect(page.get_by_text(f"Repository zoo on {suite}: {len(models)} run now, 0 finished before, 0 failed.")).to_be_visible(timeout=LONG_MS)
    settle(page)
    expect(status_caption(page, len(models), 0, len(models))).to_be_visible()

    with page.expect_download() as download:
        page.get_by_role("button", name="Download CSV").click()
    table = pd.read_csv(download.value.path())
    assert list(table["Model"]) == models and set(table["Status"]) == {"done"}
    assert table["Accuracy"].between(0, 1).all() and set(table["Verdict"]) == {"no assessor"}

    first_run = table["Run"].iloc[0]  # the backbone's: the oldest run, not the Matrices page's default
    page.goto(f"{server.url}/Matrices?run={first_run}")  # where the table's link points
    expect(page.get_by_role("heading", name="Matrices", exact=True)).to_be_visible(timeout=LONG_MS)
    settle(page)
    expect(page.get_by_role("combobox", name="Run")).to_have_value(server.run_label(first_run))
    expect(page).to_have_url(re.compile(rf"/Matrices\?(.*&)?run={first_run}"))
