"""The dashboard in headless chromium: Home shows the workspace, the sidebar leads to Data."""

from __future__ import annotations

import re
import shutil

from playwright.sync_api import expect

from analytics.data import list_backgrounds, list_classes, list_targets
from ui.navigation import SECTIONS


def test_home_shows_workspace_counts(page, app_url, e2e_workspace):
    page.goto(app_url)
    expect(page.get_by_role("heading", name="Backdrop")).to_be_visible()
    expected = {"Targets": len(list_targets(e2e_workspace)), "Backgrounds": len(list_backgrounds(e2e_workspace))}
    for label, count in expected.items():
        metric = page.get_by_test_id("stMetric").filter(has=page.get_by_text(label, exact=True))
        expect(metric.get_by_test_id("stMetricValue")).to_have_text(str(count))
    classes = page.get_by_test_id("stMarkdown").filter(has_text="Classes:")
    for name in list_classes(e2e_workspace):
        expect(classes).to_contain_text(name)


def test_sidebar_navigates_to_data_target_grid(page, app_url, e2e_workspace):
    page.goto(app_url)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Data").click()
    expect(page).to_have_url(re.compile(r"/Data$"))
    expect(page.get_by_role("heading", name="Data")).to_be_visible()
    targets = list_targets(e2e_workspace)
    for target_id in targets["id"]:
        expect(page.get_by_text(target_id, exact=True)).to_be_visible()
    expect(page.get_by_role("img")).to_have_count(len(targets))  # only the visible tab's grid counts


def test_deep_link_to_fresh_server_opens_page_inside_the_app(page, server_per_test, e2e_workspace, tmp_path):
    # A second server (its own workspace folder) that no browser has opened yet.
    copy = tmp_path / "ws"
    shutil.copytree(e2e_workspace.root, copy)
    server = server_per_test(copy)
    page.goto(f"{server.url}/Data")
    expect(page.get_by_role("heading", name="Data")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/Data$"))
    navigation = page.get_by_test_id("stSidebarNav")
    expect(navigation.get_by_role("link", name="Home")).to_be_visible()
    for section in SECTIONS:  # issue 27.11: the pages grouped by what a person is doing, none folded away
        expect(navigation.get_by_text(section, exact=True)).to_be_visible()
    expect(navigation.get_by_role("link", name="Repository")).to_be_visible()  # the last page
    expect(page.get_by_role("textbox", name="Workspace")).to_have_value(str(copy))
