"""Per-view probabilities of background images: computed once, shared by keywords and screening.

The classifier-patch keyword backend and pool screening (``analytics.suites.screening``) look at a
background through the same ``1 + grid²`` views (:func:`analytics.keywords.view_probabilities`)
of the same ImageNet classifier. The softmax over those views is stored once per (model spec,
grid, image) in the workspace's result cache, as float16, under :func:`view_cache_keys`. Keyword
extraction over the pool and pool screening each read the views already stored and store those
they compute, so whichever runs first (``python -m analytics suite`` screens, the keywords may come
before or after) the pool goes through the network once. Backgrounds are always scored on the
float16 views, computed or read, so a keyword table does not depend on whether screening ran first.
Both compute the views they lack through :func:`computed_views`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import torch

from analytics._threads import prefetched
from analytics.models import LoadedModel, ModelSpec
from analytics.workspace import Workspace, now

from .classifier_patch import iter_view_probabilities

#: Cache keys start with this (the name screening gave them first: stored caches stay valid).
PREFIX = "screening"


def view_cache_keys(spec: ModelSpec, grid: int, image_hashes: Sequence[str]) -> list[str]:
    """The cache keys of images' view probabilities under a model spec and grid.

    The spec's content key is hashed once for all of them: it serialises the whole spec (1,000
    label names), 3 ms a call, once a minute of a 20,000-background pass when it ran per image."""
    prefix = f"{PREFIX}/{spec.content_key()}/{grid}/"
    return [prefix + image_hash for image_hash in image_hashes]


def stored_views(workspace: Workspace, keys: Sequence[str]) -> dict[str, str]:
    """Cache key -> array hash for those of ``keys`` that are stored."""
    found = {}
    for start in range(0, len(keys), 500):  # SQLite caps the number of ? placeholders
        chunk = list(keys[start : start + 500])
        rows = workspace.query(f"SELECT key, hash FROM cache WHERE key IN ({','.join('?' * len(chunk))})", chunk)
        found.update({row["key"]: row["hash"] for row in rows})
    return found


def store_views(workspace: Workspace, keys: Sequence[str], probabilities: np.ndarray) -> np.ndarray:
    """Cache the view probabilities of each key's image: arrays first, then all rows in one transaction.

    Parameters
    ----------
    keys : sequence of str, length n
        :func:`view_cache_keys` of the images.
    probabilities : ndarray of shape (n, 1 + grid², n_outputs)

    Returns
    -------
    stored : ndarray of shape (n, 1 + grid², n_outputs), float16
        The values as the cache holds them (a later read gives exactly these).
    """
    stored = np.asarray(probabilities).astype(np.float16, copy=False)  # no second copy of views already converted (computed_views)
    with workspace.staged_arrays(stored) as hashes, workspace.transaction() as conn:
        conn.executemany("INSERT OR REPLACE INTO cache(key, hash, created) VALUES (?, ?, ?)", [(k, h, now()) for k, h in zip(keys, hashes)])
    return stored


def computed_views(
    workspace: Workspace,
    model: LoadedModel,
    keys: Sequence[str],
    images_of: Callable[[list[int]], np.ndarray],
    todo: Sequence[int],
    *,
    grid: int,
    chunk: int,
    batch_size: int | None = None,
) -> Iterator[tuple[list[int], np.ndarray]]:
    """Compute and cache the view probabilities of the images ``todo``, ``chunk`` images at a time.

    Parameters
    ----------
    keys : sequence of str
        :func:`view_cache_keys` of all the images; ``todo`` indexes it.
    images_of : callable
        Indices into ``keys`` -> those images, (m, height, width, 3) uint8.
    todo : sequence of int
        The images to compute (those not stored yet).
    grid, batch_size
        As :func:`~analytics.keywords.view_probabilities` (``batch_size``: views per forward pass).

    Yields
    ------
    rows : list of int
        One chunk of ``todo``.
    views : ndarray of shape (len(rows), 1 + grid², n_outputs), float16
        Their view probabilities as the cache holds them (a later read gives exactly these).

    The chunks go through one pipeline (:func:`~analytics.keywords.classifier_patch.iter_view_probabilities`).
    For a model on an accelerator the next chunk's images are read on a thread of their own and
    each chunk is stored on another while the model runs the next: in line, the device waited for
    the disk (reads and writes of a 256-background chunk, ~70 ms on the H100 box, against ~140 ms
    of Lite0's forward passes), and the forward passes run on a thread of their own while the
    caller scores the chunk it was given. A chunk's write is done before the next chunk's starts (in order,
    one chunk's arrays in memory) and before this generator ends or is closed, and its error is
    raised here. On a CPU all stays in line: the model's threads take every core (on the 2-core
    machine, reads and writes on threads of their own were slower: 6,750 -> 5,830 views/s).
    """
    chunks = [list(todo[start : start + chunk]) for start in range(0, len(todo), chunk)]
    if not chunks:
        return
    overlapped = _overlapped(model.device)
    images = (images_of(rows) for rows in chunks)
    if overlapped:
        images = prefetched(images, 1, name="backdrop-view-reads")
    probabilities = iter_view_probabilities(model, images, grid=grid, batch_size=batch_size)
    if not overlapped:
        for rows, chunk_views in zip(chunks, probabilities):
            yield rows, store_views(workspace, [keys[k] for k in rows], chunk_views)
        return
    # The forward passes run on, on a thread of their own, while the caller scores a chunk (its
    # forward call blocks: in line, the device idled for every chunk's scoring).
    probabilities = prefetched(probabilities, 1, name="backdrop-forward")
    pending: Future | None = None
    with ThreadPoolExecutor(1, thread_name_prefix="backdrop-view-writes") as writes, contextlib.closing(probabilities):
        try:
            for rows, chunk_views in zip(chunks, probabilities):
                views = chunk_views.astype(np.float16)
                if pending is not None:
                    pending.result()
                pending = writes.submit(store_views, workspace, [keys[k] for k in rows], views)
                yield rows, views
        finally:
            if pending is not None:
                pending.result()  # what was computed is kept, also when the caller stops early


def _overlapped(device: torch.device) -> bool:
    """Whether :func:`computed_views` reads and writes beside the model (on an accelerator)."""
    return device.type != "cpu"
