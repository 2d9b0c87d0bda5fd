"""Issue 27, stopper 5, in the browser: annotators overlap, so agreement is measurable early.

Team mode, three annotators, everyone judges everything with k = 3. One after another, each signs in
and judges the model at the head of their queue: all three land on the same model (a begun model
collects its k judgments before the next starts; before the fix each got a different model), and
Agreement shows Fleiss' κ as a number instead of N/A after three judgments.
"""

from __future__ import annotations

from playwright.sync_api import expect

from analytics.judging import blind_name, latest_judgments, measure_agreement
from tests.e2e.test_browser_judge import COLD_START_MS, SUITE, open_session
from tests.e2e.test_browser_judge_team import shown_alias, sign_in, sign_in_to_judge, team_judging_workspace
from ui.judge import button_key

LABELS = {"ann1": "invariant", "ann2": "variant", "ann3": "borderline"}  # some disagreement: κ is defined


def test_three_annotators_land_on_the_same_model_and_agreement_shows_a_number(browser, server_per_test, tmp_path, fast_hashing, monkeypatch):
    workspace = team_judging_workspace(tmp_path, LABELS)  # everyone judges everything, k = 3 judgments per model
    monkeypatch.setenv("BACKDROP_TEAM", "1")  # inherited by the server started now
    url = server_per_test(workspace).url

    aliases = {}
    for name, label in LABELS.items():  # one after another, as people start at different times
        tab = open_session(browser)
        try:
            sign_in_to_judge(tab, url, name)
            aliases[name] = shown_alias(tab, 0)
            tab.locator(f".st-key-{button_key(label)} button").click()
            expect(tab.get_by_text(f"Saved: {aliases[name]} is {label}.")).to_be_visible()
        finally:
            tab.context.close()
    assert len(set(aliases.values())) == 1, aliases  # the same model for all three

    stored = latest_judgments(workspace, SUITE)
    (model,) = set(stored["model"])
    assert blind_name(workspace, SUITE, model) == aliases["ann1"] and sorted(stored["annotator"]) == sorted(LABELS)
    kappa = measure_agreement(stored, resamples=0).fleiss.value

    lead = open_session(browser)
    try:
        sign_in(lead, url, "Agreement", "ada")
        metric = lead.get_by_test_id("stMetric").filter(has=lead.get_by_text("Fleiss' κ", exact=True))
        expect(metric.get_by_test_id("stMetricValue")).to_have_text(f"{kappa:.2f}", timeout=COLD_START_MS)
        expect(metric.get_by_test_id("stMetricValue")).not_to_have_text("N/A")
    finally:
        lead.context.close()
