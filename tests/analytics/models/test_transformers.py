"""The transformers source: tiny ViT and ConvNeXt classifiers with random weights saved the way a
team does (``save_pretrained(safe_serialization=True)`` + the image processor), registered, and run
as ``AutoImageProcessor`` + ``AutoModelForImageClassification`` run them; labels from id2label; the
embedding (the classifier's input); the CLI and the gate; the folders that are refused."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import struct

import numpy as np
import pytest
import torch
from transformers import (
    AutoImageProcessor,
    AutoModelForImageClassification,
    BitImageProcessor,
    ConvNextConfig,
    ConvNextForImageClassification,
    ConvNextImageProcessor,
    LevitImageProcessor,
    PoolFormerImageProcessor,
    ViTConfig,
    ViTForImageClassification,
    ViTImageProcessor,
)
from transformers.utils import logging as hf_logging

from analytics.cli import main
from analytics.exceptions import InvalidInputError
from analytics.models import conv_map_problem, get_model_spec, load_model
from analytics.models.libraries import register_transformers
from analytics.saliency import available_methods
from analytics.workspace import Workspace
from tests.fixtures.cli import cli_error, workspace_state
from tests.fixtures.models import insert_suite, write_labels

LABELS = {0: "cat", 1: "dog", 2: "bird"}


@contextlib.contextmanager
def quiet():
    """No "Writing model shards" progress bar on stderr (the CLI tests read stderr)."""
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def save_vit(folder, *, size: int = 64, labels: dict = LABELS, seed: int = 0):
    """A tiny ViT (2 layers, 32-d) and its processor (resize to size x size, bilinear), as a team saves them."""
    torch.manual_seed(seed)
    config = ViTConfig(image_size=size, patch_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                       num_labels=len(labels), id2label=labels, label2id={v: k for k, v in labels.items()})  # fmt: skip
    with quiet():
        ViTForImageClassification(config).save_pretrained(folder, safe_serialization=True)
    ViTImageProcessor(size={"height": size, "width": size}).save_pretrained(folder)
    return folder


def save_convnext(folder, *, labels: dict = LABELS, seed: int = 0):
    """A tiny ConvNeXt (4 stages of 1 block) and its processor (shortest edge 64 / crop_pct 0.875 = 73, crop 64, bicubic)."""
    torch.manual_seed(seed)
    config = ConvNextConfig(
        hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1], num_labels=len(labels), id2label=labels, label2id={v: k for k, v in labels.items()}
    )
    with quiet():
        ConvNextForImageClassification(config).save_pretrained(folder, safe_serialization=True)
    ConvNextImageProcessor(size={"shortest_edge": 64}).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("hf")
    return {"vit": save_vit(root / "vit"), "convnext": save_convnext(root / "convnext")}


def team_outputs(folder, images: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The team's own code: AutoImageProcessor + AutoModelForImageClassification on the photos:
    (pixel_values, logits, the pooled representation the classifier reads)."""
    processor = AutoImageProcessor.from_pretrained(folder)
    model = AutoModelForImageClassification.from_pretrained(folder).eval()
    pixels = processor(images=list(images), return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        logits = model(pixel_values=pixels).logits
        if isinstance(model, ViTForImageClassification):  # the [CLS] token after the final layernorm
            pooled = model.vit(pixel_values=pixels).last_hidden_state[:, 0]
        else:  # ConvNeXt: the pooled features after its layernorm
            pooled = model.convnext(pixel_values=pixels).pooler_output
    return pixels.numpy(), logits.numpy(), pooled.numpy()


@pytest.mark.parametrize(("kind", "processor", "resize", "input_size"), [("vit", "ViTImageProcessor", 64, 64), ("convnext", "ConvNextImageProcessor", 73, 64)])
def test_transformers_logits_equal_the_processor_and_models_own(tmp_path, folders, photos, kind, processor, resize, input_size):
    workspace = Workspace(tmp_path / "ws")
    spec = register_transformers(workspace, kind, folder=folders[kind])
    assert (spec.source, spec.input_size, spec.preprocessing, spec.label_space.names) == ("transformers", input_size, "transform", ("cat", "dog", "bird"))
    assert spec.transform.resize == resize and spec.transform.resampler == "torchvision" and processor in spec.transform.origin
    assert (workspace.root / spec.checkpoint / "model.safetensors").is_file() and "input of the classifier 'classifier'" in spec.embedding_layer
    loaded = load_model(workspace, kind, device="cpu")
    for images in photos:
        inputs = loaded.preprocess(images)
        logits, embedding = loaded.run_batch(inputs)
        pixels, expected_logits, pooled = team_outputs(folders[kind], images)
        np.testing.assert_allclose(inputs.numpy(), pixels, rtol=0, atol=1e-6)
        np.testing.assert_allclose(logits.numpy(), expected_logits, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(embedding.numpy(), pooled, rtol=1e-5, atol=1e-5)
    if kind == "vit":
        assert "gradcam" not in available_methods(loaded) and "ViTAttention" in conv_map_problem(workspace, spec)
    else:
        assert type(loaded.gradcam_layer).__name__ == "ConvNextStage" and "gradcam" in available_methods(loaded)
        assert conv_map_problem(workspace, spec) is None


def test_cli_registers_a_folder_and_check_takes_it_as_candidate(tiny_workspace, tmp_path, capsys):
    folder = save_vit(tmp_path / "vit", labels={0: "disc", 1: "square"})
    assert main(["add-model", "--workspace", str(tiny_workspace.root), "--name", "hf", "--arch", "transformers", "--checkpoint", str(folder), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["source"] == "transformers" and shown["arch"] == "ViTForImageClassification" and shown["n_outputs"] == 2
    # the folder is copied: the workspace no longer needs it
    moved = shutil.move(folder, tmp_path / "elsewhere")
    assert load_model(tiny_workspace, "hf", device="cpu").predict(np.zeros((1, 64, 64, 3), np.uint8)).probabilities.shape == (1, 2)
    insert_suite(tiny_workspace, "gate-suite", n=2)
    policy = tmp_path / "policy.toml"
    policy.write_text("[rules]\naccuracy_drop_max = 1.0\n")
    argv = ["check", "--workspace", str(tiny_workspace.root), "--policy", str(policy), "--suite", "gate-suite", "--out", str(tmp_path / "out"),
            "--device", "cpu", "--no-report", "--model", "cand", "--arch", "transformers", "--checkpoint", str(moved)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr()
    assert get_model_spec(tiny_workspace, "cand").source == "transformers"


def test_a_folder_without_preprocessor_config_needs_the_flags(tmp_path, capsys):
    folder = save_vit(tmp_path / "vit")
    (folder / "preprocessor_config.json").unlink()
    workspace = Workspace(tmp_path / "ws")
    base = ["add-model", "--workspace", str(workspace.root), "--name", "hf", "--arch", "transformers", "--checkpoint", str(folder)]
    line = cli_error(base, capsys)
    assert "no preprocessor_config.json" in line and "give --input-size, --mean, --std" in line
    assert "give --mean" in cli_error([*base, "--input-size", "64", "--std", "0.5,0.5,0.5"], capsys)
    assert main([*base, "--input-size", "64", "--mean", "0.5,0.5,0.5", "--std", "0.5,0.5,0.5"]) == 0
    spec = get_model_spec(workspace, "hf")
    assert (spec.transform.resampler, spec.transform.mean, spec.input_size) == ("opencv", (0.5, 0.5, 0.5), 64)


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("bin", "holds pytorch_model.bin, weights that are unpickled"),
        ("py", "holds Python code (modeling_evil.py)"),
        ("auto_map", "names custom code (auto_map)"),
        ("no weights", "no model.safetensors"),
        ("labels", "the model has 3 labels but the custom label space has 2"),
        ("flag", "--mean: "),
    ],
)
def test_refused_folders_are_one_line_and_change_nothing(tmp_path, capsys, damage, words):
    folder = save_vit(tmp_path / "vit")
    if damage == "bin":
        torch.save({"w": torch.zeros(1)}, folder / "pytorch_model.bin")
    elif damage == "py":
        (folder / "modeling_evil.py").write_text("import os\nos.system('touch /tmp/pwned')\n")
    elif damage == "auto_map":
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModelForImageClassification": "modeling_evil.Evil"}}))
    elif damage == "no weights":
        (folder / "model.safetensors").unlink()
    workspace = Workspace(tmp_path / "ws")
    before = workspace_state(workspace)
    argv = ["add-model", "--workspace", str(workspace.root), "--name", "hf", "--arch", "transformers", "--checkpoint", str(folder)]
    if damage == "labels":
        argv += ["--labels", str(write_labels(tmp_path / "labels.txt"))]
    if damage == "flag":
        argv += ["--mean", "0.5,0.5,0.5"]
    line = cli_error(argv, capsys)
    assert words in line
    assert workspace_state(workspace) == before
    if damage in ("bin", "py", "auto_map"):  # the library refuses them too, not only the CLI
        with pytest.raises(InvalidInputError, match=words.split(" (")[0]):
            register_transformers(workspace, "hf", folder=folder)


def _safetensors(header: bytes, length: int | None = None) -> bytes:
    """A safetensors file: the 8-byte little-endian header length (``length`` to lie about it), the JSON header, 4 data bytes."""
    return struct.pack("<Q", len(header) if length is None else length) + header + bytes(4)


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("header length", "model.safetensors: not a readable safetensors file (Error while deserializing header: header too large)"),
        ("huge tensor", "model.safetensors: not a readable safetensors file (Error while deserializing header: overflow computing buffer size"),
        ("deep config", "config.json: JSON file nested too deeply to read (arrays or objects inside each other past Python's limit)"),
        ("deep processor config", "preprocessor_config.json: JSON file nested too deeply to read"),
    ],
)
def test_hostile_files_are_one_line_naming_the_file(tmp_path, capsys, damage, words):
    """Files made to break a reader (a header length of 2**62, a tensor of 2**31 x 2**31 floats, JSON
    nested 100 000 deep) are refused in one line naming the file, by the CLI and the library."""
    folder = save_vit(tmp_path / "vit")
    if damage == "header length":
        (folder / "model.safetensors").write_bytes(_safetensors(b"{}", length=2**62))
    elif damage == "huge tensor":
        header = json.dumps({"weight": {"dtype": "F32", "shape": [2**31, 2**31], "data_offsets": [0, 4]}}).encode()
        (folder / "model.safetensors").write_bytes(_safetensors(header))
    else:
        name = "config.json" if damage == "deep config" else "preprocessor_config.json"
        (folder / name).write_text("[" * 100_000 + "]" * 100_000)
    workspace = Workspace(tmp_path / "ws")
    before = workspace_state(workspace)
    line = cli_error(["add-model", "--workspace", str(workspace.root), "--name", "hf", "--arch", "transformers", "--checkpoint", str(folder)], capsys)
    assert line.startswith(f"error: {folder}/") and words in line
    assert workspace_state(workspace) == before
    with pytest.raises(InvalidInputError, match=re.escape(words)):
        register_transformers(workspace, "hf", folder=folder)


def test_a_zip_of_the_folder_registers_as_the_folder(tmp_path, folders, photos):
    archive = shutil.make_archive(str(tmp_path / "vit"), "zip", root_dir=folders["vit"].parent, base_dir="vit")  # vit/config.json, …
    workspace = Workspace(tmp_path / "ws")
    spec = register_transformers(workspace, "zipped", folder=archive)
    direct = register_transformers(workspace, "direct", folder=folders["vit"])
    assert spec.origin == archive and spec.checkpoint == direct.checkpoint  # the same files, the same content-addressed copy
    logits = [load_model(workspace, name, device="cpu").run_batch(load_model(workspace, name, device="cpu").preprocess(photos[0]))[0] for name in ("zipped", "direct")]
    np.testing.assert_array_equal(logits[0].numpy(), logits[1].numpy())
    empty = shutil.make_archive(str(tmp_path / "empty"), "zip", root_dir=folders["vit"], base_dir="preprocessor_config.json")
    with pytest.raises(InvalidInputError, match=r"empty\.zip: no config\.json at its top"):
        register_transformers(workspace, "nothing", folder=empty)


def test_a_loaded_classifier_never_warns_about_a_training_loss(folders, caplog):
    """Issue 47.10c: freezing for the CPU read ``loss_function`` and transformers printed "Using the
    default loss: `ForCausalLMLoss`" for an image classifier whose class its loss table lacks."""
    from analytics.models.loaded import freeze_for_cpu
    from analytics.models.transformers_source import _TransformersClassifier, classifier_name, load_transformers

    model = load_transformers(folders["convnext"])  # its ConvNextModel inside: a class the loss table lacks
    hf_logging.warning_once.cache_clear()  # transformers prints it once a process: not already spent by another test
    freeze_for_cpu(_TransformersClassifier(model, classifier_name(model, 3, "convnext")).eval(), torch.rand(1, 3, 64, 64))
    assert "default loss" not in caplog.text


def _saved_processor(folder, processor):
    processor.save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    ("processor", "resize", "input_size", "mean"),
    [
        (lambda: ViTImageProcessor(size={"height": 72, "width": 72}, do_center_crop=True, crop_size={"height": 64, "width": 64},
                                   image_mean=[0.3, 0.4, 0.5], image_std=[0.2, 0.25, 0.3]), 72, 64, (0.3, 0.4, 0.5)),  # fmt: skip
        (lambda: ConvNextImageProcessor(size={"shortest_edge": 64}), 73, 64, (0.5, 0.5, 0.5)),  # crop_pct 0.875
        (lambda: ConvNextImageProcessor(size={"shortest_edge": 64}, crop_pct=0.8, resample=2), 80, 64, (0.5, 0.5, 0.5)),
        (lambda: ConvNextImageProcessor(size={"shortest_edge": 384}), 384, 384, (0.5, 0.5, 0.5)),  # ConvNeXt ignores crop_pct from 384 px
        (lambda: PoolFormerImageProcessor(size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64}), 71, 64, (0.485, 0.456, 0.406)),
        (lambda: BitImageProcessor(size={"shortest_edge": 72}, crop_size={"height": 64, "width": 64}), 72, 64, (0.48145466, 0.4578275, 0.40821073)),
    ],
    ids=["vit-crop_size-mean", "convnext-crop_pct", "convnext-crop_pct-0.8", "convnext-384", "poolformer", "bit"],
)
def test_the_loaded_processors_attributes_drive_the_transform(tmp_path, processor, resize, input_size, mean):
    """AutoImageProcessor's own object is read (size, crop_size, crop_pct, resample, mean, std), for
    any family, and Backdrop's pixels equal the processor's on an image other than the probe's."""
    from analytics.models.transformers_source import read_processor_transform

    folder = _saved_processor(tmp_path / "p", processor())
    size, transform = read_processor_transform(folder, input_size=None, mean=None, std=None)
    assert (size, transform.resize, transform.resampler) == (input_size, resize, "torchvision") and transform.mean == pytest.approx(mean)
    image = np.random.default_rng(5).integers(0, 256, (1, 300, 300, 3), dtype=np.uint8)
    expected = AutoImageProcessor.from_pretrained(folder)(images=list(image), return_tensors="pt")["pixel_values"]
    ours = transform.normalise(torch.from_numpy(transform.resize_and_crop(image, size)).permute(0, 3, 1, 2))
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=0, atol=1e-4)


