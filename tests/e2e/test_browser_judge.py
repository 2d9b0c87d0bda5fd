"""Judging in a real browser: two annotators, each in their own browser session, judge three models in
blind mode (one with the mouse, one with the keyboard shortcuts), then Agreement shows their κ.

The helpers (:func:`workspace_with_runs`, :func:`open_session`, :func:`settle`) serve the team-mode
test too (``test_browser_judge_team.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from analytics.data import custom_label_space, store_backgrounds, store_targets
from analytics.judging import judgment_history, latest_judgments, measure_agreement
from analytics.models import register_torchscript
from analytics.runs import start_runs
from analytics.workspace import Workspace
from tests.e2e.conftest import PAGE_TIMEOUT_MS, VIEWPORT
from tests.fixtures.workspace import CLASSES, SIZE, make_background, make_target
from ui.judge import button_key

MODELS = ("tiny", "fg-only", "bg-only")
COLD_START_MS = 120_000  # the first run of a page imports torch and the model stack on a busy machine
SUITE = "tiny-suite"
BLIND_ALIAS = re.compile(r"^Model [0-9A-F]{6}$")  # analytics.judging.assignments.blind_name


def workspace_with_runs(root: Path, networks: dict, suite: str) -> Workspace:
    """The tiny workspace with ``networks`` (name -> module) registered and run over ``suite``."""
    from tests.fixtures.models import insert_suite, save_torchscript, write_labels

    rng = np.random.default_rng(0)
    workspace = Workspace(root / "ws")
    workspace.set_meta("image_size", str(SIZE))
    store_targets(workspace, [make_target(c, i, rng) for c in CLASSES for i in range(3)], classes=CLASSES)
    store_backgrounds(workspace, [make_background(i, rng) for i in range(12)])
    labels = custom_label_space(write_labels(root / "labels.txt"))
    for seed, (name, network) in enumerate(networks.items()):
        path = save_torchscript(network, root / f"{name}.pt", seed=seed)
        register_torchscript(workspace, name, checkpoint=path, label_space=labels, input_size=SIZE)
    insert_suite(workspace, suite)
    start_runs(workspace, list(networks), suite)
    return workspace


@pytest.fixture
def judge_workspace(tmp_path_factory) -> Workspace:
    """The tiny workspace with three tiny models and their finished runs over a 4-background suite;
    one per test run, so that a rerun (tests/e2e/conftest.py) starts with no judgments."""
    from tests.fixtures.models import CENTRE_BOX, CORNER_BOXES, RegionNet, TinyNet

    networks = {"tiny": TinyNet(), "fg-only": RegionNet((CENTRE_BOX,)), "bg-only": RegionNet(CORNER_BOXES)}
    assert tuple(networks) == MODELS
    return workspace_with_runs(tmp_path_factory.mktemp("judge-e2e"), networks, SUITE)


def open_session(browser) -> Page:
    """A tab in a fresh browser context: a new Streamlit session, as a second analyst's browser is."""
    tab = browser.new_context(viewport=VIEWPORT).new_page()
    tab.set_default_timeout(PAGE_TIMEOUT_MS)
    return tab


def settle(tab: Page) -> None:
    """Wait until the script run is over: while it runs, the previous run's elements linger (stale), and
    a click on a stale button belongs to the model shown before."""
    expect(tab.get_by_test_id("stStatusWidgetRunningIcon")).to_have_count(0)
    expect(tab.locator('[data-testid="stElementContainer"][data-stale="true"]')).to_have_count(0)


def judge_three(tab: Page, url: str, name: str, labels: list[str], *, keyboard: bool) -> None:
    tab.goto(f"{url}/Judge")
    expect(tab.get_by_role("heading", name="Judge")).to_be_visible(timeout=COLD_START_MS)
    tab.get_by_role("textbox", name="Your name").last.fill(name)
    tab.get_by_role("button", name="Start judging").click()
    for done, label in enumerate(labels):
        settle(tab)
        expect(tab.get_by_text(f"{done} of 3 judged by {name}")).to_be_visible()
        heading = tab.get_by_role("heading", name=BLIND_ALIAS)
        expect(heading).to_be_visible()
        shown_as = heading.inner_text()
        for model in MODELS:  # blind mode: no name anywhere in the main area
            expect(tab.get_by_test_id("stMain").get_by_text(model, exact=True)).to_have_count(0)
        expect(tab.get_by_test_id("stPlotlyChart")).to_have_count(4)
        if keyboard:
            tab.locator("body").press(str(1 + ["invariant", "borderline", "variant"].index(label)))
        else:
            tab.locator(f".st-key-{button_key(label)} button").click()
        expect(tab.get_by_text(f"Saved: {shown_as} is {label}.")).to_be_visible()  # drawn by the run the click started
    settle(tab)
    expect(tab.get_by_text("You have judged all 3 models")).to_be_visible()


def test_two_annotators_judge_blind_then_agreement_shows_kappa(browser, server_per_test, judge_workspace):
    url = server_per_test(judge_workspace).url
    ana, ben = open_session(browser), open_session(browser)
    try:
        judge_three(ana, url, "ana", ["invariant", "variant", "borderline"], keyboard=False)
        judge_three(ben, url, "ben", ["variant", "variant", "invariant"], keyboard=True)
        stored = latest_judgments(judge_workspace)
        assert sorted(stored["annotator"]) == ["ana"] * 3 + ["ben"] * 3
        assert set(stored["model"]) == set(MODELS) and (stored["suite_id"] == SUITE).all()
        assert len(judgment_history(judge_workspace)) == 6
        kappa = measure_agreement(stored).fleiss_kappa

        ana.get_by_test_id("stSidebarNav").get_by_role("link", name="Agreement").click()
        expect(ana.get_by_role("heading", name="Agreement")).to_be_visible()
        metric = ana.get_by_test_id("stMetric").filter(has=ana.get_by_text("Fleiss' κ", exact=True))
        expect(metric.get_by_test_id("stMetricValue")).to_have_text(f"{kappa:.2f}")
        expect(ana.get_by_text("observed agreement")).to_be_visible()
        expect(ana.get_by_test_id("stPlotlyChart").first).to_be_visible()
    finally:
        ana.context.close()
        ben.context.close()
