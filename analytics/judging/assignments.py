"""Who judges what: assignments of (model, suite) to annotators, judging plans and blind names.

A lead (a role with ``adjudicate``: admin or analyst) either assigns models of a suite to named
annotators (table ``assignments``) or sets a plan (table ``judging_plans``): "everyone judges
everything" on the suite, with ``judgments_wanted`` (k) judgments wanted per model. An annotator's
queue on a suite is every model they are assigned, or under an everyone plan every model with a
finished current run over the suite, that they have not judged yet (see
:func:`.queues.queue`).

Annotators judge blind: the pages show a model as :func:`blind_name`, a neutral alias derived from a
hash of (suite, model), the same for every annotator and lead, so an adjudicator can refer to it.

In a workspace with accounts, an annotator must be an enabled account whose role may judge; in a
workspace without accounts (solo mode) any non-empty name is an annotator.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from analytics._validation import check_positive_int
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.runs import current_runs
from analytics.team import allowed, require_permission
from analytics.workspace import Workspace, now

#: ``meta`` key of the secret that keys blind aliases (see :func:`blind_name`).
BLIND_KEY = "blind_alias_key"


@dataclass(frozen=True)
class Assignment:
    """One row of ``assignments``: ``annotator`` is to judge ``model`` on ``suite_id``."""

    suite_id: str
    model: str
    annotator: str
    assigned_by: str
    created: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class JudgingPlan:
    """The plan of a suite: everyone judges every model (``everyone``), ``judgments_wanted`` per model."""

    suite_id: str
    everyone: bool
    judgments_wanted: int
    set_by: str
    created: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def blind_name(workspace: Workspace, suite_id: str, model: str) -> str:
    """A neutral, stable alias of a model on a suite, e.g. ``"Model 7F3A0C"``.

    Parameters
    ----------
    workspace : Workspace
        Holds the secret key of the aliases (created on first use).
    suite_id, model : str

    Returns
    -------
    str
        ``"Model "`` and six hex digits of an HMAC-SHA-256 of (suite, model) under the workspace's
        secret key: the same for every session and person, different per suite, and saying nothing
        about the name. The key matters: without it, anyone who can read suite ids could hash likely
        model names and match them to aliases.
    """
    return _alias(_blind_key(workspace), suite_id, model)


def _alias(key: bytes, suite_id: str, model: str) -> str:
    digest = hmac.new(key, f"{suite_id}\0{model}".encode(), hashlib.sha256).hexdigest()
    return f"Model {digest[:6].upper()}"


def _blind_key(workspace: Workspace) -> bytes:
    """The workspace's secret key of blind aliases, made once (``INSERT OR IGNORE`` keeps the first of two racing writers)."""
    row = workspace.query_one("SELECT value FROM meta WHERE key = ?", (BLIND_KEY,))
    if row is None:
        with workspace.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (BLIND_KEY, secrets.token_hex(32)))
        row = workspace.query_one("SELECT value FROM meta WHERE key = ?", (BLIND_KEY,))
    return bytes.fromhex(row["value"])


def judgeable_runs(workspace: Workspace, suite_id: str) -> pd.DataFrame:
    """The newest finished current run of each model over ``suite_id``: what can be judged.

    Returns
    -------
    DataFrame
        Columns of :func:`analytics.runs.list_runs`, one row per model.
    """
    runs = current_runs(workspace, suite_id=suite_id)
    return runs[runs["status"] == "done"].drop_duplicates("model", keep="first")  # list_runs is newest first


def assign(workspace: Workspace, suite_id: str, models: Sequence[str], annotators: Sequence[str]) -> list[Assignment]:
    """Assign every model of ``models`` on ``suite_id`` to every annotator of ``annotators``.

    Parameters
    ----------
    workspace : Workspace
        Its actor (team mode) must have the ``adjudicate`` permission (admin, analyst).
    suite_id : str
        An existing suite.
    models : sequence of str
        Registered models (at least one).
    annotators : sequence of str
        At least one; enabled accounts that may judge where the workspace has accounts.

    Returns
    -------
    list of Assignment
        The pairs assigned (already assigned pairs are kept as they were), model-major order.

    Raises
    ------
    PermissionDeniedError
        The actor may not assign.
    NotFoundError
        Unknown suite, model or annotator account.
    InvalidInputError
        Empty lists or names, or an account whose role may not judge.
    """
    require_permission(workspace, "adjudicate")
    _check_suite(workspace, suite_id)
    models = _check_models(workspace, models)
    annotators = check_annotators(workspace, annotators)
    by, created = _actor_name(workspace), now()
    with workspace.transaction() as conn:
        conn.executemany(
            "INSERT OR IGNORE INTO assignments(suite_id, model, annotator, assigned_by, created) VALUES (?, ?, ?, ?, ?)",
            [(suite_id, model, name, by, created) for model in models for name in annotators],
        )
    wanted = {(model, name) for model in models for name in annotators}
    return [a for a in list_assignments(workspace, suite_id) if (a.model, a.annotator) in wanted]


def unassign(workspace: Workspace, suite_id: str, models: Sequence[str], annotators: Sequence[str]) -> int:
    """Remove the assignments of ``models`` × ``annotators`` on ``suite_id`` (judgments stay).

    Returns
    -------
    int
        How many assignments were removed.

    Raises
    ------
    PermissionDeniedError
        The actor may not assign.
    NotFoundError
        Unknown suite.
    """
    require_permission(workspace, "adjudicate")
    _check_suite(workspace, suite_id)
    pairs = [(suite_id, model, name) for model in _names(models, "models") for name in _names(annotators, "annotators")]
    with workspace.transaction() as conn:
        before = conn.total_changes
        conn.executemany("DELETE FROM assignments WHERE suite_id = ? AND model = ? AND annotator = ?", pairs)
        return conn.total_changes - before


