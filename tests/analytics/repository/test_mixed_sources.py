"""One repository holding a model of every source (TorchScript; timm ResNet and ViT; transformers ViT
and ConvNeXt; an ONNX export) runs over one suite like any other: each model reads the suite's
composites through its own preprocessing, gets a finished run with variance matrices, explains a
target with the methods it can run (ONNX: the perturbation methods only) and passes through the
release gate (issue 40's done-when)."""

from __future__ import annotations

import numpy as np
import torch
import torchvision

from analytics._choices import IMAGENET_MEAN, IMAGENET_STD
from analytics.cli import main
from analytics.data import custom_label_space, list_targets
from analytics.models import load_model
from analytics.models.libraries import register_onnx, register_timm, register_transformers
from analytics.repository import create_repository, repository_status, run_repository
from analytics.runs import SIGNALS, list_runs, run_matrices
from analytics.saliency import available_methods
from analytics.saliency.survey import explain_target
from tests.analytics.models.test_onnx import export
from tests.analytics.models.test_timm import team_model
from tests.analytics.models.test_transformers import save_convnext, save_vit
from tests.fixtures.models import CLASSES, SIZE, TINY_SUITE, write_labels


def test_a_repository_of_every_source_runs_over_one_suite(tiny_model_workspace, tmp_path, capsys):
    workspace = tiny_model_workspace  # the TorchScript model 'tiny' and the suite 'tiny-suite'
    labels = custom_label_space(write_labels(tmp_path / "labels.txt"))
    timm_path = tmp_path / "timm.pth"
    torch.save(team_model("resnet18", len(CLASSES)).state_dict(), timm_path)
    register_timm(workspace, "timm-r18", arch="resnet18", checkpoint=timm_path, label_space=labels, input_size=SIZE)
    vit_path = tmp_path / "vit.pth"
    torch.save(team_model("vit_tiny_patch16_224", len(CLASSES)).state_dict(), vit_path)
    register_timm(workspace, "timm-vit", arch="vit_tiny_patch16_224", checkpoint=vit_path, label_space=labels)  # timm's own 224 px, crop 0.9
    register_transformers(workspace, "hf-vit", folder=save_vit(tmp_path / "vit", size=SIZE, labels=dict(enumerate(CLASSES))))
    register_transformers(workspace, "hf-convnext", folder=save_convnext(tmp_path / "convnext", labels=dict(enumerate(CLASSES))))
    torch.manual_seed(1)
    onnx_path = export(torchvision.models.resnet18(weights=None, num_classes=len(CLASSES)), tmp_path / "r18.onnx", torch.zeros(1, 3, SIZE, SIZE))
    register_onnx(workspace, "onnx-r18", checkpoint=onnx_path, label_space=labels, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    members = ["tiny", "timm-r18", "timm-vit", "hf-vit", "hf-convnext", "onnx-r18"]
    create_repository(workspace, "sources", members)
    report = run_repository(workspace, "sources", TINY_SUITE, device="cpu", batch_size=8)
    assert sorted(report["done"]) == sorted(members) and not report["failed"]
    status = repository_status(workspace, "sources", TINY_SUITE).set_index("model")
    assert (status.loc[members, "status"] == "done").all() and status.loc[members, "images"].nunique() == 1
    runs = list_runs(workspace, suite_id=TINY_SUITE).set_index("model")
    assert set(members) <= set(runs.index) and np.isfinite(runs.loc[members, "accuracy"].astype(float)).all()
    target = list_targets(workspace)["id"].iloc[0]
    for member in members:
        matrices = run_matrices(workspace, runs.loc[member, "id"])
        assert set(matrices) == set(SIGNALS) and all(np.isfinite(m.matrix).all() for m in matrices.values()), member
        model = load_model(workspace, member, device="cpu")
        methods = available_methods(model)
        if member == "onnx-r18":  # ONNX Runtime computes no gradients
            assert sorted(methods) == ["occlusion", "rise"]
        _, masks, explanation = explain_target(workspace, model, target, method=methods[0], settings={"n_masks": 8} if methods[0] == "rise" else None)
        assert explanation.maps.shape[0] == 1 and explanation.maps.shape[1:] == masks.shape[1:], member
    # the gate takes each source's model as its candidate, against the TorchScript baseline
    policy = tmp_path / "policy.toml"
    policy.write_text("[rules]\naccuracy_drop_max = 1.0\n")
    for member in members[1:]:
        gate = ["check", "--workspace", str(workspace.root), "--policy", str(policy), "--suite", TINY_SUITE, "--model", member,
                "--baseline", "tiny", "--out", str(tmp_path / f"gate-{member}"), "--device", "cpu", "--no-report"]  # fmt: skip
        assert main(gate) == 0, (member, capsys.readouterr())
