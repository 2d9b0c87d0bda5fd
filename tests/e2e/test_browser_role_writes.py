"""Every role's writes in headless chromium, against a team-mode server (one per role, on a fresh copy of
one workspace with models, finished runs, a disagreement and an account per role): signed in as the
role, the test tries each page's write a browser can make cheaply (Data import, Models register,
Suites build and save, Run, Judge, Adjudication consensus). Only the roles of README's table succeed,
the database's row counts prove it, and every other role sees either no control, the page's refusal,
or the library's refusal naming the role needed, with no row written.

The other pages' writes are ``test_browser_role_writes_pages.py``'s (Ontology, Data's class mapping,
GrabCut and mask review, Repository, Factors, Home's Cancel) and ``test_browser_role_writes_compute.py``'s
(Backgrounds Challenge, Scenarios, Saliency, Methods); ``tests/app/test_roles_on_pages.py`` (AppTest)
presses every button of every page as a viewer. No page creates accounts (the CLI's ``add-user`` does).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from analytics.data import custom_label_space, list_backgrounds
from analytics.judging import add_judgment, consensus_history, judgment_history, set_plan
from analytics.models import list_models, register_torchscript
from analytics.runs import list_runs
from analytics.suites import list_suites
from analytics.team.roles import ROLES
from analytics.workspace import Workspace
from tests.e2e.roles import add_role_accounts, open_as, outcome
from tests.e2e.test_browser_judge import SUITE, workspace_with_runs
from tests.e2e.test_browser_own_data import LONG_MS, choose, pick_radio, settle, upload
from tests.e2e.test_browser_pages import background_zip
from ui.judge import button_key

#: A registered model without a run: the Run page preselects it (models are listed by name).
FRESH = "aaa-fresh"
#: The model two annotators disagree on, for Adjudication.
DISPUTED = "tiny"
#: README's role table, written out: the table (row counts) each role may add rows to through the pages.
MAY_WRITE = {
    "admin": {"backgrounds", "models", "suites", "runs", "judgments", "consensus"},
    "analyst": {"suites", "runs", "judgments", "consensus"},
    "annotator": {"judgments"},
    "viewer": set(),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The workspace every role's server copies, and model files for the Register form."""
    from tests.fixtures.models import CENTRE_BOX, RegionNet, TinyNet, save_torchscript, write_labels

    root = tmp_path_factory.mktemp("role-writes")
    workspace = workspace_with_runs(root, {DISPUTED: TinyNet(), "fg-only": RegionNet((CENTRE_BOX,))}, SUITE)
    labels = write_labels(root / "labels.txt")
    register_torchscript(workspace, FRESH, checkpoint=save_torchscript(TinyNet(), root / f"{FRESH}.pt", seed=7), label_space=custom_label_space(labels), input_size=64)
    save_torchscript(TinyNet(), root / "upload.pt", seed=8)
    add_role_accounts(workspace, ("ann1", "annotator"), ("ann2", "annotator"))
    set_plan(workspace, SUITE, 1)  # every annotator judges every model
    for name, label in (("ann1", "invariant"), ("ann2", "variant")):
        add_judgment(workspace, annotator=name, model=DISPUTED, label=label, suite_id=SUITE)
    (root / "pool.zip").write_bytes(background_zip(2))
    return root


@pytest.fixture
def role_server(site, server_per_test, tmp_path, monkeypatch):
    copy = tmp_path / "ws"
    shutil.copytree(site / "ws", copy)
    monkeypatch.setenv("BACKDROP_TEAM", "1")  # inherited by the server started now
    monkeypatch.delenv("BACKDROP_DATA_ROOTS", raising=False)  # uploads only: no server paths
    return server_per_test(copy)


def counts(workspace: Workspace) -> dict[str, int]:
    return {
        "backgrounds": len(list_backgrounds(workspace)),
        "models": len(list_models(workspace)),
        "suites": len(list_suites(workspace)),
        "runs": len(list_runs(workspace)),
        "judgments": len(judgment_history(workspace)),
        "consensus": len(consensus_history(workspace, SUITE)),
    }


