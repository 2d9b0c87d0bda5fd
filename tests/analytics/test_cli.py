"""``python -m analytics``'s output conventions: strict JSON (no bare NaN) from every command, and every user
error as one line on stderr with exit status 2 and nothing written."""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import warnings

import numpy as np
import pytest
import torch

from analytics.cli import build_parser, main
from analytics.models import read_state_dict
from analytics.repository import list_repositories
from analytics.workspace import to_json
from tests.fixtures.cli import cli_error, workspace_state


def strict_loads(text: str):
    """``json.loads`` that refuses NaN / Infinity (Python's parser accepts them by default)."""

    def refuse(constant: str):
        raise ValueError(f"invalid JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def test_suite_json_without_distances_prints_null_not_nan(capsys, tiny_workspace):
    # no registered model: the random suite stores no distances, so their mean and spread are NaN
    code = main(["suite", "--workspace", str(tiny_workspace.root), "--method", "random", "--n", "2", "--realism-threshold", "0", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    result = strict_loads(out)
    assert result["distance_mean"] is None and result["distance_std"] is None
    assert result["targets"] == 6


def test_to_json_maps_every_non_finite_value_to_null():
    value = {"a": float("nan"), "b": [np.float32("inf"), 1.5], "c": np.array([np.nan, 2.0]), 3: (-math.inf, np.int64(4))}
    assert strict_loads(to_json(value)) == {"a": None, "b": [None, 1.5], "c": [None, 2.0], "3": [None, 4]}
    with pytest.raises(TypeError, match="set is not JSON serialisable"):
        to_json({"x": {1}})


# -- user errors: one line on stderr, exit status 2, nothing written ---------------------------
def test_a_manifest_of_only_bad_entries_records_nothing(tiny_workspace, tmp_path, capsys):
    (tmp_path / "garbage.pt").write_bytes(bytes(range(7, 250)))
    manifest = tmp_path / "bad.csv"
    manifest.write_text(
        "name,architecture,checkpoint,label_space\n"
        "gone,resnet18,missing.pt,in9\n"
        "odd,resnet-999,garbage.pt,in9\n"
        "junk,resnet18,garbage.pt,in9\n"
        ",resnet18,garbage.pt,in9\n"
    )
    before = workspace_state(tiny_workspace)
    line = cli_error(["repository", "add", str(manifest), "--name", "zoo", "--workspace", str(tiny_workspace.root)], capsys)
    assert str(manifest) in line and "repository 'zoo' was not recorded" in line
    assert "row 5: empty name" in line and "gone: row 2:" in line and "(and 2 more)" in line and "fix or remove these entries" in line
    assert workspace_state(tiny_workspace) == before and list_repositories(tiny_workspace) == []
    manifest.write_text("name,architecture,checkpoint,label_space\n")
    assert "the manifest has no rows" in cli_error(["repository", "add", str(manifest), "--workspace", str(tiny_workspace.root)], capsys)
    assert workspace_state(tiny_workspace) == before


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["run", "--model", "tiny", "--suite", "tiny-suite"], "no suite 'tiny-suite'"),
        (["repository", "run", "--name", "nope", "--suite", "tiny-suite", "--device", "cpu"], "no repository 'nope'"),
    ],
)
def test_run_errors_before_any_progress_bar(tiny_workspace, capsys, argv, words):
    before = workspace_state(tiny_workspace)
    assert words in cli_error([*argv, "--workspace", str(tiny_workspace.root)], capsys)
    assert workspace_state(tiny_workspace) == before


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["judge", "--annotator", "a", "--model", "m", "--label", "x"], "error: judge: argument --label: invalid choice: 'x' (choose from 'invariant'"),
        (["repository", "add"], "error: repository add: the following arguments are required: MANIFEST"),
        (["repository", "create", "r", "--models", " , "], "error: repository create: argument --models: give registered model names"),
        (["nosuch"], "error: argument COMMAND: invalid choice: 'nosuch'"),
    ],
)
def test_usage_errors_are_one_line_naming_the_subcommand(tiny_workspace, capsys, argv, words):
    before = workspace_state(tiny_workspace)
    line = cli_error([*argv, "--workspace", str(tiny_workspace.root)], capsys)
    assert line.startswith(words) and line.endswith("--help`)") and "usage:" not in line
    assert workspace_state(tiny_workspace) == before


