"""The assessor's input table: one row per model, the matrix features of its run's four variance
matrices (:func:`analytics.variance.matrix_features` per signal of :data:`analytics.runs.SIGNALS`)
plus the three accuracy statistics :data:`ACCURACY_COLUMNS` (DESIGN §1.13).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analytics.exceptions import InvalidInputError
from analytics.runs import SIGNALS, load_run, run_matrices, run_row
from analytics.variance import (
    DEFAULT_SETTINGS,
    DEFAULT_THRESHOLD,
    FEATURE_NAMES,
    MatrixSettings,
    matrix_features,
    worst_case_accuracy,
)
from analytics.workspace import Workspace

__all__ = ["ACCURACY_COLUMNS", "FEATURE_COLUMNS", "WORST_CASE", "features_table", "run_features"]

WORST_CASE = "worst_case_accuracy"
#: The accuracy statistics of a run (:func:`run_features`); never matrix features.
ACCURACY_COLUMNS = ("accuracy", "original_accuracy", WORST_CASE)
#: Feature columns of :func:`run_features` besides the accuracies.
FEATURE_COLUMNS = [f"{signal}.{name}" for signal in SIGNALS for name in FEATURE_NAMES]


def run_features(
    workspace: Workspace, run_id: str, *, settings: MatrixSettings = DEFAULT_SETTINGS, threshold: float | None = None
) -> dict[str, float]:
    """Features of the four matrices of a run, for the assessor (DESIGN §1.13).

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    settings : MatrixSettings, default=DEFAULT_SETTINGS
        Interpolation settings of the matrices (:func:`analytics.runs.run_matrices`).
    threshold : float, optional
        Error-rate threshold for every signal. None: 0.15 for the true-class probability and, for
        the embedding signals (whose scale depends on the model), 0.15 times the largest absolute
        value of that signal in the run, so the error rate counts cells above the same share of
        the signal's own range.

    Returns
    -------
    dict of str to float
        ``'<signal>.<feature>'`` for :data:`SIGNALS` x :data:`analytics.variance.FEATURE_NAMES`
        (:data:`FEATURE_COLUMNS`, in that order), then ``accuracy``, ``original_accuracy`` and
        ``worst_case_accuracy``.
    """
    data = load_run(workspace, run_id)
    matrices = run_matrices(workspace, run_id, settings=settings)
    features: dict[str, float] = {}
    for signal, matrix in matrices.items():
        if threshold is not None:
            cut = float(threshold)
        elif signal == "true_prob":
            cut = DEFAULT_THRESHOLD
        else:
            cut = DEFAULT_THRESHOLD * float(np.abs(data.signals[signal]).max())
        features.update({f"{signal}.{name}": value for name, value in matrix_features(matrix.matrix, threshold=cut).items()})
    features["accuracy"] = float(data.correct.mean())
    features["original_accuracy"] = float(data.correct[:, 0].mean())
    features[WORST_CASE] = worst_case_accuracy(data.correct)
    return features


def features_table(
    workspace: Workspace, run_ids: Sequence[str], *, settings: MatrixSettings = DEFAULT_SETTINGS, threshold: float | None = None
) -> pd.DataFrame:
    """:func:`run_features` of several runs: one row per model (index = model name).

    Parameters
    ----------
    workspace : Workspace
    run_ids : sequence of str
        At most one run per model.
    settings : MatrixSettings, default=DEFAULT_SETTINGS
    threshold : float, optional
        As in :func:`run_features`.

    Returns
    -------
    DataFrame
        Index ``model``; columns :data:`FEATURE_COLUMNS` + accuracy, original_accuracy,
        worst_case_accuracy; also an empty, well-formed frame for no runs.
    """
    models = [run_row(workspace, run_id)["model"] for run_id in run_ids]
    repeated = sorted({m for m in models if models.count(m) > 1})
    if repeated:
        raise InvalidInputError(f"run_ids must hold one run per model; models {', '.join(repeated)} appear more than once")
    columns = [*FEATURE_COLUMNS, *ACCURACY_COLUMNS]
    rows = [run_features(workspace, run_id, settings=settings, threshold=threshold) for run_id in run_ids]
    return pd.DataFrame(rows, index=pd.Index(models, name="model"), columns=columns)
