"""Evaluation of the assessors (docs/method.md, 'Automated assessor'), as in the paper.

A stratified random split, 2/3 train and 1/3 test, repeated 10 times; accuracy mean ± standard
deviation and Cohen's κ against the label on the test models. Every assessor sees the same splits.

A fit scikit-learn refuses on one split (AdaBoost's "worse than random" when its columns do not
vary, e.g. identical accuracy statistics) is skipped and counted, not raised; the report and
``assess --json`` say how many fits failed and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analytics._validation import check_positive_int
from analytics.exceptions import InvalidInputError
from analytics.judging import LABELS, cohen_kappa

from .assessors import ASSESSORS, INPUTS, RandomForest, feature_columns
from .inputs import _check_test_size, _judged


@dataclass(frozen=True)
class AssessorScores:
    """Test-split scores of one assessor over the repeats (one entry per repeat it could be fitted on).

    ``failed`` counts the repeats whose fit scikit-learn refused (e.g. AdaBoost's "worse than random"
    when the columns give nothing to split on); ``failure`` is the first such message (``''`` if none).
    """

    kind: str
    accuracy: tuple[float, ...]
    kappa: tuple[float, ...]
    failed: int = 0
    failure: str = ""

    @property
    def accuracy_mean(self) -> float:
        """Mean over the fitted repeats (NaN when no fit succeeded)."""
        return float(np.mean(self.accuracy)) if self.accuracy else float("nan")

    @property
    def accuracy_std(self) -> float:
        """Sample standard deviation over the fitted repeats (0 for one, NaN for none)."""
        if not self.accuracy:
            return float("nan")
        return float(np.std(self.accuracy, ddof=1)) if len(self.accuracy) > 1 else 0.0

    @property
    def kappa_mean(self) -> float:
        """Mean κ over the repeats where κ is defined (NaN when it never is)."""
        defined = [k for k in self.kappa if not np.isnan(k)]
        return float(np.mean(defined)) if defined else float("nan")


@dataclass(frozen=True)
class AssessorReport:
    """The outcome of :func:`evaluate_assessors`.

    Attributes
    ----------
    scores : dict of str to AssessorScores
        One entry per registered assessor, keyed by its name.
    models : tuple of str
        The judged models used (features and a label).
    class_counts : dict of str to int
        Models per label.
    assessor_features : dict of str to tuple of str
        The columns each assessor read (:func:`feature_columns`), keyed by its name.
    repeats, test_size, seed
        The evaluation settings.
    """

    scores: dict[str, AssessorScores]
    models: tuple[str, ...]
    class_counts: dict[str, int]
    assessor_features: dict[str, tuple[str, ...]]
    repeats: int
    test_size: float
    seed: int

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The matrix features (what the matrix assessors read)."""
        return self.assessor_features[RandomForest.name]

    def table(self) -> pd.DataFrame:
        """One row per assessor: ``assessor, inputs, accuracy_mean, accuracy_std, kappa_mean``
        (``inputs`` = the description in :data:`INPUTS`)."""
        return pd.DataFrame(
            [
                (ASSESSORS[name].title, INPUTS[ASSESSORS[name].inputs], s.accuracy_mean, s.accuracy_std, s.kappa_mean)
                for name, s in self.scores.items()
            ],
            columns=["assessor", "inputs", "accuracy_mean", "accuracy_std", "kappa_mean"],
        )

    @property
    def fits_failed(self) -> int:
        """Fits refused over all assessors and repeats (see :attr:`AssessorScores.failed`)."""
        return sum(scores.failed for scores in self.scores.values())

    def to_dict(self) -> dict[str, Any]:
        """Flat JSON-ready dict: ``<short>_accuracy_mean``, ``<short>_accuracy_std`` and
        ``<short>_kappa_mean`` per assessor (``rf``, ``ada``, ``acc_rf``, ``acc_ada``, ``baseline``;
        null where undefined), ``features`` (the matrix features), ``features_by_assessor`` (name ->
        columns read), ``fits_failed`` (total), ``fits_failed_by_assessor`` (name -> count),
        ``fit_errors`` (name -> first refusal, only assessors with one), ``n_models``,
        ``class_counts`` and the settings."""
        result: dict[str, Any] = {}
        for name, scores in self.scores.items():
            short = ASSESSORS[name].short
            for stat in ("accuracy_mean", "accuracy_std", "kappa_mean"):
                value = getattr(scores, stat)
                result[f"{short}_{stat}"] = None if np.isnan(value) else value
        return {
            **result,
            "fits_failed": self.fits_failed,
            "fits_failed_by_assessor": {name: scores.failed for name, scores in self.scores.items()},
            "fit_errors": {name: scores.failure for name, scores in self.scores.items() if scores.failed},
            "n_models": self.n_models,
            "class_counts": dict(self.class_counts),
            "features": list(self.feature_names),
            "features_by_assessor": {name: list(columns) for name, columns in self.assessor_features.items()},
            "repeats": self.repeats,
            "test_size": self.test_size,
            "seed": self.seed,
        }


