"""Every role's writes on the pages that store what a person enters, in headless chromium against one
team-mode server (with a data root) for the module: Ontology (keyword tables built from a keyword file
on the server or an uploaded one; "Save this ontology"), Data (a class mapping, a GrabCut target, the
review of proposed masks), Repository (make one, run one), Factors (a workspace model over ImageNet
validation images on the server), Judge's assignments and plan, and Home's Cancel of someone's
background job.

Each test, in its role's tab (signed in once per module), tries the page's writes, and compares the workspace's row counts of
every table before and after: only the roles of README's table change anything; every other role
finds no control (a caption or a missing tab says why), or presses it and gets the library's
refusal naming the role needed. Annotators are not let into these pages at all (they judge blind).
The writes of Data import, Models, Suites, Run, Judge and Adjudication are
``test_browser_role_writes.py``'s; Backgrounds Challenge, Scenarios, Saliency and Methods are
``test_browser_role_writes_compute.py``'s.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
from imagenet_x import load_annotations
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from analytics import jobs
from analytics.data import imagenet_label_space, list_backgrounds, list_class_mappings, list_targets, store_targets
from analytics.judging import get_plan
from analytics.keywords import import_keyword_table, read_keyword_csv
from analytics.models import register_torchscript
from analytics.repository import create_repository
from analytics.team import active_user, allowed
from analytics.team.roles import ROLES
from analytics.workspace import Workspace
from tests.analytics.jobs.test_jobs import sleepy  # registers the job kind "sleepy" (its worker imports that module)
from tests.e2e.conftest import AppServer
from tests.e2e.roles import add_role_accounts, added, go_to, not_offered, open_as, outcome, started_jobs, wait_until_idle
from tests.e2e.test_browser_judge import SUITE, workspace_with_runs
from tests.e2e.test_browser_own_data import LONG_MS, choose, click_until, pick_radio, settle, upload
from tests.e2e.test_browser_zip_layouts import disc_photo, encoded
from tests.fixtures.team import row_counts

LEADS = ("admin", "analyst")  # README: leads cancel / resume anyone's background jobs
IMAGENET_MODEL = "inet-tiny"
REPOSITORY = "tiny-repo"
ASSIGNED = {"admin": "tiny", "analyst": "fg-only"}  # the model each lead assigns to an annotator
ASSIGNEE = "assignee"  # the annotator each attempt assigns models to: "assignee-<attempt>"
EDITED_CLASS = "spare"  # a class no run scores: mapping it leaves the runs current (the Judge page lists current runs)
IN9 = {"admin": "insect", "analyst": "fish", "annotator": "bird", "viewer": "primate"}  # each role's own IN-9 class for it


def keyword_csv(workspace: Workspace, path: Path, word: str) -> Path:
    """A long-layout keyword CSV naming every target and background: a distinct ``word`` per file, so
    that each build stores new tables (their names are content ids) and mines another ontology."""
    rows = [f"{item},grass\n{item},{word}" for item in list_targets(workspace)["id"]]
    rows += [f"{item},{'sky' if i % 2 else 'grass'}\n{item},{word}" for i, item in enumerate(list_backgrounds(workspace)["id"])]
    path.write_text("image,keyword\n" + "\n".join(rows) + "\n")
    return path


def grabcut_photos(folder: Path, attempt: int) -> tuple[Path, Path]:
    """The attempt's photo (``photo-<attempt>``) and zip of two photos of a new class (``my_cup<attempt>``),
    their pixels the attempt's own: a rerun adds targets and a class of its own."""
    photo = folder / f"photo-{attempt}.png"
    photo.write_bytes(encoded(".png", disc_photo(10 * attempt)))
    cups = folder / f"my_cup{attempt}.zip"
    with zipfile.ZipFile(cups, "w") as archive:
        for i in range(1, 3):
            archive.writestr(f"images/my_cup{attempt}/cup{i}.jpg", encoded(".jpg", disc_photo(10 * attempt + i)))
    return photo, cups


