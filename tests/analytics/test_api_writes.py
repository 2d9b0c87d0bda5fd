"""The write side of the public API (``analytics.api``): targets and backgrounds go in through the one
import flow the command line and the Data page use (:mod:`analytics.data.importing`), so a CLI-made
and an API-made workspace hold the same rows; suites, runs and judgments as ``suite``, ``run`` and
``judge`` make them. Errors name the Python parameters, and the command line its flags."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import torch

from analytics import api as bd
from analytics.cli import main
from analytics.data import NothingToImportError, ParameterNames, import_targets, list_backgrounds, list_class_mappings, list_targets
from analytics.exceptions import InvalidInputError
from analytics.judging import latest_judgments
from analytics.suites import build_suite as library_build_suite
from analytics.suites import load_suite
from analytics.workspace import PROJECT_ROOT, Workspace
from tests.analytics.test_cli_data import photo_folder, target_folder
from tests.fixtures.cli import workspace_state
from tests.fixtures.models import TINY_SUITE

#: Columns that record when a row was written, not what it holds.
TIMES = ("added", "created")


def rows(workspace: Workspace, table: str) -> list[dict]:
    """Every row of ``table`` without its time columns, in a fixed order."""
    found = [{k: v for k, v in dict(row).items() if k not in TIMES} for row in workspace.query(f"SELECT * FROM {table}")]
    return sorted(found, key=lambda row: json.dumps(row, sort_keys=True, default=str))


def cli(*argv: str) -> None:
    assert main([*argv, "--json"]) == 0


def cli_json(*argv: str) -> Any:
    """What ``python -m analytics ... --json`` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())


def test_add_targets_and_backgrounds_create_the_workspace_and_report_what_the_page_shows(tmp_path):
    root = tmp_path / "ws"
    report = bd.add_targets(root, target_folder(tmp_path / "set"), layout="folder", imagenet_map={"widget": [409]}, licence="CC0-1.0")
    assert report.added == 4 and len(report.accepted) == 4 and report.rejected == []
    assert report.classes == ["tennis_ball", "widget"] and report.unmapped_classes == []
    assert {name: list(m.imagenet) for name, m in report.new_classes.items()} == {"tennis_ball": [852], "widget": [409]}
    workspace = bd.open_workspace(root)
    assert set(list_targets(workspace)["licence"]) == {"CC0-1.0"}
    pool = bd.add_backgrounds(workspace, photo_folder(tmp_path / "scenes"), crops_per_photo=2, package="mine")
    assert pool.added == 4 and pool.classes == [] and set(list_backgrounds(workspace)["package"]) == {"mine"}
    with pytest.raises(NothingToImportError) as again:  # the same crops: every id is stored already
        bd.add_backgrounds(workspace, tmp_path / "scenes", crops_per_photo=2)
    assert len(again.value.report.rejected) == 4 and all("is already in the workspace" in r.reason for r in again.value.report.rejected)


def test_nothing_valid_raises_with_the_report_and_creates_no_workspace(tmp_path):
    with pytest.raises(NothingToImportError, match="no valid targets to add") as caught:
        bd.add_targets(tmp_path / "ws", target_folder(tmp_path / "set", empty_masks=True), layout="folder")
    assert len(caught.value.report.rejected) == 4 and caught.value.report.added == 0
    assert isinstance(caught.value, InvalidInputError) and not (tmp_path / "ws").exists()


@pytest.mark.parametrize(
    "call, python",
    [
        (lambda ws, p: bd.add_targets(ws, p, layout="coco"), "layout='coco' reads annotations (the COCO JSON) and images"),
        (lambda ws, p: bd.add_targets(ws, p, layout="folder", home=p), "home is only used with layout='cutouts'; got layout='folder'"),
        (lambda ws, p: bd.add_targets(ws, p, layout="folder", all_instances=True, split="val"),
         "split only go with layout='voc'; all_instances only go with layout='coco' or 'voc'; got layout='folder'"),
        (lambda ws, p: bd.add_targets(ws, layout="voc"), "layout='voc' reads path, a folder or .zip"),
        (lambda ws, p: bd.add_targets(ws, p, layout="folder", imagenet_map={"widget": 1000}), "imagenet_map: class 'widget' must map"),
        (lambda ws, p: bd.add_backgrounds(ws, p, crops_per_photo=0), "crops_per_photo must be an integer >= 1; got 0"),
    ],
)  # fmt: skip
def test_errors_name_the_python_parameters(tiny_workspace, tmp_path, call, python):
    with pytest.raises(InvalidInputError) as caught:
        call(tiny_workspace, tmp_path)
    assert python in str(caught.value) and "--" not in str(caught.value)


