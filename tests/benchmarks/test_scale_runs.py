"""``benchmarks/scale.py`` still runs its stages against today's schema (a schema change once broke its
synthetic runs unnoticed). Tiny sizes; nothing here is timed or compared with a speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
STAGES = ("import-targets", "import-backgrounds", "suite-random", "run", "synthetic-runs", "listing", "assessor")


def test_each_stage_reports_its_json_line(tmp_path):
    command = [
        sys.executable, "-m", "benchmarks.scale", "--targets", "6", "--pool", "12", "--n", "2", "--runs", "1",
        "--finished-runs", "8", "--assessor-repeats", "1", "--workdir", str(tmp_path), "--stages", ",".join(STAGES),
    ]  # fmt: skip
    out = subprocess.run(command, cwd=PROJECT, capture_output=True, text=True, timeout=600, check=True)
    records = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    by_stage = {record["stage"]: record for record in records}
    assert [r for r in records if "error" in r] == []
    assert set(STAGES) <= set(by_stage)
    assert by_stage["run"]["images_per_run"] == 6 * 3 and by_stage["synthetic-runs"]["added_runs"] == 7
    assert by_stage["assessor"]["models"] == 8
