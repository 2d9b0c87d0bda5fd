"""Issue 46.3, preprocessing applied once: a run of a model with its own library's transform (timm,
transformers, ONNX) stores what that library's own pipeline makes of each composite at the
workspace size (nothing resized before it); Backdrop's own preprocessing keeps composites made at
the input size. Tiny random-weight models, non-ImageNet mean, std, input size and crop; nothing
downloads."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image
from torch import nn

from analytics.data import composite, custom_label_space, load_backgrounds, load_targets
from analytics.inference import iter_composites, run_models, stored_suite_images, with_foreground
from analytics.models import LoadedModel, ModelSpec, get_model_spec, load_model, register_torchscript
from analytics.models.libraries import register_onnx, register_timm, register_transformers
from tests.fixtures.models import SIZE, TINY_SUITE

MEAN, STD = (0.3, 0.4, 0.5), (0.2, 0.25, 0.3)
SIGNALS = ("true_prob", "max_prob", "emb_max", "emb_mean")


def _library_composites(workspace) -> tuple[list[tuple[str, int]], np.ndarray]:
    """Every (target, position) of the tiny suite and its image made at the workspace size with
    :func:`analytics.data.composite` (position 0: the target itself)."""
    jobs, _ = stored_suite_images(workspace, TINY_SUITE)
    targets, masks = load_targets(workspace, [job.target_id for job in jobs])
    swapped = [i for i, job in enumerate(jobs) if job.background_id is not None]
    images = targets.copy()
    images[swapped] = composite(targets[swapped], masks[swapped], load_backgrounds(workspace, [jobs[i].background_id for i in swapped]))
    assert images.shape[1:3] == (SIZE, SIZE)
    return [(job.target_id, job.position) for job in jobs], images


def _stored(workspace, run_id: str) -> pd.DataFrame:
    rows = workspace.query("SELECT target_id, position, " + ", ".join(SIGNALS) + " FROM run_images WHERE run_id = ?", (run_id,))
    return pd.DataFrame([dict(r) for r in rows]).set_index(["target_id", "position"])


def _signals(keys: list[tuple[str, int]], logits: np.ndarray, embedding: np.ndarray, names: tuple[str, ...]) -> pd.DataFrame:
    """The run's signals from a library's own logits and embedding (the true class: the target's folder)."""
    probabilities = torch.softmax(torch.as_tensor(logits, dtype=torch.float32), dim=1).numpy()
    true = [names.index(target.split("/")[0]) for target, _ in keys]
    values = {
        "true_prob": probabilities[np.arange(len(keys)), true], "max_prob": probabilities.max(1),
        "emb_max": embedding.max(1), "emb_mean": embedding.mean(1),
    }  # fmt: skip
    return pd.DataFrame(values, index=pd.MultiIndex.from_tuples(keys, names=["target_id", "position"]))


def _check_run(workspace, name: str, reference, atol: float) -> None:
    """Run ``name`` on the tiny suite and compare each stored signal with ``reference(images)`` ->
    (logits, embedding), the library's own pipeline on the composites at the workspace size."""
    (run_id,) = run_models(workspace, [name], TINY_SUITE, device="cpu", batch_size=8)
    keys, images = _library_composites(workspace)
    logits, embedding = reference(images)
    expected = _signals(keys, logits, embedding, get_model_spec(workspace, name).label_space.names)
    stored = _stored(workspace, run_id).loc[expected.index]
    assert len(stored) == len(keys) == 30
    for column in SIGNALS:
        np.testing.assert_allclose(stored[column].to_numpy(), expected[column].to_numpy(), rtol=0, atol=atol, err_msg=column)


def _labels(tmp_path):
    (tmp_path / "labels.txt").write_text("disc\nsquare\n")
    return custom_label_space(tmp_path / "labels.txt")


# -- timm ------------------------------------------------------------------------------------------
TIMM_ARGS = {"input_size": (3, 48, 48), "crop_pct": 0.8, "interpolation": "bilinear", "mean": MEAN, "std": STD}


@pytest.fixture
def timm_model(tiny_model_workspace, tmp_path):
    import timm

    torch.manual_seed(0)
    model = timm.create_model("test_resnet", pretrained=False, num_classes=2).eval()
    torch.save(model.state_dict(), tmp_path / "test_resnet.pth")
    spec = register_timm(
        tiny_model_workspace, "timm-tiny", arch="test_resnet", checkpoint=tmp_path / "test_resnet.pth", label_space=_labels(tmp_path),
        input_size=48, mean=MEAN, std=STD, crop_pct=0.8, interpolation="bilinear",
    )  # fmt: skip
    assert (spec.input_size, spec.transform.resize, spec.composite_size) == (48, 60, None)  # 48 / 0.8, centre crop 48
    return model


def _timm_reference(model):
    from timm.data import create_transform, resolve_data_config

    transform = create_transform(**resolve_data_config(args=TIMM_ARGS, model=model))

    def reference(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        batch = torch.stack([transform(Image.fromarray(image)) for image in images])
        with torch.no_grad():
            features = model.forward_features(batch)
            return model.forward_head(features).numpy(), model.forward_head(features, pre_logits=True).numpy()

    return reference


def test_a_timm_run_stores_what_timms_own_transform_makes_of_each_composite(tiny_model_workspace, timm_model):
    _check_run(tiny_model_workspace, "timm-tiny", _timm_reference(timm_model), 1e-5)


def test_the_network_sees_the_library_pipelines_pixels_not_a_resized_composite(tiny_model_workspace, timm_model, monkeypatch):
    """Fails on the old behaviour (composites made at the input size, then resized again by the transform)."""
    from timm.data import create_transform, resolve_data_config

    seen = []
    run_batch = LoadedModel.run_batch

    def spy(self, batch, **options):
        seen.append(batch.detach().cpu().numpy().copy())
        return run_batch(self, batch, **options)

    monkeypatch.setattr(LoadedModel, "run_batch", spy)
    run_models(tiny_model_workspace, ["timm-tiny"], TINY_SUITE, device="cpu", batch_size=8)
    transform = create_transform(**resolve_data_config(args=TIMM_ARGS, model=timm_model))
    ordered = with_foreground(stored_suite_images(tiny_model_workspace, TINY_SUITE)[0])  # the order the engine feeds the network
    images = np.concatenate([batch for _, batch in iter_composites(tiny_model_workspace, ordered, batch_size=64)])
    expected = torch.stack([transform(Image.fromarray(image)) for image in images]).numpy()
    np.testing.assert_allclose(np.concatenate(seen), expected, rtol=0, atol=1e-6)


# -- transformers -----------------------------------------------------------------------------------
def test_a_transformers_run_stores_what_its_image_processor_makes_of_each_composite(tiny_model_workspace, tmp_path):
    from transformers import AutoImageProcessor, AutoModelForImageClassification, ConvNextConfig, ConvNextForImageClassification, ConvNextImageProcessor
    from transformers.utils import logging as hf_logging

    folder, labels = tmp_path / "convnext", {0: "disc", 1: "square"}
    torch.manual_seed(0)
    config = ConvNextConfig(hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1], num_labels=2, id2label=labels, label2id={v: k for k, v in labels.items()})
    hf_logging.disable_progress_bar()
    ConvNextForImageClassification(config).save_pretrained(folder, safe_serialization=True)
    ConvNextImageProcessor(size={"shortest_edge": 40}, crop_pct=0.75, image_mean=list(MEAN), image_std=list(STD)).save_pretrained(folder)
    spec = register_transformers(tiny_model_workspace, "hf-tiny", folder=folder)
    assert (spec.input_size, spec.transform.resize, spec.transform.mean, spec.composite_size) == (40, 53, MEAN, None)
    processor = AutoImageProcessor.from_pretrained(folder)
    model = AutoModelForImageClassification.from_pretrained(folder).eval()

    def reference(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pixels = processor(images=list(images), return_tensors="pt")["pixel_values"]
        with torch.no_grad():
            return model(pixel_values=pixels).logits.numpy(), model.convnext(pixel_values=pixels).pooler_output.numpy()

    _check_run(tiny_model_workspace, "hf-tiny", reference, 1e-5)


# -- ONNX -------------------------------------------------------------------------------------------
class _SmallNet(nn.Module):
    """Conv 3->8, ReLU, global average pool, Linear 8->2: (logits, pooled features)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.fc = nn.Conv2d(3, 8, 3, stride=2), nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = torch.relu(self.conv(x)).mean(dim=(2, 3))
        return self.fc(features), features


def test_an_onnx_run_stores_what_its_stored_pipeline_and_onnxruntime_make_of_each_composite(tiny_model_workspace, tmp_path):
    import onnxruntime
    from torchvision import transforms

    torch.manual_seed(0)
    path = tmp_path / "small.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _SmallNet().eval(), (torch.zeros(1, 3, 40, 40),), str(path), input_names=["pixels"], output_names=["logits", "features"],
            dynamic_axes={"pixels": {0: "b"}, "logits": {0: "b"}, "features": {0: "b"}}, dynamo=False,
        )  # fmt: skip
    spec = register_onnx(tiny_model_workspace, "onnx-tiny", checkpoint=path, label_space=_labels(tmp_path), mean=MEAN, std=STD, crop_pct=0.9, interpolation="bicubic")
    assert (spec.input_size, spec.transform.resize, spec.transform.resampler, spec.composite_size) == (40, 44, "pil", None)
    # the pipeline the registration stored: torchvision Resize(floor(40 / 0.9)) + CenterCrop(40) on PIL images
    pipeline = transforms.Compose([
        transforms.Resize((44, 44), interpolation=transforms.InterpolationMode.BICUBIC), transforms.CenterCrop(40), transforms.ToTensor(),
        transforms.Normalize(MEAN, STD),
    ])  # fmt: skip
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def reference(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        batch = torch.stack([pipeline(Image.fromarray(image)) for image in images]).numpy()
        logits, features = session.run(None, {"pixels": batch})
        return logits, features

    _check_run(tiny_model_workspace, "onnx-tiny", reference, 1e-4)


# -- Backdrop's own preprocessing -----------------------------------------------------------------
def test_own_preprocessing_keeps_composites_made_at_the_input_size(tiny_model_workspace, tiny_model_files):
    """No library transform: the early area resize to the input size is the model's own resize, so
    the fast path stays (the same as resizing each whole composite up to the seam's pixels:
    ``test_composites_made_at_the_input_size_match_resized_composites``)."""
    spec = register_torchscript(tiny_model_workspace, "own48", checkpoint=tiny_model_files["tiny"], label_space=custom_label_space(tiny_model_files["labels"]), input_size=48)
    assert spec.transform is None and spec.composite_size == 48
    jobs, _ = stored_suite_images(tiny_model_workspace, TINY_SUITE)
    images = np.concatenate([batch for _, batch in iter_composites(tiny_model_workspace, jobs, size=spec.composite_size)])
    assert images.shape[1:3] == (48, 48)
    model = load_model(tiny_model_workspace, "own48", device="cpu")

    def reference(_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with torch.no_grad():
            logits, embedding = model.run_batch(model.preprocess(images))
        return logits.numpy(), embedding.numpy()

    _check_run(tiny_model_workspace, "own48", reference, 1e-5)


def test_classifier_patch_views_go_through_the_library_pipeline_once(tiny_model_workspace, timm_model):
    """Keyword views of a model with a transform are resized by that transform (to its resize side),
    so its pipeline runs once on each view: the probabilities equal timm's own on each view."""
    from timm.data import create_transform, resolve_data_config

    from analytics.keywords.classifier_patch import view_probabilities

    images = load_backgrounds(tiny_model_workspace, ["bg00", "bg01"])
    model = load_model(tiny_model_workspace, "timm-tiny", device="cpu")
    probabilities = view_probabilities(model, images, grid=2, batch_size=4)
    transform = create_transform(**resolve_data_config(args=TIMM_ARGS, model=timm_model))
    views = [view for image in images for view in (image, image[:32, :32], image[:32, 32:], image[32:, :32], image[32:, 32:])]
    with torch.no_grad():
        logits = timm_model(torch.stack([transform(Image.fromarray(np.ascontiguousarray(view))) for view in views]))
    expected = torch.softmax(logits, dim=1).numpy().reshape(2, 5, 2)
    np.testing.assert_allclose(probabilities, expected, rtol=0, atol=1e-5)


def test_runs_made_before_the_transform_ran_once_get_a_new_id(tiny_model_workspace, timm_model):
    """A transform's spec records its pipeline version, so a model registered before the fix (its
    stored spec without it) has another content key: its old runs are recomputed, not reused."""
    import hashlib
    import json

    spec = get_model_spec(tiny_model_workspace, "timm-tiny")
    stored = spec.to_json()
    assert stored["transform"]["pipeline"] == 2
    del stored["transform"]["pipeline"]  # as a spec registered before the fix was stored
    before = hashlib.sha256(json.dumps(stored, sort_keys=True).encode()).hexdigest()[:16]
    assert ModelSpec.from_json(stored).content_key() == spec.content_key() != before
