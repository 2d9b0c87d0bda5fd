"""The Models page's registration form offers the sources that read their own preprocessing:
timm, transformers (a zip or a server folder) and ONNX (mean and std asked for)."""

from __future__ import annotations

import torch
import torchvision

from analytics.models import get_model_spec
from tests.analytics.models.test_onnx import export
from tests.analytics.models.test_timm import team_model
from tests.analytics.models.test_transformers import save_vit
from tests.fixtures.models import CLASSES, SIZE

MODELS = "pages/2_Models.py"


def _fill(app, kind: str, name: str, checkpoint, **more):
    app.radio(key="models.kind").set_value(kind).run()
    app.text_input(key="models.name").set_value(name)
    app.text_input(key="models.checkpoint.path").set_value(str(checkpoint))
    for key, value in more.items():
        widget = app.number_input(key=key) if key.endswith("input_size") else app.text_input(key=key)
        widget.set_value(value)
    return app


def test_register_form_offers_timm_transformers_and_onnx(tiny_model_workspace, tiny_model_files, app_runner, tmp_path):
    app = app_runner(MODELS, tiny_model_workspace)
    kinds = app.radio(key="models.kind").options
    assert {"timm architecture + checkpoint", "transformers model (zip of a save_pretrained folder)", "ONNX file"} <= set(kinds)
    # transformers: a folder on the server, labels from its config
    folder = save_vit(tmp_path / "vit", size=SIZE, labels=dict(enumerate(CLASSES)))
    app = _fill(app, "transformers model (zip of a save_pretrained folder)", "hf", folder)
    assert app.radio(key="models.labels").value == "From the model (config.json's id2label)"
    app.button(key="models.register").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert get_model_spec(tiny_model_workspace, "hf").label_space.names == CLASSES
    # timm: an architecture name, Backdrop reads the rest from timm
    path = tmp_path / "r18.pth"
    torch.save(team_model("resnet18", len(CLASSES)).state_dict(), path)
    app = _fill(app, "timm architecture + checkpoint", "t18", path, **{"models.timm_arch": "resnet18", "models.own_input_size": SIZE})
    app.radio(key="models.labels").set_value("Custom class list").run()
    app.text_input(key="models.label_file.path").set_value(str(tiny_model_files["labels"]))
    app.button(key="models.register").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert get_model_spec(tiny_model_workspace, "t18").transform.resize == 67  # floor(64 / 0.95)
    # ONNX: mean and std asked for (ImageNet's by default), the side from the graph
    onnx_path = export(torchvision.models.resnet18(weights=None, num_classes=len(CLASSES)), tmp_path / "r18.onnx", torch.zeros(1, 3, SIZE, SIZE))
    app = _fill(app, "ONNX file", "ox", onnx_path, **{"models.std": "0.5,0.5,0.5"})
    app.radio(key="models.labels").set_value("Custom class list").run()
    app.text_input(key="models.label_file.path").set_value(str(tiny_model_files["labels"]))
    app.button(key="models.register").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    spec = get_model_spec(tiny_model_workspace, "ox")
    assert spec.source == "onnx" and spec.transform.std == (0.5, 0.5, 0.5) and spec.input_size == SIZE


def test_the_form_overrides_crop_and_interpolation_as_the_cli_does(tiny_model_workspace, tiny_model_files, app_runner, tmp_path):
    """Issue 40: the page offers what ``add-model --crop-pct --interpolation`` does, for timm and ONNX."""
    path = tmp_path / "r18.pth"
    torch.save(team_model("resnet18", len(CLASSES)).state_dict(), path)
    app = _fill(app_runner(MODELS, tiny_model_workspace), "timm architecture + checkpoint", "t18", path, **{"models.timm_arch": "resnet18", "models.own_input_size": SIZE})
    assert app.selectbox(key="models.interpolation").value == "the model's own"
    app.number_input(key="models.crop_pct").set_value(1.0)
    app.selectbox(key="models.interpolation").set_value("bilinear")
    app.radio(key="models.labels").set_value("Custom class list").run()
    app.text_input(key="models.label_file.path").set_value(str(tiny_model_files["labels"]))
    app.button(key="models.register").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    transform = get_model_spec(tiny_model_workspace, "t18").transform
    assert (transform.resize, transform.crop_offset, transform.interpolation) == (SIZE, 0, "bilinear")  # no crop (timm's own: 67)
    app.radio(key="models.kind").set_value("TorchScript file").run()  # TorchScript has no such options
    assert not [box for box in app.selectbox if box.key == "models.interpolation"]
