"""The timm source: a team's timm checkpoint registered, run with timm's own eval preprocessing
(Backdrop's logits equal timm's ``create_transform(**resolve_data_config(model=m))`` + the model on
the same photos), its embedding and GradCAM layer, the CLI and the gate, and the refusals."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import timm
import torch
from PIL import Image
from safetensors.torch import save_file
from timm.data import create_transform, resolve_data_config

from analytics.cli import main
from analytics.data import custom_label_space
from analytics.exceptions import InvalidInputError
from analytics.models import ImageTransform, ModelSpec, conv_map_problem, get_model_spec, load_model
from analytics.models.libraries import register_timm
from analytics.saliency import available_methods, explain
from analytics.workspace import Workspace
from tests.fixtures.cli import cli_error, workspace_state
from tests.fixtures.models import insert_suite, write_labels

ARCHS = ("resnet18", "vit_tiny_patch16_224")


def team_model(arch: str, n_classes: int = 3, *, seed: int = 0) -> torch.nn.Module:
    """What a team trains: ``timm.create_model(arch, pretrained=False)`` with random weights; the
    classifier scaled up so that logits are a few units (1e-5 then means something)."""
    torch.manual_seed(seed)
    model = timm.create_model(arch, pretrained=False, num_classes=n_classes).eval()
    with torch.no_grad():
        model.get_classifier().weight.mul_(50)
    return model


@pytest.fixture(scope="module")
def team_files(tmp_path_factory) -> dict:
    """arch -> (model, checkpoint): resnet18 saved with torch.save (.pth), the ViT as .safetensors."""
    root = tmp_path_factory.mktemp("timm")
    files = {}
    for arch in ARCHS:
        model = team_model(arch)
        if arch == "resnet18":
            path = root / f"{arch}.pth"
            torch.save(model.state_dict(), path)
        else:
            path = root / f"{arch}.safetensors"
            save_file({k: v.contiguous() for k, v in model.state_dict().items()}, path)
        files[arch] = (model, path)
    (root / "labels.txt").write_text("cat\ndog\nbird\n")
    files["labels"] = custom_label_space(root / "labels.txt")
    return files


def timm_reference(model: torch.nn.Module, images: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The team's own code: timm's eval transform on PIL images, then the model: (inputs, logits, pre-logits)."""
    transform = create_transform(**resolve_data_config(model=model))
    batch = torch.stack([transform(Image.fromarray(image)) for image in images])
    with torch.no_grad():
        features = model.forward_features(batch)
        return batch.numpy(), model.forward_head(features).numpy(), model.forward_head(features, pre_logits=True).numpy()


@pytest.mark.parametrize(("arch", "resize", "offset"), [("resnet18", 235, 6), ("vit_tiny_patch16_224", 248, 12)])
def test_timm_logits_equal_timms_own_on_real_photos(tmp_path, team_files, photos, arch, resize, offset):
    model, path = team_files[arch]
    workspace = Workspace(tmp_path / "ws")
    spec = register_timm(workspace, "team", arch=arch, checkpoint=path, label_space=team_files["labels"])
    assert (spec.source, spec.input_size, spec.preprocessing) == ("timm", 224, "transform")
    assert (spec.transform.resize, spec.transform.crop_offset, spec.transform.interpolation) == (resize, offset, "bicubic")
    assert spec.transform.mean == tuple(model.pretrained_cfg["mean"]) and spec.transform.std == tuple(model.pretrained_cfg["std"])
    assert "pre-logits" in spec.embedding_layer and (workspace.root / spec.checkpoint).is_file()
    loaded = load_model(workspace, "team", device="cpu")
    for images in photos:
        inputs = loaded.preprocess(images)
        logits, embedding = loaded.run_batch(inputs)
        expected_inputs, expected_logits, expected_embedding = timm_reference(model, images)
        np.testing.assert_allclose(inputs.numpy(), expected_inputs, rtol=0, atol=1e-6)  # the same pixels, the same normalisation
        assert np.abs(expected_logits).max() > 0.5  # the comparison is not between near-zero numbers
        np.testing.assert_allclose(logits.numpy(), expected_logits, rtol=1e-5, atol=1e-5)  # float32 noise of the frozen CPU copy
        np.testing.assert_allclose(embedding.numpy(), expected_embedding, rtol=1e-5, atol=1e-5)
    assert loaded.predict(photos[0]).embeddings.shape == (2, model.num_features)


