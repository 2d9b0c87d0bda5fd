"""Run labels: the model and its suite's label instead of two hex ids (issue 27.10)."""

from __future__ import annotations

import json

import pandas as pd

from analytics import runs
from analytics.cli import main
from analytics.runs.naming import run_labels
from analytics.suites.store import name_suite
from tests.fixtures.models import TINY_SUITE, TINY_SUITE_N

SUITE = f"random, N = {TINY_SUITE_N}, seed 0, 6 targets"


def test_a_run_reads_as_its_model_on_its_suite(run_workspace, run_ids):
    table = runs.list_runs(run_workspace).set_index("id")
    assert table.at[run_ids["tiny"], "label"] == f"tiny on {SUITE}" and table.at[run_ids["tiny"], "suite"] == SUITE
    assert not any(run_id in label or TINY_SUITE in label for run_id in run_ids.values() for label in table["label"])
    name_suite(run_workspace, TINY_SUITE, "Shapes")
    assert runs.list_runs(run_workspace, model="bg-only")["label"].tolist() == [f"bg-only on Shapes ({SUITE})"]


def test_runs_of_one_model_on_one_suite_get_their_start_time():
    table = pd.DataFrame({
        "id": ["r1", "r2", "r3"], "model": ["net", "net", "other"], "suite_id": ["s", "s", "s"],
        "created": ["2026-11-25T14:02:00+00:00", "2026-11-25T16:30:00+00:00", "2026-11-25T16:30:00+00:00"],
    })  # fmt: skip
    labels = run_labels(table, {"s": "random, N = 2"})
    assert labels == {
        "r1": "net on random, N = 2 · started 2026-11-25 14:02",
        "r2": "net on random, N = 2 · started 2026-11-25 16:30",
        "r3": "other on random, N = 2",
    }
    assert run_labels(table.head(1), {})["r1"] == "net on s"  # a suite without a label: its id


def test_cli_listings_name_suites_and_runs(run_workspace, run_ids, capsys):
    ws = str(run_workspace.root)
    assert main(["runs", "--workspace", ws, "--model", "tiny", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["label"] == f"tiny on {SUITE}" and listed["suite"] == SUITE and listed["suite_id"] == TINY_SUITE
    assert main(["suites", "--workspace", ws, "--json"]) == 0
    (suite,) = json.loads(capsys.readouterr().out)
    assert suite["id"] == TINY_SUITE and suite["label"] == SUITE and suite["name"] == "" and suite["classes"] == []
