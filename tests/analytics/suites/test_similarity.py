"""Semantic distances: cosine helpers, exact composite distances and the ranking proxy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from analytics.data import list_backgrounds, list_targets, load_backgrounds
from analytics.exceptions import InvalidInputError
from analytics.inference import SuiteImage
from analytics.models import load_model
from analytics.suites import default_distance_models, proxy_distances
from analytics.suites.similarity import composite_distances, cosine_distance_matrix, embed_images, item_embeddings, paired_cosine_distances, resolve_distance_models


def test_paired_cosine_distances_by_hand():
    a = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [2.0, 0.0]])
    b = np.array([[0.0, 3.0], [2.0, 2.0], [1.0, 0.0], [-1.0, 0.0]])
    np.testing.assert_allclose(paired_cosine_distances(a, b), [1.0, 0.0, 1.0, 2.0], atol=1e-12)
    with pytest.raises(InvalidInputError, match="shape"):
        paired_cosine_distances(a, b[:2])


def test_distance_matrix_agrees_with_paired_distances():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 6)), rng.normal(size=(5, 6))
    matrix = cosine_distance_matrix(a, b)
    assert matrix.shape == (4, 5)
    np.testing.assert_allclose(matrix[2], paired_cosine_distances(np.repeat(a[2:3], 5, 0), b), atol=1e-12)


def test_default_and_resolved_models(tiny_model_workspace):
    assert default_distance_models(tiny_model_workspace) == ["bg-only", "fg-only", "tiny"]  # no EfficientNet-Lite: all
    assert resolve_distance_models(tiny_model_workspace, ["tiny", "tiny"]) == ["tiny"]
    with pytest.raises(InvalidInputError, match="not registered"):
        resolve_distance_models(tiny_model_workspace, ["nope"])


def test_no_model_is_an_error(tiny_workspace):
    assert default_distance_models(tiny_workspace) == []
    with pytest.raises(InvalidInputError, match="at least one registered model"):
        resolve_distance_models(tiny_workspace, None)


def jobs_over(workspace, n_backgrounds: int) -> list[SuiteImage]:
    targets = list_targets(workspace)["id"].tolist()
    backgrounds = list_backgrounds(workspace)["id"].tolist()[:n_backgrounds]
    jobs = []
    for target_id in targets:
        jobs.append(SuiteImage(target_id, 0, None))
        jobs += [SuiteImage(target_id, k + 1, bg) for k, bg in enumerate(backgrounds)]
    return jobs


def test_composite_distances_follow_what_each_model_sees(tiny_model_workspace):
    workspace = tiny_model_workspace
    jobs = jobs_over(workspace, 4)
    originals = [job.position == 0 for job in jobs]
    object_only = composite_distances(workspace, jobs, models=[load_model(workspace, "fg-only")])
    np.testing.assert_allclose(object_only, 0.0, atol=1e-6)  # fg-only reads pixels inside the object
    bg_model = load_model(workspace, "bg-only")
    scenes = composite_distances(workspace, jobs, models=[bg_model], batch_size=5)
    assert (scenes[originals] == 0).all()
    # bg-only reads corners, which show the new background untouched: d = d(e(x), e(b))
    rest = [job for job in jobs if job.position]
    target_ids = list(dict.fromkeys(job.target_id for job in jobs))
    original = item_embeddings(workspace, bg_model, "target", target_ids)[[target_ids.index(j.target_id) for j in rest]]
    backgrounds = embed_images(bg_model, load_backgrounds(workspace, [j.background_id for j in rest]))
    np.testing.assert_allclose(scenes[[bool(job.position) for job in jobs]], paired_cosine_distances(original, backgrounds), atol=1e-5)
    both = composite_distances(workspace, jobs, models=[bg_model, load_model(workspace, "fg-only")])
    np.testing.assert_allclose(both, (scenes + object_only) / 2, atol=1e-6)


def test_proxy_ranks_the_pool_like_the_exact_distances(tiny_model_workspace):
    workspace = tiny_model_workspace
    targets = list_targets(workspace)["id"].tolist()
    pool = list_backgrounds(workspace)["id"].tolist()
    jobs = [SuiteImage(t, k + 1, b) for t in targets for k, b in enumerate(pool)]
    for name in ("tiny", "bg-only"):
        model = load_model(workspace, name)
        proxy = proxy_distances(workspace, targets, pool, models=[model])
        exact = composite_distances(workspace, jobs, models=[model]).reshape(len(targets), len(pool))
        assert proxy.shape == (len(targets), len(pool))
        rho = [spearmanr(proxy[i], exact[i]).statistic for i in range(len(targets))]
        assert min(rho) > 0.9, (name, rho)


def test_item_embeddings_are_cached(tiny_model_workspace, monkeypatch):
    workspace = tiny_model_workspace
    model = load_model(workspace, "tiny")
    ids = list_targets(workspace)["id"].tolist()
    first = item_embeddings(workspace, model, "scene", ids)
    monkeypatch.setattr(model, "predict", lambda *a, **k: pytest.fail("cache miss"))
    np.testing.assert_array_equal(item_embeddings(workspace, model, "scene", ids), first)
    assert first.shape == (len(ids), 8)
    with pytest.raises(InvalidInputError, match="item_kind"):
        item_embeddings(workspace, model, "foreground", ids)