def test_timm_gradcam_reads_the_last_convolutional_stage_and_maps_the_crop(tmp_path, team_files, photos):
    workspace = Workspace(tmp_path / "ws")
    for arch in ARCHS:
        register_timm(workspace, arch, arch=arch, checkpoint=team_files[arch][1], label_space=team_files["labels"])
    resnet, vit = load_model(workspace, "resnet18", device="cpu"), load_model(workspace, "vit_tiny_patch16_224", device="cpu")
    assert resnet.gradcam_layer is resnet.network.net.layer4  # timm's feature_info: layer4
    assert "gradcam" in available_methods(resnet) and conv_map_problem(workspace, get_model_spec(workspace, "resnet18")) is None
    assert "gradcam" not in available_methods(vit) and "occlusion" in available_methods(vit)
    assert "blocks.11" in conv_map_problem(workspace, get_model_spec(workspace, "vit_tiny_patch16_224"))
    with pytest.raises(InvalidInputError, match=r"blocks\.11\) has no convolution"):
        vit.gradcam_layer
    images = photos[0]
    masks = np.zeros(images.shape[:3], bool)
    masks[:, 64:192, 64:192] = True
    result = explain(resnet, images, masks, [[0], [1]], method="gradcam", faithfulness_steps=None)
    start, end = resnet.crop_box
    top, bottom = round(start * 256), round(end * 256)
    assert (top, bottom) == (7, 251)
    assert (result.maps[:, :top] == result.maps[:, :top].flat[0]).all() and (result.maps[:, bottom:] == result.maps[:, bottom:].flat[0]).all()


