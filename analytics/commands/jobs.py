"""``jobs``: background jobs (:mod:`analytics.jobs`) — list, start, cancel, resume, and the worker.

``jobs list`` shows every job with its progress (``--active`` only the running ones); ``jobs start
KIND --params JSON`` starts one (``--wait`` follows it with a progress bar until it ends);
``jobs cancel ID`` stops one and ``jobs resume ID`` finishes a cancelled, failed or interrupted one.
``jobs work ID`` is what a started job's detached worker process runs.
"""

from __future__ import annotations

import argparse
import importlib
import json
from typing import TYPE_CHECKING, Any

from ._options import add_json_option, add_workspace_option, open_workspace

if TYPE_CHECKING:
    from analytics.jobs import Job
    from analytics.workspace import Workspace


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    parser = subparsers.add_parser("jobs", help="background jobs: list, start, cancel, resume")
    actions = parser.add_subparsers(dest="jobs_command", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="jobs with status and progress, newest first")
    listing.add_argument("--active", action="store_true", help="only queued, running and cancelling jobs")
    listing.set_defaults(handler=list_command)
    starting = actions.add_parser("start", help="start a job of a kind with parameters as JSON")
    starting.add_argument("kind", help="methods, suite, runs, repository, saliency or zoo")
    starting.add_argument("--params", default="{}", help='keyword arguments as a JSON object, e.g. \'{"model": "tiny"}\'')
    starting.add_argument("--wait", action="store_true", help="follow it with a progress bar until it ends")
    starting.set_defaults(handler=start_command)
    for name, handler, text in (("cancel", cancel_command, "stop a job"), ("resume", resume_command, "finish a cancelled or failed job")):
        action = actions.add_parser(name, help=text)
        action.add_argument("job_id", metavar="ID")
        action.set_defaults(handler=handler)
    worker = actions.add_parser("work", help="run a queued job in this process (the worker's entry point)")
    worker.add_argument("job_id", metavar="ID")
    worker.add_argument("--kind-module", help="module of the kind's work, imported first (so a kind added by register_kind is known)")
    worker.set_defaults(handler=work_command)
    for action in actions.choices.values():
        add_workspace_option(action)
        add_json_option(action)


def list_command(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.jobs import list_jobs

    table = list_jobs(open_workspace(args), active_only=args.active)
    return {"jobs": table.to_dict("records")}


def start_command(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.exceptions import InvalidInputError
    from analytics.jobs import start

    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as err:
        raise InvalidInputError(f"--params must be a JSON object; {err}") from None
    if not isinstance(params, dict):
        raise InvalidInputError(f"--params must be a JSON object like '{{\"n\": 4}}'; got {args.params!r}")
    workspace = open_workspace(args)
    job = start(workspace, args.kind, params)
    return _record(_follow(workspace, job.id) if args.wait else job)


def cancel_command(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.jobs import cancel

    return _record(cancel(open_workspace(args), args.job_id))


def resume_command(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.jobs import resume

    return _record(resume(open_workspace(args), args.job_id))


def work_command(args: argparse.Namespace) -> dict[str, Any]:
    from analytics.jobs import work

    if args.kind_module:
        importlib.import_module(args.kind_module)
    return _record(work(open_workspace(args), args.job_id))


def _follow(workspace: Workspace, job_id: str) -> Job:
    """Show the job's progress with tqdm until it ends; returns the ended job."""
    import time

    from tqdm import tqdm

    from analytics.jobs import POLL_S, get_job

    with tqdm(desc=f"job {job_id}", unit="step") as bar:
        while (job := get_job(workspace, job_id)).active:
            bar.total, bar.n = job.total or None, job.done
            bar.set_postfix_str(job.message[:60])
            time.sleep(POLL_S)
    return job


def _record(job: Job) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(job)