def test_parameter_names_turn_into_the_command_lines_flags():
    from analytics.commands.data import FLAGS

    names, plain = ParameterNames(FLAGS), ParameterNames()
    assert (names("crops_per_photo"), names.setting("layout", "coco", "voc")) == ("--crops", "--layout coco or voc")
    assert (plain("crops_per_photo"), plain.setting("layout", "coco", "voc")) == ("crops_per_photo", "layout='coco' or 'voc'")
    with pytest.raises(InvalidInputError, match="--all-instances only go with --layout coco or voc; got --layout folder"):
        import_targets(None, "x", layout="folder", all_instances=True, names=names)


def test_a_cli_made_and_an_api_made_workspace_hold_the_same_rows(tmp_path):
    """Issue 46: the same inputs through ``python -m analytics`` and through ``analytics.api`` give the
    same targets, classes, backgrounds, suites and suite items, row by row (times aside)."""
    targets, scenes, mapping = target_folder(tmp_path / "set"), photo_folder(tmp_path / "scenes", n=3), tmp_path / "map.json"
    mapping.write_text(json.dumps({"widget": [409, 892]}))
    by_cli, by_api = tmp_path / "cli", tmp_path / "api"
    cli("add-targets", "--workspace", str(by_cli), "--path", str(targets), "--layout", "folder", "--imagenet-map", str(mapping), "--package", "set", "--licence", "CC0-1.0")
    cli("add-backgrounds", "--workspace", str(by_cli), "--path", str(scenes), "--crops", "2", "--seed", "3", "--licence", "CC-BY-4.0")
    cli("suite", "--workspace", str(by_cli), "--method", "random", "--n", "2", "--seed", "1", "--realism-threshold", "0", "--name", "two each")
    bd.add_targets(by_api, targets, layout="folder", imagenet_map=mapping, package="set", licence="CC0-1.0")
    bd.add_backgrounds(by_api, scenes, crops_per_photo=2, seed=3, licence="CC-BY-4.0")
    made = bd.build_suite(bd.open_workspace(by_api), method="random", n=2, seed=1, realism_threshold=0.0, name="two each")
    assert made["targets"] == 4 and made["per_target"] == 2 and made["name"] == "two each"
    one, other = Workspace(by_cli, create=False), Workspace(by_api, create=False)
    for table in ("targets", "classes", "backgrounds", "suites", "suite_items"):
        assert rows(one, table) == rows(other, table), table
        assert rows(one, table), table  # compared something


def test_build_suite_run_and_judge_return_what_the_pages_show(tiny_model_workspace):
    said = []
    made = bd.build_suite(tiny_model_workspace, method="random", n=2, distance_models=["tiny"], realism_threshold=0.0, say=said.append)
    assert made["label"] in set(bd.suites(tiny_model_workspace)["label"]) and made["targets"] == 6 and said == []
    assert load_suite(tiny_model_workspace, made["suite"]).items.equals(
        library_build_suite(tiny_model_workspace, method="random", n=2, distance_models=["tiny"], realism_threshold=0.0, save=False).items
    )
    runs = bd.run(tiny_model_workspace, models=["tiny", "bg-only"], suite=made["label"], device="cpu")
    assert list(runs["model"]) == ["tiny", "bg-only"] and (runs["status"] == "done").all()
    assert list(runs["id"]) == list(bd.runs(tiny_model_workspace, suite=made["suite"]).set_index("model").loc[["tiny", "bg-only"], "id"])
    judgment = bd.judge(tiny_model_workspace, annotator="ana", model="tiny", label="borderline", suite=made["label"], note="seam")
    assert judgment.suite_id == made["suite"] and judgment.to_dict()["note"] == "seam"
    assert list(latest_judgments(tiny_model_workspace, made["suite"])["label"]) == ["borderline"]
    with pytest.raises(InvalidInputError, match="label must be one of"):
        bd.judge(tiny_model_workspace, annotator="ana", model="tiny", label="fine")
    with pytest.raises(InvalidInputError, match=r"pass the run's suite or leave suite out$"):  # the API's parameter, not the library's suite_id
        bd.judge(tiny_model_workspace, annotator="ana", model="tiny", label="variant", run_id=runs["id"][0], suite=TINY_SUITE)
    printed = cli_json("run", "--workspace", str(tiny_model_workspace.root), "--model", "tiny", "--suite", made["label"], "--device", "cpu")
    assert (printed["run"], printed["suite_id"], printed["images"]) == (runs["id"][0], made["suite"], int(runs["images"][0]))  # the CLI's run is api.run


