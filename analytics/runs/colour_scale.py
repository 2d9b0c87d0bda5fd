"""Fixed colour scales of the variance matrices: one per signal, the same for every model of a suite.

Annotators compare colours, so no model may be drawn on its own range: spread from green to
yellow, a near-invariant model looks as variant as a variant one (the paper's research code fixes
vmin 0 and one vmax for every model). Per signal, from 0 (green) to a top (yellow):

* probability signals (:data:`PROBABILITY_SIGNALS`): top 1, the largest possible change of a
  probability; needs no data and is the same on every suite;
* embedding signals: their units depend on the network layer, so the range is taken from the cells
  of the matrices of every current finished run over the suite (the newest run per model), at the
  same interpolation settings: from their :data:`REFERENCE_BOTTOM_PERCENTILE`-th percentile (green)
  to their :data:`REFERENCE_PERCENTILE`-th (yellow). Top 1 when every cell is 0 or the top is
  rounding noise (:data:`NOISE_FLOOR`); bottom 0 when it is not below the top. An embedding
  statistic moves with every pixel its layer sees, so the cells of a model that reads the background
  at all sit above a floor: drawn from 0, the floor took the lowest 10-25 % of the colours and left
  every model's matrices light green to yellow (docs/method.md, *Colour scales*). One range per
  signal, shared by every model of the suite, so colours stay comparable between models; a suite
  with a model whose cells are 0 keeps the bottom at 0.

The scale never computes matrices itself: each run's job (:func:`analytics.runs.complete_runs`)
stores the quantiles of its cells (:data:`QUANTILE_LEVELS`, :func:`run_cell_quantiles`, table
``run_cell_quantiles``), and the scale combines them (:func:`pooled_percentile`: every run's matrix
has the same number of cells, so the pooled distribution is the mean of the runs'). A run finished
before the quantiles were stored, or other interpolation settings, has them computed and stored
once, on first use.

A suite's scale is *live* until judging starts and *frozen* from then on: the first call with
``freeze=True`` (the Judge page) or any call once the suite has a judgment stores it in the
workspace's ``meta`` table, once (key ``colour_scale/<suite>/<settings id>``), and every later call
returns the stored scale, so runs added later cannot change what annotators see (a scale frozen
before bottoms were stored keeps bottom 0). Cells above a top are drawn in the top colour, cells
below a bottom in the bottom colour.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analytics._choices import SIGNALS
from analytics._progress import Progress
from analytics.exceptions import InvalidInputError
from analytics.variance import DEFAULT_SETTINGS, MatrixSettings, VarianceMatrix
from analytics.workspace import Workspace, content_id, now

from .matrices import run_matrices
from .read import current_runs, run_row

#: Signals in probability units: fixed top 1.
PROBABILITY_SIGNALS = ("true_prob", "max_prob")
_PROBABILITY_RULE = "fixed: probabilities change by at most 1"
#: Percentile of the suite's matrix cells that tops the scale of an embedding signal.
REFERENCE_PERCENTILE = 99.0
#: Percentile of the suite's matrix cells at the bottom (green) of the scale of an embedding signal.
REFERENCE_BOTTOM_PERCENTILE = 1.0
#: An embedding top at or below this is float32 rounding noise of a constant statistic (the mean of a
#: layer-normalised embedding, e.g. an untrained transformers ConvNeXt's: top 3.7e-8): drawn 0 to 1 (green).
NOISE_FLOOR = 1e-6
#: Percent levels at which a run's matrix cells are stored: every 0.1 %, and every 0.005 % from 95 %
#: up, where the tops lie (at 128 x 128 cells, a step there is under one cell).
QUANTILE_LEVELS = np.union1d(np.linspace(0.0, 100.0, 1001), np.linspace(95.0, 100.0, 1001))
QUANTILE_LEVELS.setflags(write=False)
_META_PREFIX = "colour_scale/"
_CDF_CHUNK = 4096  # candidates of pooled_percentile evaluated at once (memory: runs x this)


@dataclass(frozen=True)
class ColourScale:
    """The colour range of every signal on one suite at one interpolation setting.

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
    bottoms : dict of str to float
        Bottom of the range (green) per signal; a signal not in it starts at 0 (probabilities, and
        scales frozen before bottoms were stored).
    """

    tops: dict[str, float]
    rules: dict[str, str]
    runs: tuple[str, ...]
    settings: dict[str, Any]
    frozen: str | None = None
    bottoms: dict[str, float] = field(default_factory=dict)

    def bottom(self, signal: str) -> float:
        """Bottom of ``signal``'s range (green): 0 unless :attr:`bottoms` names it."""
        return float(self.bottoms.get(signal, 0.0))

    def colour_range(self, signal: str) -> tuple[float, float]:
        """``(bottom, top)`` of ``signal``: the ``zmin, zmax`` to draw it with."""
        return self.bottom(signal), float(self.tops[signal])

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form: ``{"signals": {signal: {"zmin", "zmax", "rule"}}, "runs", "settings", "frozen"}``."""
        signals = {s: {"zmin": self.bottom(s), "zmax": top, "rule": self.rules[s]} for s, top in self.tops.items()}
        return {"signals": signals, "runs": list(self.runs), "settings": self.settings, "frozen": self.frozen}


def cell_quantiles(matrices: Mapping[str, VarianceMatrix]) -> dict[str, np.ndarray]:
    """The quantiles of each matrix's cells at :data:`QUANTILE_LEVELS`.

    Returns
    -------
    dict of str to ndarray of shape (len(QUANTILE_LEVELS),), float64
        Same keys as ``matrices``; non-decreasing.
    """
    return {signal: np.percentile(np.asarray(m.matrix, dtype=np.float64).ravel(), QUANTILE_LEVELS) for signal, m in matrices.items()}


def pooled_percentile(quantiles: Sequence[np.ndarray], percentile: float) -> float:
    """The percentile of the pooled cells of several equally large matrices, from their quantiles.

    Each run's distribution function is linear between its quantiles (as ``np.percentile``
    interpolates); the pooled one is their mean, solved for ``percentile`` between the smallest and
    the largest of the runs' own percentiles, where the answer lies.

    Parameters
    ----------
    quantiles : sequence of ndarray of shape (len(QUANTILE_LEVELS),), float64
        One per run (:func:`cell_quantiles`).
    percentile : float
        In (0, 100].

    Returns
    -------
    float
    """
    own = [float(np.interp(percentile, QUANTILE_LEVELS, q)) for q in quantiles]
    low, high = min(own), max(own)
    if low == high:
        return low
    values = np.unique(np.concatenate([[low, high], *(q[(q > low) & (q < high)] for q in quantiles)]))

    def cdf(at: np.ndarray) -> np.ndarray:  # the pooled distribution function: runs x len(at) numbers
        return np.mean([np.interp(at, q, QUANTILE_LEVELS) for q in quantiles], axis=0)

    # The answer lies between the last candidate at or below the percentile and the first past it.
    # At every candidate the pooled distribution is runs x candidates numbers (1.3 GB at 250 runs),
    # and walking them in order took ~0.6 s a signal; instead, evaluate _CDF_CHUNK evenly spaced
    # candidates, keep the stretch between the last one at or below the percentile and the first one
    # past it, and repeat until the stretch fits in one evaluation (the distribution does not
    # decrease, so the stretch holds the answer; each candidate's value is the one a single
    # evaluation of all of them gives, and a test compares the two to the bit).
    start, stop, floor = 0, len(values), -np.inf
    while stop - start > _CDF_CHUNK:
        probe = np.linspace(start, stop - 1, _CDF_CHUNK).astype(int)
        at = cdf(values[probe])
        past = np.flatnonzero(at > percentile)
        if not len(past):  # none past it: the largest candidate is the answer
            start = stop - 1
            break
        if past[0]:
            floor, start = max(floor, at[: past[0]].max()), probe[past[0] - 1]
        stop = probe[past[0]] + 1
    reached = np.maximum(np.maximum.accumulate(cdf(values[start:stop])), floor)
    return float(np.interp(percentile, reached, values[start:stop]))


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
    return _tops([cell_quantiles(run) for run in matrices], percentile)


def reference_bottoms(
    matrices: Sequence[Mapping[str, VarianceMatrix]], *, percentile: float = REFERENCE_BOTTOM_PERCENTILE, tops: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Bottom of the colour range per signal from the matrices of several runs (see the module notes).

    Parameters
    ----------
    matrices : sequence of mapping of str to VarianceMatrix
        As in :func:`reference_tops`.
    percentile : float, default=1.0
        For the embedding signals, in [0, 100).
    tops : mapping of str to float, optional
        The tops (default :func:`reference_tops` of ``matrices``): a bottom not below its top is 0.

    Returns
    -------
    dict of str to float
        Per signal: 0.0 for :data:`PROBABILITY_SIGNALS`, else the percentile of all cells of all runs.
    """
    quantiles = [cell_quantiles(run) for run in matrices]
    return _bottoms(quantiles, percentile, _tops(quantiles, REFERENCE_PERCENTILE) if tops is None else tops)


