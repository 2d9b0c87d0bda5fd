"""Shared pytest set-up: every module in tests/fixtures/ is a fixture plugin.

``workspace`` loads first: other fixture modules import it, and a plugin imported before pytest
registers it would miss assertion rewriting.
"""

from pathlib import Path

_FIXTURES = sorted(p.stem for p in (Path(__file__).parent / "fixtures").glob("*.py") if p.stem != "__init__")
pytest_plugins = [f"tests.fixtures.{name}" for name in sorted(_FIXTURES, key=lambda name: name != "workspace")]
