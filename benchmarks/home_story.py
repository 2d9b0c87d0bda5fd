"""Seconds for Home (``app.py``, Streamlit's AppTest) on a tiny workspace with finished runs, with and
without its story view (issue 16: what breaks each model).

Run from the repository root::

    python -m benchmarks.home_story            # 3 models, 6 targets x 4 backgrounds, 64 px
    python -m benchmarks.home_story --models 6

The workspace is the tests' tiny one (``benchmarks/_tiny.py``): two classes of three targets, twelve
backgrounds with the suite fixture's keyword table, a random suite of 4 backgrounds per target and
``--models`` tiny TorchScript networks, each run over it. Prints one JSON object: the first Home run
of a fresh process (imports, matrices, colour scale, keyword statistics and flips computed and
cached), the best of ``--repeat`` later runs (caches warm), and the same warm time with the story
view left out. The story's tabs are lazy, so only the open tab's model is read whatever ``--models``
is; the suite's colour scale reads the matrices of every model once.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from analytics.data import custom_label_space, store_backgrounds, store_targets
from analytics.keywords import save_keyword_table
from analytics.models import register_torchscript
from analytics.runs import start_runs
from analytics.workspace import PROJECT_ROOT, Workspace
from benchmarks._tiny import (
    BACKGROUND_KEYWORDS,
    BACKGROUND_TABLE,
    CENTRE_BOX,
    CLASSES,
    CORNER_BOXES,
    SIZE,
    TINY_SUITE,
    RegionNet,
    TinyNet,
    insert_suite,
    make_background,
    make_target,
    onehot_table,
    save_torchscript,
    write_labels,
)
from ui import story
from ui.state import WORKSPACE_PATH


def build_workspace(folder: Path, n_models: int) -> Workspace:
    """The tiny workspace with keywords, a suite and ``n_models`` finished runs over it."""
    rng = np.random.default_rng(0)
    workspace = Workspace(folder / "ws")
    workspace.set_meta("image_size", str(SIZE))
    store_targets(workspace, [make_target(c, i, rng) for c in CLASSES for i in range(3)], classes={name: [] for name in CLASSES})  # a custom label space
    store_backgrounds(workspace, [make_background(i, rng) for i in range(12)])
    backgrounds = [row["id"] for row in workspace.query("SELECT id FROM backgrounds ORDER BY id")]
    save_keyword_table(workspace, onehot_table(backgrounds, BACKGROUND_KEYWORDS), name=BACKGROUND_TABLE, item_kind="background")
    labels = custom_label_space(write_labels(folder / "labels.txt"))
    nets = [TinyNet(), RegionNet((CENTRE_BOX,)), RegionNet(CORNER_BOXES)]
    names = [f"net{i}" for i in range(n_models)]
    for seed, name in enumerate(names):
        path = save_torchscript(nets[seed % len(nets)], folder / f"{name}.pt", seed=seed)
        register_torchscript(workspace, name, checkpoint=path, label_space=labels, input_size=SIZE)
    insert_suite(workspace)
    start_runs(workspace, names, TINY_SUITE, device="cpu")
    return workspace


def time_home(workspace: Workspace) -> float:
    """Wall-clock seconds of one AppTest run of Home on ``workspace``."""
    app = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=300)
    app.session_state[WORKSPACE_PATH] = str(workspace.root)
    start = time.perf_counter()
    app.run()
    elapsed = time.perf_counter() - start
    if app.exception:
        raise RuntimeError(app.exception[0].message)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workspace = build_workspace(Path(folder), args.models)
        first = time_home(workspace)
        warm = min(time_home(workspace) for _ in range(args.repeat))
        shown = story.show_story
        story.show_story = lambda *args, **kwargs: None  # Home as before issue 16
        try:
            without = min(time_home(workspace) for _ in range(args.repeat))
        finally:
            story.show_story = shown
    print(json.dumps({
        "models": args.models, "home_first_s": round(first, 3), "home_warm_s": round(warm, 3),
        "home_warm_without_story_s": round(without, 3), "load_average": round(os.getloadavg()[0], 2),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
