"""``consensus``, ``disagreements``, ``export-judgments`` and ``import-judgments``: adjudication from the command line.

``consensus add --suite S --model M --label L --reason TEXT [--adjudicator NAME]`` records a lead's
consensus label (a new row each time: the history is kept; the adjudicator defaults to the login
name of the user running the command), ``consensus list --suite S`` shows the consensus that counts
and its history, ``disagreements --suite S`` the models whose current judgments on the suite
disagree (each annotator's label, confidence and note side by side), ``export-judgments [--suite S]
--out FILE.csv`` writes judgments and consensus, both histories, to one CSV (columns:
:mod:`analytics.judging.adjudication`), ``import-judgments FILE.csv`` adds such a file to a workspace, every
row checked first and all of it or nothing (:mod:`analytics.judging.importing`). Heavy imports happen
inside the handlers.
"""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from analytics._choices import LABELS

from ._options import add_json_option, add_workspace_option, open_workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    consensus = subparsers.add_parser("consensus", help="consensus labels a lead records where annotators disagree: add, list")
    actions = consensus.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="record the consensus label of a model on a suite (history kept)")
    add.add_argument("--model", required=True, help="a registered model")
    add.add_argument("--label", required=True, choices=LABELS, help="the consensus label")
    add.add_argument("--reason", required=True, help="why this label (required)")
    add.add_argument("--adjudicator", default=None, help="who decides (default: your login name)")
    add.set_defaults(handler=run_consensus_add)
    listing = actions.add_parser("list", help="the consensus that counts on a suite, and its history")
    listing.set_defaults(handler=run_consensus_list)

    disagreements = subparsers.add_parser("disagreements", help="models whose current judgments on a suite disagree")
    disagreements.set_defaults(handler=run_disagreements)

    export = subparsers.add_parser("export-judgments", help="judgments and consensus (both histories) as one CSV file")
    export.add_argument("--suite", dest="suite_id", default=None, help="only this suite (default: every judgment and consensus)")
    export.add_argument("--out", required=True, help="the CSV file to write")
    export.set_defaults(handler=run_export)

    importing = subparsers.add_parser(
        "import-judgments", help="add the judgments and consensus of an export-judgments CSV file: every row checked, all or nothing"
    )
    importing.add_argument("file", help="the CSV file export-judgments wrote")
    importing.set_defaults(handler=run_import)

    for parser in (add, listing, disagreements):
        parser.add_argument("--suite", dest="suite_id", required=True, help="the suite whose judgments are adjudicated")
    for parser in (add, listing, disagreements, export, importing):
        add_workspace_option(parser)
        add_json_option(parser)


def run_consensus_add(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.judging import add_consensus

    adjudicator = args.adjudicator if args.adjudicator is not None else getpass.getuser()
    consensus = add_consensus(
        open_workspace(args), model=args.model, suite_id=args.suite_id, label=args.label, reason=args.reason, adjudicator=adjudicator
    )
    return consensus.to_dict()


def run_consensus_list(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.judging import consensus_history, current_consensus

    workspace = _workspace_with_suite(args)
    current = current_consensus(workspace, args.suite_id)
    history = consensus_history(workspace, args.suite_id)
    return {"suite": args.suite_id, "consensus": current.to_dict("records"), "history": history.to_dict("records")}


def run_disagreements(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.judging import disagreements

    table = disagreements(_workspace_with_suite(args), args.suite_id)
    return {"suite": args.suite_id, "n_models": len(table), "models": table.to_dict("records")}


def run_export(args: argparse.Namespace) -> dict[str, Any]:
    import io

    import pandas as pd

    from analytics._validation import user_path
    from analytics.exceptions import InvalidInputError
    from analytics.judging import export_judgments_csv

    workspace = _workspace_with_suite(args) if args.suite_id is not None else open_workspace(args)
    out = user_path(args.out, "--out")
    if not out.parent.is_dir():
        raise InvalidInputError(f"--out: folder {out.parent} does not exist; create it or write the CSV elsewhere")
    text = export_judgments_csv(workspace, args.suite_id)
    out.write_text(text, encoding="utf-8", newline="")  # as exported: a note's line breaks are not translated
    records = pd.read_csv(io.StringIO(text))["record"].value_counts()
    return {"out": str(out), "suite": args.suite_id, "judgments": int(records.get("judgment", 0)), "consensus": int(records.get("consensus", 0))}


def run_import(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.judging import import_judgments

    return import_judgments(open_workspace(args), args.file).to_dict()


def _workspace_with_suite(args: argparse.Namespace) -> Any:
    """The workspace, after checking that ``--suite`` names one of its suites."""
    from analytics.exceptions import NotFoundError

    workspace = open_workspace(args)
    if workspace.query_one("SELECT 1 FROM suites WHERE id = ?", (args.suite_id,)) is None:
        raise NotFoundError(f"--suite: no suite {args.suite_id!r} in workspace {workspace.root}; list them with `python -m analytics suites`")
    return workspace