def imagenet_val_folder(folder: Path) -> Path:
    """Two images named as ImageNet-X annotates them, in a new ``folder``: new files, so that a rerun's
    predictions are not read back from the first attempt's cache (keyed by name, size and mtime)."""
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name in sorted(load_annotations()["file_name"])[:2]:
        cv2.imwrite(str(folder / name), rng.integers(0, 255, (40, 56, 3), dtype=np.uint8))
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict[str, Path]:
    """The workspace (tiny models with runs, keyword tables, a repository, an ImageNet-1k model, an
    account per role) and its data root. The files a test writes from (keyword files, photos,
    validation images) are made by the test, named after its ``attempt``: a rerun's writes are new too."""
    from torch import nn

    from tests.fixtures.models import CENTRE_BOX, RegionNet, TinyNet, save_torchscript
    from tests.fixtures.workspace import make_target

    root = tmp_path_factory.mktemp("role-writes-pages")
    workspace = workspace_with_runs(root, {"tiny": TinyNet(), "fg-only": RegionNet((CENTRE_BOX,))}, SUITE)
    spare = replace(make_target("disc", 0, np.random.default_rng(1)), id=f"{EDITED_CLASS}/0", class_name=EDITED_CLASS)
    store_targets(workspace, [spare], classes={EDITED_CLASS: []})  # in no suite
    data = root / "data"
    data.mkdir()
    seeded = keyword_csv(workspace, data / "seeded.csv", "seeded")
    import_keyword_table(workspace, read_keyword_csv(seeded.read_bytes(), name=seeded.name))  # every role sees an ontology mined
    create_repository(workspace, REPOSITORY, ["tiny", "fg-only"])
    network = TinyNet()
    network.fc = nn.Linear(8, 1000)  # ImageNet-1k outputs: what ImageNet-X scores
    checkpoint = save_torchscript(network, root / f"{IMAGENET_MODEL}.pt")
    register_torchscript(workspace, IMAGENET_MODEL, checkpoint=checkpoint, label_space=imagenet_label_space(), input_size=64)
    add_role_accounts(workspace, *((f"{ASSIGNEE}-{attempt}", "annotator") for attempt in (1, 2)))  # flaky: two attempts at most
    return {"root": root, "data": data, "workspace": workspace.root}


@pytest.fixture(scope="module")
def server(site, app_server_factory) -> AppServer:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BACKDROP_TEAM", "1")  # inherited by the server started now
        patch.setenv("BACKDROP_DATA_ROOTS", str(site["data"]))  # server paths for admins, inside this folder
        return app_server_factory(site["workspace"])


@pytest.fixture
def workspace(server) -> Workspace:
    return Workspace(server.workspace, create=False)


# -- Ontology -------------------------------------------------------------------------------------
@pytest.mark.parametrize("role", ROLES)
def test_ontology_builds_and_saves_for_analysts_and_admins_only(role_page, server, site, workspace, role, attempt):
    page = role_page
    # the attempt's own words: a rerun's builds store new tables and mine a new ontology
    server_file = keyword_csv(workspace, site["data"] / f"server-{attempt}.csv", f"server{attempt}")  # the admin's, on the server
    upload_file = keyword_csv(workspace, site["root"] / f"upload-{attempt}.csv", f"upload{attempt}")  # the analyst's upload
    before = row_counts(workspace)
    if open_as(page, server.url, "Ontology", role):
        builder = page.get_by_test_id("stExpander").filter(has_text="Keyword tables of this workspace")
        builder.locator("summary").click()
        server_path = builder.get_by_role("textbox", name=re.compile(r"^…or a keyword file on the server"))
        save = page.get_by_role("button", name="Save this ontology in the workspace")
        if not allowed(role, "build_suites"):
            expect(builder.get_by_text(f"Building keyword tables needs the role admin or analyst; you are signed in as {role}")).to_be_visible()
            expect(page.get_by_text(re.compile(r"^Saving ontologies and keyword tables needs the role admin or analyst"))).to_be_visible()
            expect(builder.get_by_role("button", name="Build keyword tables")).to_have_count(0)
            expect(save).to_have_count(0)
            expect(server_path).to_have_count(0)
        else:
            pick_radio(page, builder, "Keyword file (CSV upload, or HDF5 / CSV on the server)")
            if allowed(role, "server_paths"):  # admins, inside the data root
                server_path.fill(str(server_file))
                server_path.press("Enter")
            else:
                expect(server_path).to_have_count(0)
                upload(page, builder, "Keyword CSV", upload_file)
            settle(page)
            builder.get_by_role("button", name="Build keyword tables").click()
            expect(page.get_by_text(re.compile(r"^Built keyword tables: targets → precomputed/target/"))).to_be_visible(timeout=LONG_MS)
            settle(page)
            save.click()
            expect(page.get_by_text(re.compile(r"^Saved ontology "))).to_be_visible(timeout=LONG_MS)
            settle(page)
        file_source = page.get_by_test_id("stRadio").get_by_text("Keyword file on the server", exact=True)
        if allowed(role, "server_paths"):  # mine a keyword file on the server, then store it as a table
            file_source.click()  # no settle: the default path may lie outside the data root (an error box until replaced)
            path = page.get_by_role("textbox", name="Keyword file (reference HDF5, CSV or Backdrop HDF5)")
            path.fill(str(server_file))
            path.press("Enter")
            settle(page)
            page.get_by_test_id("stForm").filter(has_text="Save this keyword file in the workspace").get_by_role("button", name="Save keyword table").click()
            expect(page.get_by_text(re.compile(rf"^Saved keyword table {server_file.stem} \("))).to_be_visible(timeout=LONG_MS)
            settle(page)
        else:
            expect(file_source).to_have_count(0)
    wrote = {"keyword_tables": 2, "ontologies": 1} if allowed(role, "build_suites") else {}
    if allowed(role, "server_paths"):
        wrote["keyword_tables"] += 1  # the file saved as one table
    assert added(workspace, before) == wrote, role


