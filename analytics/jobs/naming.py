"""What a person reads for a job: what it works on, in the words the pages use for suites and
models, instead of its id (a random hex string that names nothing)."""

from __future__ import annotations

from collections.abc import Sequence

from analytics.suites import suite_labels_of
from analytics.workspace import Workspace

from .records import Job

_MODELS_SHOWN = 3  # more models than this are counted, not listed


def job_label(workspace: Workspace, job: Job) -> str:
    """What ``job`` works on, plain text (not escaped), e.g. ``tiny, fg-only on random, N = 2, seed 0,
    6 targets`` for runs, ``zoo-heads on <suite>`` for a repository, ``Cups check`` for a suite,
    ``candidate against release, policy policy.toml`` for the gate.

    A suite job names the suite its result records (as every listing names it), else the name it
    was given, else its method; a job of a kind without a subject, or with parameters of another
    shape (an older job), is named by its id. Model names appear: blind accounts must not be shown this.
    """
    params, suites = job.params, None

    def suite(suite_id: str | None) -> str:
        nonlocal suites
        suites = suite_labels_of(workspace) if suites is None else suites
        return suites.get(suite_id, str(suite_id))

    try:
        if job.kind == "suite":
            return str(job.result.get("suite") or params.get("name") or f"{params['method']}, N = {params['n']}")
        if job.kind == "runs":
            return f"{_models(params['model_names'])} on {suite(params['suite_id'])}"
        if job.kind == "repository":
            return f"{params['name']} on {suite(params['suite_id'])}"
        if job.kind == "saliency":
            return f"{_models(params['models'])}, {len(params['target_ids'])} targets"
        if job.kind == "gate":
            against = f" against {params['baseline']}" if params.get("baseline") else ""
            return f"{params['candidate']}{against}, policy {params.get('policy_name') or 'policy.toml'}"
        if job.kind == "methods":
            methods = params.get("methods")
            return f"{params['model']}, " + (f"{len(methods)} methods" if methods else "every method")
    except (KeyError, TypeError):
        pass
    return job.id


def _models(names: Sequence[str] | str) -> str:
    names = [names] if isinstance(names, str) else list(names)
    if len(names) > _MODELS_SHOWN:
        return f"{', '.join(names[:_MODELS_SHOWN])} and {len(names) - _MODELS_SHOWN} more models"
    return ", ".join(names)