@pytest.mark.parametrize(("command", "inside"), [(["runs"], ""), (["add-model", "--arch", "efficientnet-lite0"], "sub")])
def test_a_workspace_path_that_is_a_file(tmp_path, capsys, command, inside):
    file = tmp_path / "notes.txt"
    file.write_text("not a workspace")
    path = file / inside if inside else file
    line = cli_error([*command, "--workspace", str(path)], capsys)
    assert f"workspace path {path}" in line and "is a file, not a folder" in line and str(file) in line
    assert "give the path of a workspace folder" in line and "analytics demo" not in line
    assert file.read_text() == "not a workspace"


@pytest.mark.parametrize(
    ("make", "words", "not_words"),
    [
        ("torchscript", "a TorchScript archive, not a state dict; register it as TorchScript", "would run code"),
        ("garbage", "not a PyTorch checkpoint (corrupt or another format", "would run code"),
        ("legacy storage", "not a readable PyTorch checkpoint (truncated or corrupt", "would run code"),
        ("runs code", "would run code when unpickled (Trying to load unsupported GLOBAL posix.system", "corrupt"),
    ],
)
def test_bad_checkpoints_are_one_line_without_torch_warnings(tiny_workspace, tiny_model_files, tmp_path, capsys, recwarn, make, words, not_words):
    path = tmp_path / "weights.pt"
    if make == "torchscript":
        path = tiny_model_files["tiny"]
    elif make == "garbage":
        path.write_bytes(bytes(range(7, 250)) * 4)
    elif make == "legacy storage":  # the legacy (pre-zip) format holding an untyped storage: torch fails with AttributeError
        torch.save({"w": torch.zeros(2).untyped_storage()}, path, _use_new_zipfile_serialization=False)
    else:
        path.write_bytes(pickle.dumps({"w": _RunsCode()}, protocol=2))
    before = workspace_state(tiny_workspace)
    argv = ["add-model", "--name", "m", "--arch", "resnet18", "--checkpoint", str(path), "--labels", str(tiny_model_files["labels"])]
    line = cli_error([*argv, "--input-size", "64", "--workspace", str(tiny_workspace.root)], capsys)
    assert str(path) in line and words in line and not_words not in line
    assert recwarn.list == []
    assert workspace_state(tiny_workspace) == before


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("true",))


def test_a_warning_of_a_good_load_is_logged_as_one_line(tmp_path, monkeypatch, caplog, recwarn):
    path = tmp_path / "w.pt"
    torch.save({"w": torch.zeros(2)}, path)
    real = torch.load

    def warning_load(*args, **kwargs):
        warnings.warn("an old format\nsecond line", UserWarning, stacklevel=2)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "load", warning_load)
    assert list(read_state_dict(path)) == ["w"]
    assert recwarn.list == [] and [r.getMessage() for r in caplog.records] == [f"{path}: an old format"]


def test_a_torchscript_that_is_no_image_classifier_is_one_line(tiny_workspace, tiny_model_files, tmp_path, capsys):
    path = tmp_path / "linear.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch 2.14 deprecates TorchScript; users still ship it
        torch.jit.script(torch.nn.Linear(2, 2)).save(str(path))  # takes pairs of numbers, not images
    before = workspace_state(tiny_workspace)
    argv = ["add-model", "--name", "lin", "--arch", "torchscript", "--checkpoint", str(path), "--labels", str(tiny_model_files["labels"])]
    line = cli_error([*argv, "--input-size", "64", "--workspace", str(tiny_workspace.root)], capsys)
    assert str(path) in line and "its forward fails on a (1, 3, 64, 64) image batch" in line and "mat1 and mat2 shapes" in line
    assert workspace_state(tiny_workspace) == before


def _subparsers(parser: argparse.ArgumentParser, name: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                found += _subparsers(sub, f"{name} {command}".strip())
    return found


def test_every_device_option_is_the_one_helper():
    """``--device`` comes from ``add_device_option`` in every subcommand (issue 39): one spelling, one help."""
    helps = {
        command: action.help
        for command, parser in _subparsers(build_parser())
        for action in parser._actions
        if "--device" in action.option_strings
    }
    assert len(helps) >= 12, sorted(helps)
    assert len(set(helps.values())) == 1, helps
