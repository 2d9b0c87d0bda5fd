"""Keyword tables of a workspace computed by a scoring backend, cached under a content name.

:func:`compute_keywords` runs one backend (classifier-patch, ADE20K + Places365, ...) over every
target (object masked out) or every background and saves the table under
:func:`keyword_table_name`, a hash of the backend's :func:`table_params` and the item ids, so the
same backend over the same items reuses the stored table. A classifier-patch table of the pool
also caches each background's view probabilities, which pool screening reads instead of running
the classifier again (:mod:`analytics.keywords.view_cache`). :func:`build_keyword_tables` does it for
targets and pool. Keyword files go through :func:`analytics.keywords.import_keyword_table` instead.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from analytics._progress import Progress, with_message
from analytics._validation import check_choice, check_positive_int
from analytics.data import list_backgrounds, list_classes, list_targets, load_backgrounds, load_targets
from analytics.exceptions import InvalidInputError
from analytics.team import require_permission
from analytics.workspace import Workspace, content_id, model_keys

from ._base import KeywordBackend, KeywordTable
from .classifier_patch import ClassifierPatchBackend, class_outputs
from .store import KEYWORD_ITEM_KINDS, check_item_kinds, load_keyword_table, save_keyword_table
from .view_cache import computed_views, stored_views, view_cache_keys

logger = logging.getLogger(__name__)


def compute_keywords(
    workspace: Workspace,
    *,
    backend: KeywordBackend,
    item_kind: str,
    batch_size: int = 32,
    progress: Progress | None = None,
) -> KeywordTable:
    """Run ``backend`` over every target (object masked out) or every background of the workspace.

    The table is saved under the name ``<backend>/<item_kind>/<content id>``, where the id hashes
    :func:`table_params` (for a classifier the content key of its weights) and the item ids; when that table exists it is loaded instead of computed.
    Target tables carry the class names as labels (for the no-keyword fallback).

    Parameters
    ----------
    workspace : Workspace
    backend : KeywordBackend
    item_kind : {'target', 'background'}
    batch_size : int, default=32
        Images scored per call of ``backend.scores``.
    progress : callable (done, total) or None

    Returns
    -------
    table : KeywordTable
        Stored under ``keyword_table_name(table.backend, item_kind, table.ids, table.params)``.

    Raises
    ------
    InvalidInputError
        The workspace has no items of that kind, or a classifier-patch backend would emit a
        workspace class as a keyword (build it with ``exclude_classes=list_classes(workspace)``).
    """
    check_choice(item_kind, "item_kind", KEYWORD_ITEM_KINDS)
    batch_size = check_positive_int(batch_size, "batch_size")
    if isinstance(backend, ClassifierPatchBackend):
        _check_no_target_keywords(backend, list_classes(workspace), workspace)
    frame = list_targets(workspace) if item_kind == "target" else list_backgrounds(workspace)
    ids = frame["id"].tolist()
    if not ids:
        raise InvalidInputError(f"workspace {workspace.root} has no {item_kind}s to compute keywords for; import some first")
    params = table_params(workspace, backend)
    name = keyword_table_name(backend.name, item_kind, ids, params)
    if workspace.query_one("SELECT 1 FROM keyword_tables WHERE name = ?", (name,)) is not None:
        logger.info("keyword table %s exists; reusing it", name)
        return load_keyword_table(workspace, name)
    if item_kind == "background" and isinstance(backend, ClassifierPatchBackend):  # one pass over the pool, shared with screening
        matrix = _pool_scores(workspace, backend, ids, frame["image_hash"].tolist(), batch_size, progress)
    else:
        matrix = _scores(workspace, backend, item_kind, ids, batch_size, progress)
    table = KeywordTable(
        ids=ids,
        vocabulary=list(backend.vocabulary),
        scores=matrix,
        present=np.asarray(backend.present(matrix), bool),
        labels=frame["class_name"].tolist() if item_kind == "target" else None,
        backend=backend.name,
        params=params,
    )
    save_keyword_table(workspace, table, name=name, item_kind=item_kind, replace=True)
    return table


def _check_no_target_keywords(backend: ClassifierPatchBackend, classes: Mapping[str, Sequence[int]], workspace: Workspace) -> None:
    """Raise when a workspace class's output is in the backend's vocabulary."""
    kept = set(backend.outputs.tolist())
    leaking = sorted(name for name, outputs in class_outputs(backend.model.spec.label_space, classes).items() if kept & set(outputs))
    if leaking:
        raise InvalidInputError(
            f"the classifier-patch vocabulary holds the target classes {', '.join(leaking)} of {workspace.root}; a target's "
            "own class must never be a scene keyword: build the backend with exclude_classes=list_classes(workspace)"
        )


def table_params(workspace: Workspace, backend: KeywordBackend) -> dict[str, Any]:
    """The params a table computed by ``backend`` records, and its cache name hashes.

    The backend's own params; a classifier-patch backend adds ``model_key``, the content key of
    its model's weights (:func:`analytics.workspace.model_keys`), so a model re-registered with other
    weights never reuses the tables of the old ones.
    """
    params = backend.get_params()
    if isinstance(backend, ClassifierPatchBackend):
        spec = backend.model.spec
        params["model_key"] = model_keys(workspace).keys.get(spec.name, spec.content_key())
    return params


def keyword_table_name(backend: str, item_kind: str, ids: Sequence[str], params: Mapping[str, Any]) -> str:
    """The cache name of a backend's table over ``ids``: ``<backend>/<item_kind>/<12 hex>``.

    Parameters
    ----------
    backend : str
        The backend's name (``KeywordBackend.name``).
    item_kind : {'target', 'background'}
    ids : sequence of str
        The table's item ids, in row order.
    params : mapping
        :func:`table_params` of the backend (``KeywordTable.params`` of a computed table).
    """
    return f"{backend}/{item_kind}/{content_id(backend, dict(params), list(ids))}"


def build_keyword_tables(
    workspace: Workspace,
    backend: KeywordBackend,
    *,
    item_kinds: Sequence[str] = KEYWORD_ITEM_KINDS,
    batch_size: int = 32,
    progress: Progress | None = None,
) -> dict[str, str]:
    """Score every item of ``item_kinds`` with ``backend`` and store one table per kind.

    An existing table of the same backend settings and items is reused
    (:func:`compute_keywords`).

    Parameters
    ----------
    workspace : Workspace
    backend : KeywordBackend
        A scoring backend (classifier-patch, ADE20K + Places365, ...).
    item_kinds : sequence of {'target', 'background'}, default both
    batch_size : int, default=32
        Images scored per call of ``backend.scores``.
    progress : callable (done, total, item_kind) or None

    Returns
    -------
    tables : dict {item kind: table name}
    """
    require_permission(workspace, "build_suites")
    names = {}
    for kind in check_item_kinds(item_kinds):
        table = compute_keywords(workspace, backend=backend, item_kind=kind, batch_size=batch_size, progress=with_message(progress, kind))
        names[kind] = keyword_table_name(table.backend, kind, table.ids, table.params)
    return names


def _scores(
    workspace: Workspace, backend: KeywordBackend, item_kind: str, ids: list[str], batch_size: int, progress: Progress | None
) -> np.ndarray:
    """``backend.scores`` of every item, ``batch_size`` items a call: (n, n_keywords), float32."""
    scores = []
    for start in range(0, len(ids), batch_size):
        chunk = ids[start : start + batch_size]
        if item_kind == "target":
            batch = backend.scores(*load_targets(workspace, chunk))
        else:
            batch = backend.scores(load_backgrounds(workspace, chunk), None)
        scores.append(np.asarray(batch, np.float32))
        if progress is not None:
            progress(min(start + batch_size, len(ids)), len(ids))
    return np.concatenate(scores)


def _pool_scores(
    workspace: Workspace, backend: ClassifierPatchBackend, ids: list[str], image_hashes: list[str], chunk: int, progress: Progress | None
) -> np.ndarray:
    """Keyword scores of pool images from their cached view probabilities (pool screening may
    have stored them first), computing and caching the views of the others (:func:`computed_views`):
    the pool goes through the network once, whichever of keywords and screening runs first."""
    keys = view_cache_keys(backend.model.spec, backend.grid, image_hashes)
    known = stored_views(workspace, keys)
    scores = np.zeros((len(keys), len(backend.vocabulary)), np.float32)
    for k, key in enumerate(keys):
        if key in known:
            scores[k] = backend.scores_of_views(workspace.get_array(known[key])[None])[0]
    missing = [k for k, key in enumerate(keys) if key not in known]
    done = len(keys) - len(missing)
    if progress is not None and done:
        progress(done, len(keys))
    images_of = lambda rows: load_backgrounds(workspace, [ids[k] for k in rows])  # noqa: E731
    passes = computed_views(workspace, backend.model, keys, images_of, missing, grid=backend.grid, chunk=chunk, batch_size=backend.batch_size)
    with contextlib.closing(passes):  # a cancelled job keeps the views computed so far, now
        for rows, views in passes:
            scores[rows] = backend.scores_of_views(views)
            done += len(rows)
            if progress is not None:
                progress(done, len(keys))
    return scores
