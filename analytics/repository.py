"""A model repository: many torchvision checkpoints named in one manifest, registered, run over a
suite and followed as one unit (issue 15, the paper's repository of 250 models).

The manifest is a CSV file with one row per model::

    name,architecture,checkpoint,label_space,optimiser,augmentation,epochs
    r18-sgd,resnet18,weights/r18-sgd.pt,imagenet,sgd,flip,90

``name`` (the registered model's name), ``architecture`` (a :mod:`torchvision.models` builder),
``checkpoint`` (a state dict; a relative path is read from the manifest's folder) and
``label_space`` (``imagenet``, ``in9`` or a label file, relative to the manifest's folder) are
required; ``input_size`` is optional; every other column is the model's metadata (what the
repository varies: optimiser, augmentation, epochs, …), kept as a JSON dict.

* :func:`add_repository` registers every entry with :func:`analytics.models.register_torchvision`;
  a bad entry (unknown architecture, missing or unreadable checkpoint, wrong number of classes) is
  reported and skipped, the rest are registered. Registration validates before it writes, so a
  failing entry leaves no ``models`` row.
* :func:`create_repository` records registered models of any source (zoo heads, torchvision,
  TorchScript) as a repository without a manifest.
* :func:`run_repository` runs the pending models over a suite: a model whose current run is
  finished is skipped; the zoo heads of one backbone run as one group that shares the backbone's
  forward pass; every group reads the suite's composites from one cache; an interrupted run
  resumes from its stored batches; a model that fails (bad weights, out of memory) is recorded as
  failed with its reason and does not stop the others. With ``ray_address`` the groups run as
  Ray tasks and only this process writes (:mod:`analytics.distributed`).
* :func:`repository_status` is the table of the repository's models on a suite.

Storage (no table of its own): the meta key ``repository:<name>`` holds JSON
``{"models": [...], "metadata": {model: {...}}, "manifest": path, "failures": {suite: {model: reason}}}``;
runs are ordinary runs. The job kind ``repository`` (:mod:`analytics.jobs`) runs
:func:`run_repository` in the background; it is registered when this module is imported.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import inference
from ._validation import check_positive_int
from .composite_cache import CompositeCache
from .exceptions import BackdropError, InvalidInputError, NotFoundError, PermissionDeniedError
from .jobs import JobCancelled
from .models import LabelSpace, get_model_spec, list_models, parse_label_space, register_torchvision
from .runs import current_runs, summarize_run
from .team.roles import require_permission
from .workspace import Workspace

__all__ = [
    "META_PREFIX",
    "REQUIRED_COLUMNS",
    "STATUS_COLUMNS",
    "AddReport",
    "RepositoryEntry",
    "RunLedger",
    "add_repository",
    "backbone_groups",
    "create_repository",
    "get_repository",
    "group_label",
    "list_repositories",
    "read_manifest",
    "repository_status",
    "run_repository",
]

#: Manifest columns every row must fill.
REQUIRED_COLUMNS = ("name", "architecture", "checkpoint", "label_space")
#: Optional manifest columns that are not metadata.
OPTIONAL_COLUMNS = ("input_size",)
#: Meta key prefix of a repository's record.
META_PREFIX = "repository:"
#: Columns of :func:`repository_status`.
STATUS_COLUMNS = ["model", "status", "accuracy", "worst_case_accuracy", "images", "expected_images", "run_id", "reason"]
STATUSES = ("done", "running", "failed", "pending")

#: ``progress(done_models, total_models, message)``.
RepositoryProgress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class RepositoryEntry:
    """One manifest row.

    Attributes
    ----------
    name : str
    architecture : str
        A torchvision builder name.
    checkpoint : Path
        Absolute path of the state dict.
    label_space : str
        ``imagenet``, ``in9`` or the absolute path of a label file.
    input_size : int or None
        None: the architecture's default.
    metadata : dict
        The other columns (numbers as numbers, empty cells left out).
    row : int
        Line of the manifest (the header is line 1).
    """

    name: str
    architecture: str
    checkpoint: Path
    label_space: str
    input_size: int | None
    metadata: dict
    row: int


@dataclass(frozen=True)
class AddReport:
    """What :func:`add_repository` did.

    Attributes
    ----------
    repository : str
    registered : list of str
        Models registered now.
    unchanged : list of str
        Models registered before from the same checkpoint path and architecture (kept as they are).
    skipped : dict of str to str
        Entry (its name, or ``row N`` when it has none) -> why it was skipped.
    """

    repository: str
    registered: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        """A JSON-ready record (for the CLI)."""
        return {"repository": self.repository, "registered": self.registered, "unchanged": self.unchanged, "skipped": self.skipped}


# -- the manifest --------------------------------------------------------------------------------
def read_manifest(path: str | os.PathLike) -> list[RepositoryEntry]:
    """Read and validate a repository manifest (CSV; module notes).

    Parameters
    ----------
    path : path-like

    Returns
    -------
    list of RepositoryEntry
        In file order.

    Raises
    ------
    InvalidInputError
        Unreadable file, missing columns, or rows that are incomplete (every bad row named, with
        its line and the fix).
    """
    entries, problems = _parse_manifest(Path(path))
    if problems:
        raise InvalidInputError(f"{path}: " + "; ".join(f"{where}: {why}" for where, why in problems.items()))
    return entries


def _parse_manifest(path: Path) -> tuple[list[RepositoryEntry], dict[str, str]]:
    """The good entries and, per bad row (``row N``), what is wrong with it."""
    table = _read_csv(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if missing:
        raise InvalidInputError(
            f"{path}: the manifest lacks the column(s) {', '.join(missing)}; its header must name {', '.join(REQUIRED_COLUMNS)} "
            "(plus optional input_size and metadata columns)"
        )
    entries, problems, seen = [], {}, set()
    for index, record in enumerate(table.to_dict("records")):
        line = index + 2
        try:
            entry = _entry(record, path.parent, line)
        except InvalidInputError as err:
            problems[f"row {line}"] = str(err)
            continue
        if entry.name in seen:
            problems[f"row {line}"] = f"the name {entry.name!r} is used by an earlier row; give every model its own name"
            continue
        seen.add(entry.name)
        entries.append(entry)
    return entries, problems


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except FileNotFoundError:
        raise InvalidInputError(f"{path}: manifest not found; give the path of a CSV file") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise InvalidInputError(f"{path}: not a readable CSV manifest ({str(err).splitlines()[0]}); save it as UTF-8 CSV with a header row") from None
    table.columns = [str(c).strip() for c in table.columns]
    return table


def _entry(record: Mapping[str, str], folder: Path, line: int) -> RepositoryEntry:
    values = {key: str(value).strip() for key, value in record.items()}
    empty = [c for c in REQUIRED_COLUMNS if not values[c]]
    if empty:
        raise InvalidInputError(f"empty {', '.join(empty)}; fill every one of {', '.join(REQUIRED_COLUMNS)}")
    input_size = None
    if values.get("input_size"):
        try:
            input_size = check_positive_int(int(values["input_size"]), "input_size", minimum=16)
        except ValueError:
            raise InvalidInputError(f"input_size {values['input_size']!r} is not a whole number >= 16; leave it empty for the default") from None
    label = values["label_space"]
    metadata = {k: _scalar(v) for k, v in values.items() if k not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS and v}
    return RepositoryEntry(
        name=values["name"],
        architecture=values["architecture"],
        checkpoint=_resolve(values["checkpoint"], folder),
        label_space=label if label in ("imagenet", "in9") else str(_resolve(label, folder)),
        input_size=input_size,
        metadata=metadata,
        row=line,
    )


def _resolve(text: str, folder: Path) -> Path:
    path = Path(text).expanduser()
    return (path if path.is_absolute() else folder / path).resolve()


def _scalar(text: str) -> int | float | str:
    """A metadata cell as a number when it reads as one."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


