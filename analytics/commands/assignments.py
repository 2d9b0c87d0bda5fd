"""``assign`` and ``assignments``: who judges which models of a suite, and how far judging has come.

``assign --suite S --models a,b --annotators x,y`` assigns every listed model to every listed
annotator; ``assign --suite S --everyone --k 3`` sets the plan "everyone judges everything, 3
judgments wanted per model"; ``--remove`` takes assignments back. ``assignments --suite S`` reports
the plan, the judgments per model (so far / wanted) and per annotator (done / assigned).
"""

from __future__ import annotations

import argparse
from typing import Any

from ._options import add_json_option, add_workspace_option, open_workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    assign = subparsers.add_parser(
        "assign", help="assign models of a suite to annotators, or let everyone judge everything with k judgments wanted per model"
    )
    assign.add_argument("--suite", dest="suite_id", required=True, help="the suite to judge")
    assign.add_argument("--models", type=_names, default=None, help="comma-separated registered models")
    assign.add_argument("--annotators", type=_names, default=None, help="comma-separated annotators (accounts in team mode)")
    assign.add_argument("--everyone", action="store_true", help="everyone judges every model with a finished run over the suite")
    assign.add_argument("--k", type=int, default=None, help="judgments wanted per model (with --everyone; default 1)")
    assign.add_argument("--remove", action="store_true", help="take the assignments of --models x --annotators back")
    assign.set_defaults(handler=run_assign)

    report = subparsers.add_parser("assignments", help="judging progress of a suite: per model (so far / wanted) and per annotator")
    report.add_argument("--suite", dest="suite_id", required=True, help="the suite")
    report.set_defaults(handler=run_assignments)

    for parser in (assign, report):
        add_workspace_option(parser)
        add_json_option(parser)


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def run_assign(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.exceptions import InvalidInputError
    from analytics.judging import assign, set_plan, unassign

    workspace = open_workspace(args)
    if args.everyone:
        if args.models or args.annotators or args.remove:
            raise InvalidInputError("--everyone takes no --models, --annotators or --remove; give either --everyone [--k K] or both lists")
        plan = set_plan(workspace, args.suite_id, 1 if args.k is None else args.k)
        return {"suite": args.suite_id, "plan": plan.to_dict()}
    if not args.models or not args.annotators or args.k is not None:
        raise InvalidInputError("assign needs --models a,b and --annotators x,y (or --everyone [--k K]); --k goes with --everyone")
    if args.remove:
        return {"suite": args.suite_id, "removed": unassign(workspace, args.suite_id, args.models, args.annotators)}
    made = assign(workspace, args.suite_id, args.models, args.annotators)
    return {"suite": args.suite_id, "assignments": [a.to_dict() for a in made]}


def run_assignments(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.judging import annotator_progress, get_plan, judging_progress

    workspace = open_workspace(args)
    models = judging_progress(workspace, args.suite_id)
    plan = get_plan(workspace, args.suite_id)
    return {
        "suite": args.suite_id,
        "plan": None if plan is None else plan.to_dict(),
        "models": models.to_dict("records"),
        "annotators": annotator_progress(workspace, args.suite_id).to_dict("records"),
        "complete": int(models["complete"].sum()),
    }
