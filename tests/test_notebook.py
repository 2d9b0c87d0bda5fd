"""The example notebooks run top to bottom. ``examples/tour.ipynb`` on a small real workspace
(tests/fixtures/tour.py) shows what the Matrices and Failures pages and the release gate show:
Plotly figures (the matrices) and the gate's verdict table. ``examples/own_models.ipynb`` builds a
workspace from nothing with ``analytics.api`` calls alone (issue 46): a timm and a transformers model
from disk, COCO targets, backgrounds, an ontology suite, both runs, matrices, failures, a judgment and
the gate, on files its first cell makes (tiny random-weight models, drawn objects, scikit-learn's
sample photos) in a temporary folder (here under ``tmp_path``, through ``TMPDIR``).

The kernel is this interpreter (a kernel spec written to a temporary ``JUPYTER_PATH``, so no
``python3`` kernel installed elsewhere is picked up); the workspace reaches the notebook through
``BACKDROP_WORKSPACE``. No network: the figures are Plotly's JSON outputs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from analytics import api as bd
from analytics.data import list_targets

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "tour.ipynb"
OWN_MODELS = ROOT / "examples" / "own_models.ipynb"
KERNEL = "backdrop-tour"
PLOTLY_MIME = "application/vnd.plotly.v1+json"


def outputs_of(notebook) -> list[dict]:
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]


def figures_of(outputs: list[dict]) -> list[dict]:
    """The Plotly figures among ``outputs``, as JSON."""
    return [json.loads(o.data[PLOTLY_MIME]) if isinstance(o.data[PLOTLY_MIME], str) else o.data[PLOTLY_MIME]
            for o in outputs if PLOTLY_MIME in o.get("data", {})]  # fmt: skip


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
    figures = figures_of(outputs)
    heatmaps = [f for f in figures if [t["type"] for t in f["data"]] == ["heatmap"] and "distance of background" in str(f["layout"])]
    assert len(heatmaps) >= 4  # one per signal of the run
    assert any(t["type"] == "table" for f in figures for t in f["data"])  # the verdict figure
    tables = [o.data["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("worst_case_accuracy_min" in html and "accuracy_drop_max" in html for html in tables)  # the verdict DataFrame
    assert any("keyword" in html and "error_rate" in html for html in tables)  # the failure table


@pytest.mark.slow  # the real EfficientNet-Lite0 names what the photos show (the ontology's keywords)
def test_own_models_builds_a_workspace_with_analytics_api_calls_alone(this_python_kernel, monkeypatch, tmp_path):
    """Issue 46 item 7: a timm and a transformers model from disk, COCO targets, backgrounds, an
    ontology suite, both runs, matrices, failures, a judgment and the gate, every step after the
    set-up cell an ``analytics.api`` call."""
    notebook = nbformat.read(OWN_MODELS, as_version=4)
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    assert "analytics" not in code[0] and "bd." not in code[0]  # the set-up cell only makes files
    mentions = {line.strip() for source in code for line in source.splitlines() if "analytics" in line and not line.strip().startswith("#")}
    assert mentions == {"from analytics import api as bd"}  # no other Backdrop module
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))  # the notebook's tempfile.mkdtemp (the kernel inherits it)
    monkeypatch.delenv("BACKDROP_WORKSPACE", raising=False)
    # a cell's limit, not a budget: the notebook runs in 15-25 s on 2 cores, and took 50-130 s on 2 cores that a whole
    # test suite shared (the ontology suite's cell, the keywords of every image, then up to 55 s)
    client = nbclient.NotebookClient(notebook, kernel_name=this_python_kernel, timeout=300, resources={"metadata": {"path": str(ROOT)}})
    client.execute()

    outputs = outputs_of(notebook)
    assert not [o for o in outputs if o.output_type == "error"]
    (made,) = tmp.glob("backdrop-own-models-*")
    ws = bd.open_workspace(made / "workspace")
    models = bd.models(ws).set_index("name")
    assert dict(models["source"]) == {"team-resnet18": "timm", "team-vit": "transformers", "efficientnet-lite0": "efficientnet-lite"}
    assert set(list_targets(ws)["package"]) == {"team-coco"} and len(list_targets(ws)) == 8
    suites = bd.suites(ws)
    assert list(suites["method"]) == ["ontology"] and list(suites["n"]) == [4]
    runs = bd.runs(ws, suite=suites["id"].iloc[0])
    assert sorted(runs["model"]) == ["team-resnet18", "team-vit"] and (runs["status"] == "done").all()
    assert list(bd.judgments(ws, suites["id"].iloc[0])["model"]) == ["team-resnet18"]
    assert (made / "check" / "junit.xml").is_file() and (made / "check" / "summary.md").is_file()

    figures = figures_of(outputs)
    heatmaps = [f for f in figures if [t["type"] for t in f["data"]] == ["heatmap"] and "distance of background" in str(f["layout"])]
    titled = [str(f["layout"].get("title")) for f in heatmaps]
    assert len(heatmaps) >= 8 and all(sum(f"{model}: " in title for title in titled) >= 4 for model in ("team-resnet18", "team-vit"))  # both runs' matrices
    assert any(t["type"] == "table" for f in figures for t in f["data"])  # the verdict figure
    tables = [o.data["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("keyword_error_rate_below" in html and "baseline.accuracy_margin" in html for html in tables)  # the verdict DataFrame
    assert any("keyword" in html and "error_rate" in html for html in tables)  # the failure table
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "8 targets of the classes ['ball', 'tile']" in printed and "12 backgrounds" in printed and "mined" in printed  # the ontology