def test_a_pil_backend_processor_is_read_through_the_same_attributes():
    from transformers.models.vit.image_processing_pil_vit import ViTImageProcessorPil

    from analytics.models.transformers_source import check_processor_transform, processor_transforms

    processor = ViTImageProcessorPil(size={"height": 64, "width": 64}, resample=3, image_mean=[0.2, 0.3, 0.4], image_std=[0.5, 0.6, 0.7])
    size, transform = check_processor_transform(processor, processor_transforms(processor, "pil"), "pil")
    assert (size, transform.resize, transform.interpolation, transform.resampler) == (64, 64, "bicubic", "pil")


@pytest.mark.parametrize(
    ("processor", "words"),
    [
        (lambda: ViTImageProcessor(do_resize=False), "ViTImageProcessor's do_resize False"),
        (lambda: ViTImageProcessor(size={"height": 64, "width": 48}), "size 64x48 (not square"),
        (lambda: LevitImageProcessor(size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64}), "cannot reproduce LevitImageProcessor: on a probe image"),
        ("made-up", "transformers cannot load its image processor"),
        ("auto_map", "names custom code (auto_map)"),
    ],
    ids=["no resize", "not square", "another resize rule", "unknown family", "remote code"],
)
def test_processors_backdrop_cannot_reproduce_are_refused_without_asking_to_change_the_files(tmp_path, capsys, processor, words):
    """Refused in one line naming what is unsupported; nothing in the folder needs to change: the
    library names its parameters, the command line its flags, and the three of them register it."""
    folder = save_vit(tmp_path / "vit")
    if callable(processor):
        processor().save_pretrained(folder)
    else:
        config = json.loads((folder / "preprocessor_config.json").read_text())
        config.update({"image_processor_type": "MadeUpImageProcessor"} if processor == "made-up" else {"auto_map": {"AutoImageProcessor": "x.Y"}})
        (folder / "preprocessor_config.json").write_text(json.dumps(config))
    workspace = Workspace(tmp_path / "ws")
    with pytest.raises(InvalidInputError, match=re.escape(words)) as caught:
        register_transformers(workspace, "hf", folder=folder)
    message = str(caught.value)
    assert "nothing in the model's folder needs to change: pass `input_size`, `mean` and `std`" in message
    assert not re.search(r"delete|remove|edit|fix the file|--", message)
    base = ["add-model", "--workspace", str(workspace.root), "--name", "hf", "--arch", "transformers", "--checkpoint", str(folder)]
    line = cli_error(base, capsys)
    assert words in line and "pass --input-size, --mean and --std" in line
    spec = register_transformers(workspace, "hf", folder=folder, input_size=64, mean=(0.5,) * 3, std=(0.5,) * 3)
    assert (spec.transform.resampler, spec.input_size) == ("opencv", 64) and "the image processor not used" in spec.transform.origin


def test_part_of_the_override_is_refused_naming_the_parameters(tmp_path):
    folder = save_vit(tmp_path / "vit")
    with pytest.raises(InvalidInputError, match=r"^`mean`: the image processor \(preprocessor_config\.json\) gives the preprocessing"):
        register_transformers(Workspace(tmp_path / "ws"), "hf", folder=folder, mean=(0.5,) * 3)