def _bottoms(quantiles: Sequence[Mapping[str, np.ndarray]], percentile: float, tops: Mapping[str, float]) -> dict[str, float]:
    if not quantiles:
        raise InvalidInputError("reference_bottoms needs the matrices of at least one run")
    if not 0 <= percentile < 100:
        raise InvalidInputError(f"percentile must be in [0, 100); got {percentile!r}")
    bottoms = {}
    for signal in quantiles[0]:
        low = 0.0 if signal in PROBABILITY_SIGNALS else pooled_percentile([run[signal] for run in quantiles], percentile)
        bottoms[signal] = low if NOISE_FLOOR < low < tops[signal] else 0.0
    return bottoms


def _tops(quantiles: Sequence[Mapping[str, np.ndarray]], percentile: float) -> dict[str, float]:
    if not quantiles:
        raise InvalidInputError("reference_tops needs the matrices of at least one run")
    if not 0 < percentile <= 100:
        raise InvalidInputError(f"percentile must be in (0, 100]; got {percentile!r}")
    return {
        signal: 1.0 if signal in PROBABILITY_SIGNALS else _above_noise(pooled_percentile([run[signal] for run in quantiles], percentile)) or 1.0
        for signal in quantiles[0]
    }


def _above_noise(top: float) -> float:
    """``top``, or 0 when it is rounding noise (:data:`NOISE_FLOOR`)."""
    return top if top > NOISE_FLOOR else 0.0


