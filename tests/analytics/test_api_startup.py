"""``from analytics import api`` in a notebook imports no library that only some calls need (issue 46):
captum, torchvision, scikit-learn and the model sources' libraries load when the call that needs them
runs, and a notebook without ipywidgets gets no tqdm "IProgress not found" warning when one does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: What ``import analytics.api`` must not import: each is needed by some calls only, and costs from a
#: few tenths of a second (scikit-learn) to seconds (torchvision, captum with matplotlib, transformers).
OPTIONAL = {"captum", "matplotlib", "torchvision", "sklearn", "shap", "timm", "transformers", "onnx", "onnxruntime", "ray", "streamlit"}

# A fresh interpreter that looks like a Jupyter kernel without ipywidgets to tqdm.autonotebook (the
# check captum's ``tqdm.auto`` import makes); this test process has imported most of the library already.
PROBE = """
import json, sys, types, warnings
sys.modules["ipykernel.zmqshell"] = types.ModuleType("ipykernel.zmqshell")
sys.modules["ipywidgets"] = None
ipython = sys.modules.setdefault("IPython", types.ModuleType("IPython"))
ipython.get_ipython = lambda: type("ZMQInteractiveShell", (), {})()
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import analytics.api
    after_import = sorted({name.partition(".")[0] for name in sys.modules})
    import torch
    from analytics.saliency import METHODS
    maps = METHODS["saliency"](torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 2))).attribute(
        torch.rand(1, 3, 8, 8), torch.tensor([1])
    )
print(json.dumps({
    "after_import": after_import,
    "after_attribute": sorted({name.partition(".")[0] for name in sys.modules}),
    "shape": list(maps.shape),
    "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
}))
"""


def test_importing_the_api_in_a_notebook_imports_no_optional_library_and_warns_nothing():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    probe = json.loads(done.stdout.splitlines()[-1])
    assert sorted(OPTIONAL & set(probe["after_import"])) == []
    # captum loads with the first attribution, which runs: laziness left the method working
    assert "captum" in probe["after_attribute"] and probe["shape"] == [1, 8, 8]
    assert [w for w in probe["warnings"] if "IProgress" in w or "Tqdm" in w] == []
