"""Model registry: label spaces, the four sources, and every bad checkpoint a user can bring."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
import torchvision
from safetensors.torch import save_file

from analytics.data import LabelSpace, Target, custom_label_space, imagenet_label_space, in9_label_space, store_targets
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.inference import evaluate
from analytics.models import (
    ModelSpec,
    build_efficientnet_lite,
    get_model_spec,
    list_models,
    load_model,
    read_state_dict,
    register_efficientnet_lite,
    register_head,
    register_torchscript,
    register_torchvision,
)
from analytics.models import spec as spec_module
from analytics.workspace import Workspace
from tests.fixtures.models import TinyNet, save_torchscript


@pytest.fixture
def labels3(tmp_path) -> LabelSpace:
    path = tmp_path / "labels3.txt"
    path.write_text("cat\ndog\n\nbird\n")
    return custom_label_space(path)


@pytest.fixture
def resnet_checkpoint(tmp_path) -> Path:
    """A resnet18 state dict with 3 classes, saved the DataParallel way (``module.`` prefixes)."""
    torch.manual_seed(0)
    state = torchvision.models.resnet18(num_classes=3).state_dict()
    path = tmp_path / "resnet18.pt"
    torch.save({"state_dict": {f"module.{k}": v for k, v in state.items()}}, path)
    return path


# -- label spaces ------------------------------------------------------------------------------
def test_imagenet_label_space_has_1000_names():
    space = imagenet_label_space()
    assert len(space.names) == 1000 and space.names[0] == "tench"
    assert space.class_outputs({"zebra": [340], "tench": []}) == {"zebra": [340], "tench": [0]}


def test_in9_mapping_file_is_validated(tmp_path):
    bad = tmp_path / "map.json"
    bad.write_text(json.dumps({"5": 12}))
    with pytest.raises(InvalidInputError, match="map.json"):
        in9_label_space(bad)


def test_custom_labels_refuse_duplicates_and_empty_files(tmp_path):
    dup, empty = tmp_path / "dup.txt", tmp_path / "empty.txt"
    dup.write_text("a\nb\na\n")
    empty.write_text("\n\n")
    with pytest.raises(InvalidInputError, match="dup.txt.*repeated: a"):
        custom_label_space(dup)
    with pytest.raises(InvalidInputError, match="empty.txt"):
        custom_label_space(empty)


def test_class_without_output_is_an_error(labels3):
    assert labels3.names == ("cat", "dog", "bird")
    with pytest.raises(InvalidInputError, match="'fish'"):
        labels3.class_outputs({"cat": [], "fish": []})


# -- torchvision + checkpoint -------------------------------------------------------------------
def test_resnet18_registers_loads_and_predicts(tmp_path, labels3, resnet_checkpoint):
    workspace = Workspace(tmp_path / "ws")
    spec = register_torchvision(workspace, "r18", arch="resnet18", checkpoint=resnet_checkpoint, label_space=labels3, input_size=64)
    assert spec.n_params == sum(p.numel() for p in torchvision.models.resnet18(num_classes=3).parameters())
    assert (workspace.root / spec.checkpoint).is_file()  # copied: the workspace does not need the original
    resnet_checkpoint.unlink()
    model = load_model(workspace, "r18", device="cpu")
    images = np.random.default_rng(0).integers(0, 256, (5, 80, 80, 3), dtype=np.uint8)
    prediction = model.predict(images, batch_size=2)
    assert prediction.probabilities.shape == (5, 3) and prediction.embeddings.shape == (5, 512)
    np.testing.assert_allclose(prediction.probabilities.sum(1), 1, atol=1e-5)
    # the split network equals the plain resnet on the same weights
    reference = torchvision.models.resnet18(num_classes=3)
    reference.load_state_dict(read_state_dict(workspace.root / spec.checkpoint))
    with torch.no_grad():
        expected = torch.softmax(reference.eval()(model.preprocess(images)), 1).numpy()
    np.testing.assert_allclose(prediction.probabilities, expected, atol=1e-5)
    assert model.gradcam_layer is model.network.body.layer4
    top = model.top_outputs(images[0], k=2)  # the Models page's top predictions
    order = np.argsort(-prediction.probabilities[0])[:2]
    assert [name for name, _ in top] == [labels3.names[i] for i in order]
    np.testing.assert_allclose([p for _, p in top], prediction.probabilities[0, order], atol=1e-6)
    with pytest.raises(InvalidInputError, match="k"):
        model.top_outputs(images[0], k=0)


def test_safetensors_checkpoint_registers(tmp_path, labels3):
    workspace = Workspace(tmp_path / "ws")
    path = tmp_path / "mobilenet.safetensors"
    save_file({f"model.{k}": v.contiguous() for k, v in torchvision.models.mobilenet_v3_small(num_classes=3).state_dict().items()}, path)
    spec = register_torchvision(workspace, "mnv3", arch="mobilenet_v3_small", checkpoint=path, label_space=labels3, input_size=64)
    assert spec.checkpoint.endswith(".safetensors")
    assert "1024-d" in spec.embedding_layer
    assert load_model(workspace, "mnv3").predict(np.zeros((1, 64, 64, 3), np.uint8)).embeddings.shape == (1, 1024)


class _RunsCode:
    """Unpickling this would call os.system: exactly what weights_only=True must refuse."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _bad_checkpoints(tmp_path: Path, resnet_checkpoint: Path) -> dict[str, tuple[Path, str, dict]]:
    """name -> (file, expected message part, register kwargs)."""
    not_state = tmp_path / "list.pt"
    torch.save([1, 2, 3], not_state)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(resnet_checkpoint.read_bytes()[: resnet_checkpoint.stat().st_size // 2])
    pickled = tmp_path / "evil.pt"
    torch.save({"weights": _RunsCode(tmp_path / "pwned")}, pickled)
    nan = tmp_path / "nan.pt"
    state = torchvision.models.resnet18(num_classes=3).state_dict()
    state["fc.bias"] = torch.full((3,), float("nan"))
    torch.save(state, nan)
    return {
        "not a state dict": (not_state, "not a state dict", {}),
        "truncated": (truncated, "truncated or corrupt", {}),
        "pickle running code": (pickled, "would run code", {}),
        "wrong number of classes": (resnet_checkpoint, "has 3 classes but the imagenet label space has 1000", {"label_space": imagenet_label_space()}),
        "unknown architecture": (resnet_checkpoint, "unknown architecture 'resnet19'.*did you mean resnet18", {"arch": "resnet19"}),
        "NaN outputs": (nan, "NaN", {}),
        "wrong architecture": (resnet_checkpoint, "does not fit resnet34", {"arch": "resnet34"}),
    }


@pytest.mark.parametrize(
    "case", ["not a state dict", "truncated", "pickle running code", "wrong number of classes", "unknown architecture", "NaN outputs", "wrong architecture"]
)
def test_bad_checkpoints_are_refused_and_leave_the_registry_unchanged(tmp_path, labels3, resnet_checkpoint, case):
    workspace = Workspace(tmp_path / "ws")
    register_torchvision(workspace, "ok", arch="resnet18", checkpoint=resnet_checkpoint, label_space=labels3, input_size=64)
    before = [spec.to_json() for spec in list_models(workspace)]
    files_before = sorted(p.name for p in (workspace.root / "checkpoints").iterdir())
    path, message, overrides = _bad_checkpoints(tmp_path, resnet_checkpoint)[case]
    kwargs = {"arch": "resnet18", "checkpoint": path, "label_space": labels3, "input_size": 64} | overrides
    with pytest.raises(InvalidInputError, match=message) as caught:
        register_torchvision(workspace, "bad", **kwargs)
    assert path.name in str(caught.value)
    assert [spec.to_json() for spec in list_models(workspace)] == before
    assert sorted(p.name for p in (workspace.root / "checkpoints").iterdir()) == files_before
    assert not (tmp_path / "pwned").exists()


def test_name_clash_is_refused_unless_replaced(tmp_path, labels3, resnet_checkpoint):
    workspace = Workspace(tmp_path / "ws")
    register_torchvision(workspace, "m", arch="resnet18", checkpoint=resnet_checkpoint, label_space=labels3, input_size=64)
    with pytest.raises(InvalidInputError, match="already registered"):
        register_torchvision(workspace, "m", arch="resnet18", checkpoint=resnet_checkpoint, label_space=labels3, input_size=96)
    assert get_model_spec(workspace, "m").input_size == 64
    register_torchvision(workspace, "m", arch="resnet18", checkpoint=resnet_checkpoint, label_space=labels3, input_size=96, replace=True)
    assert get_model_spec(workspace, "m").input_size == 96


def test_missing_model_names_the_registered_ones(tiny_model_workspace):
    with pytest.raises(NotFoundError, match="no model 'nope'.*bg-only, fg-only, tiny") as caught:
        get_model_spec(tiny_model_workspace, "nope")
    message = str(caught.value)
    assert f"in the workspace at {tiny_model_workspace.root.resolve()};" in message
    # the fix names the Python call first and the command second, never a --flag (issue 46)
    assert "`analytics.api.add_model(workspace, 'nope', source=...)`" in message and "`python -m analytics add-model`" in message
    assert "--" not in message.replace(str(tiny_model_workspace.root.resolve()), "")


def test_missing_model_among_many_names_close_matches_and_how_to_list_them(tiny_model_workspace, monkeypatch):
    """Past a few registered models the message names the close ones and the count, not every name."""
    monkeypatch.setattr(spec_module, "MODELS_LISTED", 2)
    with pytest.raises(NotFoundError) as caught:
        get_model_spec(tiny_model_workspace, "tiy")
    message = str(caught.value)
    assert "did you mean 'tiny'? 3 models are registered: `analytics.api.models(workspace)` lists them" in message
    assert "bg-only" not in message and "`python -m analytics models`" in message
    with pytest.raises(NotFoundError) as caught:
        get_model_spec(tiny_model_workspace, "nope")
    assert "did you mean" not in str(caught.value) and "; 3 models are registered" in str(caught.value)


# -- TorchScript and heads ------------------------------------------------------------------------
def test_torchscript_models_expose_logits_and_embedding(tiny_model_workspace, tiny_model_files):
    spec = get_model_spec(tiny_model_workspace, "tiny")
    assert spec.source == "torchscript" and spec.embedding_layer == "second output of forward" and spec.n_params == 3 * 8 * 9 + 8 + 8 * 2 + 2
    model = load_model(tiny_model_workspace, "tiny")
    batch = model.preprocess(np.zeros((2, 64, 64, 3), np.uint8))
    logits, embedding = model.forward(batch)
    assert logits.shape == (2, 2) and embedding.shape == (2, 8)
    with pytest.raises(InvalidInputError, match="TorchScript"):
        model.gradcam_layer


def test_a_backbone_that_carries_heads_keeps_what_they_read(tiny_model_workspace, tiny_model_files):
    """Issue 46: a head stores its backbone's preprocessing at registration, so registering the backbone
    again with another input size or other weights while heads read it is refused (nothing changes); the
    same registration again, and a model without heads, still go through."""
    workspace, files = tiny_model_workspace, tiny_model_files
    register_head(workspace, "head", backbone="tiny", weight=np.zeros((2, 8)), bias=np.zeros(2), class_names=["disc", "square"])
    before, labels = get_model_spec(workspace, "tiny"), get_model_spec(workspace, "tiny").label_space
    with pytest.raises(InvalidInputError, match=r"model 'tiny' carries 1 heads \(head\).* another input_size would leave them stale"):
        register_torchscript(workspace, "tiny", checkpoint=files["tiny"], label_space=labels, input_size=96, replace=True)
    with pytest.raises(InvalidInputError, match="another checkpoint would leave them stale"):
        register_torchscript(workspace, "tiny", checkpoint=files["bg-only"], label_space=labels, input_size=before.input_size, replace=True)
    assert get_model_spec(workspace, "tiny") == before and get_model_spec(workspace, "head").input_size == before.input_size
    assert register_torchscript(workspace, "tiny", checkpoint=files["tiny"], label_space=labels, input_size=before.input_size, replace=True) == before
    register_torchscript(workspace, "fg-only", checkpoint=files["bg-only"], label_space=labels, input_size=96, replace=True)  # carries no head


def test_torchscript_returning_logits_only_uses_logits_as_embedding(tmp_path, tiny_model_files):
    class LogitsOnly(TinyNet):
        def forward(self, x):
            return super().forward(x)[0]

    path = save_torchscript(LogitsOnly(), tmp_path / "plain.pt")
    workspace = Workspace(tmp_path / "ws")
    spec = register_torchscript(workspace, "plain", checkpoint=path, label_space=custom_label_space(tiny_model_files["labels"]), input_size=64)
    assert spec.embedding_layer.startswith("logits")
    prediction = load_model(workspace, "plain").predict(np.zeros((1, 64, 64, 3), np.uint8))
    assert prediction.embeddings.shape == (1, 2)


def test_torchscript_with_wrong_output_count_is_refused(tmp_path, tiny_model_files, labels3):
    workspace = Workspace(tmp_path / "ws")
    with pytest.raises(InvalidInputError, match="tiny.pt.*2 outputs but the custom label space has 3"):
        register_torchscript(workspace, "tiny", checkpoint=tiny_model_files["tiny"], label_space=labels3, input_size=64)
    assert list_models(workspace) == []


def test_head_reads_the_backbone_embedding(tiny_model_workspace):
    rng = np.random.default_rng(1)
    weight, bias = rng.normal(size=(3, 8)), rng.normal(size=3)
    spec = register_head(tiny_model_workspace, "head", backbone="tiny", weight=weight, bias=bias, class_names=["disc", "square", "other"], construction={"seed": 1})
    assert spec.n_params == 27 and spec.construction == {"seed": 1} and spec.input_size == 64
    images = rng.integers(0, 256, (4, 64, 64, 3), dtype=np.uint8)
    embedding = load_model(tiny_model_workspace, "tiny").predict(images).embeddings
    logits = embedding @ weight.T + bias
    expected = np.exp(logits - logits.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(load_model(tiny_model_workspace, "head").predict(images).probabilities, expected, atol=1e-5)
    with pytest.raises(InvalidInputError, match="weight must be"):
        register_head(tiny_model_workspace, "bad", backbone="tiny", weight=weight, bias=bias[:2], class_names=["a", "b", "c"])
    with pytest.raises(InvalidInputError, match="fails on a batch"):  # embedding is 8-d, not 5-d
        register_head(tiny_model_workspace, "bad", backbone="tiny", weight=weight[:, :5], bias=bias, class_names=["a", "b", "c"])
    assert "bad" not in [s.name for s in list_models(tiny_model_workspace)]


# -- EfficientNet-Lite on real photos ---------------------------------------------------------------
def _photo_workspace(tmp_path: Path) -> tuple[Workspace, list[np.ndarray]]:
    """Two real photos (scikit-learn's china.jpg and flower.jpg) as targets with a central mask."""
    import sklearn.datasets

    folder = Path(sklearn.datasets.__file__).parent / "images"
    workspace = Workspace(tmp_path / "photos")
    workspace.set_meta("image_size", "256")
    photos = []
    for name in ("china", "flower"):
        image = cv2.cvtColor(cv2.imread(str(folder / f"{name}.jpg")), cv2.COLOR_BGR2RGB)
        side = min(image.shape[:2])
        photos.append(cv2.resize(image[:side, :side], (256, 256), interpolation=cv2.INTER_AREA))
    mask = np.zeros((256, 256), bool)
    mask[64:192, 64:192] = True
    targets = [Target(f"{n}/0", n, p, mask, origin=f"sklearn:{n}.jpg") for n, p in zip(("china", "flower"), photos)]
    store_targets(workspace, targets, classes={"china": [], "flower": []})
    return workspace, photos


@pytest.mark.slow
@pytest.mark.parametrize("variant", [0, 1, 2])
def test_efficientnet_lite_registers_and_evaluates_real_photos(tmp_path, variant):
    workspace, photos = _photo_workspace(tmp_path)
    spec = register_efficientnet_lite(workspace, variant)
    assert spec.name == f"efficientnet-lite{variant}" and spec.n_outputs == 1000 and spec.input_size == (224, 240, 260)[variant]
    assert register_efficientnet_lite(workspace, variant) == spec  # registering again is a no-op
    # an independent forward pass of the package's network gives each photo's top-1 ImageNet class
    network = build_efficientnet_lite(variant)
    batch = np.stack([cv2.resize(p, (spec.input_size,) * 2, interpolation=cv2.INTER_AREA) for p in photos])
    with torch.no_grad():
        top1 = network((torch.from_numpy(batch).permute(0, 3, 1, 2).float() - 127) / 128).argmax(1).tolist()
    # the china photo's class is its top-1, the flower's class is any other index: accuracy 1 and 0
    wrong = (top1[1] + 1) % 1000
    from analytics.data.datasets import add_classes

    add_classes(workspace, {"china": [top1[0]], "flower": [wrong]})
    result = evaluate(workspace, spec.name, device="cpu")
    assert result.n == 2 and result.per_class == {"china": 1.0, "flower": 0.0} and result.accuracy == 0.5
    assert result.table["predicted"].tolist() == [spec.label_space.names[top1[0]], spec.label_space.names[top1[1]]]


def test_a_classifier_that_does_not_end_with_its_linear_layer_is_refused(labels3):
    from torch import nn

    from analytics.models.networks import _SplitClassifier
    from analytics.models.registry import _check_split

    body = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 5), nn.Identity(), nn.Tanh())  # "2" stands for the removed head
    network = _SplitClassifier(body, nn.Linear(5, 3), "2")
    spec = ModelSpec("odd", "torchvision", "odd_net", "x.pt", labels3, 16, "imagenet", "", 0, origin="x.pt")
    with pytest.raises(InvalidInputError, match="does not end with its final Linear layer '2'"):
        _check_split(network, spec)
    assert isinstance(body[2], nn.Identity)  # the probe put the network back as it was


# -- CPU inference path ------------------------------------------------------------------------
class _BranchyNet(torch.nn.Module):
    """Its output depends on the input through Python control flow: tracing records one branch."""

    def forward(self, x):
        pooled = x.mean((2, 3))
        if bool(x.mean() > 0):
            return pooled, pooled
        return -pooled, pooled


@pytest.mark.slow
def test_frozen_lite0_matches_the_eager_network_and_is_used_for_inference():
    from analytics.models.loaded import freeze_for_cpu
    from analytics.models.networks import _LiteClassifier

    network = _LiteClassifier(build_efficientnet_lite(0)).eval()
    batch = torch.from_numpy(np.random.default_rng(0).uniform(-1, 1, (5, 3, 224, 224)).astype(np.float32))
    frozen = freeze_for_cpu(network, batch)
    assert isinstance(frozen, torch.jit.ScriptModule)
    with torch.no_grad():
        for eager, fast in zip(network(batch), frozen(batch)):
            assert eager.shape == fast.shape and torch.allclose(eager, fast, rtol=1e-3, atol=1e-4)


def test_freezing_leaves_nothing_in_the_process_wide_unit():
    """torch's tracer registers each traced module's types in one unit kept for the life of the
    process; the frozen graphs there held the weights, so every freeze kept a model's weights."""
    import torch.jit._state as jit_state

    from analytics.models.loaded import freeze_for_cpu

    shared = jit_state._python_cu
    before = len(shared.get_functions())
    batch = torch.ones(2, 3, 8, 8)
    first = freeze_for_cpu(TinyNet().eval(), batch)
    for _ in range(3):
        assert isinstance(freeze_for_cpu(TinyNet().eval(), batch), torch.jit.ScriptModule)
    assert len(shared.get_functions()) == before
    assert jit_state._python_cu is shared
    with torch.no_grad():  # the first copy's own unit lives as long as the copy
        assert first(batch)[0].shape[0] == 2


def test_a_network_that_traces_wrongly_stays_eager():
    from analytics.models.loaded import freeze_for_cpu

    network = _BranchyNet()
    batch = torch.cat([torch.ones(1, 3, 8, 8), -torch.ones(1, 3, 8, 8)])  # the check batch takes both branches
    assert freeze_for_cpu(network, batch) is network


class _NoisyNet(torch.nn.Module):
    """Adds fresh noise on every call, so the frozen copy never matches the eager network."""

    def forward(self, x):
        pooled = x.mean((2, 3)) + torch.rand(1)
        return pooled, pooled


def test_a_frozen_copy_that_differs_is_logged(caplog):
    from analytics.models.loaded import freeze_for_cpu

    network = _NoisyNet().eval()
    with caplog.at_level("WARNING", logger="analytics.models"):
        assert freeze_for_cpu(network, torch.ones(1, 3, 8, 8)) is network
    assert any("_NoisyNet differs from the eager network" in r.getMessage() for r in caplog.records)


class _UntraceableNet(torch.nn.Module):
    """Returns a string beside the tensors: the tracer refuses it."""

    def forward(self, x):
        pooled = x.mean((2, 3))
        return pooled, "not a tensor"


def test_a_failed_freeze_is_logged_with_its_reason(caplog):
    from analytics.models.loaded import freeze_for_cpu

    network = _UntraceableNet().eval()
    with caplog.at_level("WARNING", logger="analytics.models"):
        assert freeze_for_cpu(network, torch.ones(1, 3, 8, 8)) is network
    (record,) = [r for r in caplog.records if r.name == "analytics.models"]
    assert record.levelname == "WARNING"
    assert "TorchScript freeze of _UntraceableNet failed" in record.getMessage() and "eager" in record.getMessage()


def test_run_batch_in_micro_batches_equals_one_eager_pass(tiny_model_workspace, monkeypatch):
    from analytics.models import loaded

    model = load_model(tiny_model_workspace, "tiny", device="cpu")
    images = np.random.default_rng(3).integers(0, 256, (11, 32, 32, 3), dtype=np.uint8)
    batch = model.preprocess(images)
    monkeypatch.setattr(loaded, "CPU_MICRO_BATCH", 4)  # 11 images -> 4 + 4 + 3
    logits, embedding = model.run_batch(batch)
    with torch.no_grad():
        expected_logits, expected_embedding = model.network(batch)
    assert logits.shape == expected_logits.shape and embedding.shape == expected_embedding.shape
    assert torch.allclose(logits, expected_logits, atol=1e-5) and torch.allclose(embedding, expected_embedding, atol=1e-5)


def test_register_model_pins_an_outside_checkpoint_by_its_content(tiny_model_workspace, tiny_model_files):
    import dataclasses

    from analytics.models import get_model_spec
    from analytics.models.registry import register_model

    spec = dataclasses.replace(get_model_spec(tiny_model_workspace, "tiny"), name="outside", checkpoint=str(tiny_model_files["fg-only"]), n_params=0)
    stored = register_model(tiny_model_workspace, spec)
    assert not Path(stored.checkpoint).is_absolute() and (tiny_model_workspace.root / stored.checkpoint).is_file()
    other = register_model(tiny_model_workspace, dataclasses.replace(spec, checkpoint=str(tiny_model_files["bg-only"])), replace=True)
    assert other.content_key() != stored.content_key()  # other bytes, other key, even from the same kind of path


@pytest.mark.parametrize("label_space", [imagenet_label_space(), in9_label_space(), LabelSpace("custom", ("a", "b"), None, "labels.txt")])
def test_a_specs_json_and_content_key_are_those_of_its_fields(label_space):
    # Content keys name stored runs and caches: serialising the spec faster must not change them.
    spec = ModelSpec("m", "torchvision", "resnet18", "ck", label_space, 224, "imagenet", "avgpool", 10, backbone="b", construction={"a": [1, {"b": (2, 3)}]})
    data = {k: v for k, v in dataclasses.asdict(spec).items() if k != "transform"} | {"label_space": label_space.to_json()}  # unset: left out, as before it existed
    assert spec.to_json() == data
    assert spec.content_key() == hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
    construction = spec.to_json()["construction"]
    construction["a"][1]["b"] = None  # the json is a copy: the spec keeps its values
    assert spec.construction == {"a": [1, {"b": (2, 3)}]}


def test_preprocess_uploads_beside_the_models_queued_work(tiny_model_workspace, monkeypatch):
    from analytics.models import loaded

    model = load_model(tiny_model_workspace, "tiny", device="cpu")
    images = np.random.default_rng(4).integers(0, 256, (3, 32, 32, 3), dtype=np.uint8)
    expected = model.preprocess(images)
    sent = []
    monkeypatch.setattr(loaded, "upload", lambda array, device: sent.append(device) or torch.from_numpy(array).to(device))
    assert torch.equal(model.preprocess(images), expected)
    assert sent == [model.device]  # on CUDA: on the thread's own stream (analytics._streams.upload)