def run_cell_quantiles(workspace: Workspace, run_id: str, *, settings: MatrixSettings = DEFAULT_SETTINGS) -> dict[str, np.ndarray]:
    """The quantiles of a finished run's matrix cells per signal: stored, else computed and stored.

    The run's job stores them at the default settings (:func:`analytics.runs.complete_runs`); any
    other settings, or a run finished before they were stored, computes the matrices
    (:func:`analytics.runs.run_matrices`) once and stores the quantiles.

    Returns
    -------
    dict of str to ndarray of shape (len(QUANTILE_LEVELS),), float64
        Keyed by :data:`SIGNALS`.
    """
    settings = MatrixSettings.check(settings)
    settings_id = content_id(settings.key())
    finished = run_row(workspace, run_id)["finished"] or ""
    row = workspace.query_one(
        "SELECT signals, hash FROM run_cell_quantiles WHERE run_id = ? AND settings_id = ? AND finished = ?", (run_id, settings_id, finished)
    )
    if row is not None and _holds_every_signal(row["signals"]):
        return dict(zip(json.loads(row["signals"]), workspace.get_array(row["hash"])))
    quantiles = cell_quantiles(run_matrices(workspace, run_id, settings=settings))
    digest = workspace.put_array(np.stack(list(quantiles.values())))  # the array is on disk before the row names it
    with workspace.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO run_cell_quantiles(run_id, settings_id, finished, signals, hash) VALUES (?, ?, ?, ?, ?)",
            (run_id, settings_id, finished, json.dumps(list(quantiles)), digest),
        )
    return quantiles


def _holds_every_signal(stored_signals: str) -> bool:
    """Whether a ``run_cell_quantiles`` row (its ``signals`` column) has every signal of :data:`SIGNALS`."""
    return set(SIGNALS) <= set(json.loads(stored_signals))


def missing_cell_quantiles(workspace: Workspace, suite_id: str, *, settings: MatrixSettings = DEFAULT_SETTINGS) -> tuple[str, ...]:
    """The runs whose matrices :func:`suite_colour_scale` at ``settings`` has to compute first (their cells'
    quantiles are not stored at these settings): none when the scale is stored, or the suite has no
    finished run. Two reads, so a page can show a progress bar only when the scale will take seconds.

    Returns
    -------
    tuple of str
        Run ids, sorted.
    """
    settings = MatrixSettings.check(settings)
    if workspace.get_meta(_scale_key(suite_id, settings)) is not None:
        return ()
    runs = _scale_runs(workspace, suite_id)
    rows = workspace.query("SELECT run_id, finished, signals FROM run_cell_quantiles WHERE settings_id = ?", (content_id(settings.key()),))
    stored = {(row["run_id"], row["finished"]) for row in rows if _holds_every_signal(row["signals"])}
    return tuple(sorted(run_id for run_id, finished in zip(runs["id"], runs["finished"]) if (run_id, finished or "") not in stored))


def _scale_key(suite_id: str, settings: MatrixSettings) -> str:
    return _META_PREFIX + suite_id + "/" + content_id(settings.key())


def _scale_runs(workspace: Workspace, suite_id: str) -> pd.DataFrame:
    """The runs a suite's scale reads: the newest current finished run of each model."""
    runs = current_runs(workspace, suite_id=suite_id)
    return runs[runs["status"] == "done"].drop_duplicates("model", keep="first")  # newest first


