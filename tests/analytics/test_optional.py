"""The optional libraries (analytics._optional): a missing one is one line naming the extra that
installs it, and pyproject.toml's extras hold what the library asks for."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
import types
from pathlib import Path

import pytest

from analytics import _optional
from analytics._optional import EXTRAS, import_optional
from analytics.cli import main
from analytics.exceptions import BackdropError, MissingDependencyError

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL = {"timm", "transformers", "onnx", "onnxruntime", "ray"}


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _names(requirements: list[str], extras: dict[str, list[str]]) -> set[str]:
    """Distribution names of an extra's requirements, self-references (backdrop-invariance[a,b]) followed."""
    names: set[str] = set()
    for requirement in requirements:
        name, inner = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]*)\])?", requirement).groups()
        if name == _optional.DISTRIBUTION:
            for extra in inner.split(","):
                names |= _names(extras[extra.strip()], extras)
        else:
            names.add(name.lower())
    return names


def _require_calls() -> list[tuple[Path, str, str]]:
    """(file, module, extra) of every ``import_optional(module, extra=...)`` in the library."""
    calls = []
    for path in (ROOT / "analytics").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "import_optional":
                extra = next(k.value.value for k in node.keywords if k.arg == "extra")
                calls.append((path, node.args[0].value, extra))
    return calls


def test_an_installed_library_is_returned(monkeypatch):
    fake = types.ModuleType("timm")
    monkeypatch.setitem(sys.modules, "timm", fake)
    assert import_optional("timm", extra="timm") is fake


@pytest.mark.parametrize("module", ["timm", "timm.data"])
def test_a_missing_library_is_one_line_naming_the_extra(monkeypatch, module):
    monkeypatch.setitem(sys.modules, "timm", None)  # `import timm` now fails as if it were not installed
    monkeypatch.setitem(sys.modules, module, None)  # and so does a submodule an earlier test imported
    with pytest.raises(MissingDependencyError) as raised:
        import_optional(module, extra="timm")
    message = str(raised.value)
    assert isinstance(raised.value, BackdropError) and "\n" not in message
    assert "`timm` package" in message and "pip install 'backdrop-invariance[timm]'" in message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_a_broken_install_keeps_its_own_error(monkeypatch):
    def broken(name):
        raise ModuleNotFoundError("No module named 'huggingface_hub'", name="huggingface_hub")

    monkeypatch.setattr(_optional.importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError) as raised:
        import_optional("timm", extra="timm")
    assert not isinstance(raised.value, MissingDependencyError)


def test_add_model_without_timm_exits_2_with_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "timm", None)
    (tmp_path / "model.pt").write_bytes(b"not read: timm is asked for first")
    (tmp_path / "labels.txt").write_text("disc\nsquare\n")
    argv = ["add-model", "--arch", "timm:resnet18", "--name", "r18", "--checkpoint", str(tmp_path / "model.pt"),
            "--labels", str(tmp_path / "labels.txt"), "--workspace", str(tmp_path / "ws")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "pip install 'backdrop-invariance[timm]'" in err


def test_every_extra_the_library_names_is_declared_with_its_library():
    extras = _extras()
    calls = _require_calls()
    assert {extra for _, _, extra in calls} == set(EXTRAS) <= set(extras)
    for path, module, extra in calls:
        assert module.partition(".")[0] in _names(extras[extra], extras), (path, module, extra)


def test_models_and_all_hold_the_extras_they_promise():
    extras = _extras()
    assert _names(extras["models"], extras) == _names(extras["timm"] + extras["transformers"] + extras["onnx"], extras)
    every = set().union(*(_names(requirements, extras) for name, requirements in extras.items() if name not in ("all", "dev")))
    assert _names(extras["all"], extras) == every


def test_the_library_imports_optional_libraries_only_through_import_optional():
    bare = []
    for path in (ROOT / "analytics").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            bare += [f"{path.relative_to(ROOT)}:{node.lineno} {name}" for name in names if name.partition(".")[0] in OPTIONAL]
    assert bare == []
