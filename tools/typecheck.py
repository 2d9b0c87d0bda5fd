"""The type check of ``bash backdrop.sh test`` (hence CI): mypy over the project, against a baseline
that may only shrink.

``python tools/typecheck.py`` runs mypy with the settings of pyproject.toml ``[tool.mypy]`` (the
files it checks, and the modules held to the strict flags from the start) and compares its findings
with ``tools/mypy-baseline.txt``: the findings of the day the check came in, one per line as
``path: message [code]`` (no line number, so that editing a file above a finding does not move it).
A finding that is not in the baseline, or more of one than the baseline holds, fails the check;
a finding fixed since but still in the baseline fails too, so that the baseline is shrunk with
``--update`` in the commit that fixes it. A call whose arguments do not fit its signature is such a new finding.

``--update`` rewrites the baseline from the current findings (only to shrink it: it refuses to add
findings, unless ``--allow-growth`` is given for a mypy upgrade that finds old problems anew).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tools" / "mypy-baseline.txt"
#: ``path:line: error: message  [code]``, or ``path:line:column: ...``; notes are context, not findings
FINDING = re.compile(r"^(?P<path>[^:\s]+\.py):\d+(?::\d+)?: error: (?P<message>.*?)\s*(?P<code>\[[a-z0-9-]+\])?$")


def findings(output: str) -> dict[str, list[str]]:
    """The findings in mypy's output: ``path: message [code]`` key -> mypy's own lines of it (with line numbers)."""
    found: dict[str, list[str]] = {}
    for line in output.splitlines():
        match = FINDING.match(line.strip())
        if match:
            code = f" {match['code']}" if match["code"] else ""
            found.setdefault(f"{match['path']}: {match['message']}{code}", []).append(line.strip())
    return found


def read_baseline(path: Path = BASELINE) -> Counter[str]:
    if not path.exists():
        return Counter()
    return Counter(line for line in path.read_text().splitlines() if line and not line.startswith("#"))


def write_baseline(found: Counter[str], path: Path = BASELINE) -> None:
    header = "# mypy findings allowed for now (tools/typecheck.py); this list may only shrink\n"
    path.write_text(header + "".join(f"{key}\n" for key in sorted(found.elements())))


def run_mypy() -> tuple[str, int]:
    command = [sys.executable, "-m", "mypy", "--no-error-summary", "--hide-error-context", "--no-pretty", "--show-column-numbers"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if result.returncode not in (0, 1):  # 2: mypy itself failed (bad config, crash)
        raise SystemExit(f"mypy failed to run (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    return result.stdout, result.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite the baseline from today's findings (it may only shrink)")
    parser.add_argument("--allow-growth", action="store_true", help="with --update: let the baseline grow (a mypy upgrade)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    output, _ = run_mypy()
    lines = findings(output)
    found, allowed = Counter({key: len(where) for key, where in lines.items()}), read_baseline()
    new = found - allowed
    fixed = allowed - found
    if args.update:
        if new and not args.allow_growth:
            print(f"typecheck: {sum(new.values())} finding(s) not in the baseline; fix them (the baseline only shrinks):", file=sys.stderr)
            print("".join(f"  {key}\n" for key in sorted(new.elements())), file=sys.stderr, end="")
            return 1
        write_baseline(found)
        print(f"typecheck: baseline rewritten with {sum(found.values())} finding(s)", file=sys.stderr)
        return 0
    seconds = time.monotonic() - started
    if new:  # every line of a key that has more findings than allowed (which of them is new, mypy cannot say)
        print(f"typecheck: {sum(new.values())} new finding(s) (mypy, {seconds:.0f} s); the code must fit its own signatures:", file=sys.stderr)
        print("".join(f"  {line}\n" for key in sorted(new) for line in lines[key]), file=sys.stderr, end="")
        return 1
    if fixed:  # the baseline is shrunk in the commit that fixes: a fixed finding must not come back unseen
        print(f"typecheck: {sum(fixed.values())} baseline finding(s) fixed; shrink the baseline with `python tools/typecheck.py --update`:", file=sys.stderr)
        print("".join(f"  {key}\n" for key in sorted(fixed.elements())), file=sys.stderr, end="")
        return 1
    print(f"typecheck: no new findings ({sum(found.values())} left in the baseline; mypy {seconds:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
