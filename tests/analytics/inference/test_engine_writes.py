"""Issue 28.2: a run's rows go through one long-lived writer, a commit per ~COMMIT_EVERY rows at
``synchronous = NORMAL``; everything else keeps its own connection at full durability."""

from __future__ import annotations

import math

import pytest

from analytics import inference
from analytics.inference import run_models
from analytics.judging import add_judgment
from tests.fixtures.models import TINY_SUITE, TINY_SUITE_N

N_ROWS = 6 * (TINY_SUITE_N + 1)


def _row_commits(statements) -> list:
    """The commits of transactions that inserted run_images rows, as (connection, bulk)."""
    out, inserting = [], {}
    for s in statements:
        if s.sql.startswith("INSERT INTO run_images"):
            inserting[s.connection] = s.bulk
        elif s.sql == "COMMIT" and s.connection in inserting:
            out.append((s.connection, inserting.pop(s.connection)))
    return out


def test_a_run_commits_its_rows_every_commit_every_rows_through_one_bulk_connection(tiny_model_workspace, sql_trace, monkeypatch):
    monkeypatch.setattr(inference.engine, "COMMIT_EVERY", 10)
    run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=4)
    commits = _row_commits(sql_trace)
    stored = tiny_model_workspace.query_one("SELECT COUNT(*) FROM run_images")[0]
    assert stored == N_ROWS
    assert len({connection for connection, _ in commits}) == 1  # one writer for the whole run
    assert all(bulk for _, bulk in commits)
    assert len(commits) <= math.ceil(N_ROWS / 10) + 1 < N_ROWS / 4  # not a commit per batch of 4


def test_only_the_bulk_connection_relaxes_durability(tiny_model_workspace, sql_trace):
    conn = tiny_model_workspace.connect()
    bulk = tiny_model_workspace.connect(bulk=True)
    try:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: judgments, consensus, accounts
        assert bulk.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close(), bulk.close()
    run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=4)
    (run_id,) = [row["id"] for row in tiny_model_workspace.query("SELECT id FROM runs")]
    sql_trace.clear()
    add_judgment(tiny_model_workspace, annotator="ann", model="tiny", label="variant", run_id=run_id)
    judgment = {s.connection for s in sql_trace if s.sql.startswith("INSERT INTO judgments")}
    assert judgment and not any(s.bulk for s in sql_trace if s.connection in judgment)


def test_rows_waiting_for_a_commit_are_stored_when_the_run_stops(tiny_model_workspace):
    class Interrupt(Exception):
        pass

    def stop(done, total):
        if done >= 8:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=4, progress=stop)  # 8 < COMMIT_EVERY
    assert tiny_model_workspace.query_one("SELECT COUNT(*) FROM run_images")[0] >= 8


def test_a_run_reads_its_suite_once(tiny_model_workspace, sql_trace):
    # at paper scale (56,000 images) each read of the suite's items took ~0.3 s of a model's run
    run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=4)
    reads = [s for s in sql_trace if s.sql.startswith("SELECT") and "FROM suite_items" in s.sql and "ORDER BY target_id, position" in s.sql]
    assert len(reads) == 1
    stored = tiny_model_workspace.query("SELECT i.target_id, i.position, i.distance, r.distance AS run FROM suite_items i JOIN run_images r USING (target_id, position)")
    assert len(stored) == N_ROWS - 6 and all(row["distance"] == row["run"] for row in stored)
