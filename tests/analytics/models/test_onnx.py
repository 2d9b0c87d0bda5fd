"""The ONNX source: a torchvision resnet18 (random weights) exported with ``torch.onnx.export`` and
run by ONNX Runtime gives the logits the same weights give as a torchvision model; the graph's
layout, fixed batch and second output are read; only perturbation saliency is offered (and why);
the refusals name the flag or the fix."""

from __future__ import annotations

import json
import warnings

import numpy as np
import onnx
import pytest
import torch
import torchvision
from torch import nn

from analytics._choices import IMAGENET_MEAN, IMAGENET_STD
from analytics.cli import main
from analytics.data import custom_label_space
from analytics.exceptions import InvalidInputError, PermissionDeniedError
from analytics.models import conv_map_problem, get_model_spec, load_model, register_torchvision
from analytics.models.libraries import register_onnx
from analytics.saliency import available_methods, explain
from analytics.saliency._model import unavailable_methods
from analytics.team import User
from analytics.workspace import Workspace
from tests.fixtures.cli import cli_error, workspace_state

IMAGENET = ["--mean", ",".join(map(str, IMAGENET_MEAN)), "--std", ",".join(map(str, IMAGENET_STD))]


def export(module: nn.Module, path, example: torch.Tensor, *, outputs=("logits",), dynamic: dict | None = None):
    """``torch.onnx.export`` as a team runs it (the TorchScript-based exporter: no onnxscript here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch deprecates this exporter in favour of dynamo, which needs onnxscript
        torch.onnx.export(module.eval(), (example,), str(path), input_names=["pixels"], output_names=list(outputs), dynamic_axes=dynamic, dynamo=False)
    return path


class _ChannelsLastWithEmbedding(nn.Module):
    """resnet18 taking NHWC images and returning (logits, pooled features)."""

    def __init__(self, resnet: nn.Module) -> None:
        super().__init__()
        self.resnet = resnet

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        r = self.resnet
        x = x.permute(0, 3, 1, 2)
        x = r.layer4(r.layer3(r.layer2(r.layer1(r.maxpool(r.relu(r.bn1(r.conv1(x))))))))
        features = torch.flatten(r.avgpool(x), 1)
        return r.fc(features), features


@pytest.fixture(scope="module")
def team_files(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("onnx")
    torch.manual_seed(0)
    resnet = torchvision.models.resnet18(weights=None, num_classes=3).eval()
    torch.save(resnet.state_dict(), root / "resnet18.pt")
    batch = {0: "batch"}
    plain = export(resnet, root / "resnet18.onnx", torch.zeros(1, 3, 224, 224), dynamic={"pixels": batch, "logits": batch})
    nhwc = export(_ChannelsLastWithEmbedding(resnet), root / "nhwc.onnx", torch.zeros(1, 64, 64, 3), outputs=("logits", "features"))
    free = export(resnet, root / "free.onnx", torch.zeros(1, 3, 64, 64), dynamic={"pixels": {0: "b", 2: "h", 3: "w"}, "logits": batch})
    (root / "labels.txt").write_text("cat\ndog\nbird\n")
    return {"resnet": resnet, "state": root / "resnet18.pt", "onnx": plain, "nhwc": nhwc, "free": free, "labels": custom_label_space(root / "labels.txt")}


def test_onnx_logits_equal_the_torchvision_models_on_real_photos(tmp_path, team_files, photos):
    workspace = Workspace(tmp_path / "ws")
    labels = team_files["labels"]
    register_torchvision(workspace, "tv", arch="resnet18", checkpoint=team_files["state"], label_space=labels)
    spec = register_onnx(workspace, "ox", checkpoint=team_files["onnx"], label_space=labels, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    assert (spec.source, spec.input_size, spec.preprocessing, spec.transform.resampler) == ("onnx", 224, "transform", "opencv")
    n_torch = sum(p.numel() for p in team_files["resnet"].parameters())
    assert 0.99 < spec.n_params / n_torch < 1  # the graph's initializers: the exporter folds batch norms into the convolutions
    assert spec.embedding_layer == "logits (the graph has no second output)" and (workspace.root / spec.checkpoint).is_file()
    torchvision_model, onnx_model = load_model(workspace, "tv", device="cpu"), load_model(workspace, "ox", device="cpu")
    for images in photos:
        inputs = onnx_model.preprocess(images)
        np.testing.assert_array_equal(inputs.numpy(), torchvision_model.preprocess(images).numpy())  # the same preprocessing
        logits, embedding = onnx_model.run_batch(inputs)
        with torch.no_grad():
            expected = team_files["resnet"](inputs).numpy()
        np.testing.assert_allclose(logits.numpy(), expected, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(logits.numpy(), torchvision_model.run_batch(inputs)[0].numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(embedding.numpy(), logits.numpy())
    # saliency: perturbation methods only, and it says why the others are absent
    assert available_methods(onnx_model) == ["occlusion", "rise"]
    reasons = unavailable_methods(onnx_model)
    assert set(reasons) == {"gradcam", "gradcam_plus_plus", "integrated_gradients", "guided_backprop", "input_x_gradient", "saliency"}
    assert "ONNX Runtime, which computes no gradients" in reasons["saliency"] and "ONNX Runtime" in reasons["gradcam"]
    masks = np.zeros((2, 256, 256), bool)
    masks[:, 64:192, 64:192] = True
    result = explain(onnx_model, photos[0], masks, [[0], [1]], method="occlusion", settings={"window": 56, "stride": 56}, faithfulness_steps=2)
    assert result.maps.shape == (2, 256, 256) and np.isfinite(result.summary()["inside_share"])
    assert "ONNX Runtime" in conv_map_problem(workspace, spec)


def test_the_graph_gives_layout_fixed_batch_and_embedding(tmp_path, team_files, photos, capsys):
    workspace = Workspace(tmp_path / "ws")
    argv = ["add-model", "--workspace", str(workspace.root), "--name", "nhwc", "--arch", "onnx", "--checkpoint", str(team_files["nhwc"]),
            "--labels", str(tmp_path / "l.txt"), "--crop-pct", "0.875", "--interpolation", "bicubic", *IMAGENET, "--json"]  # fmt: skip
    (tmp_path / "l.txt").write_text("a\nb\nc\n")
    assert main(argv) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["input_size"] == 64 and shown["preprocessing"].startswith("resize 73 bicubic (pil), centre crop 64")
    spec = get_model_spec(workspace, "nhwc")
    assert spec.embedding_layer == "second output of the graph (512-d)"
    model = load_model(workspace, "nhwc", device="cpu")
    images = photos[1][:2].repeat(2, axis=0)[:3]  # 3 images through a graph fixed at batch 1
    inputs = model.preprocess(images)
    logits, embedding = model.run_batch(inputs)
    with torch.no_grad():
        expected_logits, expected_embedding = _ChannelsLastWithEmbedding(team_files["resnet"])(inputs.permute(0, 2, 3, 1).contiguous())
    np.testing.assert_allclose(logits.numpy(), expected_logits.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(embedding.numpy(), expected_embedding.numpy(), rtol=1e-4, atol=1e-4)


def _custom_domain(source, path):
    model = onnx.load(str(source))
    model.graph.node.append(onnx.helper.make_node("Mystery", ["logits"], ["mystery"], domain="com.example.ops"))
    model.opset_import.append(onnx.helper.make_opsetid("com.example.ops", 1))
    onnx.save(model, str(path))


def _external(source, path):
    onnx.save(onnx.load(str(source)), str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)


@pytest.mark.parametrize(
    ("case", "extra", "words"),
    [
        ("plain", [], "does not record its normalisation; give --mean, --std (for ImageNet training: --mean 0.485,0.456,0.406"),
        ("free", IMAGENET, "does not record its input side (dynamic in the graph); give --input-size"),
        ("garbage", IMAGENET, "not a readable ONNX file"),
        ("custom", IMAGENET, "domain 'com.example.ops', which need a custom operator library"),
        ("external", IMAGENET, "its weights lie in external files"),
        ("labels", [*IMAGENET, "--labels", "imagenet"], "the graph has 3 outputs but the imagenet label space has 1000"),
        ("size", [*IMAGENET, "--input-size", "128"], "--input-size 128 differs from the graph's fixed input side 224"),
    ],
)
def test_onnx_refusals_are_one_line_and_change_nothing(tmp_path, team_files, capsys, case, extra, words):
    path = tmp_path / "model.onnx"
    if case == "garbage":
        path.write_bytes(b"\x08\x07not a protobuf" * 10)
    elif case == "custom":
        _custom_domain(team_files["onnx"], path)
    elif case == "external":
        _external(team_files["onnx"], path)
    else:
        path = team_files["free" if case == "free" else "onnx"]
    workspace = Workspace(tmp_path / "ws")
    before = workspace_state(workspace)
    labels = [] if "--labels" in extra else ["--labels", str(tmp_path / "l.txt")]
    (tmp_path / "l.txt").write_text("a\nb\nc\n")
    line = cli_error(["add-model", "--workspace", str(workspace.root), "--name", "m", "--arch", "onnx", "--checkpoint", str(path), *labels, *extra], capsys)
    assert words in line and str(path) in line
    assert workspace_state(workspace) == before


def test_onnx_with_a_dynamic_side_takes_input_size(tmp_path, team_files):
    workspace = Workspace(tmp_path / "ws")
    spec = register_onnx(workspace, "free", checkpoint=team_files["free"], label_space=team_files["labels"], input_size=96, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    assert spec.input_size == 96 and load_model(workspace, "free", device="cpu").predict(np.zeros((1, 100, 100, 3), np.uint8)).probabilities.shape == (1, 3)


def test_only_admins_register_onnx(tiny_workspace, team_files):
    analyst = tiny_workspace.acting_as(User("someone-analyst", "analyst", False, "", ""))
    with pytest.raises(PermissionDeniedError, match="admin"):
        register_onnx(analyst, "m", checkpoint=team_files["onnx"], label_space=team_files["labels"], mean=IMAGENET_MEAN, std=IMAGENET_STD)
    admin = tiny_workspace.acting_as(User("someone-admin", "admin", False, "", ""))
    assert register_onnx(admin, "m", checkpoint=team_files["onnx"], label_space=team_files["labels"], mean=IMAGENET_MEAN, std=IMAGENET_STD).source == "onnx"


def _reshaping(path, shape: list[int]):
    """A tiny graph (pixels n x 3 x 16 x 16 -> mean per channel -> Reshape to ``shape``) that ONNX
    Runtime loads but fails to run where ``shape`` does not hold the batch's n x 3 values."""
    helper, tensor = onnx.helper, onnx.TensorProto
    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["pixels"], ["means"], axes=[2, 3], keepdims=0), helper.make_node("Reshape", ["means", "shape"], ["logits"])],
        "reshaping", [helper.make_tensor_value_info("pixels", tensor.FLOAT, ["n", 3, 16, 16])], [helper.make_tensor_value_info("logits", tensor.FLOAT, ["n", 3])],
        initializer=[helper.make_tensor("shape", tensor.INT64, [len(shape)], shape)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_a_graph_that_fails_to_run_is_one_line_naming_the_model(tmp_path, capsys):
    workspace = Workspace(tmp_path / "ws")
    (tmp_path / "l.txt").write_text("a\nb\nc\n")
    broken = _reshaping(tmp_path / "broken.onnx", [7, 5])  # never fits: refused at registration, by the CLI and the library
    before = workspace_state(workspace)
    argv = ["add-model", "--workspace", str(workspace.root), "--name", "m", "--arch", "onnx", "--checkpoint", str(broken), "--labels", str(tmp_path / "l.txt"), *IMAGENET]
    line = cli_error(argv, capsys)
    assert f"{broken} (model 'm'): ONNX Runtime failed running it on a batch of shape 1x3x16x16 (Fail: " in line
    assert "cannot be reshaped to the requested shape" in line and "onnxruntime_src" not in line and "export it again" in line
    assert workspace_state(workspace) == before
    # at run time: a registered graph's stored copy swapped for the broken one (as a graph failing only on some input would)
    spec = register_onnx(workspace, "one", checkpoint=_reshaping(tmp_path / "one.onnx", [-1, 3]), label_space=custom_label_space(tmp_path / "l.txt"),
                         mean=IMAGENET_MEAN, std=IMAGENET_STD)  # fmt: skip
    (workspace.root / spec.checkpoint).write_bytes(broken.read_bytes())
    model = load_model(workspace, "one", device="cpu")
    with pytest.raises(InvalidInputError, match=r"^model 'one' \([0-9a-f]+\.onnx\): ONNX Runtime failed running it on a batch of shape 2x3x16x16 \(") as caught:
        model.run_batch(model.preprocess(np.zeros((2, 16, 16, 3), np.uint8)))
    assert "\n" not in str(caught.value)


def test_the_librarys_messages_name_its_parameters_not_the_command_lines_flags(tmp_path, team_files):
    workspace = Workspace(tmp_path / "ws")
    with pytest.raises(InvalidInputError, match=r"give `mean`, `std` \(for ImageNet training: `mean` 0\.485") as caught:
        register_onnx(workspace, "m", checkpoint=team_files["onnx"], label_space=team_files["labels"])
    assert "--" not in str(caught.value)
    with pytest.raises(InvalidInputError, match=r"`crop_pct` must be in \(0, 1\]; got 1\.5$"):
        register_onnx(workspace, "m", checkpoint=team_files["onnx"], label_space=team_files["labels"], mean=IMAGENET_MEAN, std=IMAGENET_STD, crop_pct=1.5)


def test_a_graph_computing_32_gib_is_refused_before_any_session_runs(tmp_path, capsys, monkeypatch):
    """Issue 48's ``ConstantOfShape`` of 8 * 2**30 floats: refused from its inferred shapes at
    registration, in a process without a memory limit, ONNX Runtime never asked to allocate it."""
    import onnxruntime

    from tests.analytics.test_hostile_inputs import _onnx

    def no_session(*args, **kwargs):
        raise AssertionError("an ONNX Runtime session was made")

    workspace = Workspace(tmp_path / "ws")
    (tmp_path / "l.txt").write_text("a\nb\nc\n")
    big = _onnx(tmp_path / "big.onnx", allocate=8 << 30)
    before = workspace_state(workspace)
    with monkeypatch.context() as patch:
        patch.setattr(onnxruntime, "InferenceSession", no_session)
        argv = ["add-model", "--workspace", str(workspace.root), "--name", "m", "--arch", "onnx", "--checkpoint", str(big), "--labels", str(tmp_path / "l.txt"), *IMAGENET]
        line = cli_error(argv, capsys)
        assert f"{big}: tensor 'big' of shape 8589934592 takes 32768.0 MiB (34359738368 bytes) on a batch of shape 1x3x16x16, past the limit of 2048.0 MiB" in line
        assert "MAX_ONNX_TENSOR_BYTES" in line and "raise BACKDROP_MAX_ONNX_TENSOR_BYTES" in line
        assert workspace_state(workspace) == before
        # the limit is the environment's: lowered, a small tensor of a fine graph is refused too
        monkeypatch.setenv("BACKDROP_MAX_ONNX_TENSOR_BYTES", "8")
        with pytest.raises(InvalidInputError, match=r"tensor 'means' of shape 1x3 takes 0\.0 MiB \(12 bytes\) on a batch of shape 1x3x16x16, past the limit"):
            register_onnx(workspace, "m", checkpoint=_onnx(tmp_path / "fine.onnx"), label_space=custom_label_space(tmp_path / "l.txt"), mean=IMAGENET_MEAN, std=IMAGENET_STD)
        monkeypatch.setenv("BACKDROP_MAX_ONNX_TENSOR_BYTES", "lots")
        with pytest.raises(InvalidInputError, match=r"^BACKDROP_MAX_ONNX_TENSOR_BYTES must be a positive whole number of bytes; got 'lots'"):
            register_onnx(workspace, "m", checkpoint=big, label_space=custom_label_space(tmp_path / "l.txt"), mean=IMAGENET_MEAN, std=IMAGENET_STD)
    monkeypatch.delenv("BACKDROP_MAX_ONNX_TENSOR_BYTES")
    # a constant of 1000 floats is well within the limit: registered, and it runs
    small = _onnx(tmp_path / "small.onnx", allocate=1000)
    spec = register_onnx(workspace, "small", checkpoint=small, label_space=custom_label_space(tmp_path / "l.txt"), mean=IMAGENET_MEAN, std=IMAGENET_STD)
    assert load_model(workspace, spec.name, device="cpu").predict(np.zeros((2, 16, 16, 3), np.uint8)).probabilities.shape == (2, 3)
    # loading the registered copy (checked at registration, stored under its hash) runs no shape inference again
    from analytics.models import onnx_source

    monkeypatch.setattr(onnx_source, "_check_tensor_sizes", no_session)
    assert load_model(workspace, spec.name, device="cpu").predict(np.zeros((1, 16, 16, 3), np.uint8)).probabilities.shape == (1, 3)


def test_a_tensor_only_the_run_sizes_is_bounded_by_the_memory_limit(tmp_path, capsys, monkeypatch):
    """A ``ConstantOfShape`` whose length the pixels compute: no check before the run can size it, so
    ONNX Runtime's shared arena, capped at ``BACKDROP_MAX_ONNX_MEMORY_BYTES``, refuses it as it runs,
    at registration (the check run) and when a registered model runs, as one line naming the model,
    the limit and the fix. The cap is 64 MiB here, and the graphs ask 80-400 MB, which ONNX Runtime's
    own arena would give."""
    from analytics.models import onnx_source
    from tests.analytics.test_hostile_inputs import _onnx

    workspace = Workspace(tmp_path / "ws")
    labels = tmp_path / "l.txt"
    labels.write_text("a\nb\nc\n")
    # registered under the default limit: a run allocating 80 MB is fine
    spec = register_onnx(workspace, "grows", checkpoint=_onnx(tmp_path / "grows.onnx", allocate_at_run=20_000_000), label_space=custom_label_space(labels),
                         mean=IMAGENET_MEAN, std=IMAGENET_STD)  # fmt: skip
    monkeypatch.setenv("BACKDROP_MAX_ONNX_MEMORY_BYTES", str(64 << 20))
    assert onnx_source.max_onnx_memory_bytes() == 64 << 20
    # the check run at registration: refused by the CLI and the library, nothing stored
    big = _onnx(tmp_path / "big.onnx", allocate_at_run=100_000_000)
    before = workspace_state(workspace)
    argv = ["add-model", "--workspace", str(workspace.root), "--name", "m", "--arch", "onnx", "--checkpoint", str(big), "--labels", str(labels), *IMAGENET]
    line = cli_error(argv, capsys)
    assert f"{big} (model 'm'): on a batch of shape 1x3x16x16, ONNX Runtime asked for 381.5 MiB in a ConstantOfShape node, more than the " in line
    assert "MiB left of the 64.0 MiB all ONNX models of this process may use" in line and "raise BACKDROP_MAX_ONNX_MEMORY_BYTES" in line
    assert "onnxruntime_src" not in line and "bfc_arena" not in line
    assert workspace_state(workspace) == before
    # at run time: the registered model, loaded under the lowered limit, asks 80 MB of 64 MiB
    model = load_model(workspace, spec.name, device="cpu")
    with pytest.raises(InvalidInputError, match=r"^model 'grows' \([0-9a-f]+\.onnx\): on a batch of shape 2x3x16x16, ONNX Runtime asked for 76\.3 MiB in a ConstantOfShape") as caught:
        model.run_batch(model.preprocess(np.zeros((2, 16, 16, 3), np.uint8)))
    message = str(caught.value)
    assert "\n" not in message and str(workspace.root) not in message and "64.0 MiB all ONNX models" in message
    # the limit is read as each session is made: raised again, the same model runs
    monkeypatch.setenv("BACKDROP_MAX_ONNX_MEMORY_BYTES", str(256 << 20))
    assert load_model(workspace, spec.name, device="cpu").predict(np.zeros((2, 16, 16, 3), np.uint8)).probabilities.shape == (2, 3)
    monkeypatch.setenv("BACKDROP_MAX_ONNX_MEMORY_BYTES", "lots")
    with pytest.raises(InvalidInputError, match=r"^BACKDROP_MAX_ONNX_MEMORY_BYTES must be a positive whole number of bytes; got 'lots'"):
        load_model(workspace, spec.name, device="cpu").predict(np.zeros((1, 16, 16, 3), np.uint8))


def test_the_default_memory_limit_is_half_the_machine_at_most_8_gib(monkeypatch):
    import os

    from analytics.models import onnx_source

    monkeypatch.delenv("BACKDROP_MAX_ONNX_MEMORY_BYTES", raising=False)
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert onnx_source.max_onnx_memory_bytes() == min(8 << 30, physical // 2)
    monkeypatch.setattr(os, "sysconf", lambda name: {"SC_PHYS_PAGES": 1 << 20, "SC_PAGE_SIZE": 4096}[name])  # a 4 GiB machine
    assert onnx_source.max_onnx_memory_bytes() == 2 << 30


def _with_text(source, path, case: str):
    """The tiny graph of ``source`` plus nodes that make text tensors, as ``case`` says; its logits unchanged."""
    helper, tensor = onnx.helper, onnx.TensorProto
    model = onnx.load(str(source))
    graph = model.graph
    if case == "cast":  # the attack: the pixels cast to text, then doubled 20 times (48 strings of ~10 characters: 500 MB, off the arena)
        graph.node.append(helper.make_node("Cast", ["pixels"], ["text0"], to=tensor.STRING))
        graph.node.extend(helper.make_node("StringConcat", [f"text{i}", f"text{i}"], [f"text{i + 1}"]) for i in range(20))
        model.opset_import[0].version = 20
    elif case == "constant":
        graph.node.append(helper.make_node("Constant", [], ["word"], value=helper.make_tensor("word", tensor.STRING, [1], [b"a"])))
    elif case == "initializer":
        graph.initializer.append(helper.make_tensor("words", tensor.STRING, [2], [b"a", b"b"]))
    elif case == "label encoder":
        graph.node.append(helper.make_node("LabelEncoder", ["ids"], ["names"], domain="ai.onnx.ml", keys_int64s=[0, 1], values_strings=["a", "b"]))
        model.opset_import.append(helper.make_opsetid("ai.onnx.ml", 2))
    elif case == "in a loop body":
        body = helper.make_graph(
            [helper.make_node("Cast", ["i"], ["as_text"], to=tensor.STRING), helper.make_node("Identity", ["cond"], ["cond_out"])], "body",
            [helper.make_tensor_value_info("i", tensor.INT64, []), helper.make_tensor_value_info("cond", tensor.BOOL, [])],
            [helper.make_tensor_value_info("cond_out", tensor.BOOL, []), helper.make_tensor_value_info("as_text", tensor.STRING, [])],
        )  # fmt: skip
        graph.node.append(helper.make_node("Loop", ["trips", ""], ["texts"], body=body))
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("cast", "Cast node 'text0' makes text (string) tensors"),
        ("constant", "Constant node 'word' (its attribute 'value') makes text"),
        ("initializer", "initializer 'words' makes text"),
        ("label encoder", "LabelEncoder node 'names' (its attribute 'values_strings') makes text"),
        ("in a loop body", "Cast node 'as_text' makes text"),
    ],
)
def test_a_graph_making_text_is_refused_when_read(tmp_path, case, words):
    """Strings are the one tensor ONNX Runtime keeps off its capped arena: their sources are refused
    before any session runs, with the reason and the fix; the same graph without them is read."""
    from analytics.models.onnx_source import read_onnx_graph
    from tests.analytics.test_hostile_inputs import _onnx

    fine = _onnx(tmp_path / "fine.onnx")
    assert read_onnx_graph(fine, 16).input_name == "pixels"
    with pytest.raises(InvalidInputError, match=r"outside the memory limit of its runs; an image classifier needs none: export the graph without them$") as caught:
        read_onnx_graph(_with_text(fine, tmp_path / "text.onnx", case), 16, check_tensors=False)
    assert str(caught.value).startswith(f"{tmp_path / 'text.onnx'}: {words}")
