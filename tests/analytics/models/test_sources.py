"""Model sources are one registry of objects (issue 46.1): a seventh, made-up source in one module
(:mod:`tests.fixtures.toy_source`) plus one registration line appears in ``add-model --help``, the
Models page's form and the registry lookup, and registers, runs and explains through them."""

from __future__ import annotations

import argparse
import subprocess
import sys

import numpy as np
import pytest

from analytics.cli import build_parser, main
from analytics.exceptions import InvalidInputError
from analytics.models import SOURCES, add_model, conv_map_problem, get_model_spec, get_source, load_model, source_for_arch
from analytics.models.sources import register_source
from analytics.workspace import PROJECT_ROOT
from tests.fixtures.models import CLASSES
from tests.fixtures.toy_source import ToySource

BUILT_IN = ("efficientnet-lite", "torchvision", "torchscript", "head", "timm", "transformers", "onnx", "module")


@pytest.fixture
def toy():
    register_source(ToySource)  # the one registration line
    yield SOURCES["toy"]
    del SOURCES["toy"]


def _add_model_help() -> str:
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices["add-model"].format_help()


def test_the_built_in_sources_are_one_lookup():
    assert tuple(SOURCES) == BUILT_IN  # the order of the spec format, and of the form and --help
    assert [source.name for source in map(get_source, BUILT_IN)] == list(BUILT_IN)
    with pytest.raises(InvalidInputError, match="source must be one of 'efficientnet-lite'"):
        get_source("caffe")
    assert source_for_arch("timm:resnet18")[0].name == "timm" and source_for_arch("resnet18") == (SOURCES["torchvision"], "resnet18")
    assert source_for_arch("efficientnet-lite1")[0].name == "efficientnet-lite" and source_for_arch("onnx")[0].name == "onnx"


def test_a_seventh_source_appears_in_the_cli_the_form_and_the_lookup(toy, tiny_workspace, app_runner):
    assert get_source("toy") is toy and source_for_arch("toy") == (toy, "")
    text = _add_model_help()
    assert "toy: a made-up source" in text and "--toy-width" in text
    app = app_runner("pages/2_Models.py", tiny_workspace)
    assert "Toy network (a made-up source)" in app.radio(key="models.kind").options
    app.radio(key="models.kind").set_value("Toy network (a made-up source)").run()
    app.text_input(key="models.name").set_value("toy-from-form")
    app.number_input(key="models.toy_width").set_value(24)
    app.button(key="models.register").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert get_model_spec(tiny_workspace, "toy-from-form").arch == "toy24"


def test_a_seventh_source_registers_runs_and_explains_through_the_registry(toy, tiny_workspace, capsys):
    argv = ["add-model", "--workspace", str(tiny_workspace.root), "--name", "t", "--arch", "toy", "--toy-width", "8", "--json"]
    assert main(argv) == 0, capsys.readouterr()
    spec = get_model_spec(tiny_workspace, "t")
    assert spec.source == "toy" and spec.n_params == 3 * 8 + 8 + 8 * len(CLASSES) + len(CLASSES)  # counted by the source
    assert main(["add-model", "--workspace", str(tiny_workspace.root), "--name", "u", "--source", "toy", "--checkpoint", "x", "--toy-width", "4"]) == 2
    assert "--checkpoint: not for toy models" in capsys.readouterr().err
    model = load_model(tiny_workspace, "t", device="cpu")
    assert model.gradcam_layer is model.network.relu and model.gradient_problem is None
    images = np.random.default_rng(0).integers(0, 256, (3, 40, 40, 3), dtype=np.uint8)
    _, _, stats = model.run_batch(model.preprocess(images), conv_stats=True)
    assert stats.shape == (3, 2)
    assert conv_map_problem(tiny_workspace, spec) is None
    assert add_model(tiny_workspace, "toy", "v", width=2).arch == "toy2"
    with pytest.raises(InvalidInputError, match="toy models take the options width; got depth"):
        add_model(tiny_workspace, "toy", "w", depth=2)
    with pytest.raises(InvalidInputError, match="toy models need width"):
        add_model(tiny_workspace, "toy", "w")


def test_the_sources_import_no_torch():
    probe = "import sys, analytics.models.sources as s; print(len(s.SOURCES), 'torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == [str(len(BUILT_IN)), "False"], done.stderr


def test_every_name_the_package_exports_resolves():
    import analytics.models as models

    assert all(getattr(models, name) is not None for name in models.__all__)
