"""Peak resident memory of a statement run in a fresh Python process (shared by the benchmarks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT = str(Path(__file__).resolve().parent.parent)


def peak_rss_mib(imports: str, statement: str, *args: str) -> float:
    """Peak RSS (MiB) of a fresh process that runs ``imports`` then ``statement``.

    ``args`` are the process's ``sys.argv[1:]`` (so paths need no quoting in the code); the
    project folder is put first on ``sys.path``.
    """
    code = f"import resource, sys; sys.path.insert(0, {PROJECT!r}); {imports}; {statement}; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024  # ru_maxrss is in KiB on Linux