def evaluate_assessors(
    features: pd.DataFrame,
    labels: pd.Series,
    *,
    repeats: int = 10,
    test_size: float = 1 / 3,
    seed: int = 0,
) -> AssessorReport:
    """Score every registered assessor over repeated stratified train/test splits.

    A fit scikit-learn refuses on a split (AdaBoost raises "worse than random" when the columns it
    reads give nothing to split on, e.g. identical accuracy statistics) is skipped and counted
    (:attr:`AssessorScores.failed`); an assessor none of whose fits succeeded scores NaN.

    Parameters
    ----------
    features : DataFrame of shape (n_models, n_features), float
        Index = model names; numeric finite columns: the matrix features and the three
        :data:`ACCURACY_COLUMNS` (as :func:`features_table` gives them). Each assessor
        reads only its :func:`feature_columns`.
    labels : Series of str
        Index = model names, values in ``LABELS``; models in only one of the two are ignored.
    repeats : int, default=10
        Random splits.
    test_size : float in (0, 1), default=1/3
        Share of models in the test split.
    seed : int, default=0
        Seeds the splits and the estimators (repeat r uses ``seed + r``).

    Returns
    -------
    AssessorReport

    Raises
    ------
    InvalidInputError
        Bad features or labels, too few judged models (the message says how many are needed), or
        no assessor could be fitted on any split.
    """
    repeats = check_positive_int(repeats, "repeats")
    test_size = _check_test_size(test_size)
    x, y = _judged(features, labels, test_size)
    from sklearn.metrics import accuracy_score  # heavy (scikit-learn, about 0.3 s): imported only when assessors are evaluated
    from sklearn.model_selection import StratifiedShuffleSplit

    splitter = StratifiedShuffleSplit(n_splits=repeats, test_size=test_size, random_state=seed)
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in ASSESSORS}
    errors: dict[str, list[str]] = {name: [] for name in ASSESSORS}
    columns = {name: feature_columns(x.columns, name) for name in ASSESSORS}
    for repeat, (train, test) in enumerate(splitter.split(x, y)):
        for name, kind in ASSESSORS.items():
            try:
                estimator = kind.make(seed + repeat).fit(x.iloc[train][columns[name]].to_numpy(), y[train])
            except ValueError as err:  # scikit-learn's refusal of this split's data, not a bug of ours
                errors[name].append(str(err))
                continue
            predicted = estimator.predict(x.iloc[test][columns[name]].to_numpy())
            results[name].append((accuracy_score(y[test], predicted), cohen_kappa(y[test], predicted)))
    if not any(results.values()):
        first = next(message for messages in errors.values() for message in messages)
        raise InvalidInputError(
            f"no assessor could be fitted on any of the {repeats} splits of {len(x)} judged models (scikit-learn: {first}); "
            "their features give nothing to split on: label models whose matrices and accuracies differ"
        )
    return AssessorReport(
        scores={
            name: AssessorScores(
                name, tuple(float(a) for a, _ in pairs), tuple(float(k) for _, k in pairs), len(errors[name]), next(iter(errors[name]), "")
            )
            for name, pairs in results.items()
        },
        models=tuple(x.index),
        class_counts={label: int((y == label).sum()) for label in LABELS if (y == label).any()},
        assessor_features={name: tuple(names) for name, names in columns.items()},
        repeats=repeats,
        test_size=test_size,
        seed=seed,
    )