def test_an_ontology_suite_uses_the_workspaces_keywords_and_ontology(suite_workspace):
    said = []
    made = bd.build_suite(suite_workspace, method="ontology", n=4, realism_threshold=0.0, say=said.append)
    assert said == [] and made["ontology"]["tables"] == list(made["keyword_tables"][kind]["name"] for kind in ("target", "background"))
    assert made["keyword_diversity"] > 1.0  # the expansion reaches keywords the targets do not detect (tests/fixtures/suites.py)


def test_build_suite_mines_the_ontology_with_the_mining_settings_given(suite_workspace, capsys):
    """Issue 46: where the ontology's rules reach none of the pool's keywords ("expands only 0 of N
    targets"), a notebook gives ``build_suite`` the mining settings of ``python -m analytics ontology``:
    an ontology of the keyword tables mined with them is reused, else one is mined now."""
    from analytics.ontology import list_ontologies

    (fixture,) = list_ontologies(suite_workspace)["id"]  # mined with support 0.1, confidence 0.3 (tests/fixtures/suites.py)
    with pytest.raises(InvalidInputError, match="expands only 0 of 6 targets") as sparse:  # no rule as confident: nothing expands
        bd.build_suite(suite_workspace, method="ontology", n=4, realism_threshold=0.0, min_confidence=0.5)
    assert "`min_confidence` and `min_support` of the suite built in Python" in str(sparse.value)  # what to lower, as typed here
    assert len(list_ontologies(suite_workspace)) == 2  # the sparse one was mined and kept (the Ontology page lists it)
    said: list[str] = []
    made = bd.build_suite(suite_workspace, method="ontology", n=4, realism_threshold=0.0, min_support=0.1, min_confidence=0.3, say=said.append)
    assert made["ontology"]["id"] == fixture and said == []  # the same settings: the stored ontology
    denser = bd.build_suite(suite_workspace, method="ontology", n=4, realism_threshold=0.0, min_confidence=0.2, say=said.append)
    assert (denser["ontology"]["min_support"], denser["ontology"]["min_confidence"]) == (0.005, 0.2)  # support at its default
    assert denser["ontology"]["id"] not in (fixture, made["ontology"]["id"]) and len(said) == 1 and "support 0.005, confidence 0.2" in said[0]
    assert denser["keyword_diversity"] > 1.0
    again = bd.build_suite(suite_workspace, method="ontology", n=4, realism_threshold=0.0, min_confidence=0.2, say=said.append)
    assert again["ontology"]["id"] == denser["ontology"]["id"] and len(said) == 1  # mined once
    refusals = [
        (dict(method="random", min_support=0.1), "`min_support` set how method 'ontology' mines its ontology; got `method` 'random'"),
        (dict(method="ontology", ontology=fixture, min_confidence=0.2), "give `ontology` (a stored one) or `min_confidence`"),
        (dict(method="ontology", min_support=0.0), "`min_support` must be in (0, 1]; got 0.0"),
    ]
    for kwargs, message in refusals:
        with pytest.raises(InvalidInputError) as refused:
            bd.build_suite(suite_workspace, n=4, **kwargs)
        assert message in str(refused.value)
    assert main(["suite", "--workspace", str(suite_workspace.root), "--method", "random", "--n", "2", "--min-confidence", "0.2"]) != 0
    assert "--min-confidence set how method 'ontology' mines its ontology; got --method 'random'" in capsys.readouterr().err  # the CLI's flags
    printed = cli_json("suite", "--workspace", str(suite_workspace.root), "--method", "ontology", "--n", "4", "--realism-threshold", "0", "--min-confidence", "0.2")
    assert printed["suite"] == denser["suite"]  # the command line's suite is the API's