# -- registering -------------------------------------------------------------------------------
def add_repository(workspace: Workspace, manifest: str | os.PathLike, *, name: str | None = None, replace: bool = False) -> AddReport:
    """Register every model of a manifest and record the repository.

    Parameters
    ----------
    workspace : Workspace
        Its actor (team mode) needs ``register_models``.
    manifest : path-like
        A CSV manifest (module notes).
    name : str or None
        The repository's name; None: the manifest's file name without extension. Adding to an
        existing repository extends it.
    replace : bool, default=False
        Register again models whose name is taken (new weights); otherwise a taken name whose
        checkpoint path and architecture match is kept unchanged, and any other is skipped.

    Returns
    -------
    AddReport
        Registered, unchanged and skipped entries (with reasons).

    Raises
    ------
    InvalidInputError
        Unreadable manifest or missing columns, or a bad repository name.
    PermissionDeniedError
        The actor may not register models.
    """
    require_permission(workspace, "register_models")
    path = Path(manifest)
    name = _check_name(path.stem if name is None else name)
    entries, problems = _parse_manifest(path)
    report = AddReport(name, skipped=dict(problems))
    existing = {spec.name: spec for spec in list_models(workspace)}
    label_spaces: dict[str, LabelSpace] = {}
    for entry in entries:
        known = existing.get(entry.name)
        if known is not None and not replace and known.origin == str(entry.checkpoint) and known.arch == entry.architecture:
            report.unchanged.append(entry.name)
            continue
        try:
            if entry.label_space not in label_spaces:
                label_spaces[entry.label_space] = parse_label_space(entry.label_space)
            register_torchvision(
                workspace, entry.name, arch=entry.architecture, checkpoint=entry.checkpoint,
                label_space=label_spaces[entry.label_space], input_size=entry.input_size, replace=replace,
            )  # fmt: skip
        except PermissionDeniedError:
            raise
        except (BackdropError, RuntimeError, ValueError, TypeError, KeyError, OSError) as err:  # builders raise what they like
            report.skipped[entry.name] = f"row {entry.row}: {_reason(err)}"
            continue
        report.registered.append(entry.name)
    kept = set(report.registered) | set(report.unchanged)
    _save_members(workspace, name, [e for e in entries if e.name in kept], path)
    return report


