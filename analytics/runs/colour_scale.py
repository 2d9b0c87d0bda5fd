"""Fixed colour scales of the variance matrices: one per signal, the same for every model of a suite.

Annotators compare colours, so no model may be drawn on its own range: spread from green to
yellow, a near-invariant model looks as variant as a variant one (the paper's research code fixes
vmin 0 and one vmax for every model). Per signal, from 0 (green) to a top (yellow):

* probability signals (:data:`PROBABILITY_SIGNALS`): top 1, the largest possible change of a
  probability; needs no data and is the same on every suite;
* embedding signals: their units depend on the network layer, so the top is the
  :data:`REFERENCE_PERCENTILE`-th percentile of the cells of the matrices of every current finished
  run over the suite (the newest run per model), at the same interpolation settings (1 when every
  cell is 0).

A suite's scale is *live* until judging starts and *frozen* from then on: the first call with
``freeze=True`` (the Judge page) or any call once the suite has a judgment stores it in the
workspace's ``meta`` table, once (key ``colour_scale/<suite>/<settings id>``), and every later call
returns the stored scale, so runs added later cannot change what annotators see. Cells above a top
are drawn in the top colour.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analytics.exceptions import InvalidInputError
from analytics.variance import DEFAULT_SETTINGS, MatrixSettings, VarianceMatrix
from analytics.workspace import Workspace, content_id, now

from .matrices import run_matrices
from .read import SIGNALS, current_runs

__all__ = ["PROBABILITY_SIGNALS", "REFERENCE_PERCENTILE", "ColourScale", "reference_tops", "suite_colour_scale"]

#: Signals in probability units: fixed top 1.
PROBABILITY_SIGNALS = ("true_prob", "max_prob")
_PROBABILITY_RULE = "fixed: probabilities change by at most 1"
#: Percentile of the suite's matrix cells that tops the scale of an embedding signal.
REFERENCE_PERCENTILE = 99.0
_META_PREFIX = "colour_scale/"


@dataclass(frozen=True)
class ColourScale:
    """The colour range of every signal on one suite at one interpolation setting (bottom always 0).

    Attributes
    ----------
    tops : dict of str to float
        Top of the range (yellow) per signal of :data:`analytics.runs.SIGNALS`.
    rules : dict of str to str
        How each top was chosen, in words.
    runs : tuple of str
        Runs whose matrices set the embedding tops.
    settings : dict
        Interpolation settings (:meth:`analytics.variance.MatrixSettings.as_dict`).
    frozen : str or None
        When the scale was frozen (ISO time), None while it is live.
    """

    tops: dict[str, float]
    rules: dict[str, str]
    runs: tuple[str, ...]
    settings: dict[str, Any]
    frozen: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form: ``{"signals": {signal: {"zmin", "zmax", "rule"}}, "runs", "settings", "frozen"}``."""
        signals = {s: {"zmin": 0.0, "zmax": top, "rule": self.rules[s]} for s, top in self.tops.items()}
        return {"signals": signals, "runs": list(self.runs), "settings": self.settings, "frozen": self.frozen}


def reference_tops(matrices: Sequence[Mapping[str, VarianceMatrix]], *, percentile: float = REFERENCE_PERCENTILE) -> dict[str, float]:
    """Top of the colour range per signal from the matrices of several runs (see the module notes).

    Parameters
    ----------
    matrices : sequence of mapping of str to VarianceMatrix
        One mapping per run, keyed by signal (:func:`analytics.runs.run_matrices`); all runs must
        hold the same signals.
    percentile : float, default=99.0
        For the embedding signals, in (0, 100].

    Returns
    -------
    dict of str to float
        Per signal: 1.0 for :data:`PROBABILITY_SIGNALS`, else the percentile of all cells of all runs
        (1.0 when it is 0).
    """
    if not matrices:
        raise InvalidInputError("reference_tops needs the matrices of at least one run")
    if not 0 < percentile <= 100:
        raise InvalidInputError(f"percentile must be in (0, 100]; got {percentile!r}")
    tops = {}
    for signal in matrices[0]:
        if signal in PROBABILITY_SIGNALS:
            tops[signal] = 1.0
            continue
        cells = np.concatenate([np.asarray(run[signal].matrix).ravel() for run in matrices])
        tops[signal] = float(np.percentile(cells, percentile)) or 1.0
    return tops


def suite_colour_scale(
    workspace: Workspace, suite_id: str, *, settings: MatrixSettings = DEFAULT_SETTINGS, freeze: bool = False
) -> ColourScale:
    """The colour scale of a suite at one interpolation setting: frozen if stored, else computed.

    Parameters
    ----------
    workspace : Workspace
    suite_id : str
    settings : MatrixSettings, default=DEFAULT_SETTINGS
        Interpolation settings, as in :func:`analytics.runs.run_matrices`.
    freeze : bool, default=False
        Store the scale when it is not stored yet (judging starts). It is also stored once the suite
        has a judgment. The first stored scale wins; later calls never change it.

    Returns
    -------
    ColourScale

    Raises
    ------
    InvalidInputError
        The suite has no current finished run (nothing to take the embedding reference from).
    """
    settings = MatrixSettings.check(settings)
    key = _META_PREFIX + suite_id + "/" + content_id(settings.key())
    stored = workspace.get_meta(key)
    if stored is not None:
        return _from_json(stored)
    runs = current_runs(workspace, suite_id=suite_id)
    runs = runs[runs["status"] == "done"].drop_duplicates("model", keep="first")  # newest first
    if runs.empty:
        raise InvalidInputError(f"suite {suite_id!r} has no current finished run to set its colour scale from; run a model over it first")
    run_ids = tuple(sorted(runs["id"]))
    tops = reference_tops([run_matrices(workspace, run_id, settings=settings) for run_id in run_ids])
    rules = {
        signal: _PROBABILITY_RULE
        if signal in PROBABILITY_SIGNALS
        else f"{REFERENCE_PERCENTILE:g}th percentile of the cells of {len(run_ids)} run(s) over the suite"
        for signal in tops
    }
    scale = ColourScale(tops=tops, rules=rules, runs=run_ids, settings=settings.as_dict())
    if not (freeze or _has_judgments(workspace, suite_id)):
        return scale
    with workspace.transaction() as conn:  # INSERT OR IGNORE: when two sessions race, the first one wins
        conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (key, _to_json(scale, frozen=now())))
    return _from_json(workspace.get_meta(key))


def _has_judgments(workspace: Workspace, suite_id: str) -> bool:
    return workspace.query_one("SELECT 1 FROM judgments WHERE suite_id = ? LIMIT 1", (suite_id,)) is not None


def _to_json(scale: ColourScale, *, frozen: str) -> str:
    return json.dumps({"tops": scale.tops, "rules": scale.rules, "runs": list(scale.runs), "settings": scale.settings, "frozen": frozen})


def _from_json(text: str) -> ColourScale:
    record = json.loads(text)
    # a probability signal added after the scale froze tops at 1 as every probability signal does
    stored = {**{signal: 1.0 for signal in PROBABILITY_SIGNALS}, **record["tops"]}
    tops = {signal: float(stored[signal]) for signal in SIGNALS if signal in stored}
    rules = {signal: record["rules"].get(signal, _PROBABILITY_RULE) for signal in tops}
    return ColourScale(tops=tops, rules=rules, runs=tuple(record["runs"]), settings=record["settings"], frozen=record["frozen"])
