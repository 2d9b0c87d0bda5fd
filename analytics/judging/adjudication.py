"""Adjudication: where the annotators of a suite disagree, a lead records the consensus label.

A consensus is stored apart from the raw judgments, in the workspace table ``consensus``, and keeps
its history like judgments do: recording another consensus for the same (suite, model) adds a row,
and the latest *current* one counts. Like a judgment, a consensus records the weights it was given
for (``model_key``, the model's current key when it was recorded); after the model is registered
again with other weights it is stale and no longer counts (:meth:`analytics.runs.ModelKeys.is_current`).

The labels the assessor learns from (:func:`training_labels`) are, per model judged on a suite, the
current consensus where one exists, otherwise the majority vote of the current judgments
(:func:`analytics.judging.agreement.majority_vote`: a tie goes to the most cautious tied label, variant >
borderline > invariant). A consensus therefore also settles ties.

Recording a consensus needs the ``adjudicate`` permission (:func:`analytics.team.roles.require_permission`);
in team mode the adjudicator is always the signed-in account, never a typed name.

The CSV export (:func:`export_judgments_csv`) holds both histories, one row per stored record, with
the columns :data:`EXPORT_COLUMNS`:

``record``
    ``judgment`` (a raw judgment) or ``consensus`` (a lead's consensus label).
``id``
    The row's id in its own table (judgment and consensus ids are counted apart).
``suite_id``, ``model``, ``label``, ``model_key``, ``created``
    As stored (a judgment naming only a run gets the run's suite; empty when it names neither).
``annotator``, ``confidence``, ``note``, ``run_id``
    A judgment's fields; empty on consensus rows.
``adjudicator``, ``reason``
    A consensus's fields; empty on judgment rows.
``counts``
    Whether the row counts now: the latest current judgment per (annotator, model, suite), the
    latest current consensus per (suite, model); False for older and stale rows, and for judgments
    that name no suite (they count on none).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from analytics._validation import check_choice
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.team import require_permission
from analytics.workspace import Workspace, model_keys, now, to_csv

from .agreement import majority_vote, per_model_agreement
from .judgments import LABELS, judgment_history, latest_judgments

CONSENSUS_COLUMNS: list[str] = ["id", "suite_id", "model", "label", "reason", "adjudicator", "created", "model_key"]
EXPORT_COLUMNS: list[str] = [
    "record", "id", "suite_id", "model", "label", "annotator", "confidence", "note", "run_id",
    "adjudicator", "reason", "model_key", "created", "counts",
]  # fmt: skip
#: Per-annotator fields of :func:`disagreements`, as ``<field>:<annotator>`` columns.
ANNOTATOR_FIELDS: tuple[str, ...] = ("label", "confidence", "note")


@dataclass(frozen=True)
class Consensus:
    """One stored consensus (one row of the ``consensus`` table); the larger ``id`` is the newer."""

    id: int
    suite_id: str
    model: str
    label: str
    reason: str
    adjudicator: str
    created: str
    model_key: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def add_consensus(workspace: Workspace, *, model: str, suite_id: str, label: str, reason: str, adjudicator: str | None = None) -> Consensus:
    """Record the consensus label of a model on a suite (a new row: the history is kept).

    Parameters
    ----------
    workspace : Workspace
        Its ``actor`` (team mode) must have the ``adjudicate`` permission and is the adjudicator.
    model : str
        A registered model.
    suite_id : str
        The suite whose judgments are adjudicated.
    label : {'invariant', 'borderline', 'variant'}
    reason : str
        Why this label; required (surrounding white space removed, the rest must not be empty).
    adjudicator : str, optional
        Who decides, when no actor is set (solo mode, CLI); ignored when one is: the signed-in account
        always signs its consensus.

    Returns
    -------
    Consensus
        The stored row, with its id, time and the model's current key.

    Raises
    ------
    PermissionDeniedError
        The actor's role may not adjudicate.
    InvalidInputError
        Unknown label, empty reason, no adjudicator.
    NotFoundError
        The model or the suite is not in the workspace.
    """
    require_permission(workspace, "adjudicate")
    check_choice(label, "label", LABELS)
    reason = _required_text(reason, "reason", "say why this label, e.g. what the matrices show")
    actor = getattr(workspace, "actor", None)
    adjudicator = actor.name if actor is not None else _required_text(adjudicator, "adjudicator", "name who decides")
    model_key = model_keys(workspace).keys.get(model, "")
    created = now()
    with workspace.transaction() as conn:
        if conn.execute("SELECT 1 FROM models WHERE name = ?", (model,)).fetchone() is None:
            raise NotFoundError(f"model {model!r} is not in the workspace; check the spelling (`python -m analytics models`)")
        if conn.execute("SELECT 1 FROM suites WHERE id = ?", (suite_id,)).fetchone() is None:
            raise NotFoundError(f"suite {suite_id!r} is not in the workspace; pass the id of an existing suite (`python -m analytics suites`)")
        cursor = conn.execute(
            "INSERT INTO consensus(model, suite_id, model_key, label, reason, adjudicator, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (model, suite_id, model_key, label, reason, adjudicator, created),
        )
        row_id = int(cursor.lastrowid)
    return Consensus(row_id, suite_id, model, label, reason, adjudicator, created, model_key)


def consensus_history(workspace: Workspace, suite_id: str | None = None, *, model: str | None = None) -> pd.DataFrame:
    """Every consensus ever recorded (on ``suite_id`` / of ``model`` when given), stale ones included.

    Returns
    -------
    DataFrame
        Columns :data:`CONSENSUS_COLUMNS`, oldest first.
    """
    rows = workspace.query(
        f"SELECT {', '.join(CONSENSUS_COLUMNS)} FROM consensus WHERE (? IS NULL OR suite_id = ?) AND (? IS NULL OR model = ?) ORDER BY id",
        (suite_id, suite_id, model, model),
    )
    return pd.DataFrame([dict(row) for row in rows], columns=CONSENSUS_COLUMNS).astype({"id": "int64"})


def current_consensus(workspace: Workspace, suite_id: str | None = None) -> pd.DataFrame:
    """The consensus that counts: the latest current one per (suite, model).

    Returns
    -------
    DataFrame
        Columns :data:`CONSENSUS_COLUMNS`, one row per (suite, model), sorted by suite then model;
        consensus given for weights the model no longer has is left out.
    """
    history = consensus_history(workspace, suite_id)
    latest = history[_counting(workspace, history, ["suite_id", "model"])]
    return latest.sort_values(["suite_id", "model"], ignore_index=True)


def disagreements(workspace: Workspace, suite_id: str) -> pd.DataFrame:
    """The models whose current judgments on a suite hold more than one label.

    Parameters
    ----------
    workspace : Workspace
    suite_id : str

    Returns
    -------
    DataFrame
        One row per disagreeing model, sorted by model: ``model``, ``n_judgments`` (int),
        ``majority`` (the majority vote, ties to the most cautious label), ``agreement`` (float,
        share of judgments equal to the majority), ``consensus`` (the current consensus label, None
        when there is none), ``has_consensus`` (bool), then ``label:<a>``, ``confidence:<a>``
        (float, NaN when not given), ``note:<a>`` for each annotator ``a`` of the suite (sorted;
        NaN / None where ``a`` did not judge the model). Empty (the fixed columns only) when all agree.
    """
    judgments = latest_judgments(workspace, suite_id)
    fixed = ["model", "n_judgments", "majority", "agreement", "consensus", "has_consensus"]
    if judgments.empty:
        return pd.DataFrame(columns=fixed)
    table = per_model_agreement(judgments)
    table = table[table["agreement"] < 1][["model", "n_judgments", "majority", "agreement"]]
    agreed = current_consensus(workspace, suite_id).set_index("model")["label"]
    table["consensus"] = table["model"].map(agreed).astype(object).where(table["model"].isin(agreed.index), None)
    table["has_consensus"] = table["model"].isin(agreed.index)
    wide = judgments.pivot(index="model", columns="annotator", values=list(ANNOTATOR_FIELDS))
    wide.columns = [f"{field}:{annotator}" for field, annotator in wide.columns]
    order = [f"{field}:{annotator}" for annotator in sorted(judgments["annotator"].unique()) for field in ANNOTATOR_FIELDS]
    return table.join(wide[order], on="model").reset_index(drop=True)


def training_labels(workspace: Workspace, suite_id: str) -> pd.Series:
    """The label per model the assessor learns from on a suite: consensus first, else majority.

    Parameters
    ----------
    workspace : Workspace
    suite_id : str
        The suite whose judgments and consensus count (the suite the assessor's features come from).

    Returns
    -------
    Series of shape (n_models,), object (str)
        Index = model (sorted), values in ``LABELS``, name ``label``: the current consensus where
        one is recorded, otherwise the majority vote of the current judgments (a tie goes to the
        most cautious tied label: variant > borderline > invariant). Empty when the suite has neither.
    """
    judgments = latest_judgments(workspace, suite_id)
    majority = pd.Series(dtype=object) if judgments.empty else majority_vote(judgments)
    agreed = current_consensus(workspace, suite_id).set_index("model")["label"]
    labels = pd.concat([majority[~majority.index.isin(agreed.index)], agreed]).sort_index()
    return labels.astype(object).rename("label").rename_axis("model")


def export_judgments_csv(workspace: Workspace, suite_id: str | None = None) -> str:
    """Judgments and consensus, full histories, as one CSV text (columns: see the module notes).

    Parameters
    ----------
    workspace : Workspace
    suite_id : str, optional
        Only the judgments and consensus of this suite; None: everything.

    Returns
    -------
    str
        CSV with a header row of :data:`EXPORT_COLUMNS`; judgment rows first (by id), then consensus
        rows (by id). ``pandas.read_csv`` reads it back; text starting with ``=``, ``+``, ``-``, ``@``,
        tab or CR comes back with a leading ``'`` (:func:`analytics.workspace.to_csv`).
    """
    judgments = judgment_history(workspace, suite_id=suite_id)
    counting = judgments[judgments["suite_id"].notna()]
    judgments["counts"] = judgments.index.isin(counting.index[_counting(workspace, counting, ["annotator", "model", "suite_id"]).to_numpy()])
    consensus = consensus_history(workspace, suite_id)
    consensus["counts"] = _counting(workspace, consensus, ["suite_id", "model"])
    frames = [frame.assign(record=record) for record, frame in (("judgment", judgments), ("consensus", consensus)) if not frame.empty]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return to_csv(table.reindex(columns=EXPORT_COLUMNS))


def _counting(workspace: Workspace, history: pd.DataFrame, group: list[str]) -> pd.Series:
    """Which rows of a history (oldest first) count: not stale, and the latest of their ``group``."""
    keys = model_keys(workspace)
    current = pd.Series(
        [keys.is_current(m, k, c) for m, k, c in zip(history["model"], history["model_key"], history["created"])], index=history.index, dtype=bool
    )
    latest = history[current].drop_duplicates(group, keep="last").index
    return pd.Series(history.index.isin(latest), index=history.index, dtype=bool)


def _required_text(value: object, name: str, fix: str) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise InvalidInputError(f"{name} is required and must not be empty (got {value!r}); {fix}")
    return text
