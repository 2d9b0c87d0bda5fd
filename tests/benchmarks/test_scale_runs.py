"""``benchmarks/scale.py`` still runs its stages against today's schema (a schema change once broke its
synthetic runs unnoticed). Tiny sizes; nothing here is timed or compared with a speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.scale import fitted_growth

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


def test_fitted_growth_separates_targets_from_pool_when_they_vary_apart():
    scales = [(200, 2000), (200, 20000), (1712, 20000), (1712, 2000)]
    records = [{"stage": "s", "targets": t, "pool": b, "peak_rss_mib": 1.0, "seconds": 0.01 * t * b**0.5} for t, b in scales]
    (fit,) = fitted_growth(records)
    assert fit["fitted_growth"]["T|B"] == 1.0 and fit["fitted_growth"]["B|T"] == 0.5
    (two,) = fitted_growth([r for r in records if (r["targets"], r["pool"]) in scales[1:3]])  # B fixed: T alone
    assert "T|B" not in two["fitted_growth"] and two["fitted_growth"]["T"] == 1.0
