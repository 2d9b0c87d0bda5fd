"""What a person reads for a job (issue 27.10): its subject in the pages' words, the id only as a fallback."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from analytics.jobs import Job, job_label
from analytics.jobs.records import JOB_COLUMNS
from analytics.suites import build_suite, suite_labels_of


def job(kind: str, params: dict, result: dict | None = None) -> Job:
    row = dict.fromkeys(JOB_COLUMNS)
    row.update(id="0f3a9c2e71b4", kind=kind, status="done", done=1, total=1, params=params, result=result or {})
    row.update(created=datetime.now(UTC).isoformat(), updated=datetime.now(UTC).isoformat())
    return Job(**{key: row[key] for key in Job.__dataclass_fields__})


@pytest.fixture
def suite_id(suite_workspace):
    return build_suite(suite_workspace, method="random", n=2, seed=0, realism_threshold=0.0, name="Cups check").id


def test_each_kind_names_what_it_works_on(suite_workspace, suite_id):
    suite = suite_labels_of(suite_workspace)[suite_id]
    assert suite == "Cups check (random, N = 2, seed 0, 6 targets)"
    cases = [
        ("runs", {"model_names": ["tiny", "fg-only"], "suite_id": suite_id}, f"tiny, fg-only on {suite}"),
        ("runs", {"model_names": ["a", "b", "c", "d", "e"], "suite_id": suite_id}, f"a, b, c and 2 more models on {suite}"),
        ("repository", {"name": "zoo-heads", "suite_id": suite_id}, f"zoo-heads on {suite}"),
        ("saliency", {"models": ["tiny"], "target_ids": ["t1", "t2"]}, "tiny, 2 targets"),
        ("methods", {"model": "tiny", "methods": ["random", "ontology"]}, "tiny, 2 methods"),
        ("methods", {"model": "tiny", "methods": None}, "tiny, every method"),
        ("suite", {"method": "random", "n": 2}, "random, N = 2"),
        ("suite", {"name": "Mine", "method": "random"}, "Mine"),
        ("gate", {"candidate": "tiny", "baseline": "fg-only", "policy_name": "policy.toml"}, "tiny against fg-only, policy policy.toml"),
        ("gate", {"candidate": "tiny", "baseline": None, "policy_name": "mine.toml"}, "tiny, policy mine.toml"),
    ]
    for kind, params, expected in cases:
        assert job_label(suite_workspace, job(kind, params)) == expected, kind
    saved = job("suite", {"method": "random", "n": 2}, {"suite": suite, "suite_id": suite_id})
    assert job_label(suite_workspace, saved) == suite


def test_an_unknown_suite_or_odd_parameters_fall_back(suite_workspace):
    assert job_label(suite_workspace, job("runs", {"model_names": ["tiny"], "suite_id": "gone"})) == "tiny on gone"
    for odd in (job("zoo", {}), job("runs", {}), job("saliency", {"models": None, "target_ids": None})):
        assert job_label(suite_workspace, odd) == "0f3a9c2e71b4"
