"""The job kinds: :data:`JOB_KINDS`, the one registry of what a background job can do.

A kind is a :class:`JobKind`: its name; its work, ``work(workspace, params, progress) -> result``
(``params`` the job's keyword arguments, ``progress(done, total, message)`` called before each step,
the result JSON-serialisable); the permission starting it needs (:mod:`analytics.team.roles`); and
the parameter names it accepts, read from the signature of the stage function its work calls
(:func:`JobKind.calling`), never kept by hand. Every kind must be idempotent: run again with the
same params, it skips what is done.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from analytics._progress import Progress, with_message
from analytics.api import build_suite, run
from analytics.comparison import method_comparison, params_estimate_seconds, record_step_cost
from analytics.gate import STEPS, check_text
from analytics.repository import run_repository
from analytics.runs import start_runs
from analytics.saliency import object_share
from analytics.workspace import Workspace
from analytics.zoo import build_zoo, zoo_job

from .pace import Pace, paced

logger = logging.getLogger(__name__)

Work = Callable[[Workspace, dict, Progress], dict]
"""``work(workspace, params, progress) -> result``: a kind's work (the result JSON-serialisable)."""


@dataclass(frozen=True)
class JobKind:
    """A kind of background job.

    Attributes
    ----------
    name : str
    work : callable (Workspace, dict, progress) -> dict
        Runs the job; must be importable by name (the worker imports its module).
    permission : str
        What starting it needs (a key of :data:`analytics.team.roles.ACTIONS`).
    params : frozenset of str
        The parameter names it accepts (checked by :func:`analytics.jobs.start`).
    """

    name: str
    work: Work
    permission: str
    params: frozenset[str]

    @classmethod
    def calling(cls, name: str, work: Work, function: Callable, *, permission: str, fixed: Iterable[str] = ()) -> JobKind:
        """A kind whose work calls ``function``: it accepts that function's parameters, less
        ``workspace``, ``progress`` and the ``fixed`` ones (which the work sets itself)."""
        return cls(name, work, permission, frozenset(inspect.signature(function).parameters) - {"workspace", "progress", *fixed})


def _methods(workspace: Workspace, params: dict, progress: Progress) -> dict:
    started = time.monotonic()
    report = paced(progress, Pace(prior_s=params_estimate_seconds(workspace, params)))  # the page's estimate, revised as steps finish
    table = method_comparison(workspace, **params, progress=report)
    record_step_cost(workspace, params, time.monotonic() - started)
    return {"table": table.to_dict("records")}


#: What a suite job's row says for each step of :func:`analytics.api.build_suite`'s progress.
SUITE_STEPS = {"keywords": "keywords of the targets and the pool", "exact distances": "semantic distances"}
#: A suite job stored before the job called :func:`analytics.api.build_suite` names the library's parameters.
_OLD_SUITE_PARAMS = {"ontology_id": "ontology", "target_ids": "targets"}


def _suite(workspace: Workspace, params: dict, progress: Progress) -> dict:
    """:func:`analytics.api.build_suite`, the flow the command line's ``suite`` and a notebook call (the
    keyword tables and the ontology it lacks computed first)."""
    progress(0, 0, "screening the pool and sampling backgrounds")

    def step(done: int, total: int, name: str = "", /) -> None:
        progress(done, total, SUITE_STEPS.get(name, name))

    made = build_suite(workspace, **_suite_params(params), progress=step, say=logger.info)
    # the label the suite goes by in every listing, so the job's result names it the same way
    return {"suite_id": made["suite"], "suite": made["label"], "items": made["items"]}


def _suite_params(params: dict) -> dict:
    given = {_OLD_SUITE_PARAMS.get(key, key): value for key, value in params.items() if key != "keyword_tables"}
    tables = params.get("keyword_tables") or {}
    return {**{f"{kind}_table": name for kind, name in tables.items()}, **given}


def _runs(workspace: Workspace, params: dict, progress: Progress) -> dict:
    """:func:`analytics.api.run` (the command line's ``run`` and a notebook's) of the models that can
    score the suite's classes; the others are reported with their reason."""
    progress(0, 0, "loading the models")
    given = {key: value for key, value in params.items() if key not in ("model_names", "suite_id")}
    table = run(workspace, models=params["model_names"], suite=params["suite_id"], **given, skip_unscorable=True, progress=with_message(progress, "images"))
    return {"run_ids": list(table["id"]), "models": list(table["model"]), "failed": dict(table.attrs["skipped"])}


def _repository(workspace: Workspace, params: dict, progress: Progress) -> dict:
    return run_repository(workspace, **params, progress=progress)


def _saliency(workspace: Workspace, params: dict, progress: Progress) -> dict:
    progress(0, 0, "loading the models")
    return object_share(workspace, **params, progress=progress)


def _gate(workspace: Workspace, params: dict, progress: Progress) -> dict:
    progress(0, 0, "checking the policy, the models and the suite")

    def step(done: int, total: int, name: str = "", /) -> None:  # the check's steps, in the words of the CLI's stage lines
        progress(done, total, STEPS.get(name, name))

    return check_text(workspace, **params, progress=step).to_dict()


#: Kind name -> :class:`JobKind`.
JOB_KINDS: dict[str, JobKind] = {
    kind.name: kind
    for kind in (
        JobKind.calling("methods", _methods, method_comparison, permission="build_suites"),
        JobKind.calling("suite", _suite, build_suite, permission="build_suites", fixed={"say"}),  # its notes go to the job's log
        # the parameters keep start_runs's names (model_names, suite_id), as the Run page and stored jobs give them
        JobKind.calling("runs", _runs, start_runs, permission="run_models"),
        JobKind.calling("repository", _repository, run_repository, permission="run_models", fixed={"ray_address", "num_gpus_per_model"}),  # runs locally
        JobKind.calling("saliency", _saliency, object_share, permission="run_models"),
        JobKind.calling("zoo", zoo_job, build_zoo, permission="run_models"),
        JobKind.calling("gate", _gate, check_text, permission="run_models"),
    )
}


def register_kind(kind: JobKind) -> None:
    """Add a kind to :data:`JOB_KINDS` (e.g. a test's); a worker learns it by importing the module
    of ``kind.work`` (:func:`analytics.jobs.start` tells it which)."""
    JOB_KINDS[kind.name] = kind