def test_cli_add_model_and_check_take_a_timm_arch_and_its_flags(tiny_workspace, tmp_path, capsys):
    labels = write_labels(tmp_path / "labels.txt")
    model = team_model("resnet18", 2)
    path = tmp_path / "r18.pt"
    torch.save({"state_dict": model.state_dict()}, path)
    flags = ["--input-size", "64", "--crop-pct", "0.875", "--interpolation", "bilinear", "--mean", "0.5,0.5,0.5", "--std", "0.25,0.25,0.25"]
    argv = ["add-model", "--name", "t18", "--arch", "timm:resnet18", "--checkpoint", str(path), "--labels", str(labels), *flags]
    assert main([*argv, "--workspace", str(tiny_workspace.root), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["source"] == "timm" and shown["preprocessing"].startswith("resize 73 bilinear (pil), centre crop 64, mean (0.5, 0.5, 0.5), std (0.25")
    spec = get_model_spec(tiny_workspace, "t18")
    assert spec.transform == ImageTransform((0.5,) * 3, (0.25,) * 3, 73, 4, "bilinear", "pil", spec.transform.origin) and spec.input_size == 64
    loaded = load_model(tiny_workspace, "t18", device="cpu")
    image = np.asarray(Image.fromarray(np.random.default_rng(1).integers(0, 256, (64, 64, 3), dtype=np.uint8)))
    config = resolve_data_config(args={"input_size": (3, 64, 64), "crop_pct": 0.875, "interpolation": "bilinear", "mean": (0.5,) * 3, "std": (0.25,) * 3}, model=model)
    expected = model(create_transform(**config)(Image.fromarray(image))[None]).detach().numpy()
    np.testing.assert_allclose(loaded.run_batch(loaded.preprocess(image[None]))[0].numpy(), expected, rtol=0, atol=1e-5)
    # the gate registers its candidate with the same options
    insert_suite(tiny_workspace, "gate-suite", n=2)
    policy = tmp_path / "policy.toml"
    policy.write_text("[rules]\naccuracy_drop_max = 1.0\n")
    check = ["check", "--workspace", str(tiny_workspace.root), "--policy", str(policy), "--suite", "gate-suite", "--out", str(tmp_path / "out"),
             "--device", "cpu", "--no-report", "--model", "cand", "--arch", "timm:resnet18", "--checkpoint", str(path), "--labels", str(labels), *flags]  # fmt: skip
    assert main(check) == 0, capsys.readouterr()
    assert get_model_spec(tiny_workspace, "cand").transform == spec.transform


def test_timm_refusals_are_one_line_and_change_nothing(tiny_workspace, team_files, tmp_path, capsys, monkeypatch):
    labels = write_labels(tmp_path / "labels.txt")
    base = ["add-model", "--workspace", str(tiny_workspace.root), "--name", "m", "--labels", str(labels)]
    resnet_path, vit_path = team_files["resnet18"][1], team_files["vit_tiny_patch16_224"][1]
    before = workspace_state(tiny_workspace)
    assert "did you mean resnet18" in cli_error([*base, "--arch", "timm:resnet188", "--checkpoint", str(resnet_path)], capsys)
    line = cli_error([*base, "--arch", "timm:resnet18", "--checkpoint", str(vit_path)], capsys)
    assert str(vit_path) in line and "no 2-D weight 'fc.weight'" in line
    line = cli_error([*base, "--arch", "timm:resnet18", "--checkpoint", str(resnet_path)], capsys)  # 3 classes, 2 labels
    assert "has 3 classes but the custom label space has 2" in line and "--labels" in line
    line = cli_error([*base, "--arch", "resnet18", "--checkpoint", str(resnet_path), "--mean", "0.5,0.5,0.5"], capsys)
    assert "--mean: not for torchvision models (--mean is for timm, transformers, onnx)" in line
    assert "three numbers" in cli_error([*base, "--arch", "timm:resnet18", "--checkpoint", str(resnet_path), "--std", "0.5,0.5"], capsys)
    real = timm.create_model

    def without_statistics(*args, **kwargs):  # an architecture whose pretrained_cfg has no mean or std
        model = real(*args, **kwargs)
        model.pretrained_cfg = {k: v for k, v in model.pretrained_cfg.items() if k not in ("mean", "std")}
        return model

    monkeypatch.setattr(timm, "create_model", without_statistics)
    (tmp_path / "labels3.txt").write_text("cat\ndog\nbird\n")
    line = cli_error([*base, "--arch", "timm:resnet18", "--checkpoint", str(resnet_path), "--labels", str(tmp_path / "labels3.txt")], capsys)
    assert "has no --mean, --std; give them" in line  # the library names its parameters, the command line its flags
    with pytest.raises(InvalidInputError, match=r"has no `mean`, `std`; give them$"):
        register_timm(tiny_workspace, "m", arch="resnet18", checkpoint=resnet_path, label_space=custom_label_space(tmp_path / "labels3.txt"))
    assert workspace_state(tiny_workspace) == before


@pytest.mark.parametrize(
    ("args", "resize", "offset"),
    [({}, 235, 6), ({"crop_mode": "squash"}, 235, 6), ({"crop_pct": 1.0, "interpolation": "bilinear"}, 224, 0), ({"input_size": (3, 96, 96)}, 101, 2)],
)
def test_timm_geometry_is_read_from_timms_own_eval_transform(args, resize, offset):
    """The resize and crop come from the ``Resize`` and ``CenterCrop`` of ``create_transform(**config)``
    (timm's 'squash' crop is the same on a square image), and the probe agrees."""
    from analytics.models.timm_source import check_timm_transform, read_timm_transform

    with torch.device("meta"):
        model = timm.create_model("resnet18", pretrained=False)
    model.pretrained_cfg = {**model.pretrained_cfg, **args}
    size, transform, config = read_timm_transform(model)
    assert (transform.resize, transform.crop_offset) == (resize, offset) and size == config["input_size"][-1]
    check_timm_transform(size, transform, config, "probe")


def test_timm_crop_modes_backdrop_cannot_reproduce_are_refused_naming_them():
    from analytics.models.timm_source import read_timm_transform

    with torch.device("meta"):
        model = timm.create_model("resnet18", pretrained=False)
    model.pretrained_cfg = {**model.pretrained_cfg, "crop_mode": "border"}
    with pytest.raises(InvalidInputError, match=r"ResizeKeepRatio, CenterCropOrPad.*crop_mode 'border'.*Nothing about the checkpoint needs to change") as caught:
        read_timm_transform(model)
    assert "--" not in str(caught.value)


def test_a_spec_stored_before_transforms_existed_loads_with_its_key_unchanged(team_files):
    old = {
        "name": "r", "source": "torchvision", "arch": "resnet18", "checkpoint": "checkpoints/abc.pt",
        "label_space": team_files["labels"].to_json(), "input_size": 224, "preprocessing": "imagenet",
        "embedding_layer": "x", "n_params": 1, "backbone": None, "construction": None, "origin": "",
    }  # fmt: skip
    spec = ModelSpec.from_json(old)
    assert spec.transform is None and spec.to_json() == old
    assert spec.content_key() == hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()[:16]
    transform = ImageTransform((0.5, 0.5, 0.5), (0.5, 0.5, 0.5), 248, 12, "bicubic", "pil", "timm")
    new = ModelSpec.from_json({**old, "source": "timm", "preprocessing": "transform", "transform": transform.to_json()})
    assert new.transform == transform and ModelSpec.from_json(json.loads(json.dumps(new.to_json()))) == new
