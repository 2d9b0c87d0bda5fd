"""The stand-in accelerator (``benchmarks/_stand_in.py``) still drives the library's own paths: it
replaces a few of the engine's and the keyword views' functions by name, so a rename there must fail
here, not leave the benchmarks timing something else. Tiny sizes; nothing is compared with a speed."""

from __future__ import annotations

import contextlib
import io

from analytics.inference import engine, stream
from analytics.keywords import classifier_patch
from benchmarks import inference, keywords


def _main(module, argv: list[str]) -> dict:
    with contextlib.redirect_stdout(io.StringIO()):
        return module.main(argv)


def test_a_cached_suite_run_against_the_stand_in_stores_its_rows_and_restores_the_engine():
    originals = (engine.load_model, engine.resolve_device, stream.empty_batch, classifier_patch.empty_batch)
    result = _main(inference, ["--stand-in", "4000", "--batch-size", "16", "--quick"])
    # every image is a sleep of the stand-in's: the host can at most keep it busy all the time
    assert 0 < result["cached_vs_stand_in"] <= 1
    runs = 1 + 1 + 3  # the warm-up round, one timed round, the engine-phase runs (two timed, one profiled)
    assert result["stand_in_ran"] == runs * (result["images"] + result["targets"])  # each target's foreground-only image too
    assert (engine.load_model, engine.resolve_device, stream.empty_batch, classifier_patch.empty_batch) == originals


def test_the_pool_keyword_pass_against_the_stand_in_runs_both_ways():
    result = _main(keywords, ["--stand-in", "4000", "--batch-size", "16", "--quick"])
    assert 0 < result["beside_vs_stand_in"] <= 1 and 0 < result["in_line_vs_stand_in"] <= 1
    assert result["stand_in_ran"] == 2 * 2 * result["backgrounds"] * keywords.VIEWS  # (warm-up + one round) x (beside, in line)