def test_run_leaves_out_the_models_that_cannot_score_the_suite_as_the_run_page_does(tiny_model_workspace, tiny_model_files, tmp_path):
    """Issue 46: the Run page's job is ``api.run(..., skip_unscorable=True)``; without it such a model stops the call first."""
    from analytics import jobs
    from analytics.data import custom_label_space
    from analytics.jobs.process import wait
    from analytics.models import register_torchscript

    (tmp_path / "pets.txt").write_text("cat\ndog\n")
    register_torchscript(tiny_model_workspace, "pets", checkpoint=tiny_model_files["tiny"], label_space=custom_label_space(tmp_path / "pets.txt"), input_size=64)
    with pytest.raises(InvalidInputError, match="workspace class 'disc'.*has no output"):
        bd.run(tiny_model_workspace, models=["pets", "fg-only"], suite=TINY_SUITE, device="cpu")
    assert bd.runs(tiny_model_workspace).empty  # nothing ran
    runs = bd.run(tiny_model_workspace, models=["pets", "fg-only"], suite=TINY_SUITE, device="cpu", skip_unscorable=True)
    assert list(runs["model"]) == ["fg-only"] and list(runs.attrs["skipped"]) == ["pets"] and "has no output" in runs.attrs["skipped"]["pets"]
    job = wait(tiny_model_workspace, jobs.start(tiny_model_workspace, "runs", {"model_names": ["pets", "fg-only"], "suite_id": TINY_SUITE, "device": "cpu"}).id, timeout=300)
    assert job.status == "done" and job.result == {"run_ids": list(runs["id"]), "models": ["fg-only"], "failed": runs.attrs["skipped"]}  # the page's job: the same call


def test_the_suites_pages_job_is_build_suite(suite_workspace):
    """Issue 46: the Suites page's job takes ``api.build_suite``'s parameters and saves what it saves."""
    from analytics import jobs
    from analytics.jobs.process import wait

    params = {"method": "ontology", "n": 4, "realism_threshold": 0.0, "target_table": "tiny-targets", "min_confidence": 0.2}
    job = wait(suite_workspace, jobs.start(suite_workspace, "suite", params).id, timeout=300)
    made = bd.build_suite(suite_workspace, **params)
    assert job.status == "done" and job.result == {"suite_id": made["suite"], "suite": made["label"], "items": made["items"]}
    assert made["items"] == 6 * 4 and made["ontology"]["min_confidence"] == 0.2
    with pytest.raises(InvalidInputError, match="unknown parameter.*keyword_tables"):  # the library's names are not the job's
        jobs.start(suite_workspace, "suite", {"method": "random", "keyword_tables": {}})


def test_mappings_given_in_python_are_recorded(tmp_path):
    bd.add_targets(tmp_path / "ws", target_folder(tmp_path / "set", classes=("gizmo",)), layout="folder", imagenet_map={"gizmo": 7})
    assert list(list_class_mappings(Workspace(tmp_path / "ws", create=False))["gizmo"].imagenet) == [7]


# -- add_model ---------------------------------------------------------------------------------------
class _EmbeddingNet(torch.nn.Module):
    """3x3 conv (3->8, stride 2) + ReLU, global average pool, Linear(8->2) scaled up: (logits, embedding)."""

    def __init__(self) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.conv, self.fc = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.Linear(8, 2)
        for parameter in self.parameters():
            parameter.data = torch.randn(parameter.shape, generator=generator)  # logits of a few units: 1e-5 means something

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        embedding = torch.relu(self.conv(x)).mean((2, 3))
        return self.fc(embedding), embedding


