"""``python -m analytics --help`` starts at once: building the parser and the help of every subcommand
imports no stage library (torch, pandas, scipy, ...). The choices and defaults the parser shows come from
:mod:`analytics._choices`, the one definition the stages re-export; a handler imports its stage when it runs.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from analytics import _choices, _install, commands

ROOT = Path(__file__).resolve().parents[2]
#: What ``--help`` must not import (each costs seconds or hundreds of MB).
HEAVY = {"torch", "torchvision", "scipy", "pandas", "sklearn", "numba", "networkx", "streamlit", "plotly", "cv2", "mlxtend", "statsmodels"}

# Run in a fresh interpreter: this test process has imported most of the library already.
PROBE = """
import argparse, json, sys
from analytics.cli import build_parser

def helps(parser):
    yield parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from helps(sub)

texts = list(helps(build_parser()))
print(json.dumps({"helps": len(texts), "modules": sorted(sys.modules)}))
"""


def _probe() -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_help_of_every_command_imports_no_heavy_library():
    probe = _probe()
    modules = set(probe["modules"])
    command_modules = {f"{commands.__name__}.{m.name}" for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")}
    assert command_modules <= modules  # every command module was imported, so a heavy import in any of them shows
    assert probe["helps"] > len(command_modules)  # the top parser, every subcommand and every action of one
    assert sorted(HEAVY & {name.partition(".")[0] for name in modules}) == []


@pytest.mark.parametrize(
    "module",
    ["analytics.data", "analytics.judging", "analytics.keywords", "analytics.runs", "analytics.variance", "analytics.ontology", "analytics.suites", "analytics.zoo"],
)
def test_a_stage_re_exports_the_one_definition(module):
    """Every name a stage exports (``__all__``) that :mod:`analytics._choices` defines is that object, not a copy."""
    stage = importlib.import_module(module)
    shared = [name for name in stage.__all__ if hasattr(_choices, name)]
    assert shared, f"{module} exports none of analytics._choices' names"
    for name in shared:
        assert getattr(stage, name) is getattr(_choices, name), f"{module}.{name} is a copy, not analytics._choices.{name}"


def test_the_default_workspace_is_defined_once():
    from analytics import workspace

    assert workspace.default_workspace_path is _install.default_workspace_path
    assert workspace.ENV_VAR is _install.ENV_VAR


def test_the_names_offered_are_the_registries():
    from analytics.ontology import ALGORITHMS
    from analytics.suites import SAMPLERS
    from analytics.suites.sampling import REALISM_SCORERS

    assert tuple(SAMPLERS) == _choices.SAMPLER_NAMES
    assert tuple(REALISM_SCORERS) == _choices.REALISM_SCORER_NAMES
    assert tuple(ALGORITHMS) == _choices.ALGORITHM_NAMES
    assert _choices.DEFAULT_REALISM in REALISM_SCORERS and _choices.DEFAULT_ALGORITHM in ALGORITHMS