# -- Data -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("role", ROLES)
def test_only_admins_map_classes(role_page, server, workspace, role):
    page = role_page
    original = list_class_mappings(workspace)[EDITED_CLASS]
    before = row_counts(workspace)
    if open_as(page, server.url, "Data", role):
        page.get_by_role("tab", name="Classes", exact=True).click()
        panel = page.get_by_role("tabpanel", name="Classes", exact=True)
        if not allowed(role, "import_data"):  # the table is for every role that browses; the editor only for admins
            not_offered(page, panel.get_by_role("button", name=re.compile("^Save mapping of ")), "Changing a class mapping", role)
        else:
            choose(page, panel, "Class to map", EDITED_CLASS)
            choose(page, panel, "IN-9 class", IN9[role])
            replacing = panel.get_by_text(f"Replace the mapping of {EDITED_CLASS}")
            if replacing.count():  # mapped by an earlier role
                replacing.click()
                settle(page)
            saved = page.get_by_text(re.compile(rf"^Saved {EDITED_CLASS}: "))
            click_until(page, panel.get_by_role("button", name=f"Save mapping of {EDITED_CLASS}"), saved)
            outcome(page, saved, True)
    assert added(workspace, before) == {}, role  # a mapping replaces its class's row: the row itself tells
    assert list_class_mappings(workspace)[EDITED_CLASS].in9 == (IN9[role] if allowed(role, "import_data") else original.in9), role


@pytest.mark.parametrize("role", ROLES)
def test_only_admins_add_grabcut_targets_and_reviewed_masks(role_page, server, site, workspace, role, attempt):
    page = role_page
    photo, cups = grabcut_photos(site["root"], attempt)
    before = row_counts(workspace)
    if open_as(page, server.url, "Data", role):
        if not allowed(role, "import_data"):
            expect(page.get_by_role("tab", name="Targets", exact=True)).to_be_visible()
            expect(page.get_by_role("tab", name="GrabCut", exact=True)).to_have_count(0)
            expect(page.get_by_role("tab", name="Import", exact=True)).to_have_count(0)
        else:
            page.get_by_role("tab", name="GrabCut", exact=True).click()
            panel = page.get_by_role("tabpanel", name="GrabCut", exact=True)
            upload(page, panel, "Image", photo)
            choose(page, panel, "Class", EDITED_CLASS)
            panel.get_by_role("button", name=f"Add as target {EDITED_CLASS}/{photo.stem}").click()
            expect(page.get_by_text(f"Added target {EDITED_CLASS}/{photo.stem}.")).to_be_visible(timeout=LONG_MS)
            settle(page)

            page.get_by_role("tab", name="Import", exact=True).click()
            panel = page.get_by_role("tabpanel", name="Import", exact=True)
            pick_radio(page, panel, "Target set")
            pick_radio(page, panel, "Uploaded zip")
            choose(page, panel, "Layout", re.compile("^folder"))
            panel.get_by_text("Propose GrabCut masks for photos without one").click()
            settle(page)
            upload(page, panel, "Zip file", cups)
            panel.get_by_role("button", name="Import", exact=True).click()
            expect(page.get_by_role("heading", name="Review 2 proposed masks")).to_be_visible(timeout=LONG_MS)
            settle(page)
            page.get_by_role("button", name="Import 2 accepted targets").click()
            expect(page.get_by_text("Imported 2 new of 2 accepted targets with reviewed masks (0 dropped).")).to_be_visible(timeout=LONG_MS)
            settle(page)
    wrote = {"targets": 3, "classes": 1} if allowed(role, "import_data") else {}  # the photo, two reviewed cups of a new class
    assert added(workspace, before) == wrote, role


