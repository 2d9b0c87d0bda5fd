"""The benchmarks run from the serve install (``bash backdrop.sh serve``: requirements.txt, no
pytest), so no module in ``benchmarks/`` may import the tests or pytest; what both need lives in
``benchmarks/`` (``_tiny.py``, ``_naive.py``) and the tests import it from there."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
MODULES = sorted((PROJECT / "benchmarks").glob("*.py"))
FORBIDDEN = ("tests", "pytest", "_pytest")


def _imported(path: Path) -> list[str]:
    """Top-level package of every absolute import in ``path``, at any depth (imports inside functions too)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name.partition(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.append(node.module.partition(".")[0])
    return names


def test_no_benchmark_names_the_tests_or_pytest_in_an_import():
    assert len(MODULES) > 10
    found = [f"{path.name}: {name}" for path in MODULES for name in _imported(path) if name in FORBIDDEN]
    assert found == []


def test_every_benchmark_imports_without_the_tests_or_pytest():
    """Each module imported in a fresh process where ``import pytest`` and ``import tests`` fail."""
    script = (
        "import importlib, sys\n"
        f"for name in {FORBIDDEN!r}:\n"
        "    sys.modules[name] = None\n"
        f"for module in {[f'benchmarks.{path.stem}' for path in MODULES]!r}:\n"
        "    importlib.import_module(module)\n"
        "print('imported', len(sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("imported")
