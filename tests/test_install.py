"""Backdrop as a team takes it into its own work: a wheel built from this checkout, installed into a
fresh virtual environment outside the checkout, used from folders that know nothing of Backdrop.

The fresh environment gets the wheel alone (``--no-deps``); its dependencies are read from the test
environment through a ``.pth`` file, so the test needs no network and no second torch. A second
``.pth`` hides the modules named in ``BACKDROP_TEST_HIDDEN`` (a ``None`` in ``sys.modules``, so
importing one fails as if it were not installed): an extra's library is then missing for one command. Every command
runs with a working folder outside the checkout, and the test asserts that ``analytics`` is imported
from the fresh environment, not from here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.models import CENTRE_BOX, RegionNet, save_torchscript, write_labels
from tests.fixtures.workspace import CLASSES, make_background, make_target

ROOT = Path(__file__).resolve().parents[1]
IMAGE_SIDE = 256  # a new workspace's image size (analytics.data.DEFAULT_IMAGE_SIZE)
HIDDEN = "BACKDROP_TEST_HIDDEN"  # comma-separated modules the fresh environment cannot import
TIMM_ARCH = "test_resnet"  # timm's own tiny test network (0.4 M parameters, 160 px)
TIMM_EXTRA_MET = (  # the installed wheel's [timm] extra asks for timm once, in a range the visible timm meets
    "import importlib.metadata as m\n"
    "from packaging.requirements import Requirement\n"
    "asked = [r for r in map(Requirement, m.requires('backdrop-invariance')) if r.name == 'timm' and r.marker and r.marker.evaluate({'extra': 'timm'})]\n"
    "print(len(asked) == 1 and asked[0].specifier.contains(m.version('timm')))\n"
)
PASSING_POLICY = '[suite]\nmethod = "random"\nn = 4\nseed = 0\n\n[rules]\nworst_case_accuracy_min = 0.0\naccuracy_drop_max = 0.5\n'


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """``{"python", "backdrop", "site"}`` of a fresh environment holding the wheel of this checkout."""
    root = tmp_path_factory.mktemp("installed")
    wheels = root / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(wheels), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("backdrop_invariance-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    (site / "backdrop-test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (site / "backdrop-test-hidden.pth").write_text(f"import os, sys; sys.modules.update(dict.fromkeys(filter(None, os.environ.get({HIDDEN!r}, '').split(',')), None))\n")
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {"python": python, "backdrop": venv / "bin" / "backdrop", "site": site}


def _env() -> dict[str, str]:
    """The caller's environment without anything that points into this checkout."""
    dropped = ("PYTHONPATH", "BACKDROP_WORKSPACE", "BACKDROP_TEAM", "BACKDROP_DATA_ROOTS", "BACKDROP_CACHE")
    return {key: value for key, value in os.environ.items() if key not in dropped}