# -- Repository -----------------------------------------------------------------------------------
def choose_again(page: Page, scope: Locator, label: str, option: str) -> None:
    """:func:`choose` in a form's multiselect, tried up to three times until the chosen value shows as a
    tag: in whole-suite runs the click was lost twice (once the option detached and the page's root took
    the click; once the list closed with nothing chosen, and the form was sent empty)."""
    chosen = scope.get_by_role("button", name=f"Remove {option}", exact=True)
    for _ in range(3):
        try:
            choose(page, scope, label, option)
        except PlaywrightTimeoutError:
            pass
        page.keyboard.press("Escape")
        settle(page)
        wait_until_idle(page)  # the choice's rerun is over: the next one cannot drop it
        if chosen.count():
            return
    expect(chosen).to_be_visible()


def repository_keys(workspace: Workspace) -> set[str]:
    return {row["key"] for row in workspace.query("SELECT key FROM meta WHERE key LIKE 'repository:%'")}


@pytest.mark.parametrize("role", ROLES)
def test_admins_make_repositories_and_leads_run_them(role_page, server, workspace, role, attempt):
    page = role_page
    name = f"by-{role}-{attempt}"  # a rerun makes a repository of its own
    before, repositories_before = row_counts(workspace), repository_keys(workspace)
    if open_as(page, server.url, "Repository", role):
        maker = page.get_by_test_id("stExpander").filter(has_text="Make a repository from registered models")
        run = page.get_by_role("button", name="Run the repository")
        if allowed(role, "register_models"):
            maker.locator("summary").click()
            maker.get_by_role("textbox", name="Repository name").fill(name)
            choose_again(page, maker, "Registered models", "tiny")
            maker.get_by_role("button", name="Make the repository").click()
            expect(page.get_by_text(f"Repository {name}: 1 models")).to_be_visible(timeout=LONG_MS)
            settle(page)
        else:
            expect(maker).to_have_count(0)
        if allowed(role, "run_models"):
            run.click()
            outcome(page, page.get_by_text(re.compile(rf"^repository .* by {role}")), True)
        else:
            expect(page.get_by_role("combobox", name="Repository")).to_be_visible()
            expect(run).to_have_count(0)
    runs = allowed(role, "run_models")
    assert started_jobs(workspace, before, at_least=int(runs)) == ([("repository", role)] if runs else []), role
    made = repository_keys(workspace) - repositories_before  # a repository is a meta row
    assert made == ({"repository:" + name} if allowed(role, "register_models") else set()), role
    if not allowed(role, "run_models"):  # a started job goes on to write its own rows (meta among them: its step cost)
        assert added(workspace, before) == ({"meta": 1} if made else {}), role


