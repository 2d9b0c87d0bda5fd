"""Which signals tell the models of a suite apart: their matrices compared on the suite's colour scale.

Annotators judge colours, so two models differ in a signal as much as their matrices' colours do:
each matrix is placed on the signal's colour range of the suite (:class:`analytics.runs.ColourScale`:
``(cell - bottom) / (top - bottom)``, clipped to [0, 1] as the heatmaps clip it), and two models differ
by the mean absolute difference of their cells there: 0 = the same colours, 1 = green against yellow
everywhere. Over more than two models, a signal's difference is the mean over every pair of models, and
the pair that differs most is named beside it. The Judge page says which signals differ most.

:func:`colour_use` measures how much of a colour range the cells of a suite's matrices fill (the share
drawn in its bottom and top tenths, and the span of their 1st to 99th percentile): the check that a
scale neither saturates nor leaves part of the colours unused (docs/method.md, *Colour scales*).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from analytics._choices import MATRIX_SIGNALS, SIGNALS
from analytics.exceptions import InvalidInputError
from analytics.variance import DEFAULT_SETTINGS, MatrixSettings, VarianceMatrix
from analytics.workspace import Workspace

from .colour_scale import ColourScale
from .matrices import run_matrices

#: Columns of :func:`signal_differences`.
DIFFERENCE_COLUMNS = ["signal", "name", "difference", "largest", "pair"]
#: Columns of :func:`colour_use`.
COLOUR_USE_COLUMNS = ["signal", "bottom", "top", "bottom_tenth", "top_tenth", "top_colour", "spread", "median"]


def _on_scale(matrix: VarianceMatrix, scale: ColourScale, signal: str) -> np.ndarray:
    bottom, top = scale.colour_range(signal)
    span = top - bottom
    cells = np.asarray(matrix.matrix, dtype=np.float64)
    return np.clip((cells - bottom) / span, 0.0, 1.0) if span > 0 else np.zeros_like(cells)


def signal_differences(
    matrices: Mapping[str, Mapping[str, VarianceMatrix]], scale: ColourScale, *, signals: Sequence[str] | None = None
) -> pd.DataFrame:
    """Signals ranked by how far apart the models' matrices are on the suite's colour scale (see the module notes).

    Parameters
    ----------
    matrices : mapping of str to mapping of str to VarianceMatrix
        Per run (or model) its matrices by signal (:func:`analytics.runs.run_matrices`), all at the
        settings of ``scale``; at least two.
    scale : ColourScale
        The suite's scale (:func:`analytics.runs.suite_colour_scale`).
    signals : sequence of str, optional
        Signals to compare (default: every signal of ``scale`` that all runs have).

    Returns
    -------
    pandas.DataFrame
        :data:`DIFFERENCE_COLUMNS`, one row per signal, the largest ``difference`` first (ties in the
        given signal order): ``name`` (:data:`analytics.runs.MATRIX_SIGNALS`), ``difference`` (mean over
        pairs of models of the mean absolute difference of their cells as a share of the colour range,
        in [0, 1]), ``largest`` (that of the pair that differs most) and ``pair`` (its two keys).

    Raises
    ------
    InvalidInputError
        Fewer than two runs, or a signal a run or the scale lacks.
    """
    if len(matrices) < 2:
        raise InvalidInputError(f"comparing signals needs the matrices of at least two models; got {len(matrices)}")
    if signals is None:
        signals = [s for s in scale.tops if all(s in run for run in matrices.values())]
    rows = []
    for signal in signals:
        if signal not in scale.tops or any(signal not in run for run in matrices.values()):
            raise InvalidInputError(f"signal {signal!r} is not in the colour scale or in the matrices of every run")
        placed = {key: _on_scale(run[signal], scale, signal) for key, run in matrices.items()}
        pairs = {(a, b): float(np.mean(np.abs(placed[a] - placed[b]))) for a, b in combinations(placed, 2)}
        pair = max(pairs, key=pairs.__getitem__)
        rows.append({"signal": signal, "name": MATRIX_SIGNALS.get(signal, signal), "difference": float(np.mean(list(pairs.values()))),
                     "largest": pairs[pair], "pair": pair})  # fmt: skip
    table = pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)
    return table.sort_values("difference", ascending=False, kind="stable").reset_index(drop=True)


def suite_signal_differences(
    workspace: Workspace,
    run_ids: Sequence[str],
    scale: ColourScale,
    *,
    settings: MatrixSettings = DEFAULT_SETTINGS,
    signals: Sequence[str] | None = None,
) -> pd.DataFrame:
    """:func:`signal_differences` of finished runs of one suite, their matrices read (or computed) at ``settings``.

    Parameters
    ----------
    workspace : Workspace
    run_ids : sequence of str
        At least two finished runs over the suite of ``scale``.
    scale : ColourScale
        The suite's scale at ``settings``.
    settings : MatrixSettings, default=DEFAULT_SETTINGS
    signals : sequence of str, optional
        As in :func:`signal_differences`.

    Returns
    -------
    pandas.DataFrame
        :data:`DIFFERENCE_COLUMNS`; ``pair`` holds run ids.
    """
    wanted = tuple(signals) if signals is not None else tuple(SIGNALS)
    matrices = {run_id: run_matrices(workspace, run_id, settings=settings, signals=wanted) for run_id in run_ids}
    return signal_differences(matrices, scale, signals=None if signals is None else wanted)


def colour_use(matrices: Sequence[Mapping[str, VarianceMatrix]], scale: ColourScale, *, signals: Sequence[str] | None = None) -> pd.DataFrame:
    """How the cells of several runs' matrices fill each signal's colour range of ``scale``.

    Parameters
    ----------
    matrices : sequence of mapping of str to VarianceMatrix
        Per run its matrices by signal (:func:`analytics.runs.run_matrices`); at least one.
    scale : ColourScale
    signals : sequence of str, optional
        Default: every signal of ``scale`` that all runs have.

    Returns
    -------
    pandas.DataFrame
        :data:`COLOUR_USE_COLUMNS`, one row per signal, over the pooled cells of all runs, each placed on
        the range as ``(cell - bottom) / (top - bottom)`` (unclipped): ``bottom_tenth`` and ``top_tenth``
        (shares of cells below 0.1 and at or above 0.9: the darkest green and the yellow), ``top_colour``
        (share at or above the top, drawn in the top colour), ``spread`` (their 99th minus their 1st
        percentile: 1 when the cells span the range) and ``median``.
    """
    if not matrices:
        raise InvalidInputError("colour_use needs the matrices of at least one run")
    if signals is None:
        signals = [s for s in scale.tops if all(s in run for run in matrices)]
    rows = []
    for signal in signals:
        bottom, top = scale.colour_range(signal)
        cells = np.concatenate([np.asarray(run[signal].matrix, dtype=np.float64).ravel() for run in matrices])
        placed = (cells - bottom) / (top - bottom) if top > bottom else np.zeros_like(cells)
        low, middle, high = np.percentile(placed, [1.0, 50.0, 99.0])
        rows.append({"signal": signal, "bottom": bottom, "top": top, "bottom_tenth": float(np.mean(placed < 0.1)),
                     "top_tenth": float(np.mean(placed >= 0.9)), "top_colour": float(np.mean(placed >= 1.0)),
                     "spread": float(high - low), "median": float(middle)})  # fmt: skip
    return pd.DataFrame(rows, columns=COLOUR_USE_COLUMNS)
