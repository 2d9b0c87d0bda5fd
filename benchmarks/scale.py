"""Paper scale (issue 28): a synthetic workspace of T targets and a pool of B backgrounds, and the
time, peak memory and database size of every stage a user runs on it, one JSON object per stage.

Run from the repository root::

    python -m benchmarks.scale                                  # T 200, B 2,000, N 32, 3 runs
    python -m benchmarks.scale --targets 1712 --pool 20000 --runs 5

The workspace is made of the tests' synthetic images (``benchmarks/_tiny.py``: discs and squares
on noise, 64 px) written as files in the import layouts, and its tiny TorchScript networks. Untimed set-up writes the files and registers the networks. Each
stage then runs in a fresh Python process of its own, so its ``peak_rss_mib`` is its own
(including the ~300 MiB of imports); ``db_mib`` is the database (with its WAL) after the stage.

Stages (pool screening is not timed: the synthetic classes have no ImageNet indices, so it is skipped):

* ``import-targets`` / ``import-backgrounds``: the CLI's ``add-targets`` (folder layout) and
  ``add-backgrounds`` on the written folders;
* ``keywords-precomputed``: a synthetic precomputed keyword table for targets and pool saved;
* ``keywords-default``: the default backend (classifier patches of EfficientNet-Lite0, a real
  forward pass) on ``--keyword-sample`` targets and pool images: images/s, and the seconds for all
  T and B extrapolated at that rate (``extrapolated: true``);
* ``embeddings``: the distance step of ``nearest`` / ``interval``: scene and pool embeddings of the
  tiny network (cached) and the T x B proxy distance matrix;
* ``suite-<sampler>`` for every sampler of :data:`analytics.suites.SAMPLERS` (random, nearest,
  interval, keyword, ontology; ``ontology`` mines the ontology first): :func:`analytics.suites.build_suite`,
  N per target, with the tiny network as the distance model;
* ``run``: one model over the random suite (:func:`analytics.runs.start_runs`: forward passes, row
  writes, the run's summary and matrix-cell quantiles); ``more-runs``: the other ``--runs`` - 1 models;
* ``synthetic-runs``: finished runs up to ``--finished-runs`` (250) on the random suite without
  forward passes (heads of the tiny backbone whose rows are the first run's with noise, written
  by the engine's row writer), each completed by its own job (summary, cell quantiles), timed apart;
* ``listing``: :func:`analytics.runs.list_runs`, and four calls inside one
  :func:`analytics.runs.runs_snapshot` (a page's rerun), with the SQL statements each made;
* ``colour-scale``: the suite's live scale from stored quantiles, then with one run's quantiles
  removed (a run finished before they were stored: computed and stored once);
* ``matrices``: one run's matrices at a preset not computed yet;
* ``judge-page``: ``pages/8_Judge.py`` under Streamlit's AppTest: first load, rerun, a label click;
* ``assessor``: the features of every finished run (then again, read from the workspace's cache)
  and the assessors' evaluation;
* ``repository-heads``: a repository of ``--repository-heads`` new heads run over the random suite.

``--fit A.json B.json …`` prints each stage's fitted growth from earlier outputs: the slope of
log(seconds) against log(T·B), log(T) and log(B), and with three scales where T and B vary apart
(e.g. T 200 at B 2,000 and 20,000, then T 1,712 at B 20,000) the slopes of T and B each with the
other held (``T|B``, ``B|T``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

PROJECT = Path(__file__).resolve().parent.parent
MODELS = ("tiny", "fg-only", "bg-only")  # cycled for --runs > 3


# -- set-up (untimed) ------------------------------------------------------------------------------
def write_files(folder: Path, n_targets: int, n_pool: int) -> None:
    """Targets in the folder layout (``images/<class>/*``, ``masks/<class>/*``) and a flat pool folder."""
    from benchmarks._tiny import CLASSES, make_background, make_target

    rng = np.random.default_rng(0)
    for i in range(n_targets):
        target = make_target(list(CLASSES)[i % len(CLASSES)], i, rng)
        for kind, image in (("images", target.image[..., ::-1]), ("masks", target.mask.astype(np.uint8) * 255)):
            path = folder / "targets" / kind / target.class_name / f"t{i:05d}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(path), image)
    (folder / "pool").mkdir(parents=True, exist_ok=True)
    for i in range(n_pool):
        cv2.imwrite(str(folder / "pool" / f"b{i:06d}.png"), make_background(i, rng).image[..., ::-1])


def register_models(workspace_path: Path, folder: Path, n_runs: int) -> list[str]:
    """``n_runs`` tiny networks (seeded copies of the three test networks) registered at 64 px."""
    from analytics.data import custom_label_space
    from analytics.models import register_torchscript
    from analytics.workspace import Workspace
    from benchmarks._tiny import CENTRE_BOX, CORNER_BOXES, SIZE, RegionNet, TinyNet, save_torchscript, write_labels

    workspace = Workspace(workspace_path)
    labels = custom_label_space(write_labels(folder / "labels.txt"))
    names = []
    for i in range(n_runs):
        kind = MODELS[i % len(MODELS)]
        net = {"tiny": TinyNet(), "fg-only": RegionNet((CENTRE_BOX,)), "bg-only": RegionNet(CORNER_BOXES)}[kind]
        name = kind if i < len(MODELS) else f"{kind}-{i}"
        register_torchscript(workspace, name, checkpoint=save_torchscript(net, folder / f"{name}.pt", seed=i), label_space=labels, input_size=SIZE)
        names.append(name)
    return names


# -- stages (each in a process of its own) ---------------------------------------------------------
def _cli(*args: str) -> dict:
    from analytics.cli import main

    if main([*args, "--json"]) != 0:
        raise RuntimeError(f"`python -m analytics {' '.join(args)}` failed")
    return {}


def stage_import_targets(ws: Path, opts: dict) -> dict:
    return _cli("add-targets", "--workspace", str(ws), "--path", str(Path(opts["files"]) / "targets"), "--layout", "folder")


def stage_import_backgrounds(ws: Path, opts: dict) -> dict:
    return _cli("add-backgrounds", "--workspace", str(ws), "--path", str(Path(opts["files"]) / "pool"))


def stage_keywords_precomputed(ws: Path, opts: dict) -> dict:
    from analytics.keywords import KeywordTable, save_keyword_table
    from analytics.workspace import Workspace

    workspace = Workspace(ws)
    vocabulary = [f"kw{i}" for i in range(40)]
    rng = np.random.default_rng(1)
    for kind, table in (("target", "targets"), ("background", "backgrounds")):
        ids = [row["id"] for row in workspace.query(f"SELECT id FROM {table} ORDER BY id")]
        present = rng.random((len(ids), len(vocabulary))) < 0.1
        scores = np.where(present, 0.9, 0.05).astype(np.float32)
        keywords = KeywordTable(ids=ids, vocabulary=vocabulary, scores=scores, present=present, backend="precomputed", params={"benchmark": "scale"})
        save_keyword_table(workspace, keywords, name=f"scale-{table}", item_kind=kind)
    return {"vocabulary": len(vocabulary)}


def _suite(ws: Path, opts: dict, method: str) -> dict:
    from analytics.suites import build_suite
    from analytics.workspace import Workspace

    workspace = Workspace(ws)
    suite = build_suite(workspace, method=method, n=opts["n"], distance_models=["tiny"], device="cpu")
    return {"suite_id": suite.id, "items": int(workspace.query_one("SELECT COUNT(*) FROM suite_items WHERE suite_id = ?", (suite.id,))[0])}


def stage_suite_random(ws: Path, opts: dict) -> dict:
    return _suite(ws, opts, "random")


def stage_suite_keyword(ws: Path, opts: dict) -> dict:
    return _suite(ws, opts, "keyword")


def stage_embeddings(ws: Path, opts: dict) -> dict:
    from analytics.models import load_model
    from analytics.suites import proxy_distances
    from analytics.workspace import Workspace

    workspace = Workspace(ws)
    targets = [row["id"] for row in workspace.query("SELECT id FROM targets ORDER BY id")]
    pool = [row["id"] for row in workspace.query("SELECT id FROM backgrounds ORDER BY id")]
    distances = proxy_distances(workspace, targets, pool, models=[load_model(workspace, "tiny", device="cpu")])
    return {"proxy_matrix_mib": round(distances.nbytes / 2**20, 1), "note": "scene and pool embeddings (cached) and the T x B proxy matrix of nearest / interval"}


def stage_suite_nearest(ws: Path, opts: dict) -> dict:
    return _suite(ws, opts, "nearest")


def stage_suite_interval(ws: Path, opts: dict) -> dict:
    return _suite(ws, opts, "interval")


def stage_ontology(ws: Path, opts: dict) -> dict:
    from analytics.suites import ensure_ontology
    from analytics.workspace import Workspace

    ontology_id, built = ensure_ontology(Workspace(ws), {"target": "scale-targets", "background": "scale-backgrounds"})
    return {"ontology_id": ontology_id, "built": built}


def stage_suite_ontology(ws: Path, opts: dict) -> dict:
    return _suite(ws, opts, "ontology")


def stage_keywords_default(ws: Path, opts: dict) -> dict:
    """The default backend (classifier patches of EfficientNet-Lite0, the real network) on a sample
    of the targets and of the pool: images/s each, and the seconds for all T and B at that rate."""
    from analytics.data import list_classes, load_backgrounds, load_targets
    from analytics.keywords import ClassifierPatchBackend
    from analytics.models import load_model, register_efficientnet_lite
    from analytics.suites import default_keyword_model
    from analytics.workspace import Workspace

    workspace = Workspace(ws)
    register_efficientnet_lite(workspace, 0)
    backend = ClassifierPatchBackend(load_model(workspace, default_keyword_model(workspace), device="cpu"), exclude_classes=list_classes(workspace))
    out: dict = {"model": backend.model.spec.name, "views_per_image": backend.grid**2 + 1, "extrapolated": True}
    for kind, table, total in (("targets", "targets", opts["targets"]), ("pool", "backgrounds", opts["pool"])):
        ids = [row["id"] for row in workspace.query(f"SELECT id FROM {table} ORDER BY id LIMIT ?", (opts["keyword_sample"],))]
        start = time.perf_counter()
        for chunk in range(0, len(ids), 32):  # as compute_keywords reads them: 32 images at a time
            part = ids[chunk : chunk + 32]
            images, masks = load_targets(workspace, part) if kind == "targets" else (load_backgrounds(workspace, part), None)
            backend.scores(images, masks)
        rate = len(ids) / (time.perf_counter() - start)
        out[f"{kind}_sample"] = {"sampled": len(ids), "images_per_second": round(rate, 2), "extrapolated_seconds": round(total / rate, 1)}
    return out


def _random_suite(workspace) -> str:
    return workspace.query_one("SELECT id FROM suites WHERE method = 'random' ORDER BY created DESC")["id"]


def _run(ws: Path, names: list[str]) -> dict:
    from analytics.runs import start_runs
    from analytics.workspace import Workspace

    workspace = Workspace(ws)
    suite_id = _random_suite(workspace)
    run_ids = start_runs(workspace, names, suite_id, device="cpu")
    images = workspace.query_one("SELECT COUNT(*) FROM run_images WHERE run_id = ?", (run_ids[0],))[0]
    return {"models": len(names), "images_per_run": int(images)}


def stage_run(ws: Path, opts: dict) -> dict:
    return _run(ws, opts["models"][:1])


def stage_more_runs(ws: Path, opts: dict) -> dict:
    return _run(ws, opts["models"][1:]) if len(opts["models"]) > 1 else {"models": 0}


def stage_synthetic_runs(ws: Path, opts: dict) -> dict:
    """Finished runs up to ``--finished-runs`` without running models: heads registered on the tiny
    backbone, their rows the first run's with seeded noise written through the engine's
    :class:`~analytics.inference.engine.RowWriter`, then each run's own completion
    (:func:`analytics.runs.complete_runs`: summary and cell quantiles), timed apart."""
    from analytics.inference import ROW_COLUMNS, RowWriter, finish_runs, plan_runs
    from analytics.models import register_head
    from analytics.runs import complete_runs
    from analytics.workspace import Workspace
    from benchmarks._tiny import CLASSES

    workspace = Workspace(ws)
    suite_id = _random_suite(workspace)
    done = workspace.query_one("SELECT COUNT(*) FROM runs WHERE suite_id = ? AND status = 'done'", (suite_id,))[0]
    wanted = max(opts["finished_runs"] - done, 0)
    if not wanted:
        return {"added_runs": 0}
    rng = np.random.default_rng(2)
    names = [f"head-{k:03d}" for k in range(wanted)]
    for name in names:
        register_head(workspace, name, backbone="tiny", weight=rng.normal(size=(len(CLASSES), 8)), bias=np.zeros(len(CLASSES)), class_names=list(CLASSES))
    base_id = workspace.query_one("SELECT id FROM runs WHERE suite_id = ? AND model = ? AND status = 'done'", (suite_id, opts["models"][0]))["id"]
    base = workspace.query(f"SELECT {', '.join(ROW_COLUMNS)} FROM run_images WHERE run_id = ? ORDER BY target_id, position", (base_id,))
    classes = {row["target_id"]: row["class_name"] for row in workspace.query("SELECT t.id AS target_id, t.class_name FROM targets t")}
    other = {name: next(c for c in CLASSES if c != name) for name in CLASSES}
    plan = plan_runs(workspace, names, suite_id, device="cpu")
    start = time.perf_counter()
    with RowWriter(workspace) as writer:
        for k, name in enumerate(names):
            noise = rng.normal(0, 0.05 + 0.4 * k / wanted, len(base))  # from near the base run to far from it
            rows = []
            for row, delta in zip(base, noise):
                prob = float(np.clip(row["true_prob"] + delta, 0, 1))
                right = prob >= 0.5
                predicted = classes[row["target_id"]] if right else other[classes[row["target_id"]]]
                rows.append((
                    plan.run_ids[name], row["target_id"], row["position"], predicted, prob, max(prob, 1 - prob), int(right),
                    row["emb_topk_mean"] + delta, row["emb_max"] + delta, row["emb_mean"] + delta, row["distance"],
                    row["conv_max"], row["conv_max_mean"],
                ))  # fmt: skip  (every column of ROW_COLUMNS, in its order)
            writer.add(rows)
    written = time.perf_counter() - start
    finish_runs(workspace, plan)
    start = time.perf_counter()
    complete_runs(workspace, list(plan.run_ids.values()))
    completed = time.perf_counter() - start
    return {
        "added_runs": wanted, "rows_per_run": len(base), "write_seconds": round(written, 2), "complete_runs_seconds": round(completed, 2),
        "complete_seconds_per_run": round(completed / wanted, 3), "note": "rows synthetic (no forward pass); completion is each run's real job",
    }  # fmt: skip


def _timed(call: Callable[[], object], statements: list[str]) -> dict:
    before = len(statements)
    start = time.perf_counter()
    call()
    return {"seconds": round(time.perf_counter() - start, 4), "sql_statements": len(statements) - before}


def _traced(workspace) -> list[str]:
    """Statements run through the workspace's connections from now on (``sqlite3`` trace callback)."""
    from analytics.workspace import Workspace

    statements: list[str] = []
    connect = Workspace.connect

    def traced(self, *, bulk: bool = False):
        conn = connect(self, bulk=bulk)
        conn.set_trace_callback(statements.append)
        return conn

    Workspace.connect = traced
    return statements


def stage_listing(ws: Path, opts: dict) -> dict:
    from analytics.runs import current_runs, list_runs, runs_snapshot
    from analytics.workspace import Workspace

    workspace = Workspace(ws)
    statements = _traced(workspace)
    out = {"listed_runs": len(list_runs(workspace))}
    out["list_runs"] = _timed(lambda: list_runs(workspace), statements)

    def rerun() -> None:
        with runs_snapshot():
            for _ in range(4):
                current_runs(workspace, suite_id=_random_suite(workspace))

    out["four_calls_in_one_snapshot"] = _timed(rerun, statements)
    return out


def stage_colour_scale(ws: Path, opts: dict) -> dict:
    from analytics.runs import suite_colour_scale
    from analytics.workspace import Workspace

    workspace = Workspace(ws)
    statements = _traced(workspace)
    suite_id = _random_suite(workspace)
    out = {"stored": _timed(lambda: suite_colour_scale(workspace, suite_id), statements)}
    with workspace.transaction() as conn:  # one run finished before quantiles were stored
        conn.execute("DELETE FROM run_cell_quantiles WHERE run_id = (SELECT MIN(run_id) FROM run_cell_quantiles)")
    out["fallback_one_run_computes_and_stores"] = _timed(lambda: suite_colour_scale(workspace, suite_id), statements)
    out["stored_again"] = _timed(lambda: suite_colour_scale(workspace, suite_id), statements)
    return out


def stage_matrices(ws: Path, opts: dict) -> dict:
    from analytics.runs import run_matrices
    from analytics.variance import MatrixSettings
    from analytics.workspace import Workspace

    workspace = Workspace(ws)
    run_id = workspace.query_one("SELECT id FROM runs WHERE status = 'done' ORDER BY created LIMIT 1")["id"]
    points = workspace.query_one("SELECT COUNT(*) FROM run_images WHERE run_id = ?", (run_id,))[0]
    run_matrices(workspace, run_id, settings=MatrixSettings.of("fine"))
    return {"run_images": int(points)}


def stage_judge_page(ws: Path, opts: dict) -> dict:
    """pages/8_Judge.py under Streamlit's AppTest at every finished run: the first load (matrices
    and the colour scale computed or read), a rerun, and a label click (a judgment stored, the next
    model shown)."""
    from streamlit.testing.v1 import AppTest

    from ui.judge import button_key
    from ui.state import ANNOTATOR, WORKSPACE_PATH

    app = AppTest.from_file(str(PROJECT / "pages" / "8_Judge.py"), default_timeout=3600)
    app.session_state[WORKSPACE_PATH] = str(ws)
    app.session_state[ANNOTATOR] = "scale"
    out = {}
    for step, act in (("first_load", lambda: app.run()), ("rerun", lambda: app.run()), ("label_click", lambda: app.button(key=button_key("variant")).click().run())):
        start = time.perf_counter()
        act()
        out[f"{step}_seconds"] = round(time.perf_counter() - start, 3)
        if app.exception:
            raise RuntimeError(f"Judge page {step}: {app.exception[0].message}")
    out["progress"] = app.get("progress")[0].proto.text if app.get("progress") else ""
    return out


def stage_assessor(ws: Path, opts: dict) -> dict:
    """Features of every finished run of the random suite, and the assessors' evaluation on labels
    made from those features (a stand-in for judgments: the assessor's cost does not depend on who labelled)."""
    import pandas as pd

    from analytics.assessor import evaluate_assessors, features_table
    from analytics.workspace import Workspace

    workspace = Workspace(ws)
    run_ids = [row["id"] for row in workspace.query("SELECT id FROM runs WHERE suite_id = ? AND status = 'done' ORDER BY id", (_random_suite(workspace),))]
    start = time.perf_counter()
    features = features_table(workspace, run_ids)
    featured = time.perf_counter() - start
    start = time.perf_counter()
    features_table(workspace, run_ids)  # as the next page or command reads them: cached in the workspace
    featured_again = time.perf_counter() - start
    ranks = features["accuracy"].rank(method="first") / len(features)
    labels = pd.Series(np.select([ranks > 2 / 3, ranks > 1 / 3], ["invariant", "borderline"], "variant"), index=features.index)
    start = time.perf_counter()
    report = evaluate_assessors(features, labels, repeats=opts["assessor_repeats"])
    return {
        "models": len(features), "features": int(features.shape[1]), "features_seconds": round(featured, 2), "features_again_seconds": round(featured_again, 2),
        "evaluate_seconds": round(time.perf_counter() - start, 2), "repeats": opts["assessor_repeats"], "assessors": len(report.scores),
    }  # fmt: skip


def stage_repository_heads(ws: Path, opts: dict) -> dict:
    """A repository of ``--repository-heads`` new heads on the tiny backbone run over the random
    suite (one backbone pass, every head on its embedding)."""
    from analytics.models import register_head
    from analytics.repository import create_repository, run_repository
    from analytics.workspace import Workspace
    from benchmarks._tiny import CLASSES

    workspace = Workspace(ws)
    rng = np.random.default_rng(3)
    names = [f"repo-head-{k:02d}" for k in range(opts["repository_heads"])]
    for name in names:
        register_head(workspace, name, backbone="tiny", weight=rng.normal(size=(len(CLASSES), 8)), bias=np.zeros(len(CLASSES)), class_names=list(CLASSES))
    create_repository(workspace, "scale-heads", names)
    report = run_repository(workspace, "scale-heads", _random_suite(workspace), device="cpu")
    images = workspace.query_one("SELECT COUNT(*) FROM suite_items WHERE suite_id = ?", (_random_suite(workspace),))[0] + opts["targets"]
    return {"heads": len(names), "done": len(report["done"]), "failed": len(report["failed"]), "images_per_head": int(images)}


STAGES: dict[str, Callable[[Path, dict], dict]] = {
    "import-targets": stage_import_targets,
    "import-backgrounds": stage_import_backgrounds,
    "keywords-precomputed": stage_keywords_precomputed,
    "keywords-default": stage_keywords_default,
    "embeddings": stage_embeddings,
    "suite-random": stage_suite_random,
    "suite-nearest": stage_suite_nearest,
    "suite-interval": stage_suite_interval,
    "suite-keyword": stage_suite_keyword,
    "ontology": stage_ontology,
    "suite-ontology": stage_suite_ontology,
    "run": stage_run,
    "more-runs": stage_more_runs,
    "synthetic-runs": stage_synthetic_runs,
    "listing": stage_listing,
    "colour-scale": stage_colour_scale,
    "matrices": stage_matrices,
    "judge-page": stage_judge_page,
    "assessor": stage_assessor,
    "repository-heads": stage_repository_heads,
}


def run_stage(name: str, ws: Path, opts: dict) -> None:
    """Run one stage here and print its JSON line (the driver's child process); the stage's time
    leaves out the imports (``import_seconds``), its peak memory includes them."""
    start = time.perf_counter()
    import analytics.cli
    import analytics.commands.data
    import analytics.inference
    import analytics.keywords
    import analytics.runs
    import analytics.suites  # noqa: F401  (imports, timed apart)

    imports = time.perf_counter() - start
    start = time.perf_counter()
    extra = STAGES[name](ws, opts)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    scale = {key: opts[key] for key in ("targets", "pool", "n")}
    print(json.dumps({"stage": name, "seconds": round(seconds, 3), "import_seconds": round(imports, 1), "peak_rss_mib": round(peak, 1), **extra, "db_mib": _db_mib(ws), **scale}))


def _db_mib(ws: Path) -> float:
    return round(sum(p.stat().st_size for p in ws.glob("backdrop.sqlite*")) / 2**20, 2)


def fitted_growth(records: list[dict]) -> list[dict]:
    """Per stage measured at two or more scales: the least-squares slope of log(seconds) against
    log(T·B), log(T) and log(B) (1 = linear; a stage growing faster than T·B has a T·B slope above 1).
    With three or more scales where T and B vary apart, also ``T|B`` and ``B|T``: the slopes of one
    fit on log(T) and log(B) together (each axis with the other held), which the one-axis slopes
    are not when T and B grew together."""
    by_stage: dict[str, dict[tuple[int, int], float]] = {}
    for record in records:
        if "peak_rss_mib" in record and "targets" in record:  # stage records, not the untimed set-up
            by_stage.setdefault(record["stage"], {})[(record["targets"], record["pool"])] = max(record["seconds"], 1e-3)
    out = []
    for stage, points in by_stage.items():
        if len(points) < 2:
            continue
        scales = sorted(points)
        seconds = np.log([points[scale] for scale in scales])
        slopes = {
            axis: round(float(np.polyfit(np.log([size(t, b) for t, b in scales]), seconds, 1)[0]), 2)
            for axis, size in (("T*B", lambda t, b: t * b), ("T", lambda t, b: t), ("B", lambda t, b: b))
            if len({size(t, b) for t, b in scales}) > 1
        }
        design = np.column_stack([np.ones(len(scales)), np.log([t for t, _ in scales]), np.log([b for _, b in scales])])
        if len(scales) >= 3 and np.linalg.matrix_rank(design) == 3:
            _, per_t, per_b = np.linalg.lstsq(design, seconds, rcond=None)[0]
            slopes.update({"T|B": round(float(per_t), 2), "B|T": round(float(per_b), 2)})
        out.append({"stage": stage, "fitted_growth": slopes, "scales": [f"T{t} B{b}: {points[(t, b)]} s" for t, b in scales]})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", nargs="+", metavar="JSON", help="print the fitted growth of earlier outputs (JSON lines) and stop")
    parser.add_argument("--targets", type=int, default=200, help="T (default 200)")
    parser.add_argument("--pool", type=int, default=2000, help="B (default 2,000)")
    parser.add_argument("--n", type=int, default=32, help="backgrounds per target (default 32)")
    parser.add_argument("--runs", type=int, default=3, help="finished runs for the listing and the colour scale (default 3)")
    parser.add_argument("--finished-runs", type=int, default=250, help="finished runs on the random suite for the Judge page and the assessor (default 250)")
    parser.add_argument("--keyword-sample", type=int, default=128, help="targets and pool images the default keyword backend scores (default 128)")
    parser.add_argument("--assessor-repeats", type=int, default=3, help="train/test splits of the assessors' evaluation (default 3)")
    parser.add_argument("--repository-heads", type=int, default=8, help="heads in the repository run (default 8)")
    parser.add_argument("--workdir", help="an empty folder for the files and the workspace, kept afterwards (default: a temporary one)")
    parser.add_argument("--stages", default=",".join(STAGES), help="comma-separated subset, in order")
    parser.add_argument("--stage", help=argparse.SUPPRESS)  # a child process: run this stage
    parser.add_argument("--workspace", help=argparse.SUPPRESS)
    parser.add_argument("--opts", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fit:
        records = [json.loads(line) for path in args.fit for line in Path(path).read_text().splitlines() if line.startswith("{")]
        for line in fitted_growth(records):
            print(json.dumps(line))
        return
    if args.stage:
        run_stage(args.stage, Path(args.workspace), json.loads(args.opts))
        return
    kept = contextlib.nullcontext(args.workdir) if args.workdir else tempfile.TemporaryDirectory(prefix="backdrop-scale-")
    with kept as tmp:
        folder, ws = Path(tmp), Path(tmp) / "ws"
        start = time.perf_counter()
        write_files(folder / "files", args.targets, args.pool)
        from analytics.workspace import Workspace

        Workspace(ws).set_meta("image_size", "64")
        models = register_models(ws, folder, args.runs)
        scale = {"targets": args.targets, "pool": args.pool, "n": args.n, "runs": args.runs}
        print(json.dumps({"stage": "setup (untimed files and models)", "seconds": round(time.perf_counter() - start, 1), **scale}), flush=True)
        opts = json.dumps({
            "files": str(folder / "files"), "n": args.n, "models": models, "targets": args.targets, "pool": args.pool,
            "finished_runs": args.finished_runs, "keyword_sample": args.keyword_sample, "assessor_repeats": args.assessor_repeats,
            "repository_heads": args.repository_heads,
        })  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(PROJECT)}
        for name in args.stages.split(","):
            command = [sys.executable, "-m", "benchmarks.scale", "--stage", name, "--workspace", str(ws), "--opts", opts]
            out = subprocess.run(command, check=False, cwd=PROJECT, env=env, capture_output=True, text=True)  # a failed stage is reported
            if out.returncode != 0:
                print(json.dumps({"stage": name, "error": out.stderr.strip().splitlines()[-1:], **scale}), flush=True)
                break
            print(out.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
