"""Heads, and so the zoo, on any backbone (issue 46.2): on a timm, a transformers and an ONNX model
(tiny, random weights, built here) a zoo builds, its heads inherit the backbone's whole
preprocessing (input size, resize, crop, normalisation), run, and load as backbone embedding ->
head; an ONNX graph that gives no embedding is refused by name before any embedding is computed."""

from __future__ import annotations

import numpy as np
import pytest
import timm
import torch
from torch import nn
from transformers import ConvNextConfig, ConvNextForImageClassification, ConvNextImageProcessor

from analytics.data import custom_label_space
from analytics.exceptions import InvalidInputError
from analytics.models import get_model_spec, list_models, load_head, load_model, register_head
from analytics.models.libraries import register_onnx, register_timm, register_transformers
from analytics.runs import list_runs, load_run, start_runs
from analytics.saliency import available_methods
from analytics.zoo import build_zoo
from analytics.zoo.layout import zoo_model_name
from tests.fixtures.models import TINY_SUITE, insert_suite, write_labels
from tests.fixtures.models import export_onnx as _export_onnx
from tests.fixtures.workspace import build_tiny_workspace

SOURCES = ("timm", "transformers", "onnx")
# the smallest zoo: two plain heads (s = 0 and 1) on one seed, no figure-8 family
SMALLEST = {"strengths": (0, 1), "augment": (False,), "seeds": (0,), "temperatures": (), "n_train_per_class": 6, "pool_per_target": 2, "hidden": 8}
HEADS = [zoo_model_name(s, False, 0) for s in (0, 1)]


class _EmbeddingNet(nn.Module):
    """3x3 conv (3->8, stride 2) + ReLU, global average pool, Linear(8->2): (logits, embedding)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.fc = nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        embedding = torch.relu(self.conv(x)).mean((2, 3))
        return self.fc(embedding), embedding


class _LogitsOnly(_EmbeddingNet):
    def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(x)[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    """A team's tiny models of each library (random weights, 2 classes 'disc'/'square')."""
    root = tmp_path_factory.mktemp("backbones")
    torch.manual_seed(0)
    torch.save(timm.create_model("test_resnet", pretrained=False, num_classes=2).state_dict(), root / "timm.pth")
    labels = {0: "disc", 1: "square"}
    config = ConvNextConfig(hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1], num_labels=2, id2label=labels, label2id={v: k for k, v in labels.items()})
    ConvNextForImageClassification(config).save_pretrained(root / "convnext", safe_serialization=True)
    ConvNextImageProcessor(size={"shortest_edge": 64}).save_pretrained(root / "convnext")  # resize 73, centre crop 64, bicubic
    return {
        "timm": root / "timm.pth",
        "transformers": root / "convnext",
        "onnx": _export_onnx(_EmbeddingNet(), root / "embedding.onnx", ("logits", "embedding")),
        "onnx-logits": _export_onnx(_LogitsOnly(), root / "logits.onnx", ("logits",)),
        "labels": custom_label_space(write_labels(root / "labels.txt")),
    }


def _register(workspace, source: str, files: dict, name: str = "base") -> None:
    labels = files["labels"]
    if source == "timm":
        register_timm(workspace, name, arch="test_resnet", checkpoint=files["timm"], label_space=labels, input_size=64)  # crop_pct 0.95: resize 67, crop 64
    elif source == "transformers":
        register_transformers(workspace, name, folder=files["transformers"])
    else:
        checkpoint = files["onnx" if name == "base" else name]
        register_onnx(workspace, name, checkpoint=checkpoint, label_space=labels, mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3), crop_pct=0.875)


@pytest.fixture(scope="module", params=SOURCES)
def zoo(request, files, tmp_path_factory) -> tuple:
    """(source, workspace, models): the smallest zoo built on that source's backbone ``base``."""
    workspace = build_tiny_workspace(tmp_path_factory.mktemp(request.param) / "ws")
    _register(workspace, request.param, files)
    assert get_model_spec(workspace, "base").transform is not None
    return request.param, workspace, build_zoo(workspace, backbone="base", **SMALLEST)


def test_the_zoo_builds_and_its_heads_carry_the_backbones_preprocessing_and_run(zoo):
    source, workspace, models = zoo
    assert [m.name for m in models] == HEADS and all(m.trained and 0 <= m.accuracy <= 1 for m in models)
    base = get_model_spec(workspace, "base")
    for name in HEADS:
        spec = get_model_spec(workspace, name)
        assert (spec.source, spec.backbone) == ("head", "base")
        assert (spec.input_size, spec.preprocessing, spec.transform) == (base.input_size, "transform", base.transform)
    insert_suite(workspace)
    run_ids = dict(zip(HEADS, start_runs(workspace, HEADS, TINY_SUITE, device="cpu")))
    runs = list_runs(workspace).set_index("model")
    for name, run_id in run_ids.items():
        assert runs.loc[name, "status"] == "done"
        true_prob = load_run(workspace, run_id).signals["true_prob"]
        assert true_prob.size and np.isfinite(true_prob).all() and ((0 <= true_prob) & (true_prob <= 1)).all()
    assert build_zoo(workspace, backbone="base", **SMALLEST)[0].trained is False  # idempotent on this backbone too


def test_a_loaded_head_is_its_backbones_embedding_then_its_layers(zoo, caplog):
    source, workspace, _ = zoo
    images = np.random.default_rng(0).integers(0, 256, (3, 80, 72, 3), dtype=np.uint8)  # not square, not the input size
    backbone = load_model(workspace, "base", device="cpu")
    head = load_model(workspace, HEADS[1], device="cpu")
    torch.testing.assert_close(head.preprocess(images), backbone.preprocess(images), rtol=0, atol=0)
    assert head.crop_box == backbone.crop_box
    with torch.inference_mode():
        expected, hidden = load_head(workspace, head.spec)(torch.from_numpy(backbone.predict(images).embeddings))
    got = head.predict(images)
    np.testing.assert_allclose(got.probabilities, torch.softmax(expected, 1).numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got.embeddings, hidden.numpy(), rtol=1e-4, atol=1e-5)
    if source == "onnx":  # no gradients through ONNX Runtime, so none through a head on it
        assert "ONNX" in head.gradient_problem and set(available_methods(head)) == {"occlusion", "rise"}
        assert not [r for r in caplog.records if "freeze" in r.getMessage()]  # an ONNX session is not traced, in a head neither
    else:
        assert head.gradient_problem is None


def test_an_onnx_graph_without_an_embedding_is_refused_before_any_work(files, tiny_workspace, monkeypatch):
    _register(tiny_workspace, "onnx", files, name="onnx-logits")
    before = list_models(tiny_workspace)

    def no_work(*args, **kwargs):
        raise AssertionError("the zoo started working on a backbone it must refuse")

    monkeypatch.setattr("analytics.zoo.build.zoo_layout", no_work)
    monkeypatch.setattr("analytics.zoo.build._embedding_pool", no_work)
    with pytest.raises(InvalidInputError, match=r"'onnx-logits' is an ONNX graph whose only output is its logits.*second output"):
        build_zoo(tiny_workspace, backbone="onnx-logits", **SMALLEST)
    with pytest.raises(InvalidInputError, match=r"head 'h': backbone 'onnx-logits' .* exposes no embedding"):
        register_head(tiny_workspace, "h", backbone="onnx-logits", weight=np.zeros((2, 2)), bias=np.zeros(2), class_names=["disc", "square"])
    assert list_models(tiny_workspace) == before
    assert not tiny_workspace.query("SELECT * FROM models WHERE source = 'head'")