class _BatchBranch(torch.nn.Module):
    """Neither scriptable (``*rest``) nor traceable: its trace records one branch of an ``if`` on the batch size."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(3, 2)

    def forward(self, x: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        logits = self.fc(x.mean((2, 3)))
        return logits if x.shape[0] == 2 else -logits


class _DictOutput(_EmbeddingNet):
    def forward(self, x: torch.Tensor) -> dict:  # type: ignore[override]
        return {"logits": super().forward(x)[0]}


@pytest.fixture(scope="module")
def model_files(tmp_path_factory) -> dict:
    """A team's tiny models of each library (random weights, 2 classes 'disc'/'square')."""
    import timm
    import torchvision

    from tests.fixtures.models import export_onnx, write_labels

    root = tmp_path_factory.mktemp("api-models")
    torch.manual_seed(0)
    torch.save(timm.create_model("test_resnet", pretrained=False, num_classes=2).state_dict(), root / "timm.pth")
    torch.save(torchvision.models.shufflenet_v2_x0_5(num_classes=2).state_dict(), root / "shufflenet.pt")
    return {
        "timm": root / "timm.pth",
        "torchvision": root / "shufflenet.pt",
        "onnx": export_onnx(_EmbeddingNet(), root / "embedding.onnx", ("logits", "embedding")),
        "labels": write_labels(root / "labels.txt"),
    }


def test_add_model_registers_every_source_and_returns_the_models_row(tiny_workspace, model_files, tmp_path):
    """torchvision, timm and ONNX through the one registry: the row returned is the Models page's, and
    the CLI's ``add-model`` with the same inputs stores the same spec."""
    labels = str(model_files["labels"])
    calls = {
        "shufflenet": dict(source="torchvision", arch="shufflenet_v2_x0_5", checkpoint=model_files["torchvision"], label_space=labels, input_size=64),
        "timm": dict(source="timm", arch="test_resnet", checkpoint=model_files["timm"], label_space=labels, input_size=64),
        "onnx": dict(source="onnx", checkpoint=model_files["onnx"], label_space=labels, mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3), crop_pct=0.875),
    }  # fmt: skip
    for name, options in calls.items():
        row = bd.add_model(tiny_workspace, name, **options)
        assert row == bd.models(tiny_workspace).set_index("name").loc[name].to_dict() | {"name": name}
        assert row["source"] == options["source"] and row["n_outputs"] == 2 and row["checkpoint"].startswith("checkpoints/")
    by_cli = tmp_path / "cli"
    cli("add-model", "--workspace", str(by_cli), "--name", "timm", "--arch", "timm:test_resnet", "--checkpoint", str(model_files["timm"]),
        "--labels", labels, "--input-size", "64")  # fmt: skip
    cli("add-model", "--workspace", str(by_cli), "--name", "onnx", "--arch", "onnx", "--checkpoint", str(model_files["onnx"]), "--labels", labels,
        "--mean", "0.5,0.4,0.3", "--std", "0.2,0.25,0.3", "--crop-pct", "0.875")  # fmt: skip
    api_rows = [row for row in rows(tiny_workspace, "models") if row["name"] in ("timm", "onnx")]
    assert rows(Workspace(by_cli, create=False), "models") == api_rows and len(api_rows) == 2
    with pytest.raises(InvalidInputError, match="a model named 'timm' is already registered"):
        bd.add_model(tiny_workspace, "timm", **calls["timm"])
    assert bd.add_model(tiny_workspace, "timm", replace=True, **calls["timm"])["name"] == "timm"
    lite = bd.add_model(tiny_workspace.root, source="efficientnet-lite", arch="efficientnet-lite0")  # named after its variant; a folder works too
    assert (lite["name"], lite["label_space"], lite["n_outputs"]) == ("efficientnet-lite0", "imagenet", 1000)


