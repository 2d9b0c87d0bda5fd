"""Where a repository run stands (:class:`RunLedger`) and how its models are grouped to run
(:func:`backbone_groups`); shared by the local runner (:mod:`analytics.repository.run`) and the Ray
driver (:mod:`analytics.repository.ray_backend`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from analytics._progress import Progress
from analytics.exceptions import NotFoundError
from analytics.models import get_model_spec
from analytics.runs import complete_runs
from analytics.workspace import Workspace

from .manifest import failure_reason, record_outcomes


class RunLedger:
    """Where a repository run stands: counts the models as they end, stores each outcome, reports progress.

    Shared by the local runner and the Ray driver (:mod:`analytics.repository.ray_backend`); it also holds the
    rule for a group that fails (:meth:`failed`).

    Parameters
    ----------
    workspace : Workspace
    name : str
        The repository.
    suite_id : str
    models : sequence of str
        Every model of the repository, in its order.
    skipped : sequence of str
        Models finished before this run.
    progress : callable (done_models, total_models, message) or None
    """

    def __init__(
        self, workspace: Workspace, name: str, suite_id: str, models: Sequence[str], *, skipped: Sequence[str], progress: Progress | None
    ) -> None:
        self.workspace, self.name, self.suite_id, self.models = workspace, name, suite_id, list(models)
        self.skipped, self.done, self.failures = list(skipped), [], {}
        self._progress = progress

    def step(self, message: str) -> None:
        """Report ``message`` with the number of models that ended so far (raises a job's cancel)."""
        if self._progress is not None:
            self._progress(len(self.skipped) + len(self.done) + len(self.failures), len(self.models), message)

    def succeeded(self, run_ids: Mapping[str, str]) -> None:
        """Complete the finished runs (model -> run id: summary and the cell quantiles of the colour
        scale, :func:`analytics.runs.complete_runs`) and clear any earlier failure of their models."""
        complete_runs(self.workspace, list(run_ids.values()))
        self.done += list(run_ids)
        record_outcomes(self.workspace, self.name, self.suite_id, dict.fromkeys(run_ids))

    def failed(self, models: Sequence[str], err: BaseException) -> list[list[str]]:
        """A group failed: the groups to try next, or none when its failure is recorded.

        Several models are tried again one by one, so a bad head does not fail the others of its
        backbone, unless the group ran out of memory (each alone would need the same shared pass).
        """
        if len(models) > 1 and not _out_of_memory(err):
            return [[model] for model in models]
        reason = failure_reason(err)
        self.failures.update(dict.fromkeys(models, reason))
        record_outcomes(self.workspace, self.name, self.suite_id, dict.fromkeys(models, reason))
        return []

    def report(self) -> dict:
        """``repository``, ``suite_id``, ``done``, ``skipped``, ``failed`` (model -> reason), in repository order."""
        order = {model: i for i, model in enumerate(self.models)}
        return {
            "repository": self.name, "suite_id": self.suite_id, "done": sorted(self.done, key=order.__getitem__),
            "skipped": self.skipped, "failed": {model: self.failures[model] for model in sorted(self.failures, key=order.__getitem__)},
        }  # fmt: skip


def backbone_groups(workspace: Workspace, models: Sequence[str], ledger: RunLedger) -> list[list[str]]:
    """Models grouped by the backbone whose forward pass they run (a head's backbone, else the model).

    A model that is no longer registered is recorded as failed in ``ledger`` and left out.

    Returns
    -------
    list of list of str
        Groups in the order of their first model.
    """
    groups: dict[str, list[str]] = {}
    for model in models:
        try:
            spec = get_model_spec(workspace, model)
        except NotFoundError as err:
            ledger.failed([model], err)
            continue
        groups.setdefault(spec.backbone if spec.source == "head" else spec.name, []).append(model)
    return list(groups.values())


def group_label(workspace: Workspace, group: Sequence[str]) -> str:
    """How progress names a group (see :func:`backbone_groups`): the model, or ``<backbone> + N heads``."""
    if len(group) == 1:
        return group[0]
    first = get_model_spec(workspace, group[0])
    backbone = first.backbone if first.source == "head" else first.name  # the backbone runs in its heads' group
    return f"{backbone} + {len(group) - (backbone in group)} heads"


def _out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` says the device or host ran out of memory (torch's CUDA error or a MemoryError)."""
    return isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError"