def list_assignments(workspace: Workspace, suite_id: str | None = None) -> list[Assignment]:
    """The assignments (on ``suite_id`` when given), sorted by suite, model, annotator."""
    rows = workspace.query(
        "SELECT suite_id, model, annotator, assigned_by, created FROM assignments"
        " WHERE ? IS NULL OR suite_id = ? ORDER BY suite_id, model, annotator",
        (suite_id, suite_id),
    )
    return [Assignment(**dict(row)) for row in rows]


def set_plan(workspace: Workspace, suite_id: str, judgments_wanted: int, *, everyone: bool = True) -> JudgingPlan:
    """Set (or replace) the judging plan of a suite.

    Parameters
    ----------
    workspace : Workspace
        Its actor (team mode) must have the ``adjudicate`` permission.
    suite_id : str
        An existing suite.
    judgments_wanted : int >= 1
        Judgments wanted per model (k).
    everyone : bool, default=True
        Everyone who may judge judges every model with a finished run over the suite; False: only
        the assignments are queued, and k is the target per model.

    Returns
    -------
    JudgingPlan

    Raises
    ------
    PermissionDeniedError, NotFoundError, InvalidInputError
        Not allowed, unknown suite, k < 1.
    """
    require_permission(workspace, "adjudicate")
    _check_suite(workspace, suite_id)
    wanted = check_positive_int(judgments_wanted, "judgments_wanted")
    plan = JudgingPlan(suite_id, bool(everyone), wanted, _actor_name(workspace), now())
    with workspace.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO judging_plans(suite_id, everyone, judgments_wanted, set_by, created) VALUES (?, ?, ?, ?, ?)",
            (plan.suite_id, int(plan.everyone), plan.judgments_wanted, plan.set_by, plan.created),
        )
    return plan


def get_plan(workspace: Workspace, suite_id: str) -> JudgingPlan | None:
    """The suite's judging plan, or None when none is set."""
    row = workspace.query_one("SELECT * FROM judging_plans WHERE suite_id = ?", (suite_id,))
    return None if row is None else JudgingPlan(row["suite_id"], bool(row["everyone"]), row["judgments_wanted"], row["set_by"], row["created"])


def assigned_models(workspace: Workspace, annotator: str, suite_id: str) -> list[str]:
    """The models ``annotator`` is to judge on ``suite_id`` (judged or not), sorted by name.

    Under an everyone plan: every model with a finished current run over the suite; otherwise the
    models assigned to the annotator.
    """
    plan = get_plan(workspace, suite_id)
    if plan is not None and plan.everyone:
        return sorted(judgeable_runs(workspace, suite_id)["model"])
    rows = workspace.query("SELECT model FROM assignments WHERE suite_id = ? AND annotator = ? ORDER BY model", (suite_id, annotator))
    return [row["model"] for row in rows]


def may_judge(workspace: Workspace, annotator: str, suite_id: str | None, model: str) -> bool:
    """Whether ``model`` on ``suite_id`` is among the models ``annotator`` is to judge (:func:`assigned_models`)."""
    return suite_id is not None and model in assigned_models(workspace, annotator, suite_id)


def check_annotators(workspace: Workspace, annotators: Sequence[str]) -> list[str]:
    """Validated annotator names, in the given order without repeats.

    Raises
    ------
    InvalidInputError
        An empty list or name, or (in a workspace with accounts) an account whose role may not judge.
    NotFoundError
        In a workspace with accounts: no enabled account has the name.
    """
    names = _names(annotators, "annotators")
    accounts = {row["name"]: row for row in workspace.query("SELECT name, role, disabled FROM users")}
    if not accounts:
        return names  # solo mode: any name signs judgments
    for name in names:
        row = accounts.get(name)
        if row is None or row["disabled"]:
            raise NotFoundError(f"annotator {name!r} is not an enabled account; add it with `analytics.team.add_user(workspace, {name!r}, 'annotator', password)` (the `user add` command at a shell)")
        if not allowed(row["role"], "judge"):
            raise InvalidInputError(f"annotator {name!r} has the role {row['role']}, which may not judge; assign an annotator, analyst or admin")
    return names


def judging_accounts(workspace: Workspace) -> list[str]:
    """Names of the enabled accounts whose role may judge, sorted ([] in a workspace without accounts)."""
    rows = workspace.query("SELECT name, role FROM users WHERE disabled = 0 ORDER BY name")
    return [row["name"] for row in rows if allowed(row["role"], "judge")]


def _names(values: Sequence[str], what: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidInputError(f"{what} must be a list of names; got {values!r}")
    names = [v.strip() if isinstance(v, str) else "" for v in values]
    if not names or not all(names):
        raise InvalidInputError(f"{what} must be a non-empty list of non-empty names; got {list(values)!r}")
    return list(dict.fromkeys(names))


def _check_models(workspace: Workspace, models: Sequence[str]) -> list[str]:
    names = _names(models, "models")
    known = {row["name"] for row in workspace.query("SELECT name FROM models")}
    missing = [name for name in names if name not in known]
    if missing:
        raise NotFoundError(f"models {missing} are not registered; list them with `python -m analytics models`")
    return names


def _check_suite(workspace: Workspace, suite_id: str) -> None:
    if not isinstance(suite_id, str) or workspace.query_one("SELECT 1 FROM suites WHERE id = ?", (suite_id,)) is None:
        raise NotFoundError(f"suite {suite_id!r} is not in the workspace; check the id (the Suites page and `python -m analytics runs` show them)")


def _actor_name(workspace: Workspace) -> str:
    actor = getattr(workspace, "actor", None)
    return "" if actor is None else actor.name
