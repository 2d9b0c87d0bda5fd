"""Provenance: which weights and class mappings a result was made with.

A run records the content key of the weights it ran (``runs.model_key``, :func:`model_keys`) and of
the class mappings it was scored with (``runs.classes_key``, :func:`class_mapping_key` of its
suite's target classes); a judgment records its model's key. These keys are read from the
``models`` and ``classes`` tables directly, so every stage can record and check them without
importing the model stack. See :mod:`analytics.runs` for what makes a run stale.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from .store import Workspace, content_id


@dataclass(frozen=True)
class ModelKeys:
    """The current key and registration time of every registered model (see the module notes).

    Attributes
    ----------
    keys : dict of str to str
        Model -> content key of its stored spec (:meth:`analytics.models.ModelSpec.content_key`);
        a head's key also covers its backbone's.
    registered : dict of str to str
        Model -> when it (or a head's backbone, whichever is later) was registered (ISO text).
    """

    keys: dict[str, str]
    registered: dict[str, str]

    def is_current(self, model: str, key: str, created: str) -> bool:
        """Whether a result of ``model`` made at ``created`` with the recorded ``key`` ('' when
        not recorded: the registration-time rule of the module notes) used its current weights."""
        if model not in self.keys:
            return False
        return key == self.keys[model] if key else created >= self.registered[model]


def model_keys(workspace: Workspace) -> ModelKeys:
    """The current content key of every registered model (what runs and judgments record).

    Returns
    -------
    ModelKeys
    """
    rows = workspace.query("SELECT name, spec, added FROM models")
    own = {row["name"]: _spec_key(row["spec"]) for row in rows}
    added = {row["name"]: row["added"] for row in rows}
    keys, registered = {}, {}
    for row in rows:
        name, backbone = row["name"], json.loads(row["spec"]).get("backbone")
        keys[name] = content_id(own[name], own.get(backbone)) if backbone else own[name]
        registered[name] = max(added[name], added.get(backbone, "")) if backbone else added[name]
    return ModelKeys(keys, registered)


def _spec_key(text: str) -> str:
    """The content key of a stored spec: equal to ``ModelSpec.content_key`` of the spec stored."""
    return hashlib.sha256(json.dumps(json.loads(text), sort_keys=True).encode()).hexdigest()[:16]


def suite_classes_key(workspace: Workspace, suite_id: str) -> str:
    """:func:`analytics.data.classes.class_mapping_key` of the classes of a suite's targets."""
    rows = workspace.query(
        "SELECT DISTINCT t.class_name FROM suite_items s JOIN targets t ON t.id = s.target_id WHERE s.suite_id = ?", (suite_id,)
    )
    return class_mapping_key(workspace, [row["class_name"] for row in rows])


def pin_legacy_keys(workspace: Workspace) -> int:
    """Record the keys of runs and judgments stored before they were recorded (empty keys).

    Runs and judgments that count as current by the registration-time rule get their model's
    current key; runs get their suite's current class-mapping key. Call it before a model is
    replaced or a class remapped: afterwards the rule could no longer tell.

    Returns
    -------
    int
        Rows updated.
    """
    keys = model_keys(workspace)
    suite_keys: dict[str, str] = {}
    runs = []
    for row in workspace.query("SELECT id, model, suite_id, created, model_key, classes_key FROM runs WHERE model_key = '' OR classes_key = ''"):
        model_key = row["model_key"] or (keys.keys[row["model"]] if keys.is_current(row["model"], "", row["created"]) else "")
        classes_key = row["classes_key"] or _suite_key(workspace, row["suite_id"], suite_keys)
        runs.append((model_key, classes_key, row["id"]))
    judgments = [
        (keys.keys[row["model"]], row["id"])
        for row in workspace.query("SELECT id, model, created FROM judgments WHERE model_key = ''")
        if keys.is_current(row["model"], "", row["created"])
    ]
    with workspace.transaction() as conn:
        conn.executemany("UPDATE runs SET model_key = ?, classes_key = ? WHERE id = ?", runs)
        conn.executemany("UPDATE judgments SET model_key = ? WHERE id = ? AND model_key = ''", judgments)
    return len(runs) + len(judgments)


def _suite_key(workspace: Workspace, suite_id: str, known: dict[str, str]) -> str:
    """:func:`suite_classes_key`, computed once per suite into ``known``."""
    if suite_id not in known:
        known[suite_id] = suite_classes_key(workspace, suite_id)
    return known[suite_id]


def class_mapping_key(workspace: Workspace, names: Iterable[str]) -> str:
    """A short content key of the mappings of ``names`` (changes when any of them is remapped).

    Parameters
    ----------
    workspace : Workspace
    names : iterable of str
        Workspace class names (unknown names count as unmapped).

    Returns
    -------
    key : str
        16 hex digits.
    """
    wanted = sorted(set(names))
    rows = {
        row["name"]: [json.loads(row["imagenet_indices"]), row["in9"], row["label"]]
        for row in workspace.query("SELECT name, imagenet_indices, in9, label FROM classes")
    }
    payload = json.dumps([[name, rows.get(name)] for name in wanted], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