# -- Factors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("role", ROLES)
def test_only_admins_predict_over_a_server_folder(role_page, server, site, workspace, role, attempt):
    page = role_page
    before = row_counts(workspace)
    if open_as(page, server.url, "Factors", role):
        predict = page.get_by_test_id("stExpander").filter(has_text="…or predict with a workspace model over ImageNet validation images")
        if allowed(role, "server_paths"):
            predict.locator("summary").click()
            folder = imagenet_val_folder(site["data"] / f"val-{attempt}")
            predict.get_by_role("textbox", name="Folder of ImageNet validation images on the server").fill(str(folder))
            predict.get_by_role("button", name="Predict").click()
            expect(page.get_by_role("button", name=f"{IMAGENET_MODEL}'s predictions (imagenet-x CSV)")).to_be_visible(timeout=LONG_MS)
            settle(page)
        else:  # analysts run models, but this model reads a folder on the server
            expect(page.get_by_text("Upload one or more predictions CSVs")).to_be_visible()
            expect(predict).to_have_count(0)
    wrote = {"cache": 1} if allowed(role, "server_paths") else {}  # one chunk of predictions
    assert added(workspace, before) == wrote, role


# -- Home: Cancel of a background job -------------------------------------------------------------
@pytest.mark.parametrize("role", ROLES)
def test_home_offers_cancel_of_an_analysts_job_to_leads_only(role_page, server, site, workspace, role):
    page = role_page
    owner = active_user(workspace, "analyst")
    marks = site["root"] / f"marks-{role}"
    job = jobs.start(workspace.acting_as(owner), sleepy.__name__, {"steps": 600, "delay": 0.5, "marks": str(marks)})
    try:
        cancelled = cancelled_jobs(workspace)
        go_to(page, server.url, "", role, page.get_by_role("heading", name="Backdrop", exact=True))
        bar = page.get_by_test_id("stProgress").filter(has_text=job.id)
        expect(bar).to_contain_text("by analyst", timeout=LONG_MS)  # kind, status, progress and owner: shown to every role
        cancel = page.get_by_role("button", name="Cancel")
        if role in LEADS:
            cancel.click()
            expect(bar).to_have_count(0, timeout=LONG_MS)  # Home lists active jobs only
        else:
            settle(page)
            expect(cancel).to_have_count(0)
        assert cancelled_jobs(workspace) == cancelled + (role in LEADS), role
        assert jobs.get_job(workspace, job.id).active == (role not in LEADS), role
    finally:
        jobs.cancel(workspace, job.id)


def cancelled_jobs(workspace: Workspace) -> int:
    return workspace.query_one("SELECT COUNT(*) AS n FROM jobs WHERE status = 'cancelled'")["n"]


# -- Judge: assignments and the plan (leads) ------------------------------------------------------
@pytest.mark.parametrize("role", ROLES)
def test_only_leads_assign_and_plan_judging(role_page, server, workspace, role, attempt):
    page = role_page
    annotator = f"{ASSIGNEE}-{attempt}"  # a rerun's pair is new too (a pair assigned again is no new row)
    before = row_counts(workspace)
    if open_as(page, server.url, "Judge", role):
        assignments = page.get_by_test_id("stExpander").filter(has_text="Assignments")
        if not allowed(role, "adjudicate"):
            settle(page)
            expect(assignments).to_have_count(0)
        else:
            assignments.locator("summary").click()
            choose_again(page, assignments, "Models", ASSIGNED[role])
            choose_again(page, assignments, "Annotators", annotator)
            expect(assignments.get_by_role("button", name=f"Remove {ASSIGNED[role]}", exact=True)).to_be_visible()
            assignments.get_by_role("button", name="Assign", exact=True).click()
            expect(page.get_by_text("Assigned: 1 (model, annotator) pairs on this suite.")).to_be_visible(timeout=LONG_MS)
            settle(page)
            page.get_by_role("button", name="Everyone judges everything").click()
            expect(page.get_by_text(re.compile(r"^Everyone judges every model of this suite"))).to_be_visible(timeout=LONG_MS)
            settle(page)
    plan = get_plan(workspace, SUITE)
    # the page's first visit, by any role, keeps the blind-alias key and the suite's colour scale in meta,
    # and caches the matrices of the suite's runs that its "where the models differ most" compares
    wrote = {table: n for table, n in added(workspace, before).items() if table not in ("meta", "cache")}
    if allowed(role, "adjudicate"):  # one assignment; the suite's plan is one row, set by the last lead
        assert wrote == {"assignments": 1, **({"judging_plans": 1} if before["judging_plans"] == 0 else {})}, role
        assert plan.set_by == role
    else:
        assert wrote == {}, role
        assert plan is None or plan.set_by in LEADS
