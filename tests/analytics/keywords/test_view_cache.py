"""The pool's view probabilities computed once and cached (analytics.keywords.view_cache): reads and
writes beside the model on an accelerator, forced here on the CPU."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from analytics.data import list_backgrounds, list_classes
from analytics.keywords import ClassifierPatchBackend, compute_keywords, view_cache
from analytics.keywords.view_cache import computed_views, stored_views, view_cache_keys
from analytics.models import load_model
from analytics.suites import screen_pool
from tests.fixtures.screening import FAKE_CLASSIFIER


def _forget_views(workspace) -> None:
    with workspace.transaction() as conn:
        conn.execute("DELETE FROM cache")
        conn.execute("DELETE FROM keyword_tables")


def _pass(workspace, model, *, chunk=3):
    frame = list_backgrounds(workspace)
    keys = view_cache_keys(model.spec, 3, frame["image_hash"].tolist())
    images_of = lambda rows: np.stack([workspace.get_array(frame["image_hash"].iloc[k]) for k in rows])  # noqa: E731
    return keys, computed_views(workspace, model, keys, images_of, list(range(len(keys))), grid=3, chunk=chunk, batch_size=4)


def test_reads_and_writes_beside_the_model_give_the_tables_and_cache_of_a_pass_in_line(screening_workspace, monkeypatch):
    model = load_model(screening_workspace, FAKE_CLASSIFIER)
    backend = ClassifierPatchBackend(model, exclude_classes=list_classes(screening_workspace))
    in_line = compute_keywords(screening_workspace, backend=backend, item_kind="background", batch_size=3)
    screened = screen_pool(screening_workspace, batch_size=3)
    keys, _ = _pass(screening_workspace, model)
    cached = {key: screening_workspace.get_array(h) for key, h in stored_views(screening_workspace, keys).items()}
    _forget_views(screening_workspace)

    threads, forwards = [], []
    store, run_batch = view_cache.store_views, model.run_batch
    monkeypatch.setattr(view_cache, "_overlapped", lambda device: True)
    monkeypatch.setattr(view_cache, "store_views", lambda *a: threads.append(threading.current_thread().name) or store(*a))
    monkeypatch.setattr(model, "run_batch", lambda *a, **k: forwards.append(threading.current_thread().name) or run_batch(*a, **k))
    beside = compute_keywords(screening_workspace, backend=backend, item_kind="background", batch_size=3)
    assert threads and all(name.startswith("backdrop-view-writes") for name in threads)
    assert forwards and set(forwards) == {"backdrop-forward"}  # the caller scores a chunk meanwhile
    monkeypatch.setattr(model, "run_batch", run_batch)
    np.testing.assert_array_equal(beside.scores, in_line.scores)
    stored = stored_views(screening_workspace, keys)
    assert set(stored) == set(cached)
    for key, array_hash in stored.items():
        np.testing.assert_array_equal(screening_workspace.get_array(array_hash), cached[key])

    with screening_workspace.transaction() as conn:
        conn.execute("DELETE FROM cache")
    np.testing.assert_array_equal(screen_pool(screening_workspace, batch_size=3).scores, screened.scores)


def test_a_pass_beside_the_model_keeps_what_it_computed_when_stopped_and_raises_a_failed_write(screening_workspace, monkeypatch):
    monkeypatch.setattr(view_cache, "_overlapped", lambda device: True)
    model = load_model(screening_workspace, FAKE_CLASSIFIER)
    keys, views = _pass(screening_workspace, model)
    rows, first = next(views)
    views.close()  # a cancelled job: the chunk handed out is stored
    stored = stored_views(screening_workspace, keys)
    assert set(stored) == {keys[k] for k in rows}
    np.testing.assert_array_equal(np.stack([screening_workspace.get_array(stored[keys[k]]) for k in rows]), first)

    with screening_workspace.transaction() as conn:
        conn.execute("DELETE FROM cache")
    store = view_cache.store_views
    calls = []

    def failing(*args):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full (simulated)")
        return store(*args)

    monkeypatch.setattr(view_cache, "store_views", failing)
    with pytest.raises(OSError, match="disk full"):
        list(_pass(screening_workspace, model)[1])
    assert len(stored_views(screening_workspace, keys)) == len(rows)  # the first chunk's write landed


def test_a_cancelled_pool_pass_has_stored_its_finished_chunks_when_the_error_arrives(screening_workspace, monkeypatch):
    monkeypatch.setattr(view_cache, "_overlapped", lambda device: True)
    model = load_model(screening_workspace, FAKE_CLASSIFIER)
    backend = ClassifierPatchBackend(model, exclude_classes=list_classes(screening_workspace))
    seen, store = [], view_cache.store_views
    monkeypatch.setattr(view_cache, "store_views", lambda *a: time.sleep(0.3) or store(*a))  # a slow disk

    def cancel(done, total):
        seen.append(done)
        if len(seen) == 2:
            raise KeyboardInterrupt  # a job's cancel button raises from its progress callback

    with pytest.raises(KeyboardInterrupt) as cancelled:  # kept, as a job runner keeps the error it reports
        compute_keywords(screening_workspace, backend=backend, item_kind="background", batch_size=3, progress=cancel)
    keys, _ = _pass(screening_workspace, model)
    assert len(stored_views(screening_workspace, keys)) == seen[-1] == 6  # both chunks handed out, stored before the error left
    assert cancelled.traceback