def suite_colour_scale(
    workspace: Workspace, suite_id: str, *, settings: MatrixSettings = DEFAULT_SETTINGS, freeze: bool = False, progress: Progress | None = None
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
    progress : Progress, optional
        ``progress(done, n_runs, "runs")`` after each run's quantiles are read, or computed (seconds a run
        at other settings than the default: :func:`missing_cell_quantiles` names those runs); not called
        for a stored scale.

    Returns
    -------
    ColourScale

    Raises
    ------
    InvalidInputError
        The suite has no current finished run (nothing to take the embedding reference from).
    """
    settings = MatrixSettings.check(settings)
    key = _scale_key(suite_id, settings)
    stored = workspace.get_meta(key)
    if stored is not None:
        return _from_json(stored)
    runs = _scale_runs(workspace, suite_id)
    if runs.empty:
        raise InvalidInputError(f"suite {suite_id!r} has no current finished run to set its colour scale from; run a model over it first")
    run_ids = tuple(sorted(runs["id"]))
    quantiles = []
    for run_id in run_ids:
        quantiles.append(run_cell_quantiles(workspace, run_id, settings=settings))
        if progress is not None:
            progress(len(quantiles), len(run_ids), "runs")
    tops = _tops(quantiles, REFERENCE_PERCENTILE)
    bottoms = _bottoms(quantiles, REFERENCE_BOTTOM_PERCENTILE, tops)
    rules = {
        signal: _PROBABILITY_RULE
        if signal in PROBABILITY_SIGNALS
        else _embedding_rule(quantiles, signal, bottoms[signal], len(run_ids))
        for signal in tops
    }
    scale = ColourScale(tops=tops, rules=rules, runs=run_ids, settings=settings.as_dict(), bottoms=bottoms)
    if not (freeze or _has_judgments(workspace, suite_id)):
        return scale
    with workspace.transaction() as conn:  # INSERT OR IGNORE: when two sessions race, the first one wins
        conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (key, _to_json(scale, frozen=now())))
    frozen = workspace.get_meta(key)  # the first stored scale: this one, or a racing session's
    return scale if frozen is None else _from_json(frozen)


def _embedding_rule(quantiles: Sequence[Mapping[str, np.ndarray]], signal: str, bottom: float, runs: int) -> str:
    rule = f"{_ordinal(REFERENCE_BOTTOM_PERCENTILE)} to {_ordinal(REFERENCE_PERCENTILE)} percentile of the cells of {runs} run(s) over the suite"
    top = pooled_percentile([run[signal] for run in quantiles], REFERENCE_PERCENTILE)
    if 0 < top <= NOISE_FLOOR:
        return f"{rule}: {top:.2g}, rounding noise of a constant signal, so drawn 0 to 1"
    return rule if bottom or not top else f"{rule} (bottom 0: cells at 0)"


def _ordinal(percentile: float) -> str:
    """``1st``, ``99th``, ``2.5th``: a percentile as words say it."""
    whole = float(percentile).is_integer() and int(percentile) % 100 not in (11, 12, 13)
    return f"{percentile:g}" + ({1: "st", 2: "nd", 3: "rd"}.get(int(percentile) % 10, "th") if whole else "th")


#: How an embedding signal's range is chosen, in words (pages and reports say it).
EMBEDDING_RANGE = (
    f"from the {_ordinal(REFERENCE_BOTTOM_PERCENTILE)} to the {_ordinal(REFERENCE_PERCENTILE)} percentile of the matrix cells of the "
    "suite's runs (from 0 when some model's cells are 0)"
)


def _has_judgments(workspace: Workspace, suite_id: str) -> bool:
    return workspace.query_one("SELECT 1 FROM judgments WHERE suite_id = ? LIMIT 1", (suite_id,)) is not None


def _to_json(scale: ColourScale, *, frozen: str) -> str:
    record = {"tops": scale.tops, "bottoms": scale.bottoms, "rules": scale.rules, "runs": list(scale.runs), "settings": scale.settings}
    return json.dumps({**record, "frozen": frozen})


def _from_json(text: str) -> ColourScale:
    record = json.loads(text)
    # a probability signal added after the scale froze tops at 1 as every probability signal does
    stored = {**{signal: 1.0 for signal in PROBABILITY_SIGNALS}, **record["tops"]}
    tops = {signal: float(stored[signal]) for signal in SIGNALS if signal in stored}
    rules = {signal: record["rules"].get(signal, _PROBABILITY_RULE) for signal in tops}
    bottoms = {signal: float(value) for signal, value in record.get("bottoms", {}).items() if signal in tops}  # none before bottoms: 0
    return ColourScale(tops=tops, rules=rules, runs=tuple(record["runs"]), settings=record["settings"], frozen=record["frozen"], bottoms=bottoms)