def _run(argv, cwd: Path, timeout: int = 600, *, hidden: str = "") -> subprocess.CompletedProcess:
    env = {**_env(), HIDDEN: hidden}
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_backdrop_command_works_from_an_empty_folder(installed, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    where = _run([installed["python"], "-c", "import analytics; print(analytics.__file__)"], empty)
    assert Path(where.stdout.strip()).is_relative_to(installed["site"]), where.stdout + where.stderr
    # the README's `bd.check(..., policy=bd.EXAMPLE_POLICY)`: the example policy ships in the wheel
    policy = _run([installed["python"], "-c", "from analytics.gate import EXAMPLE_POLICY, load_policy; load_policy(EXAMPLE_POLICY); print(EXAMPLE_POLICY)"], empty)
    assert policy.returncode == 0 and Path(policy.stdout.strip()).is_relative_to(installed["site"]), policy.stdout + policy.stderr
    help_text = _run([installed["backdrop"], "--help"], empty)
    assert help_text.returncode == 0 and help_text.stdout.startswith("usage: backdrop")
    for command in ("serve", "demo", "check", "add-targets", "run"):
        assert command in help_text.stdout
    check_help = _run([installed["backdrop"], "check", "--help"], empty)
    assert check_help.returncode == 0 and "--policy" in check_help.stdout
    dry = _run([installed["backdrop"], "serve", "--dry-run", "--port", "8765"], empty)
    assert dry.returncode == 0, dry.stderr
    command = dry.stdout.split()
    app = Path(command[command.index("run") + 1])
    assert app.is_file() and app.is_relative_to(installed["site"])  # the dashboard shipped in the wheel
    assert command[-8:] == ["--server.port", "8765", "--server.headless", "true", "--server.address", "127.0.0.1", "--server.maxUploadSize", "1024"]
    refused = _run([installed["backdrop"], "serve", "--team", "--dry-run"], empty)
    assert refused.returncode == 2 and "admin" in refused.stderr and refused.stderr.count("\n") == 1
    info = _run([installed["backdrop"], "info"], empty)  # a usage error names ./workspace, never site-packages
    assert info.returncode == 2 and str(empty / "workspace") in info.stderr
    assert sorted(p.name for p in empty.iterdir()) == []  # nothing written where nothing was asked for


def test_the_installed_dashboard_renders_its_home_page(installed, tmp_path):
    script = (
        "import json, analytics, pathlib\n"
        "from streamlit.testing.v1 import AppTest\n"
        "app = pathlib.Path(analytics.__file__).parent / '_dashboard' / 'app.py'\n"
        "at = AppTest.from_file(str(app), default_timeout=240)\n"
        "at.run()\n"
        "print(json.dumps({'exceptions': [e.value for e in at.exception], 'titles': [t.value for t in at.title]}))\n"
    )
    done = _run([installed["python"], "-c", script], tmp_path)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    assert shown == {"exceptions": [], "titles": ["Backdrop"]}


def _team_repository(folder: Path) -> Path:
    """A team's own repository: its photos with masks, background photos, a TorchScript checkpoint,
    its labels and a gate policy, committed to git; nothing of Backdrop in it."""
    rng = np.random.default_rng(0)
    for class_name in CLASSES:
        for index in range(3):
            target = make_target(class_name, index, rng)
            for kind, array in (("images", target.image), ("masks", target.mask.astype(np.uint8) * 255)):
                path = folder / "data" / "targets" / kind / class_name / f"{index}.png"
                path.parent.mkdir(parents=True, exist_ok=True)
                Image.fromarray(array).resize((IMAGE_SIDE, IMAGE_SIDE), Image.NEAREST).save(path)
    (folder / "data" / "backgrounds").mkdir(parents=True)
    for index in range(12):
        photo = Image.fromarray(make_background(index, rng).image).resize((IMAGE_SIDE, IMAGE_SIDE), Image.NEAREST)
        photo.save(folder / "data" / "backgrounds" / f"bg{index:02d}.png")
    save_torchscript(RegionNet((CENTRE_BOX,)), folder / "model.pt", seed=3)  # reads the object only
    write_labels(folder / "labels.txt")
    (folder / "policy.toml").write_text(PASSING_POLICY)
    (folder / ".gitignore").write_text("workspace/\nbackdrop-check/\n")
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.org"]
    for argv in (["git", "init", "-q"], ["git", "add", "."], [*git, "commit", "-q", "-m", "model and data"]):
        subprocess.run(argv, cwd=folder, check=True, capture_output=True)
    return folder


def test_the_gate_runs_from_a_teams_own_repository(installed, tmp_path):
    repo = _team_repository(tmp_path / "team-repo")
    backdrop = installed["backdrop"]
    # the README's job: restore (here: build) the workspace, then check the new checkpoint
    for argv in (["add-targets", "--path", "data/targets", "--layout", "folder"], ["add-backgrounds", "--path", "data/backgrounds"]):
        done = _run([backdrop, *argv, "--workspace", "workspace"], repo)
        assert done.returncode == 0, done.stderr
    check = [backdrop, "check", "--workspace", "workspace", "--model", "candidate", "--arch", "torchscript", "--checkpoint", "model.pt",
             "--labels", "labels.txt", "--input-size", "64", "--replace", "--device", "cpu", "--out", "backdrop-check"]  # fmt: skip
    passed = _run([*check, "--policy", "policy.toml"], repo)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    suite = ET.parse(repo / "backdrop-check" / "junit.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "0")
    assert "every rule holds" in (repo / "backdrop-check" / "summary.md").read_text()

    (repo / "strict.toml").write_text(PASSING_POLICY.replace("worst_case_accuracy_min = 0.0", "worst_case_accuracy_min = 0.99"))
    failed = _run([*check, "--policy", "strict.toml"], repo)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    suite = ET.parse(repo / "backdrop-check" / "junit.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    failure = next(case for case in suite.iter("testcase") if case.find("failure") is not None)
    assert "worst_case_accuracy_min" in failure.get("name")
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert status.split() == ["??", "strict.toml"]  # the workspace and the check's files stay out of the team's tree


def test_a_timm_model_needs_the_timm_extra(installed, tmp_path):
    """Without timm, registering a timm model is one line naming the extra (exit 2); with it (the
    wheel's ``[timm]`` extra asks for timm, and the timm the environment sees meets the range) the
    same command registers the model. The extra is read from the installed metadata, not resolved by
    pip: pip would check every dependency against this mixed environment and may fetch a second torch."""
    import timm
    import torch

    with torch.random.fork_rng():
        torch.manual_seed(0)
        torch.save(timm.create_model(TIMM_ARCH, num_classes=len(CLASSES)).state_dict(), tmp_path / "model.pt")
    write_labels(tmp_path / "labels.txt")
    add = [installed["backdrop"], "add-model", "--workspace", "workspace", "--arch", f"timm:{TIMM_ARCH}", "--name", "candidate",
           "--checkpoint", "model.pt", "--labels", "labels.txt", "--json"]  # fmt: skip
    missing = _run(add, tmp_path, hidden="timm")
    assert missing.returncode == 2 and missing.stdout == "", missing.stdout + missing.stderr
    assert missing.stderr.count("\n") == 1 and "`timm`" in missing.stderr and "pip install 'backdrop-invariance[timm]'" in missing.stderr
    extra = _run([installed["python"], "-c", TIMM_EXTRA_MET], tmp_path)
    assert extra.stdout.strip() == "True", extra.stdout + extra.stderr
    added = _run(add, tmp_path)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["source"] == "timm"
