"""``bgchallenge``: the Backgrounds Challenge (Xiao et al.) for registered models.

Accuracy on the eight variants generated from the workspace's targets (or read from a downloaded
IN-9 release with ``--in9-root``), BG-Gap, Mixed-Same − Mixed-Next, per-class accuracy, the
per-image categories and, with ``--adversarial``, the adversarial-background search. Results are
cached in the workspace, so an interrupted evaluation resumes; ``--csv`` writes every prediction.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._options import add_device_option, add_json_option, add_workspace_option, open_workspace

if TYPE_CHECKING:
    from tqdm import tqdm

    from analytics._progress import Progress


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    parser = subparsers.add_parser("bgchallenge", help="Backgrounds Challenge: accuracy on the 8 IN-9 variants, BG-Gap, adversarial backgrounds")
    parser.add_argument("--models", required=True, help="comma-separated registered model names")
    parser.add_argument("--seed", type=int, default=0, help="seed of the Mixed-* pairings (default 0)")
    parser.add_argument("--blend", action="store_true", help="Mixed-*: Backdrop's blended compositing instead of the paper's hard paste")
    parser.add_argument("--adversarial", action="store_true", help="also search each foreground's adversarial background (P forward passes each)")
    parser.add_argument("--in9-root", metavar="DIR", help="evaluate on a downloaded IN-9 release (<variant>/val/<class>/*.JPEG) instead of generating")
    parser.add_argument("--adversarial-exclude-own", action="store_true", help="leave each foreground's own Only-BG-T background out of the search (default: included, as the challenge's code)")
    parser.add_argument(
        "--in9-mapping", metavar="MAP", default=None,
        help="ImageNet->IN-9 map: official (default: the challenge's in_to_in9.json, built in), wordnet (WordNet hyponyms, 16 classes more), or a JSON FILE in that format",
    )  # fmt: skip
    parser.add_argument("--batch-size", type=int, default=32, help="images per forward pass (default 32)")
    add_device_option(parser)
    parser.add_argument("--csv", metavar="FILE", help="write every prediction (one row per model and image) to this CSV")
    add_workspace_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=run_challenge)


def run_challenge(args: argparse.Namespace) -> dict[str, Any]:
    import pandas as pd
    from tqdm import tqdm

    from analytics.exceptions import InvalidInputError
    from analytics.models import get_model_spec
    from analytics.robustness.bgchallenge import (
        evaluate_release,
        evaluate_variants,
        read_release,
        search_backgrounds,
        summary,
        workspace_data,
    )
    from analytics.workspace import to_csv

    workspace = open_workspace(args)
    names = [name.strip() for name in args.models.split(",") if name.strip()]
    if not names:
        raise InvalidInputError("--models: give at least one registered model name, e.g. --models efficientnet-lite0")
    for name in names:
        get_model_spec(workspace, name)  # NotFoundError naming the model before any work
    release = read_release(args.in9_root) if args.in9_root else None
    data = None if release else workspace_data(workspace)
    results, tables = {}, []
    for name in names:
        with tqdm(desc=f"{name}: variants", unit="img", leave=False) as bar:
            progress = _updater(bar)
            options = {"in9_mapping": args.in9_mapping, "batch_size": args.batch_size, "device": args.device, "progress": progress}
            if release:
                table = evaluate_release(workspace, name, release, **options)
            else:
                assert data is not None  # read above whenever there is no release
                table = evaluate_variants(workspace, name, data, seed=args.seed, blend=args.blend, **options)
        results[name] = summary(table)
        tables.append(table.assign(model=name))
        if args.adversarial:
            if data is None:
                raise InvalidInputError("--adversarial needs generated backgrounds; leave out --in9-root to search the workspace's targets")
            with tqdm(desc=f"{name}: adversarial", unit="fg", leave=False) as bar:
                found = search_backgrounds(
                    workspace, name, data, in9_mapping=args.in9_mapping, include_own=not args.adversarial_exclude_own,
                    batch_size=args.batch_size, device=args.device, progress=_updater(bar),
                )  # fmt: skip
            results[name]["adversarial"] = {**found.summary(), "most_fooling": found.most_fooling().to_dict("records")}
    if args.csv:
        path = Path(args.csv)
        path.parent.mkdir(parents=True, exist_ok=True)
        to_csv(pd.concat(tables, ignore_index=True), path)
    source = {"in9_root": str(args.in9_root)} if data is None else {"targets": len(data.ids), "seed": args.seed, "blend": args.blend}
    return {"source": source, "models": results, "csv": args.csv}


def _updater(bar: tqdm[None]) -> Progress:
    """A ``progress(done, total)`` callback moving a tqdm bar."""

    def update(done: int, total: int, _message: str = "") -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return update
