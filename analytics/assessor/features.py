"""The assessor's input table: one row per model, the matrix features of its run's variance
matrices (a feature set of :data:`FEATURE_SETS` per signal of :data:`analytics.runs.SIGNALS`; the
authors' set on the matrices of the correctly classified targets, as ML4ML's assessor) plus the
three accuracy statistics :data:`ACCURACY_COLUMNS` over every target (docs/method.md, 'Automated assessor').
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analytics._validation import check_choice
from analytics.exceptions import InvalidInputError
from analytics.runs import (
    MATRIX_TARGETS,
    PROBABILITY_SIGNALS,
    run_matrices,
    run_row,
    run_summary,
    signal_peaks,
    subsample_matrices,
)
from analytics.variance import (
    DEFAULT_ERROR_THRESHOLD,
    DEFAULT_SETTINGS,
    MatrixSettings,
    sensitivity,
)
from analytics.workspace import Workspace, content_id

from .feature_sets import DEFAULT_FEATURE_SET, FEATURE_SETS, matrix_feature_columns

WORST_CASE = "worst_case_accuracy"
#: The accuracy statistics of a run (:func:`run_features`); never matrix features.
ACCURACY_COLUMNS = ("accuracy", "original_accuracy", WORST_CASE)
#: Feature columns of :func:`run_features` besides the accuracies, with the default feature set.
FEATURE_COLUMNS = matrix_feature_columns()
_CACHE_PREFIX = "assessor/features/"
#: Part of the cache key of a run's features: bump it when a feature is computed differently
#: (2: ``sstv`` on the authors' own subsample draw, issue 41).
_FEATURES_VERSION = 2


def run_features(
    workspace: Workspace,
    run_id: str,
    *,
    settings: MatrixSettings = DEFAULT_SETTINGS,
    threshold: float | None = None,
    feature_set: str = DEFAULT_FEATURE_SET,
    crops: Sequence[int] = (),
    targets: str | None = None,
) -> dict[str, float]:
    """Features of the matrices of a run, for the assessor (docs/method.md, 'Automated assessor'), cached in the workspace
    (keyed like the run's matrices: a resumed or redone run is computed afresh).

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    settings : MatrixSettings, default=DEFAULT_SETTINGS
        Interpolation settings of the matrices (:func:`analytics.runs.run_matrices`).
    threshold : float, optional
        Error-rate threshold for every signal. None: 0.15 for the probability signals and, for
        the embedding signals (whose scale depends on the model), 0.15 times the largest absolute
        value of that signal in the run, so the error rate counts cells above the same share of
        the signal's own range.
    feature_set : str, default='authors'
        Key of :data:`FEATURE_SETS`: the ML4ML authors' features, or Backdrop's earlier ones.
    crops : sequence of int, default=()
        Margins (cells) of nested centre crops measured too (``authors`` only).
    targets : {'all', 'correct'}, optional
        Whose matrices are measured (:data:`analytics.runs.MATRIX_TARGETS`); None: the feature set's
        own (:attr:`FeatureSet.targets`: ``'correct'`` for ``authors``, as ML4ML's assessor, whose
        ``sstv`` then compares with the correct targets among the 90 % drawn from all; ``'all'``
        for ``backdrop``). A run with no correctly classified target reads every target
        (:func:`analytics.runs.correct_rows`). The accuracy columns always count every target.

    Returns
    -------
    dict of str to float
        ``'<signal>.<feature>'`` in the order of :func:`matrix_feature_columns` (with the default
        set :data:`FEATURE_COLUMNS`), then ``accuracy``, ``original_accuracy`` and
        ``worst_case_accuracy``.
    """
    columns = [*matrix_feature_columns(feature_set, crops), *ACCURACY_COLUMNS]  # checks the set and the crops' fit to it
    settings = MatrixSettings.check(settings)
    targets = FEATURE_SETS[feature_set].targets if targets is None else check_choice(targets, "targets", MATRIX_TARGETS)
    row = run_row(workspace, run_id)
    key = _CACHE_PREFIX + content_id(
        run_id, row["status"], row["finished"], settings.key(), threshold, feature_set, [int(c) for c in crops], _FEATURES_VERSION, targets
    )

    def compute() -> np.ndarray:
        features = _features(workspace, run_id, settings, threshold, feature_set, crops, targets)
        return np.array([features[column] for column in columns], np.float64)

    return dict(zip(columns, map(float, workspace.cached(key, compute))))


def _features(
    workspace: Workspace, run_id: str, settings: MatrixSettings, threshold: float | None, feature_set: str, crops: Sequence[int], targets: str
) -> dict[str, float]:
    # Stored numbers only (the summary, the matrices the run's job cached, one aggregate for the
    # thresholds): reading every image of 250 paper-scale runs took minutes.
    chosen = FEATURE_SETS[feature_set]
    summary = run_summary(workspace, run_id)
    matrices = run_matrices(workspace, run_id, settings=settings, targets=targets)
    subsample = subsample_matrices(workspace, run_id, settings=settings, targets=targets) if chosen.subsample else {}
    extra = {"crops": crops} if crops else {}
    scaled = [signal for signal in matrices if signal not in PROBABILITY_SIGNALS]
    peaks = signal_peaks(workspace, run_id, scaled) if threshold is None and scaled else {}
    features: dict[str, float] = {}
    for signal, matrix in matrices.items():
        if threshold is not None:
            cut = float(threshold)
        elif signal in PROBABILITY_SIGNALS:
            cut = DEFAULT_ERROR_THRESHOLD
        else:
            cut = DEFAULT_ERROR_THRESHOLD * peaks[signal]
        features.update({f"{signal}.{name}": value for name, value in chosen.compute(matrix.matrix, threshold=cut, **extra).items()})
        if chosen.subsample:
            features[f"{signal}.sstv"] = sensitivity(matrix.matrix, subsample[signal].matrix)
    features.update({column: float(summary[column]) for column in ACCURACY_COLUMNS})  # as summarize_run computed them
    return features


def features_table(
    workspace: Workspace,
    run_ids: Sequence[str],
    *,
    settings: MatrixSettings = DEFAULT_SETTINGS,
    threshold: float | None = None,
    feature_set: str = DEFAULT_FEATURE_SET,
    crops: Sequence[int] = (),
    targets: str | None = None,
) -> pd.DataFrame:
    """:func:`run_features` of several runs: one row per model (index = model name).

    Parameters
    ----------
    workspace : Workspace
    run_ids : sequence of str
        At most one run per model.
    settings : MatrixSettings, default=DEFAULT_SETTINGS
    threshold, feature_set, crops, targets
        As in :func:`run_features`.

    Returns
    -------
    DataFrame
        Index ``model``; columns :func:`matrix_feature_columns` + accuracy, original_accuracy,
        worst_case_accuracy; also an empty, well-formed frame for no runs.
    """
    models = [run_row(workspace, run_id)["model"] for run_id in run_ids]
    repeated = sorted({m for m in models if models.count(m) > 1})
    if repeated:
        raise InvalidInputError(f"run_ids must hold one run per model; models {', '.join(repeated)} appear more than once")
    columns = [*matrix_feature_columns(feature_set, crops), *ACCURACY_COLUMNS]
    rows = [
        run_features(workspace, run_id, settings=settings, threshold=threshold, feature_set=feature_set, crops=crops, targets=targets)
        for run_id in run_ids
    ]
    return pd.DataFrame(rows, index=pd.Index(models, name="model"), columns=columns)
