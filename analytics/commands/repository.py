"""``repository add | create | run | status``: register a manifest of checkpoints (or name registered
models), run them all over a suite, and see where each model stands (:mod:`analytics.repository`).

``run`` shows a tqdm bar over the models; running again skips finished models and resumes an
interrupted one from its stored batches. ``run --ray ADDRESS|local`` spreads the models over a Ray
cluster (:mod:`analytics.repository.ray_backend`); this process still does all the writing.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ._options import ProgressBar, add_device_option, add_json_option, add_workspace_option, open_workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    parser = subparsers.add_parser("repository", help="a model repository: register a manifest of checkpoints, run it over a suite, follow it")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="register every model of a CSV manifest (bad entries are reported and skipped)")
    add.add_argument("manifest", metavar="MANIFEST", help="CSV with columns name, architecture, checkpoint, label_space (+ input_size, metadata)")
    add.add_argument("--name", default=None, help="repository name (default: the manifest's file name without extension)")
    add.add_argument("--replace", action="store_true", help="register again models whose name is taken (new weights)")
    add.set_defaults(handler=repository_add)
    create = actions.add_parser("create", help="record registered models (zoo heads, torchvision, TorchScript) as a repository")
    create.add_argument("name", metavar="NAME", help="repository name (an existing one is extended)")
    create.add_argument("--models", required=True, type=_model_list, help="comma-separated registered model names, e.g. a,b,c")
    create.set_defaults(handler=repository_create)
    run = actions.add_parser("run", help="run every model of a repository over a suite (finished models are skipped)")
    status = actions.add_parser("status", help="done / running / failed / pending per model, with accuracies")
    for action in (run, status):
        action.add_argument("--name", required=True, help="repository name")
        action.add_argument("--suite", required=True, help="suite id, label or name")
        action.add_argument("--top-k", type=int, default=3, help="embedding top-k of the runs (default 3)")
    add_device_option(run)
    run.add_argument("--batch-size", type=int, default=None, help="images per batch (default: 256 on a GPU, 32 on a CPU)")
    run.add_argument("--ray", default=None, metavar="ADDRESS", help="run on a Ray cluster: 'local' (this machine), 'auto' or host:port / ray://host:10001")
    run.add_argument("--gpus-per-model", type=float, default=0, help="with --ray: GPUs each task (a group of models) asks for (default 0)")
    run.set_defaults(handler=repository_run)
    status.set_defaults(handler=repository_status)
    for action in (add, create, run, status):
        add_workspace_option(action)
        add_json_option(action)


def repository_add(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.repository import add_repository

    return add_repository(open_workspace(args), args.manifest, name=args.name, replace=args.replace).as_dict()


def _model_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"give registered model names separated by commas; got {text!r}")
    return names


def repository_create(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.repository import create_repository

    record = create_repository(open_workspace(args), args.name, args.models)
    return {"repository": args.name, "models": record["models"]}


def repository_run(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.repository import run_repository

    with ProgressBar(f"repository {args.name}", unit="model") as progress:
        return run_repository(
            open_workspace(args), args.name, args.suite, device=args.device, batch_size=args.batch_size, top_k=args.top_k, progress=progress,
            ray_address=args.ray, num_gpus_per_model=args.gpus_per_model,
        )  # fmt: skip


def repository_status(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.repository import repository_status as status_table

    table = status_table(open_workspace(args), args.name, args.suite, top_k=args.top_k)
    records = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()} for row in table.to_dict("records")]
    return {"repository": args.name, "suite_id": args.suite, "counts": table["status"].value_counts().to_dict(), "models": records}