def create_repository(workspace: Workspace, name: str, models: Sequence[str], *, metadata: Mapping[str, Mapping] | None = None) -> dict:
    """Record registered models (any source: torchvision, heads of the zoo, TorchScript) as a repository.

    A repository made this way has no manifest; adding to an existing one extends it.

    Parameters
    ----------
    workspace : Workspace
        Its actor (team mode) needs ``register_models``.
    name : str
    models : sequence of str
        Registered model names, at least one.
    metadata : mapping of model -> dict, or None
        Shown beside each model (e.g. a zoo head's training settings).

    Returns
    -------
    dict
        The repository's record, as :func:`get_repository`.

    Raises
    ------
    InvalidInputError
        No models, or a bad repository name.
    NotFoundError
        A model is not registered (the message names it).
    """
    require_permission(workspace, "register_models")
    name = _check_name(name)
    wanted = list(dict.fromkeys(models))
    if not wanted:
        raise InvalidInputError(f"repository {name!r} needs at least one registered model; got none")
    known = {spec.name for spec in list_models(workspace)}
    missing = [model for model in wanted if model not in known]
    if missing:
        raise NotFoundError(f"models not registered in workspace {workspace.root}: {', '.join(missing[:5])}; register them on the Models page first")
    extra = metadata or {}
    with workspace.transaction() as conn:
        record = _record(conn, name)
        record["models"] = list(dict.fromkeys([*record["models"], *wanted]))
        record["metadata"].update({model: dict(extra.get(model, {})) for model in wanted})
        workspace.set_meta(META_PREFIX + name, json.dumps(record, sort_keys=True), conn=conn)
    return record


