"""Methods in a real browser (issue 19.1): a newcomer sees the time estimate, starts a comparison, sees
its progress, cancels it — and no work continues after the cancel: the worker process is gone, no
new suite is saved and the job's step count stays where it stopped. Resume then offers itself."""

from __future__ import annotations

import re
import time

from playwright.sync_api import expect

from analytics import jobs
from analytics.jobs.records import _worker_alive
from analytics.suites import list_suites

COLD_START_MS = 120_000  # the first run of a page imports torch and the model stack on a busy machine
AFTER_CANCEL_S = 5.0  # long enough for several steps of the tiny comparison, had it gone on


def test_start_and_cancel_a_comparison(page, server_per_test, suite_workspace):
    url = server_per_test(suite_workspace).url
    page.goto(f"{url}/Methods")
    expect(page.get_by_role("heading", name="Methods")).to_be_visible(timeout=COLD_START_MS)
    expect(page.get_by_text("Estimated time")).to_be_visible()
    seeds = page.get_by_role("spinbutton", name="Seeds per method")
    seeds.fill("10")  # plenty of steps, so there is work left to cancel
    seeds.press("Enter")
    expect(page.get_by_text("× 10 seed(s)")).to_be_visible()
    page.get_by_role("button", name="Compare methods").click()

    bar = page.get_by_test_id("stProgress")
    expect(bar.get_by_text(re.compile(r"Method comparison .* running · \d+ of 80"))).to_be_visible(timeout=COLD_START_MS)
    job = jobs.list_jobs(suite_workspace, active_only=True)
    assert job["kind"].tolist() == ["methods"] and job["params"].iloc[0]["seeds"] == 10
    job_id, pid = job["id"].iloc[0], job["pid"].iloc[0]
    assert _worker_alive(pid, job_id)

    page.get_by_role("button", name="Cancel").click()
    expect(page.get_by_text(re.compile(r"Cancelled: Method comparison"))).to_be_visible()
    expect(page.get_by_role("button", name="Resume")).to_be_visible()
    assert not _worker_alive(pid, job_id)  # the process is gone
    stopped = jobs.get_job(suite_workspace, job_id)
    suites = set(list_suites(suite_workspace)["id"])
    assert stopped.status == "cancelled" and stopped.done < stopped.total == 80
    time.sleep(AFTER_CANCEL_S)
    assert set(list_suites(suite_workspace)["id"]) == suites  # no suite saved after the cancel
    assert jobs.get_job(suite_workspace, job_id).done == stopped.done
    assert jobs.list_jobs(suite_workspace, active_only=True).empty
