"""Issue 47.8: the dashboard's shell paints before the heavy libraries load. A start showed a blank page
with only "app" in the sidebar for 12-18 s, because ``app.py`` imported ``analytics.runs`` (torch,
torchvision, scikit-learn) before it drew anything.

Checked without timing: in a fresh interpreter that refuses to import torch, scikit-learn and SciPy,
Home still draws its navigation, sidebar and title, and only then fails, at the import under its
"Loading Backdrop's analysis libraries" spinner."""

from __future__ import annotations

import json
import subprocess
import sys

from analytics.workspace import PROJECT_ROOT, Workspace
from tests.fixtures.app import APP_TIMEOUT_S
from ui.state import WORKSPACE_PATH

BLOCKED = ("torch", "torchvision", "sklearn", "scipy", "transformers")
SCRIPT = """
import importlib.abc, json, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} is imported before the first paint")
        return None

sys.meta_path.insert(0, Refuse())
from streamlit.testing.v1 import AppTest

app = AppTest.from_file({app!r}, default_timeout={timeout!r})
app.session_state[{key!r}] = {workspace!r}
app.run()
print(json.dumps({{
    "titles": [title.value for title in app.title],
    "sidebar": [field.label for field in app.sidebar.text_input],
    "exceptions": [exception.message for exception in app.exception],
}}))
"""


def test_home_draws_its_shell_before_importing_torch(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    script = SCRIPT.format(blocked=BLOCKED, app=str(PROJECT_ROOT / "app.py"), timeout=APP_TIMEOUT_S, key=WORKSPACE_PATH, workspace=str(workspace.root))
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=5 * APP_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    assert shown["titles"] == ["Backdrop"]  # the title is up...
    assert shown["sidebar"] == ["Workspace", "Your name"]  # ...and the sidebar...
    # ...before the libraries' import under the spinner, the first to need torch, fails
    assert len(shown["exceptions"]) == 1 and "is imported before the first paint" in shown["exceptions"][0], shown

