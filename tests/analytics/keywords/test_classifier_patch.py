"""The classifier-patch keyword vocabulary: scene classes only, never a workspace's target classes.

Uses ``red-is-zebra`` (``tests/fixtures/screening.py``), a fake classifier with the ImageNet-1k
label space, on the workspace of classes ``zebra`` and ``apple``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from analytics import demo
from analytics.data import imagenet_label_space, list_backgrounds, list_classes, load_backgrounds
from analytics.exceptions import InvalidInputError
from analytics.keywords import ClassifierPatchBackend, classifier_patch, compute_keywords, load_keyword_table
from analytics.keywords.classifier_patch import SCENE_CLASSES, SCENE_GROUPS, view_probabilities
from analytics.models import ModelSpec, load_model
from analytics.suites import ensure_keyword_tables
from tests.fixtures.screening import FAKE_CLASSIFIER, ZEBRA


@pytest.fixture
def imagenet_model(screening_workspace):
    return load_model(screening_workspace, FAKE_CLASSIFIER, device="cpu")


def test_scene_groups_are_imagenet_names_listed_once():
    names = imagenet_label_space().names
    assert sum(len(group) for group in SCENE_GROUPS.values()) == len(SCENE_CLASSES)
    assert all(names[index] == name for index, name in SCENE_CLASSES.items())


def test_default_vocabulary_is_the_scene_list_without_any_demo_class(imagenet_model):
    backend = ClassifierPatchBackend(imagenet_model)
    names = imagenet_label_space().names
    assert backend.vocabulary == [names[i] for i in sorted(SCENE_CLASSES)] and backend.scene_like.all()
    demo_indices = {i for indices in demo.load_catalogue().classes.values() for i in indices}
    assert not demo_indices & set(backend.outputs.tolist())  # no foreground class of the demo is a keyword
    params = backend.get_params()
    assert params["vocabulary"] == "scene" and params["vocabulary_size"] == len(SCENE_CLASSES)


def test_target_classes_are_never_keywords(imagenet_model):
    fence = {"fence": [489, 716], "zebra": [ZEBRA], "unmapped": []}
    scene = ClassifierPatchBackend(imagenet_model, exclude_classes=fence)
    assert not {"chainlink fence", "picket fence"} & set(scene.vocabulary) and len(scene.vocabulary) == len(SCENE_CLASSES) - 2
    assert scene.get_params()["excluded_classes"] == {"fence": [489, 716], "zebra": [ZEBRA]}
    everything = ClassifierPatchBackend(imagenet_model, vocabulary="all", exclude_classes=fence)
    assert "zebra" not in everything.vocabulary and len(everything.vocabulary) == 1000 - 3


def test_scores_are_the_full_softmax_of_the_keyword_outputs(screening_workspace, imagenet_model):
    backend = ClassifierPatchBackend(imagenet_model, grid=2)
    images = load_backgrounds(screening_workspace, ["red", "bg00"])
    scores = backend.scores(images)
    assert scores.shape == (2, len(backend.vocabulary)) and scores.dtype == np.float32
    views = view_probabilities(imagenet_model, images, grid=2)
    # backgrounds score the views at the precision the shared view cache holds (float16)
    expected = views.astype(np.float16).astype(np.float32)[..., backend.outputs].max(axis=1)
    np.testing.assert_allclose(scores, expected, atol=1e-7)
    np.testing.assert_allclose(scores, views[..., backend.outputs].max(axis=1), rtol=1e-3, atol=1e-6)


def _recording_model(imagenet_model, device: str, monkeypatch) -> tuple[SimpleNamespace, list, list, list]:
    """The CPU model reporting ``device``, and what it records: its batches' sizes, the pipelines
    that ran ahead of it (their names) and whether each batch was asked in page-locked memory
    (given in ordinary memory: there is no page-locked memory without CUDA)."""
    sizes, ahead, locked = [], [], []
    model = SimpleNamespace(
        spec=imagenet_model.spec, device=torch.device(device), preprocess=imagenet_model.preprocess,
        run_batch=lambda batch, conv_stats=False: sizes.append(len(batch)) or imagenet_model.run_batch(batch),
    )  # fmt: skip
    prefetched = classifier_patch.prefetched
    monkeypatch.setattr(classifier_patch, "prefetched", lambda *args, **kwargs: ahead.append(kwargs["name"]) or prefetched(*args, **kwargs))
    monkeypatch.setattr(classifier_patch, "empty_batch", lambda shape, page_locked: locked.append(page_locked) or np.empty(shape, np.uint8))
    return model, sizes, ahead, locked


@pytest.mark.parametrize("device", ["cpu", "cuda"])  # cuda: views cut on a worker thread ahead of the model
def test_views_stream_across_images_in_full_batches(screening_workspace, imagenet_model, monkeypatch, device):
    images = load_backgrounds(screening_workspace, ["red", "bg00", "bg01", "red", "bg00"])
    one_by_one = np.concatenate([view_probabilities(imagenet_model, images[i : i + 1], grid=2, batch_size=1) for i in range(5)])
    model, sizes, ahead, locked = _recording_model(imagenet_model, device, monkeypatch)
    batched = view_probabilities(model, images, grid=2, batch_size=8)
    assert sizes == [8, 8, 8, 1]  # 5 images x 5 views: no pass is cut short at an image's border
    assert ahead == ([] if device == "cpu" else ["backdrop-views"])
    assert locked == [device == "cuda"] * 4  # page-locked batches for a GPU's asynchronous upload
    np.testing.assert_allclose(batched, one_by_one, atol=1e-6)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_chunks_of_images_go_through_one_pipeline(screening_workspace, imagenet_model, monkeypatch, device):
    images = load_backgrounds(screening_workspace, ["red", "bg00", "bg01", "red", "bg00", "bg01"])
    chunks = [images[:3], images[3:4], images[4:]]
    expected = [view_probabilities(imagenet_model, chunk, grid=2, batch_size=4) for chunk in chunks]
    model, sizes, ahead, _ = _recording_model(imagenet_model, device, monkeypatch)
    read = []
    streamed = list(classifier_patch.iter_view_probabilities(model, (read.append(k) or chunk for k, chunk in enumerate(chunks)), grid=2, batch_size=4))
    assert read == [0, 1, 2] and len(ahead) == (device != "cpu")  # one pipeline for every chunk
    assert sizes == [4, 4, 4, 3, 4, 1, 4, 4, 2]  # each chunk's views in batches: 15, 5 and 10 views
    assert [s.shape for s in streamed] == [e.shape for e in expected]
    for got, want in zip(streamed, expected):
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_compute_keywords_refuses_a_vocabulary_holding_a_target_class(screening_workspace, imagenet_model):
    leaky = ClassifierPatchBackend(imagenet_model, vocabulary="all")
    with pytest.raises(InvalidInputError, match="target classes apple, zebra"):
        compute_keywords(screening_workspace, backend=leaky, item_kind="background")


def test_default_tables_record_their_vocabulary(screening_workspace):
    names, computed = ensure_keyword_tables(screening_workspace, model=FAKE_CLASSIFIER, grid=1)
    assert computed == ["target", "background"]
    for name in names.values():
        table = load_keyword_table(screening_workspace, name)
        assert table.params["vocabulary"] == "scene" and table.params["vocabulary_size"] == len(table.vocabulary)
        assert set(table.params["excluded_classes"]) == set(list_classes(screening_workspace))
        assert not {"zebra", "Granny Smith"} & set(table.vocabulary)


def test_a_custom_label_space_keeps_all_its_outputs(tiny_model_workspace):
    backend = ClassifierPatchBackend(load_model(tiny_model_workspace, "tiny"))
    assert backend.vocabulary == ["disc", "square"] and backend.get_params()["vocabulary"] == "all"
    with pytest.raises(InvalidInputError, match="leaves no keyword"):
        ClassifierPatchBackend(load_model(tiny_model_workspace, "tiny"), vocabulary="scene")


def test_tables_of_replaced_weights_are_neither_reused_nor_picked(tiny_model_workspace, tiny_model_files):
    from analytics.data import custom_label_space
    from analytics.keywords import list_keyword_tables, newest_keyword_tables
    from analytics.models import register_torchscript
    from analytics.workspace import model_keys

    old, _ = ensure_keyword_tables(tiny_model_workspace, model="tiny", grid=1)
    assert load_keyword_table(tiny_model_workspace, old["target"]).params["model_key"] == model_keys(tiny_model_workspace).keys["tiny"]
    labels = custom_label_space(tiny_model_files["labels"])  # `add-model --replace` with other weights
    register_torchscript(tiny_model_workspace, "tiny", checkpoint=tiny_model_files["fg-only"], label_space=labels, input_size=64, replace=True)
    assert list_keyword_tables(tiny_model_workspace).set_index("name").loc[list(old.values()), "stale"].all()
    new, computed = ensure_keyword_tables(tiny_model_workspace, model="tiny", grid=1)
    assert computed == ["target", "background"] and set(new.values()).isdisjoint(old.values())
    backend = ClassifierPatchBackend(load_model(tiny_model_workspace, "tiny"), grid=1)
    assert compute_keywords(tiny_model_workspace, backend=backend, item_kind="target").params["model_key"] == model_keys(
        tiny_model_workspace
    ).keys["tiny"]
    assert not list_keyword_tables(tiny_model_workspace).set_index("name").loc[list(new.values()), "stale"].any()
    assert newest_keyword_tables(tiny_model_workspace) == new  # the defaults pick the current tables, never the stale ones


def test_a_pass_over_the_pool_hashes_the_model_spec_once_not_per_background(screening_workspace, imagenet_model, monkeypatch):
    # The spec's content key serialises its 1,000 label names: 3 ms a call, a minute per 20,000 backgrounds.
    calls = []
    content_key = ModelSpec.content_key
    monkeypatch.setattr(ModelSpec, "content_key", lambda spec: calls.append(spec.name) or content_key(spec))
    n = len(list_backgrounds(screening_workspace))
    backend = ClassifierPatchBackend(imagenet_model, grid=1, exclude_classes=list_classes(screening_workspace))
    compute_keywords(screening_workspace, backend=backend, item_kind="background", batch_size=n)
    assert n >= 3 and len(calls) <= 2  # the table's params and the view cache's keys


def test_views_back_off_when_the_model_does_not_fit_and_default_to_the_devices_batch(screening_workspace, imagenet_model):
    images = load_backgrounds(screening_workspace, ["red", "bg00", "bg01"])
    expected = view_probabilities(imagenet_model, images, grid=2, batch_size=4)
    sizes = []

    def small_device(batch, conv_stats=False):
        sizes.append(len(batch))
        if len(batch) > 3:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return imagenet_model.run_batch(batch)

    model = SimpleNamespace(spec=imagenet_model.spec, device=torch.device("cpu"), preprocess=imagenet_model.preprocess, run_batch=small_device)
    np.testing.assert_allclose(view_probabilities(model, images, grid=2), expected, atol=1e-6)
    assert sizes[0] == 15  # all 15 views in one pass (the CPU's default 32) ...
    assert sum(size for size in sizes if size <= 3) == 15 and sizes[-1] <= 3  # ... then halved until they fit, each view run once


def test_no_images_have_no_views(imagenet_model):
    views = view_probabilities(imagenet_model, np.zeros((0, 32, 32, 3), np.uint8), grid=2)
    assert views.shape == (0, 5, len(imagenet_model.spec.label_space.names))
    chunks = [np.zeros((1, 32, 32, 3), np.uint8), np.zeros((0, 32, 32, 3), np.uint8), np.zeros((2, 32, 32, 3), np.uint8)]
    assert [len(v) for v in classifier_patch.iter_view_probabilities(imagenet_model, chunks, grid=2, batch_size=3)] == [1, 0, 2]
