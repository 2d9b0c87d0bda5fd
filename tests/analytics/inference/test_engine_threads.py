"""On an accelerator the engine runs the forward passes on a thread of their own and builds and
stores each batch's rows on the caller's thread meanwhile (a forward call that blocks no longer
leaves the device idle while rows are built). Here the tiny CPU model is reported as being on an
accelerator; composites are pasted on the threads (there is no CUDA to paste on)."""

from __future__ import annotations

import threading

import pandas as pd
import pytest
import torch

from analytics.inference import engine, run_models
from analytics.inference.signals import BatchSignals
from tests.analytics.inference.test_inference import _rows
from tests.fixtures.models import TINY_SUITE, TINY_SUITE_N

ACCELERATOR = torch.device("cuda")
N_ROWS = 6 * (TINY_SUITE_N + 1)


class _Reported:
    """A CPU model that reports ``ACCELERATOR`` and records the threads of its forward passes."""

    def __init__(self, model, fail_at: int | None = None) -> None:
        self.model, self.spec, self.device = model, model.spec, ACCELERATOR
        self.threads: list[str] = []
        self.fail_at = fail_at

    def preprocess(self, images):
        return self.model.preprocess(images)

    def run_batch(self, batch, *, conv_stats: bool = False):
        self.threads.append(threading.current_thread().name)
        if len(self.threads) == self.fail_at:
            raise RuntimeError("the device failed")
        return self.model.run_batch(batch, conv_stats=conv_stats)


@pytest.fixture
def reported(monkeypatch):
    """Install a model factory: runs get a :class:`_Reported` copy of the model they load."""
    made: list[_Reported] = []
    load, iter_composites = engine.load_model, engine.iter_composites

    def install(fail_at: int | None = None) -> list[_Reported]:
        def load_model(workspace, name, device=None):
            made.append(_Reported(load(workspace, name, device="cpu"), fail_at))
            return made[-1]

        monkeypatch.setattr(engine, "resolve_device", lambda device=None: ACCELERATOR)
        monkeypatch.setattr(engine, "load_model", load_model)
        monkeypatch.setattr(engine, "iter_composites", lambda *a, **k: iter_composites(*a, **{**k, "page_locked": False, "blend_on": None}))
        return made

    return install


def _forward_threads_alive() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "backdrop-forward"]


def test_forward_passes_run_on_their_own_thread_and_rows_on_the_callers(tiny_model_workspace, reported, monkeypatch):
    (cpu_run,) = run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=4)
    expected = _rows(tiny_model_workspace, cpu_run)
    with tiny_model_workspace.transaction() as conn:
        conn.execute("DELETE FROM runs")
    built_on = []
    rows = BatchSignals.rows
    monkeypatch.setattr(BatchSignals, "rows", lambda self, *a: built_on.append(threading.current_thread().name) or rows(self, *a))
    made = reported()
    (run_id,) = run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, batch_size=4)
    (model,) = made
    assert set(model.threads) == {"backdrop-forward"}
    assert set(built_on) == {threading.current_thread().name} and len(built_on) >= N_ROWS // 4
    stored = _rows(tiny_model_workspace, run_id)
    pd.testing.assert_frame_equal(stored.drop(columns="run_id"), expected.drop(columns="run_id"), check_exact=False, rtol=1e-5)
    assert _forward_threads_alive() == []


def test_a_failed_forward_pass_fails_the_run_keeps_the_rows_before_it_and_stops_the_thread(tiny_model_workspace, reported):
    reported(fail_at=4)
    with pytest.raises(RuntimeError, match="the device failed"):
        run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, batch_size=4)
    (run,) = tiny_model_workspace.query("SELECT id, status FROM runs")
    assert run["status"] == "failed"
    assert 0 < len(_rows(tiny_model_workspace, run["id"])) < N_ROWS  # the batches before the failure are stored
    assert _forward_threads_alive() == []


def test_a_cancelled_run_stops_its_forward_thread(tiny_model_workspace, reported):
    made = reported()

    class Cancelled(Exception):
        pass

    def cancel(done: int, total: int) -> None:
        raise Cancelled

    with pytest.raises(Cancelled):
        run_models(tiny_model_workspace, ["tiny"], TINY_SUITE, batch_size=4, progress=cancel)
    assert _forward_threads_alive() == []
    assert len(made[0].threads) <= 1 + engine.ROWS_BEHIND + 2  # it did not run on to the end of the suite
