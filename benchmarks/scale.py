"""Paper scale (issue 28): a synthetic workspace of T targets and a pool of B backgrounds, and the
time, peak memory and database size of every stage a user runs on it, one JSON object per stage.

Run from the repository root::

    python -m benchmarks.scale                                  # T 200, B 2,000, N 32, 3 runs
    python -m benchmarks.scale --targets 1712 --pool 20000 --runs 5

The workspace is made of the tests' synthetic images (``tests/fixtures/workspace.py``: discs and
squares on noise, 64 px) written as files in the import layouts, and tiny TorchScript networks
(``tests/fixtures/models.py``). Untimed set-up writes the files and registers the networks. Each
stage then runs in a fresh Python process of its own, so its ``peak_rss_mib`` is its own
(including the ~300 MiB of imports); ``db_mib`` is the database (with its WAL) after the stage.

Stages of this first slice (the issue lists the rest: keyword extraction, screening, the Judge
page's AppTest load, the assessor at 250 models, a repository run of heads, the fitted growth):

* ``import-targets`` / ``import-backgrounds``: the CLI's ``add-targets`` (folder layout) and
  ``add-backgrounds`` on the written folders;
* ``keywords-precomputed``: a synthetic precomputed keyword table for targets and pool saved;
* ``suite-random`` / ``suite-keyword``: :func:`analytics.suites.build_suite`, N per target, with the
  tiny network as the distance model;
* ``run``: one model over the random suite (:func:`analytics.runs.start_runs`: forward passes, row
  writes, the run's summary and matrix-cell quantiles); ``more-runs``: the other ``--runs`` - 1 models;
* ``listing``: :func:`analytics.runs.list_runs`, and four calls inside one
  :func:`analytics.runs.runs_snapshot` (a page's rerun), with the SQL statements each made;
* ``colour-scale``: the suite's live scale from stored quantiles, then with the quantiles removed
  (runs finished before they were stored: computed and stored once);
* ``matrices``: one run's matrices at a preset not computed yet.
"""

from __future__ import annotations

import argparse
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
    from tests.fixtures.workspace import CLASSES, make_background, make_target

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
    from tests.fixtures.models import CENTRE_BOX, CORNER_BOXES, SIZE, RegionNet, TinyNet, save_torchscript, write_labels

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
    with workspace.transaction() as conn:
        conn.execute("DELETE FROM run_cell_quantiles")
    out["fallback_computes_and_stores"] = _timed(lambda: suite_colour_scale(workspace, suite_id), statements)
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


STAGES: dict[str, Callable[[Path, dict], dict]] = {
    "import-targets": stage_import_targets,
    "import-backgrounds": stage_import_backgrounds,
    "keywords-precomputed": stage_keywords_precomputed,
    "suite-random": stage_suite_random,
    "suite-keyword": stage_suite_keyword,
    "run": stage_run,
    "more-runs": stage_more_runs,
    "listing": stage_listing,
    "colour-scale": stage_colour_scale,
    "matrices": stage_matrices,
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
    print(json.dumps({"stage": name, "seconds": round(seconds, 3), "import_seconds": round(imports, 1), "peak_rss_mib": round(peak, 1), **extra}))


def _db_mib(ws: Path) -> float:
    return round(sum(p.stat().st_size for p in ws.glob("backdrop.sqlite*")) / 2**20, 2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=200, help="T (default 200)")
    parser.add_argument("--pool", type=int, default=2000, help="B (default 2,000)")
    parser.add_argument("--n", type=int, default=32, help="backgrounds per target (default 32)")
    parser.add_argument("--runs", type=int, default=3, help="finished runs for the listing and the colour scale (default 3)")
    parser.add_argument("--stages", default=",".join(STAGES), help="comma-separated subset, in order")
    parser.add_argument("--stage", help=argparse.SUPPRESS)  # a child process: run this stage
    parser.add_argument("--workspace", help=argparse.SUPPRESS)
    parser.add_argument("--opts", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stage:
        run_stage(args.stage, Path(args.workspace), json.loads(args.opts))
        return
    with tempfile.TemporaryDirectory(prefix="backdrop-scale-") as tmp:
        folder, ws = Path(tmp), Path(tmp) / "ws"
        start = time.perf_counter()
        write_files(folder / "files", args.targets, args.pool)
        from analytics.workspace import Workspace

        Workspace(ws).set_meta("image_size", "64")
        models = register_models(ws, folder, args.runs)
        scale = {"targets": args.targets, "pool": args.pool, "n": args.n, "runs": args.runs}
        print(json.dumps({"stage": "setup (untimed files and models)", "seconds": round(time.perf_counter() - start, 1), **scale}), flush=True)
        opts = json.dumps({"files": str(folder / "files"), "n": args.n, "models": models})
        env = {**os.environ, "PYTHONPATH": str(PROJECT)}
        for name in args.stages.split(","):
            command = [sys.executable, "-m", "benchmarks.scale", "--stage", name, "--workspace", str(ws), "--opts", opts]
            out = subprocess.run(command, check=False, cwd=PROJECT, env=env, capture_output=True, text=True)  # a failed stage is reported
            if out.returncode != 0:
                print(json.dumps({"stage": name, "error": out.stderr.strip().splitlines()[-1:], **scale}), flush=True)
                break
            record = json.loads(out.stdout.strip().splitlines()[-1])
            print(json.dumps({**record, "db_mib": _db_mib(ws), **scale}), flush=True)


if __name__ == "__main__":
    main()