def test_an_in_memory_module_is_stored_reproducibly(tiny_workspace, tmp_path):
    """An ``nn.Module`` in memory is stored as TorchScript with its preprocessing: loaded in a new
    process, its logits equal the module's own on the same images (<= 1e-5)."""
    net = _EmbeddingNet().train()
    row = bd.add_model(tiny_workspace, "mine", module=net, input_size=48, mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3), label_space=["disc", "square"])
    assert net.training  # left as it was given
    assert (row["source"], row["arch"], row["input_size"], row["n_params"]) == ("module", "_EmbeddingNet", 48, sum(p.numel() for p in net.parameters()))
    assert row["embedding_layer"] == "second output of forward (8-d)" and row["preprocessing"].startswith("resize 48 area (opencv)")
    images = np.random.default_rng(0).integers(0, 256, (5, 60, 60, 3), dtype=np.uint8)
    np.save(tmp_path / "images.npy", images)
    script = (
        "import sys, numpy as np; from analytics.models import load_model; from analytics.workspace import Workspace\n"
        "model = load_model(Workspace(sys.argv[1], create=False), 'mine', device='cpu')\n"
        "x = model.preprocess(np.load(sys.argv[2])); logits, embedding = model.run_batch(x)\n"
        "np.save(sys.argv[3], x.numpy()); np.save(sys.argv[4], logits.numpy())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tiny_workspace.root), str(tmp_path / "images.npy"), str(tmp_path / "x.npy"), str(tmp_path / "logits.npy")],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    x = torch.from_numpy(np.load(tmp_path / "x.npy"))
    assert x.shape == (5, 3, 48, 48)
    with torch.no_grad():
        expected = net.eval()(x)[0].numpy()
    assert np.abs(np.load(tmp_path / "logits.npy") - expected).max() <= 1e-5 and np.abs(expected).max() > 1
    cropped = bd.add_model(tiny_workspace, "cropped", module=net, input_size=48, mean=(0.5,) * 3, std=(0.5,) * 3, crop_pct=0.75, label_space=["a", "b"])
    assert cropped["preprocessing"].startswith("resize 64 bilinear (pil), centre crop 48")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda ws: bd.add_model(ws, "m", module=_BatchBranch(), input_size=32, mean=(0.5,) * 3, std=(0.5,) * 3, label_space=["disc", "square"]),
         "module _BatchBranch cannot be stored reproducibly as TorchScript (script: "),
        (lambda ws: bd.add_model(ws, "m", module=_DictOutput(), input_size=32, mean=(0.5,) * 3, std=(0.5,) * 3, label_space=["disc", "square"]),
         "module _DictOutput: its forward returns dict; it must return logits of shape (batch, classes)"),
        (lambda ws: bd.add_model(ws, "m", module=_EmbeddingNet(), input_size=8, mean=(0.5,) * 3, std=(0.5,) * 3), "input_size must be an integer >= 16"),
        (lambda ws: bd.add_model(ws, "m", module=_EmbeddingNet(), input_size=32, label_space=["disc"]), "module models need mean, std"),
        (lambda ws: bd.add_model(ws, "m", module="net", input_size=32, mean=(0.5,) * 3, std=(0.5,) * 3), "module must be a torch.nn.Module; got str"),
        (lambda ws: bd.add_model(ws, "m", module=_EmbeddingNet(), input_size=32, mean=(0.5,) * 3, std=(0.5,) * 3, label_space=["disc"]),
         "the model has 2 outputs but the custom label space has 1 classes"),
        (lambda ws: bd.add_model(ws, "m", module=_EmbeddingNet(), input_size=32, mean=(0.5,) * 3, std=(0.5,) * 3, label_space=[]), "label_space must be"),
        (lambda ws: bd.add_model(ws, "m", arch="resnet18"), "give source (one of 'efficientnet-lite', 'torchvision', 'torchscript', 'timm'"),
        (lambda ws: bd.add_model(ws, "m", source="onnx", checkpoint="x.onnx", depth=2), "onnx models take the options"),
        (lambda ws: bd.add_model(ws, source="torchvision", arch="resnet18", checkpoint="x.pt"), "torchvision models need name"),
    ],
)  # fmt: skip
def test_add_model_refusals_name_the_python_parameters_and_store_nothing(tiny_workspace, call, message):
    before = workspace_state(tiny_workspace)
    with pytest.raises(InvalidInputError) as caught:
        call(tiny_workspace)
    assert message in str(caught.value) and "--" not in str(caught.value)
    assert workspace_state(tiny_workspace) == before


def test_an_in_memory_source_is_offered_to_python_only():
    from analytics.models import SOURCES, registrable_sources

    assert SOURCES["module"].python_only and "module" not in [source.name for source in registrable_sources()]
    with pytest.raises(SystemExit):
        main(["add-model", "--source", "module", "--name", "m"])
