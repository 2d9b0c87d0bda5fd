"""A model repository's record: many models named in one manifest (or picked from the registry),
kept as one unit (issue 15, the paper's repository of 250 models).

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
  reported and skipped, the rest are registered; a manifest with no good entry is an error and
  records nothing. Registration validates before it writes, so a failing entry leaves no ``models`` row.
* :func:`create_repository` records registered models of any source (zoo heads, torchvision,
  TorchScript) as a repository without a manifest.

Storage (no table of its own): the meta key ``repository:<name>`` holds JSON
``{"models": [...], "metadata": {model: {...}}, "manifest": path, "failures": {suite: {model: reason}}}``;
runs are ordinary runs (:mod:`analytics.repository.run`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analytics._validation import check_positive_int, user_path
from analytics.data import LabelSpace, parse_label_space
from analytics.exceptions import BackdropError, InvalidInputError, NotFoundError, PermissionDeniedError
from analytics.models import list_models, register_torchvision
from analytics.team import require_permission
from analytics.workspace import Workspace

#: Manifest columns every row must fill.
REQUIRED_MANIFEST_COLUMNS = ("name", "architecture", "checkpoint", "label_space")
#: Optional manifest columns that are not metadata.
OPTIONAL_MANIFEST_COLUMNS = ("input_size",)
#: Meta key prefix of a repository's record.
META_PREFIX = "repository:"


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
    missing = [c for c in REQUIRED_MANIFEST_COLUMNS if c not in table.columns]
    if missing:
        raise InvalidInputError(
            f"{path}: the manifest lacks the column(s) {', '.join(missing)}; its header must name {', '.join(REQUIRED_MANIFEST_COLUMNS)} "
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
    empty = [c for c in REQUIRED_MANIFEST_COLUMNS if not values[c]]
    if empty:
        raise InvalidInputError(f"empty {', '.join(empty)}; fill every one of {', '.join(REQUIRED_MANIFEST_COLUMNS)}")
    input_size = None
    if values.get("input_size"):
        try:
            input_size = check_positive_int(int(values["input_size"]), "input_size", minimum=16)
        except ValueError:
            raise InvalidInputError(f"input_size {values['input_size']!r} is not a whole number >= 16; leave it empty for the default") from None
    label = values["label_space"]
    metadata = {k: _scalar(v) for k, v in values.items() if k not in REQUIRED_MANIFEST_COLUMNS + OPTIONAL_MANIFEST_COLUMNS and v}
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
    path = user_path(text, "manifest path")
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
        Unreadable manifest or missing columns, a bad repository name, or no entry registered or
        kept (every entry bad, or no rows): the repository is then not recorded; the message names
        the first bad entries and the fix.
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
            report.skipped[entry.name] = f"row {entry.row}: {failure_reason(err)}"
            continue
        report.registered.append(entry.name)
    kept = set(report.registered) | set(report.unchanged)
    if not kept:
        raise InvalidInputError(_nothing_added(path, name, report.skipped))
    _save_members(workspace, name, [e for e in entries if e.name in kept], path)
    return report


def _nothing_added(path: Path, name: str, skipped: Mapping[str, str]) -> str:
    """Why a manifest gave the repository no model: its first bad entries (at most two) and the fix."""
    if not skipped:
        return f"{path}: the manifest has no rows, so repository {name!r} was not recorded; add one row per model under its header"
    first = "; ".join(f"{where}: {why}" for where, why in list(skipped.items())[:2])
    more = f" (and {len(skipped) - 2} more)" if len(skipped) > 2 else ""
    return (
        f"{path}: no entry could be registered, so repository {name!r} was not recorded: {first}{more}; "
        "fix or remove these entries and add the manifest again"
    )


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


def failure_reason(err: BaseException) -> str:
    """How a skipped or failed model's reason is recorded: the first line of the message (500 characters
    at most), after the exception's type unless it is a :class:`~analytics.exceptions.BackdropError`."""
    text = str(err).strip().splitlines()[0][:500] if str(err).strip() else ""
    return text if isinstance(err, BackdropError) else f"{type(err).__name__}: {text}"


def record_outcomes(workspace: Workspace, name: str, suite_id: str, outcomes: Mapping[str, str | None]) -> None:
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
