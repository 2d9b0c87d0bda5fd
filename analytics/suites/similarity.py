"""Semantic distance between a composite and its original (docs/method.md, 'Semantic distance').

d_ij = mean over the models m of an ensemble of the cosine distance between the embeddings
e_m(x_i) of the original target image and e_m(y_ij) of its composite on background b_j; d_i0 = 0.
The paper's ensemble is ViT, CLIP, ResNet and VGG; offline we default to every registered
EfficientNet-Lite model (all registered models when there is none of those), or an explicit list.
An embedding is the model's vector after its final pooling layer (``LoadedModel.predict``).

Exact distances need one composite and one forward pass per model and (target, background) pair;
:func:`proxy_distances` ranks a whole pool from per-image embeddings only (see its docstring for
what it approximates and how well).
Per-image embeddings are cached in the workspace cache under keys that name the model, the image
kind and the ids.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from analytics._progress import Progress
from analytics.data import load_backgrounds, load_targets
from analytics.exceptions import InvalidInputError
from analytics.inference import SuiteImage, iter_composites, prefetch_for
from analytics.keywords import fill_objects
from analytics.models import LoadedModel, list_models, register_hint
from analytics.workspace import Workspace, content_id

logger = logging.getLogger(__name__)

ITEM_KINDS = ("target", "scene", "background")
_EPS = 1e-12


# -- cosine distances -------------------------------------------------------------------------
def paired_cosine_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine distance 1 - cos(a_k, b_k).

    Parameters
    ----------
    a, b : ndarray of shape (n, d), float

    Returns
    -------
    distances : ndarray of shape (n,), float64 in [0, 2]; 1 where a row is all zeros.

    Examples
    --------
    >>> paired_cosine_distances(np.array([[1.0, 0.0]]), np.array([[0.0, 2.0]]))
    array([1.])
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise InvalidInputError(f"a and b must both have shape (n, d); got {a.shape} and {b.shape}")
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    cosine = np.einsum("ij,ij->i", a, b) / np.maximum(norms, _EPS)
    return np.clip(1.0 - cosine, 0.0, 2.0)


def cosine_distance_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """All-pairs cosine distance (scikit-learn's ``cosine_distances``).

    a : ndarray of shape (n, d); b : ndarray of shape (m, d). Returns ndarray of shape (n, m), float64.
    """
    from sklearn.metrics.pairwise import cosine_distances  # heavy (scikit-learn, about 0.3 s): imported only when distances are computed

    return cosine_distances(np.asarray(a, np.float64), np.asarray(b, np.float64))


# -- models of the ensemble -------------------------------------------------------------------
def default_distance_models(workspace: Workspace) -> list[str]:
    """Names of the models the distance ensemble uses by default.

    Every registered EfficientNet-Lite model; when none is registered, every registered model.
    Empty when the workspace has no model.
    """
    specs = list_models(workspace)
    lite = [spec.name for spec in specs if spec.source == "efficientnet-lite"]
    return lite or [spec.name for spec in specs]


def resolve_distance_models(workspace: Workspace, models: Sequence[str] | None) -> list[str]:
    """``models`` checked against the registry, or the default ensemble when None.

    Raises
    ------
    InvalidInputError
        A named model is not registered, or no model is available.
    """
    registered = [spec.name for spec in list_models(workspace)]
    names = list(dict.fromkeys(models)) if models is not None else default_distance_models(workspace)
    unknown = [name for name in names if name not in registered]
    if unknown:
        raise InvalidInputError(
            f"distance models {unknown} are not registered in {workspace.root}; registered: {', '.join(registered) or 'none'}"
        )
    if not names:
        raise InvalidInputError(
            f"semantic distances need at least one registered model and {workspace.root} has none; register one with "
            f"{register_hint()} (or pass distance_models)"
        )
    return names


# -- embeddings -------------------------------------------------------------------------------
def embed_images(model: LoadedModel, images: np.ndarray, *, batch_size: int = 32) -> np.ndarray:
    """Embeddings of an image batch.

    Parameters
    ----------
    model : LoadedModel
    images : ndarray of shape (n, height, width, 3), uint8
    batch_size : int, default=32

    Returns
    -------
    embeddings : ndarray of shape (n, d), float32
        The model's vector after its final pooling layer.
    """
    return np.asarray(model.predict(images, batch_size=batch_size).embeddings, dtype=np.float32)


def item_embeddings(
    workspace: Workspace,
    model: LoadedModel,
    item_kind: str,
    ids: Sequence[str],
    *,
    batch_size: int = 32,
) -> np.ndarray:
    """Embeddings of workspace targets (``'target'``: the original images; ``'scene'``: the
    targets with their object filled, see :func:`proxy_distances`) or backgrounds, cached.

    The cache key names the model (its spec), the kind and the ids, so a re-registered model or
    another item set computes afresh.

    Returns
    -------
    embeddings : ndarray of shape (len(ids), d), float32
    """
    if item_kind not in ITEM_KINDS:
        raise InvalidInputError(f"item_kind must be one of {ITEM_KINDS}; got {item_kind!r}")
    key = f"similarity/embeddings/{item_kind}/{model.spec.name}/{content_id(model.spec.content_key(), list(ids))}"

    def embed() -> np.ndarray:
        logger.info("embedding %d %s images with %s", len(ids), item_kind, model.spec.name)
        chunks = []
        for start in range(0, len(ids), 256):  # bounded memory for large pools
            chunk = ids[start : start + 256]
            chunks.append(embed_images(model, _item_images(workspace, item_kind, chunk), batch_size=batch_size))
        return np.concatenate(chunks) if chunks else np.zeros((0, 0), np.float32)

    return workspace.cached(key, embed)


def _item_images(workspace: Workspace, item_kind: str, ids: Sequence[str]) -> np.ndarray:
    if item_kind == "background":
        return load_backgrounds(workspace, ids)
    images, masks = load_targets(workspace, ids)
    return images if item_kind == "target" else fill_objects(images, masks)


# -- distances --------------------------------------------------------------------------------
def proxy_distances(
    workspace: Workspace,
    target_ids: Sequence[str],
    pool_ids: Sequence[str],
    *,
    models: Sequence[LoadedModel],
    batch_size: int = 32,
) -> np.ndarray:
    """Cheap stand-in for the composite distance of every (target, pool background) pair.

    Exact distances need targets x pool x models composites and forward passes (48 x 250 x 3 =
    36,000 on the demo, about 15 minutes on two CPU cores); ranking a pool for ``nearest`` /
    ``interval`` needs only an ordering. A composite y_ij differs from its original x_i only in
    the scene around the object, so we rank by how far the new scene is from the original one:

        proxy_ij = mean over models of d_cos(e(x̃_i), e(b_j))

    where x̃_i is the target with its object filled by the mean colour of its surroundings (the
    fill of :func:`analytics.keywords.classifier_patch.fill_objects`) and e(b_j) the embedding of
    the background alone. Cost: one forward pass per target and per background (cached) instead of
    one per pair.

    Measured on 4 Tux Paint animals x 14 real scene photos with EfficientNet-Lite0, the per-target
    Spearman correlation with the exact distance was about 0.4-0.67: modest, but better than
    d(e(x_i), e(b_j)) (0.0-0.36) and than linear-pooling mixtures of the object's and the scene's
    embeddings (-0.07-0.59); on the tiny test networks it is above 0.9. It is a ranking aid only:
    suites record the exact distances of the backgrounds chosen, and ``nearest`` / ``interval``
    are only as sharp as this proxy.

    Returns
    -------
    distances : ndarray of shape (len(target_ids), len(pool_ids)), float64
    """
    if not models:
        raise InvalidInputError("proxy_distances needs at least one model")
    total = np.zeros((len(target_ids), len(pool_ids)))
    for model in models:
        scenes = item_embeddings(workspace, model, "scene", target_ids, batch_size=batch_size)
        pool = item_embeddings(workspace, model, "background", pool_ids, batch_size=batch_size)
        total += cosine_distance_matrix(scenes, pool)
    return total / len(models)


def composite_distances(
    workspace: Workspace,
    jobs: Sequence[SuiteImage],
    *,
    models: Sequence[LoadedModel],
    batch_size: int = 32,
    progress: Progress | None = None,
) -> np.ndarray:
    """Exact semantic distance of each job's image to its target's original (docs/method.md, 'Semantic distance').

    Composites are streamed once (:func:`analytics.inference.iter_composites`) and every model of
    the ensemble embeds each batch; d = mean over models of the cosine distance to the original's
    embedding. Jobs at position 0 (the original itself) get exactly 0.

    Parameters
    ----------
    workspace : Workspace
    jobs : sequence of SuiteImage
    models : sequence of LoadedModel
        The ensemble (at least one).
    batch_size : int, default=32
    progress : callable (done, total) or None

    Returns
    -------
    distances : ndarray of shape (len(jobs),), float64
    """
    if not models:
        raise InvalidInputError("composite_distances needs at least one model")
    target_ids = list(dict.fromkeys(job.target_id for job in jobs))
    row_of = {target_id: k for k, target_id in enumerate(target_ids)}
    originals = [item_embeddings(workspace, m, "target", target_ids, batch_size=batch_size) for m in models]
    index_of = {(job.target_id, job.position): k for k, job in enumerate(jobs)}
    distances = np.zeros(len(jobs))
    todo = [job for job in jobs if job.position != 0]
    done = 0
    for batch_jobs, images in iter_composites(workspace, todo, batch_size=batch_size, prefetch=prefetch_for(models[0].device)):
        rows = [row_of[job.target_id] for job in batch_jobs]
        total = np.zeros(len(batch_jobs))
        for model, original in zip(models, originals):
            total += paired_cosine_distances(embed_images(model, images, batch_size=batch_size), original[rows])
        distances[[index_of[(job.target_id, job.position)] for job in batch_jobs]] = total / len(models)
        done += len(batch_jobs)
        if progress is not None:
            progress(done, len(todo))
    return distances