def admin_tab(page: Page, url: str, role: str, path: str, name: str, table: str) -> Locator | None:
    """The panel of ``path``'s admin-only tab ``name``, opened; None (and no such tab) for a role that may not write ``table``."""
    open_as(page, url, path, role)
    tab = page.get_by_role("tab", name=name, exact=True)
    if table not in MAY_WRITE[role]:
        expect(tab).to_have_count(0)
        return None
    tab.click()
    return page.get_by_role("tabpanel", name=name, exact=True)


def try_import(page: Page, url: str, role: str, pool: Path) -> None:
    panel = admin_tab(page, url, role, "Data", "Import", "backgrounds")
    if panel is None:
        return
    pick_radio(page, panel, "Background pool")
    pick_radio(page, panel, "Uploaded zip")
    upload(page, panel, "Zip file", pool)
    panel.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_text(re.compile(r"Imported from pool\.zip: 2 new of 2 accepted, 0 rejected"))).to_be_visible(timeout=LONG_MS)


def try_register(page: Page, url: str, role: str, site: Path) -> None:
    panel = admin_tab(page, url, role, "Models", "Register", "models")
    if panel is None:
        return
    pick_radio(page, panel, "TorchScript file")
    name = panel.get_by_role("textbox", name="Name")
    name.fill("uploaded")
    name.press("Enter")
    upload(page, panel, "PT", site / "upload.pt")
    pick_radio(page, panel, "Custom class list")
    upload(page, panel, "TXT", site / "labels.txt")
    size = panel.get_by_role("spinbutton", name="Input size (px)")
    size.fill("64")
    size.press("Enter")
    settle(page)
    panel.get_by_role("button", name="Register", exact=True).click()
    expect(page.get_by_text("Registered 'uploaded'.")).to_be_visible(timeout=LONG_MS)


def try_suite(page: Page, url: str, role: str) -> None:
    if not open_as(page, url, "Suites", role):
        return
    choose(page, page, "Method", re.compile(r"^random"))
    page.get_by_role("button", name="Build and save for every target").click()
    outcome(page, page.get_by_text(re.compile(r"^Saved suite random, ")), "suites" in MAY_WRITE[role])


def try_run(page: Page, url: str, role: str) -> None:
    if not open_as(page, url, "Run", role):
        return
    page.get_by_role("button", name="Run", exact=True).click()
    outcome(page, page.get_by_text(re.compile(r"^Finished 1 run\(s\): ")), "runs" in MAY_WRITE[role])


def try_judge(page: Page, url: str, role: str) -> None:
    if not open_as(page, url, "Judge", role):
        return
    settle(page)
    page.locator(f".st-key-{button_key('invariant')} button").click()
    expect(page.get_by_text(re.compile(r"^Saved: .+ is invariant\."))).to_be_visible(timeout=LONG_MS)


def try_consensus(page: Page, url: str, role: str) -> None:
    if not open_as(page, url, "Adjudication", role):
        return
    settle(page)
    page.get_by_test_id("stRadio").get_by_text("borderline", exact=True).click()
    page.get_by_label("Reason (required)").fill("the band is far")
    page.get_by_role("button", name="Record consensus").click()
    expect(page.get_by_text(f"Consensus saved: {DISPUTED} is borderline (by {role}).")).to_be_visible(timeout=LONG_MS)


@pytest.mark.parametrize("role", ROLES)
def test_each_role_writes_only_what_the_readme_allows(page, role_server, site, role):
    workspace = Workspace(role_server.workspace, create=False)
    before = counts(workspace)
    url = role_server.url
    try_import(page, url, role, site / "pool.zip")
    try_register(page, url, role, site)
    try_suite(page, url, role)
    try_run(page, url, role)
    try_judge(page, url, role)
    try_consensus(page, url, role)

    after = counts(workspace)
    added = {"backgrounds": 2}  # the pool zip's two photos; one row elsewhere
    expected = {table: n + (added.get(table, 1) if table in MAY_WRITE[role] else 0) for table, n in before.items()}
    assert after == expected, f"{role}: {before} -> {after}"
