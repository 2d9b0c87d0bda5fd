"""Shared pytest set-up: every module in tests/fixtures/ is a fixture plugin.

Fixture modules import one another, so rewriting is registered for the whole package up front
(a plugin imported before pytest registers it would otherwise miss assertion rewriting).
"""

from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.fixtures")

_FIXTURES = sorted(p.stem for p in (Path(__file__).parent / "fixtures").glob("*.py") if p.stem != "__init__")
pytest_plugins = [f"tests.fixtures.{name}" for name in _FIXTURES]