def _record(conn, name: str) -> dict:
    """The repository's record inside a transaction (an empty one when it is new)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_PREFIX + name,)).fetchone()
    return json.loads(row[0]) if row else {"models": [], "metadata": {}, "failures": {}}


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip() or name != name.strip() or len(name) > 100 or any(ord(c) < 32 for c in name):
        raise InvalidInputError(f"repository name must be 1-100 printable characters without surrounding spaces; got {name!r}")
    return name


def _save_members(workspace: Workspace, name: str, entries: list[RepositoryEntry], manifest: Path) -> None:
    with workspace.transaction() as conn:
        record = _record(conn, name)
        record["models"] = list(dict.fromkeys([*record["models"], *(e.name for e in entries)]))
        record["metadata"].update({e.name: e.metadata for e in entries})
        record["manifest"] = str(manifest.resolve())
        workspace.set_meta(META_PREFIX + name, json.dumps(record, sort_keys=True), conn=conn)


def list_repositories(workspace: Workspace) -> list[str]:
    """Names of the workspace's repositories, sorted."""
    rows = workspace.query("SELECT key FROM meta WHERE key LIKE ? ORDER BY key", (META_PREFIX + "%",))
    return [row["key"][len(META_PREFIX) :] for row in rows]


def get_repository(workspace: Workspace, name: str) -> dict:
    """A repository's record: ``models`` (list), ``metadata`` (model -> dict), ``manifest``, ``failures``.

    Raises
    ------
    NotFoundError
        No such repository; the message names the known ones.
    """
    value = workspace.get_meta(META_PREFIX + name)
    if value is None:
        known = ", ".join(list_repositories(workspace)) or "none"
        raise NotFoundError(f"no repository {name!r} in workspace {workspace.root}; known: {known} (add one with `python -m analytics repository add MANIFEST`)")
    return json.loads(value)


# -- running -----------------------------------------------------------------------------------
def run_repository(
    workspace: Workspace,
    name: str,
    suite_id: str,
    *,
    device: str | None = None,
    batch_size: int = 32,
    top_k: int = 3,
    progress: RepositoryProgress | None = None,
    ray_address: str | None = None,
    num_gpus_per_model: float = 0,
) -> dict:
    """Run every pending model of a repository over a suite; models sharing a backbone run together.

    The pending models (finished ones are skipped) are grouped by the backbone whose forward pass
    they need: the zoo heads of one backbone form one group and share its pass, any other model is
    a group of its own. Locally the groups run one after another through
    :func:`analytics.inference.run_models`, all reading the suite's composites from one
    :class:`analytics.composite_cache.CompositeCache`; with ``ray_address`` they run as Ray tasks
    (:mod:`analytics.distributed`) and this process alone writes the results. A group that fails is
    tried again model by model (unless it ran out of memory, which the shared pass would repeat),
    so only the failing model is recorded as failed.

    Parameters
    ----------
    workspace : Workspace
        Its actor (team mode) needs ``run_models``.
    name : str
        The repository.
    suite_id : str
    device, batch_size, top_k
        As :func:`analytics.inference.run_models`.
    progress : callable (done_models, total_models, message) or None
        Called at the start, after every stored batch (a job's cancel comes through it) and at the end.
    ray_address : str or None, default=None
        None: run here. ``"local"``: start a Ray cluster on this machine for the call; else the
        address of a running cluster (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``).
    num_gpus_per_model : float, default=0
        GPUs each Ray task (one group of models) asks for; > 0 runs the tasks on CUDA.

    Returns
    -------
    dict
        ``repository``, ``suite_id``, ``done`` (models run now), ``skipped`` (finished before),
        ``failed`` (model -> reason); models in repository order.

    Raises
    ------
    InvalidInputError
        A bad batch size, top-k or GPU count, or an unusable Ray address.
    NotFoundError
        No such repository or suite.
    PermissionDeniedError
        The actor may not run models.
    JobCancelled
        ``progress`` asked to stop; runs resume from their stored batches on the next call.
    """
    require_permission(workspace, "run_models")
    check_positive_int(batch_size, "batch_size")
    check_positive_int(top_k, "top_k")
    if isinstance(num_gpus_per_model, bool) or not isinstance(num_gpus_per_model, (int, float)) or not 0 <= num_gpus_per_model < 1e6:
        raise InvalidInputError(f"num_gpus_per_model must be a number >= 0; got {num_gpus_per_model!r}")
    if num_gpus_per_model and ray_address is None:
        raise InvalidInputError("num_gpus_per_model applies to Ray tasks; give ray_address too (or use device='cuda' here)")
    models = get_repository(workspace, name)["models"]
    if workspace.query_one("SELECT id FROM suites WHERE id = ?", (suite_id,)) is None:
        raise NotFoundError(f"no suite {suite_id!r} in workspace {workspace.root}; list them with `python -m analytics suites`")
    finished = set(_latest_runs(workspace, suite_id, top_k).query("status == 'done'")["model"])
    ledger = RunLedger(workspace, name, suite_id, models, skipped=[m for m in models if m in finished], progress=progress)
    groups = backbone_groups(workspace, [m for m in models if m not in finished], ledger)
    ledger.step("starting")
    if ray_address is None:
        _run_locally(workspace, suite_id, groups, ledger, device=device, batch_size=batch_size, top_k=top_k)
    else:
        from .distributed import run_on_ray  # ray: only a Ray run pays for the import

        run_on_ray(
            workspace, suite_id, groups, ledger, address=ray_address, device=device, batch_size=batch_size, top_k=top_k,
            num_gpus_per_model=num_gpus_per_model,
        )  # fmt: skip
    ledger.step("done")
    return ledger.report()


