"""CI's switch: with BACKDROP_REQUIRE_ASSETS=1 a skipped test fails; without it, it still skips."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SKIPPING_TESTS = '''
import pytest

def test_needs_missing_assets():
    pytest.skip("demo assets not in the cache")

@pytest.mark.may_skip
def test_allowed_to_skip():
    pytest.skip("needs CUDA")
'''


def _run(tmp_path: Path, require: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BACKDROP_REQUIRE_ASSETS": require}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c", str(ROOT / "pytest.ini")]
    # Collect the probe beside the project's own conftest so its hook applies.
    probe = ROOT / "tests" / f"_probe_{tmp_path.name}.py"
    probe.write_text(SKIPPING_TESTS)
    try:
        return subprocess.run([*command, str(probe)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    finally:
        probe.unlink()


@pytest.mark.parametrize(("require", "failed", "skipped"), [("1", 1, 1), ("0", 0, 2)])
def test_skips_fail_only_when_assets_are_required(tmp_path, require, failed, skipped):
    result = _run(tmp_path, require)
    summary = result.stdout.strip().splitlines()[-1]
    assert (f"{failed} failed" in summary) == bool(failed), result.stdout
    assert f"{skipped} skipped" in summary, result.stdout
    if failed:
        assert "BACKDROP_REQUIRE_ASSETS=1 requires it to run" in result.stdout
        assert "demo assets not in the cache" in result.stdout
