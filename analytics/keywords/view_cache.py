"""Per-view probabilities of background images: computed once, shared by keywords and screening.

The classifier-patch keyword backend and pool screening (``analytics.suites.screening``) look at a
background through the same ``1 + grid²`` views (:func:`analytics.keywords.view_probabilities`)
of the same ImageNet classifier. The softmax over those views is stored once per (model spec,
grid, image) in the workspace's result cache, as float16, under :func:`view_cache_keys`. Keyword
extraction over the pool and pool screening each read the views already stored and store those
they compute, so whichever runs first (``python -m analytics suite`` screens, the keywords may come
before or after) the pool goes through the network once. Backgrounds are always scored on the
float16 views, computed or read, so a keyword table does not depend on whether screening ran first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analytics.models import ModelSpec
from analytics.workspace import Workspace, now

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
    stored = np.asarray(probabilities).astype(np.float16)
    with workspace.staged_arrays(stored) as hashes, workspace.transaction() as conn:
        conn.executemany("INSERT OR REPLACE INTO cache(key, hash, created) VALUES (?, ?, ?)", [(k, h, now()) for k, h in zip(keys, hashes)])
    return stored