class RunLedger:
    """Where a repository run stands: counts the models as they end, stores each outcome, reports progress.

    Shared by the local runner and the Ray driver (:mod:`analytics.distributed`); it also holds the
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
        self, workspace: Workspace, name: str, suite_id: str, models: Sequence[str], *, skipped: Sequence[str], progress: RepositoryProgress | None
    ) -> None:
        self.workspace, self.name, self.suite_id, self.models = workspace, name, suite_id, list(models)
        self.skipped, self.done, self.failures = list(skipped), [], {}
        self._progress = progress

    def step(self, message: str) -> None:
        """Report ``message`` with the number of models that ended so far (raises a job's cancel)."""
        if self._progress is not None:
            self._progress(len(self.skipped) + len(self.done) + len(self.failures), len(self.models), message)

    def succeeded(self, run_ids: Mapping[str, str]) -> None:
        """Summarise the finished runs (model -> run id) and clear any earlier failure of their models."""
        for run_id in dict.fromkeys(run_ids.values()):
            summarize_run(self.workspace, run_id)
        self.done += list(run_ids)
        _record_outcomes(self.workspace, self.name, self.suite_id, dict.fromkeys(run_ids))

    def failed(self, models: Sequence[str], err: BaseException) -> list[list[str]]:
        """A group failed: the groups to try next, or none when its failure is recorded.

        Several models are tried again one by one, so a bad head does not fail the others of its
        backbone, unless the group ran out of memory (each alone would need the same shared pass).
        """
        if len(models) > 1 and not _out_of_memory(err):
            return [[model] for model in models]
        reason = _reason(err)
        self.failures.update(dict.fromkeys(models, reason))
        _record_outcomes(self.workspace, self.name, self.suite_id, dict.fromkeys(models, reason))
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


def _run_locally(workspace: Workspace, suite_id: str, groups: list[list[str]], ledger: RunLedger, *, device, batch_size: int, top_k: int) -> None:
    """Run the groups one after another in this process, every group reading one composite cache."""
    queue = deque(groups)
    with CompositeCache(workspace) as composites:
        while queue:
            group = queue.popleft()
            label = group_label(workspace, group)

            def batch_step(done: int, total: int, label: str = label) -> None:
                ledger.step(f"{label}: {done} of {total} images")

            try:
                run_ids = inference.run_models(
                    workspace, group, suite_id, device=device, batch_size=batch_size, top_k=top_k, progress=batch_step, composites=composites
                )
            except (JobCancelled, PermissionDeniedError):
                raise
            except Exception as err:  # any failure of one group (bad weights, out of memory, a bug) must not stop the others
                queue.extendleft(reversed(ledger.failed(group, err)))
            else:
                ledger.succeeded(dict(zip(group, run_ids)))


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


def _reason(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0][:500] if str(err).strip() else ""
    return text if isinstance(err, BackdropError) else f"{type(err).__name__}: {text}"


def _record_outcomes(workspace: Workspace, name: str, suite_id: str, outcomes: Mapping[str, str | None]) -> None:
    """Keep (reason) or clear (None) each model's failure on this suite in the repository's record."""
    with workspace.transaction() as conn:
        record = _record(conn, name)
        failures = record.setdefault("failures", {}).setdefault(suite_id, {})
        for model, reason in outcomes.items():
            if reason is None:
                failures.pop(model, None)
            else:
                failures[model] = reason
        workspace.set_meta(META_PREFIX + name, json.dumps(record, sort_keys=True), conn=conn)


def _latest_runs(workspace: Workspace, suite_id: str, top_k: int) -> pd.DataFrame:
    """Per model, its current run on the suite with this top_k (a finished one first, else the newest)."""
    runs = current_runs(workspace, suite_id=suite_id)
    runs = runs[runs["top_k"].map(lambda k: pd.isna(k) or int(k) == top_k).astype(bool)]  # legacy runs: no top_k
    runs = runs.assign(finished_first=runs["status"] != "done").sort_values(["finished_first", "created"], ascending=[True, False], kind="stable")
    return runs.drop_duplicates("model").drop(columns="finished_first")


def repository_status(workspace: Workspace, name: str, suite_id: str, *, top_k: int = 3) -> pd.DataFrame:
    """Where every model of a repository stands on a suite.

    Parameters
    ----------
    workspace : Workspace
    name : str
    suite_id : str
    top_k : int, default=3
        The runs' embedding top-k (runs with another top-k are other runs).

    Returns
    -------
    DataFrame
        Columns :data:`STATUS_COLUMNS`, one row per model in repository order: ``status`` one of
        done / running (its run is under way, or its process was killed without a word) / failed
        (the last attempt raised; ``reason`` says what) / pending (never started, or cancelled:
        ``reason`` says how far it got; it resumes from there); ``accuracy`` and
        ``worst_case_accuracy`` (float, NaN until done); ``images`` / ``expected_images`` (int)
        stored so far; ``run_id`` ('' when none).

    Raises
    ------
    NotFoundError
        No such repository.
    """
    record = get_repository(workspace, name)
    failures = record.get("failures", {}).get(suite_id, {})
    runs = _latest_runs(workspace, suite_id, top_k).set_index("model")
    rows = []
    for model in record["models"]:
        run = runs.loc[model] if model in runs.index else None
        reason = failures.get(model, "")
        if run is not None and run["status"] == "done":
            status, reason = "done", ""
        elif reason:
            status = "failed"
        elif run is not None and run["status"] == "failed":  # stopped without a recorded reason: cancelled or killed
            status, reason = "pending", f"interrupted after {int(run['images'])} of {int(run['expected_images'])} images; resumes from there"
        else:
            status = "pending" if run is None else "running"
        rows.append({
            "model": model, "status": status,
            "accuracy": float("nan") if run is None else run["accuracy"],
            "worst_case_accuracy": float("nan") if run is None else run["worst_case_accuracy"],
            "images": 0 if run is None else int(run["images"]), "expected_images": 0 if run is None else int(run["expected_images"]),
            "run_id": "" if run is None else run["id"], "reason": reason,
        })  # fmt: skip
    table = pd.DataFrame(rows, columns=STATUS_COLUMNS)
    return table.astype({"accuracy": float, "worst_case_accuracy": float, "images": int, "expected_images": int})
