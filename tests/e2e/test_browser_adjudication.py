"""Judge → disagreement → consensus in headless chromium against a server in team mode: two annotators
sign in and judge the same two models blind on the Judge page, one says invariant, the other variant;
a lead (analyst) signs in, opens Adjudication, sees the disagreement with both labels side by side,
records a consensus with a reason, and the consensus is in the database, signed by the lead; the
CSV export holds both judgments and the consensus."""

from __future__ import annotations

import io

import pandas as pd
from playwright.sync_api import Page, expect

from analytics.judging import blind_name, consensus_history, latest_judgments, set_plan, training_labels
from analytics.team import add_user
from tests.e2e.test_browser_judge import BLIND_ALIAS, COLD_START_MS, SUITE, open_session, settle, workspace_with_runs
from tests.fixtures.team import TEAM_PASSWORD
from ui.adjudication import card_key
from ui.judge import button_key

#: Each annotator's label for every model (so both models disagree) and note.
JUDGES = {"ann1": ("invariant", "stays green near the original"), "ann2": ("variant", "yellow band close to the diagonal")}
LEAD = "lee"
REASON = "the near backgrounds stay green; the band is far"


def sign_in(tab: Page, url: str, page: str, name: str) -> None:
    tab.goto(f"{url}/{page}")
    expect(tab.get_by_role("button", name="Sign in")).to_be_visible(timeout=COLD_START_MS)
    tab.get_by_label("Name").fill(name)
    tab.get_by_label("Password", exact=True).fill(TEAM_PASSWORD)
    tab.get_by_role("button", name="Sign in").click()
    expect(tab.get_by_role("heading", name=page)).to_be_visible(timeout=COLD_START_MS)


def judge_all(tab: Page, label: str, note: str, n_models: int) -> list[str]:
    """Judge every model of the annotator's queue with ``label`` and ``note``; returns the aliases seen."""
    seen = []
    for _ in range(n_models):
        settle(tab)
        heading = tab.get_by_role("heading", name=BLIND_ALIAS)
        expect(heading).to_be_visible()
        alias = heading.inner_text()
        tab.get_by_label("Note (optional)").fill(note)
        tab.locator(f".st-key-{button_key(label)} button").click()
        expect(tab.get_by_text(f"Saved: {alias} is {label}.")).to_be_visible()
        seen.append(alias)
    return seen


def test_two_annotators_disagree_and_a_lead_records_the_consensus(browser, server_per_test, tmp_path, fast_hashing, monkeypatch):
    from tests.fixtures.models import CENTRE_BOX, CORNER_BOXES, RegionNet

    networks = {"fg-only": RegionNet((CENTRE_BOX,)), "bg-only": RegionNet(CORNER_BOXES)}
    workspace = workspace_with_runs(tmp_path, networks, SUITE)
    for name in JUDGES:
        add_user(workspace, name, "annotator", TEAM_PASSWORD)
    add_user(workspace, LEAD, "analyst", TEAM_PASSWORD)
    set_plan(workspace, SUITE, len(JUDGES))  # everyone judges everything
    monkeypatch.setenv("BACKDROP_TEAM", "1")  # inherited by the server started now
    server = server_per_test(workspace)
    tabs = [open_session(browser) for _ in range(len(JUDGES) + 1)]
    try:
        for tab, (name, (label, note)) in zip(tabs, JUDGES.items()):
            sign_in(tab, server.url, "Judge", name)
            seen = judge_all(tab, label, note, len(networks))
            assert sorted(seen) == sorted(blind_name(workspace, SUITE, model) for model in networks)
        stored = latest_judgments(workspace, SUITE)
        assert len(stored) == len(JUDGES) * len(networks)

        lead = tabs[-1]
        sign_in(lead, server.url, "Adjudication", LEAD)
        settle(lead)
        expect(lead.get_by_text(f"{len(networks)} model(s) where the annotators disagree")).to_be_visible()
        model = sorted(networks)[0]  # the picker starts at the first disagreeing model
        main = lead.get_by_test_id("stMain")
        for position, (name, (label, note)) in enumerate(sorted(JUDGES.items())):  # both judgments side by side
            card = main.locator(f".st-key-{card_key(position)}")
            expect(card.get_by_text(name, exact=True)).to_be_visible()
            expect(card.get_by_text(label, exact=True)).to_be_visible()
            expect(card.get_by_text(note)).to_be_visible()
        expect(lead.get_by_test_id("stPlotlyChart")).to_have_count(4)

        lead.get_by_test_id("stRadio").get_by_text("borderline", exact=True).click()
        lead.get_by_label("Reason (required)").fill(REASON)
        lead.get_by_role("button", name="Record consensus").click()
        expect(lead.get_by_text(f"Consensus saved: {model} is borderline (by {LEAD}).")).to_be_visible()

        history = consensus_history(workspace, SUITE)
        assert history[["model", "label", "reason", "adjudicator"]].values.tolist() == [[model, "borderline", REASON, LEAD]]
        assert training_labels(workspace, SUITE)[model] == "borderline"

        settle(lead)
        with lead.expect_download() as download:
            lead.get_by_role("button", name="Export judgments + consensus (CSV)").click()
        exported = pd.read_csv(io.StringIO(download.value.path().read_text(encoding="utf-8")))
        assert exported["record"].value_counts().to_dict() == {"judgment": len(stored), "consensus": 1}
    finally:
        for tab in tabs:
            tab.context.close()
