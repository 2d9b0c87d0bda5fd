"""Every role's writes on the pages that compute, in headless chromium against one team-mode server
for the module: the Backgrounds Challenge's and the Scenarios page's Evaluate (the models run and
their predictions are cached in the workspace) and the background jobs of Saliency (Compare) and
Methods (Compare methods), and the Models page's zoo training.

Each test, in its role's tab (signed in once per module), tries the page's write, and compares the workspace's row counts of
every table before and after: only the roles of README's table (admin and analyst run models and
build suites) change anything. A viewer finds no Evaluate, Compare or Compare methods (a caption names
the role needed) and writes no row; annotators are not let into these pages. A started job is stopped at once (its rows are not the role's to count).
"""

from __future__ import annotations

import itertools
import re

import pytest
from playwright.sync_api import Page, expect

from analytics.team import allowed
from analytics.team.roles import ROLES
from analytics.workspace import Workspace
from tests.e2e.conftest import AppServer
from tests.e2e.roles import add_role_accounts, added, not_offered, open_as, outcome, started_jobs
from tests.e2e.test_browser_judge import SUITE, workspace_with_runs
from tests.e2e.test_browser_own_data import LONG_MS, settle
from tests.fixtures.team import row_counts

#: A new seed for each evaluation (a rerun's too), so that each computes (and caches) predictions of its own.
SEEDS = itertools.count(1)


@pytest.fixture(scope="module")
def server(app_server_factory, tmp_path_factory) -> AppServer:
    """Two tiny models with runs over a suite, an account per role; team mode, no data root."""
    from tests.fixtures.models import CORNER_BOXES, RegionNet, TinyNet

    workspace = workspace_with_runs(tmp_path_factory.mktemp("role-writes-compute"), {"tiny": TinyNet(), "bg-only": RegionNet(CORNER_BOXES)}, SUITE)
    add_role_accounts(workspace)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BACKDROP_TEAM", "1")  # inherited by the server started now
        patch.delenv("BACKDROP_DATA_ROOTS", raising=False)
        return app_server_factory(workspace)


@pytest.fixture
def workspace(server) -> Workspace:
    return Workspace(server.workspace, create=False)


def set_seed(page: Page, label: str) -> None:
    seed = page.get_by_role("spinbutton", name=label)
    seed.fill(str(next(SEEDS)))
    seed.press("Enter")
    settle(page)


def evaluate(page: Page, role: str, seed_label: str, results: str) -> None:
    """Press the page's Evaluate (with a new seed) where the role may run models, else check that it is not offered."""
    evaluate = page.get_by_role("button", name="Evaluate", exact=True)
    if not allowed(role, "run_models"):
        not_offered(page, evaluate, "Evaluate", role)
        return
    set_seed(page, seed_label)
    evaluate.click()
    expect(page.get_by_role("heading", name=results)).to_be_visible(timeout=LONG_MS)
    settle(page)


def check_cache_rows(workspace: Workspace, before: dict[str, int], role: str) -> None:
    """Predictions cached (cache rows only) for a role that runs models; nothing for the others."""
    wrote = added(workspace, before)
    if allowed(role, "run_models"):
        assert set(wrote) == {"cache"} and wrote["cache"] > 0, (role, wrote)
    else:
        assert wrote == {}, role


@pytest.mark.parametrize(
    ("path", "seed_label", "results"),
    [("Backgrounds_Challenge", "Seed of the Mixed-* pairings", "Accuracy per variant"), ("Scenarios", "Seed", "Accuracy per scenario")],
)
@pytest.mark.parametrize("role", ROLES)
def test_evaluate_caches_predictions_for_roles_that_run_models(role_page, server, workspace, role, path, seed_label, results):
    before = row_counts(workspace)
    if open_as(role_page, server.url, path, role):
        evaluate(role_page, role, seed_label, results)
    check_cache_rows(workspace, before, role)


@pytest.mark.parametrize(
    ("path", "button", "kind", "permission", "title", "what"),
    [
        ("Saliency", "Compare", "saliency", "run_models", "Saliency comparison", "Comparing saliency across models"),
        ("Methods", "Compare methods", "methods", "build_suites", "Method comparison", "Comparing methods"),
    ],
)
@pytest.mark.parametrize("role", ROLES)
def test_jobs_start_for_the_roles_of_their_kind(role_page, server, workspace, role, path, button, kind, permission, title, what):
    page = role_page
    before = row_counts(workspace)
    if open_as(page, server.url, path, role):
        settle(page)
        start = page.get_by_role("button", name=button, exact=True)
        if allowed(role, permission):
            start.click()
            outcome(page, page.get_by_text(re.compile(rf"{title} .* by {role}")), True)
        else:
            not_offered(page, start, what, role)
    if allowed(role, permission):
        assert started_jobs(workspace, before, at_least=1) == [(kind, role)]
    else:
        assert added(workspace, before) == {}, role


@pytest.mark.parametrize("role", ROLES)
def test_the_zoo_trains_for_roles_that_run_models(role_page, server, workspace, role):
    page = role_page
    before = row_counts(workspace)
    if open_as(page, server.url, "Models", role):
        zoo = page.get_by_role("tab", name="Zoo", exact=True)
        if allowed(role, "run_models"):
            zoo.click()
            panel = page.get_by_role("tabpanel", name="Zoo", exact=True)
            panel.get_by_role("button", name="Train the zoo").click()
            expect(page.get_by_text(re.compile(rf"Zoo training .* by {role}")).first).to_be_visible(timeout=LONG_MS)
        else:
            expect(page.get_by_role("tab", name="Registered", exact=True)).to_be_visible()
            expect(zoo).to_have_count(0)
    if allowed(role, "run_models"):
        assert started_jobs(workspace, before, at_least=1) == [("zoo", role)]
    else:
        assert added(workspace, before) == {}, role
