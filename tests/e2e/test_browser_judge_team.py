"""Team judging under load, in headless chromium against a server in team mode: three annotators sign in
in three browser sessions and judge blind at the same time (every click of a round lands before any
confirmation is awaited); no judgment is lost. Then one changes a judgment, the page confirms it as
saved, the server is killed with SIGKILL at once, and the confirmed judgment is in the database."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable
from pathlib import Path

from playwright.sync_api import Page, expect

from analytics.judging import blind_name, judgment_history, latest_judgments, set_plan
from analytics.team import add_user
from analytics.workspace import Workspace
from tests.e2e.test_browser_judge import BLIND_ALIAS, COLD_START_MS, MODELS, SUITE, open_session, settle, workspace_with_runs
from tests.fixtures.team import TEAM_PASSWORD
from ui.judge import button_key

ANNOTATORS = ("ann1", "ann2", "ann3")
#: Each annotator's labels, one per round (the model each lands on is whatever their queue shows).
LABELS = {"ann1": ["invariant", "variant", "borderline"], "ann2": ["variant", "variant", "invariant"], "ann3": ["borderline", "invariant", "variant"]}


def sign_in(tab: Page, url: str, page: str, name: str) -> None:
    """Open ``page`` (its URL path and title), sign in as ``name`` and wait for the page."""
    tab.goto(f"{url}/{page}")
    expect(tab.get_by_role("button", name="Sign in")).to_be_visible(timeout=COLD_START_MS)
    tab.get_by_label("Name").fill(name)
    tab.get_by_label("Password", exact=True).fill(TEAM_PASSWORD)
    tab.get_by_role("button", name="Sign in").click()
    expect(tab.get_by_role("heading", name=page)).to_be_visible(timeout=COLD_START_MS)


def sign_in_to_judge(tab: Page, url: str, name: str) -> None:
    sign_in(tab, url, "Judge", name)


def team_judging_workspace(root: Path, annotators: Iterable[str]) -> Workspace:
    """The three tiny models run over :data:`SUITE`, the admin ``ada`` and ``annotators``, everyone
    judging everything with k = the number of annotators."""
    from tests.fixtures.models import CENTRE_BOX, CORNER_BOXES, RegionNet, TinyNet

    networks = {"tiny": TinyNet(), "fg-only": RegionNet((CENTRE_BOX,)), "bg-only": RegionNet(CORNER_BOXES)}
    workspace = workspace_with_runs(root, networks, SUITE)
    add_user(workspace, "ada", "admin", TEAM_PASSWORD)
    names = list(annotators)
    for name in names:
        add_user(workspace, name, "annotator", TEAM_PASSWORD)
    set_plan(workspace, SUITE, len(names))  # everyone judges everything, k judgments wanted per model
    return workspace


def shown_alias(tab: Page, done: int) -> str:
    """The alias of the model on screen, once the page is settled with ``done`` judged."""
    settle(tab)
    expect(tab.get_by_text(f"{done} of {len(MODELS)} judged by")).to_be_visible()
    heading = tab.get_by_role("heading", name=BLIND_ALIAS)
    expect(heading).to_be_visible()
    for model in MODELS:  # blind: no name anywhere in the main area
        expect(tab.get_by_test_id("stMain").get_by_text(re.compile(rf"(?<![\w-]){re.escape(model)}(?![\w-])"))).to_have_count(0)
    return heading.inner_text()


def test_three_annotators_judge_at_once_and_a_confirmed_judgment_survives_kill_9(browser, server_per_test, tmp_path, fast_hashing, monkeypatch):
    workspace = team_judging_workspace(tmp_path, ANNOTATORS)
    monkeypatch.setenv("BACKDROP_TEAM", "1")  # inherited by the server started now
    server = server_per_test(workspace)
    tabs = {name: open_session(browser) for name in ANNOTATORS}
    try:
        for name, tab in tabs.items():
            sign_in_to_judge(tab, server.url, name)
        seen: dict[str, dict[str, str]] = {name: {} for name in ANNOTATORS}  # annotator -> alias -> label
        for done in range(len(MODELS)):
            aliases = {name: shown_alias(tab, done) for name, tab in tabs.items()}
            for name, tab in tabs.items():  # three clicks in flight at once
                tab.locator(f".st-key-{button_key(LABELS[name][done])} button").click()
            for name, tab in tabs.items():
                expect(tab.get_by_text(f"Saved: {aliases[name]} is {LABELS[name][done]}.")).to_be_visible()
                seen[name][aliases[name]] = LABELS[name][done]
        for tab in tabs.values():
            settle(tab)
            expect(tab.get_by_text(f"You have judged all {len(MODELS)} models assigned to you")).to_be_visible()

        stored = latest_judgments(workspace, SUITE)
        assert len(stored) == len(ANNOTATORS) * len(MODELS) == len(judgment_history(workspace))
        for name in ANNOTATORS:
            mine = stored[stored["annotator"] == name]
            assert {blind_name(workspace, SUITE, m): label for m, label in zip(mine["model"], mine["label"])} == seen[name]

        # Change ann1's last judgment; once the page says it is saved, kill the server outright.
        tab = tabs["ann1"]
        last = LABELS["ann1"][-1]
        new = next(label for label in ("variant", "invariant") if label != last)
        tab.get_by_text("Change my last judgment on this suite").click()
        tab.locator(f".st-key-{button_key(new, change=True)} button").click()
        expect(tab.get_by_text(re.compile(rf"Saved: Model [0-9A-F]{{6}} is {new}\."))).to_be_visible()
        server.process.send_signal(signal.SIGKILL)
        assert server.process.wait(timeout=30) == -signal.SIGKILL

        history = judgment_history(workspace)
        assert len(history) == len(ANNOTATORS) * len(MODELS) + 1
        assert (history.iloc[-1]["annotator"], history.iloc[-1]["label"]) == ("ann1", new)
    finally:
        for tab in tabs.values():
            tab.context.close()
