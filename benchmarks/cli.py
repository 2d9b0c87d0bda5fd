"""How fast the command line starts: ``--help`` beside an empty interpreter; prints one JSON object.

    python -m benchmarks.cli [--runs 7] [--command run]

Times, in fresh processes from the project folder, ``python -c pass`` (the interpreter alone),
``python -m analytics --help`` (every subcommand registered) and ``python -m analytics COMMAND --help``
(``run`` by default): the median wall-clock seconds of ``--runs`` runs each (after one untimed run
that warms the file cache), and the largest peak resident memory of those runs (MiB). Building the parser
imports no stage (torch, pandas, scipy, ...: ``tests/analytics/test_cli_startup.py``); the goal is
``--help`` under 1 s on the 2-core reference machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
GOAL_S = 1.0


def _run(argv: list[str], env: dict) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MiB) of one run of ``argv``."""
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: a child that writes much cannot block
        start = time.perf_counter()
        child = subprocess.Popen(argv, cwd=PROJECT, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage (ru_maxrss: KiB on Linux)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(argv)}: exit status {child.returncode}: {errors.read().decode(errors='replace')}")
    return seconds, usage.ru_maxrss / 1024


def _time(argv: list[str], runs: int) -> dict:
    """Median wall seconds of ``runs`` runs of ``argv`` (after one untimed run) and their largest peak RSS."""
    env = {**os.environ, "COLUMNS": "100"}
    _run(argv, env)
    measured = [_run(argv, env) for _ in range(runs)]
    seconds = [s for s, _ in measured]
    return {
        "median_s": round(statistics.median(seconds), 3),
        "min_s": round(min(seconds), 3),
        "max_s": round(max(seconds), 3),
        "peak_rss_mib": round(max(m for _, m in measured), 1),
    }


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per command (default 7)")
    parser.add_argument("--command", default="run", help="the subcommand whose --help is timed (default run)")
    args = parser.parse_args(argv)

    result: dict = {"goal": f"python -m analytics --help < {GOAL_S:g} s on 2 cores", "runs": args.runs, "cpus": os.cpu_count()}
    result["python_pass"] = _time([sys.executable, "-c", "pass"], args.runs)
    result["help"] = _time([sys.executable, "-m", "analytics", "--help"], args.runs)
    result[f"{args.command}_help"] = _time([sys.executable, "-m", "analytics", args.command, "--help"], args.runs)
    result["meets_goal"] = max(result["help"]["median_s"], result[f"{args.command}_help"]["median_s"]) < GOAL_S
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
