"""The example notebook ``examples/tour.ipynb`` runs top to bottom on a small real workspace
(tests/fixtures/tour.py) and shows what the Matrices and Failures pages and the release gate show:
Plotly figures (the matrices) and the gate's verdict table.

The kernel is this interpreter (a kernel spec written to a temporary ``JUPYTER_PATH``, so no
``python3`` kernel installed elsewhere is picked up); the workspace reaches the notebook through
``BACKDROP_WORKSPACE``. No network: the figures are Plotly's JSON outputs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "tour.ipynb"
KERNEL = "backdrop-tour"
PLOTLY_MIME = "application/vnd.plotly.v1+json"


def outputs_of(notebook) -> list[dict]:
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]


@pytest.fixture
def this_python_kernel(tmp_path, monkeypatch) -> str:
    """A kernel spec named :data:`KERNEL` that runs ipykernel in this interpreter."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Backdrop tests", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return KERNEL


def test_the_tour_runs_and_shows_the_matrices_and_the_gates_table(tour_workspace, this_python_kernel, monkeypatch, tmp_path):
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(tour_workspace.root))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(notebook, kernel_name=this_python_kernel, timeout=120, resources={"metadata": {"path": str(ROOT)}})
    client.execute()

    outputs = outputs_of(notebook)
    assert not [o for o in outputs if o.output_type == "error"]
    figures = [json.loads(o.data[PLOTLY_MIME]) if isinstance(o.data[PLOTLY_MIME], str) else o.data[PLOTLY_MIME]
               for o in outputs if PLOTLY_MIME in o.get("data", {})]  # fmt: skip
    heatmaps = [f for f in figures if [t["type"] for t in f["data"]] == ["heatmap"] and "distance of background" in str(f["layout"])]
    assert len(heatmaps) >= 4  # one per signal of the run
    assert any(t["type"] == "table" for f in figures for t in f["data"])  # the verdict figure
    tables = [o.data["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("worst_case_accuracy_min" in html and "accuracy_drop_max" in html for html in tables)  # the verdict DataFrame
    assert any("keyword" in html and "error_rate" in html for html in tables)  # the failure table
