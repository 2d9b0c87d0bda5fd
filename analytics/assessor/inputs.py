"""The assessor's training data: the judged models' features and labels, checked.

Labels: a lead's consensus where recorded, else the annotators' majority vote
(:func:`human_labels`, :func:`analytics.judging.training_labels`); or a zoo model's construction
label.

Enough judged models: at least :data:`MIN_MODELS`, at least two labels, at least two models per
label (stratification puts one in train and one in test), and enough that both the train and the
test split can hold every label. Fewer raise :class:`InvalidInputError` saying how many are needed.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analytics._validation import check_fraction
from analytics.exceptions import InvalidInputError
from analytics.judging import LABELS, latest_judgments_by_suite, training_labels
from analytics.workspace import Workspace

from .features import ACCURACY_COLUMNS

MIN_MODELS = 6
MIN_PER_LABEL = 2


def human_labels(workspace: Workspace, suite_id: str) -> pd.Series:
    """The human label of each model judged on one suite: the consensus a lead recorded there, else
    the majority vote of the annotators' latest current judgments (:func:`analytics.judging.training_labels`).

    Judgments are scoped to a suite (an annotator judges a model's matrices on that suite), so the
    assessor learns from the labels given on the suite its features come from.

    Returns
    -------
    labels : Series of str
        Index = model, values in ``LABELS``; empty when nobody judged a model on ``suite_id``.
    """
    return training_labels(workspace, suite_id)


def judged_suite(workspace: Workspace) -> str | None:
    """The suite with the most models judged on it (ties: the first suite id), or None when no
    judgment names a suite."""
    judged = latest_judgments_by_suite(workspace)
    if judged.empty:
        return None
    counts = judged.groupby("suite_id")["model"].nunique()
    return str(counts.sort_index().idxmax())


def _judged(features: pd.DataFrame, labels: pd.Series, test_size: float) -> tuple[pd.DataFrame, np.ndarray]:
    """The judged models' features (sorted by model) and labels, after every data check."""
    _check_features(features)
    if not isinstance(labels, pd.Series):
        raise InvalidInputError(f"labels must be a pandas Series indexed by model name; got {type(labels).__name__}")
    bad = sorted(set(labels.dropna()) - set(LABELS))
    if bad:
        raise InvalidInputError(f"labels hold unknown values {bad}; labels are {', '.join(LABELS)}")
    common = features.index.intersection(labels.dropna().index).sort_values()
    _check_enough(labels[common], test_size)
    return features.loc[common], labels[common].to_numpy(dtype=object)


def _check_features(features: pd.DataFrame) -> None:
    if not isinstance(features, pd.DataFrame):
        raise InvalidInputError(f"features must be a DataFrame (rows = models, columns = features); got {type(features).__name__}")
    missing = [name for name in ACCURACY_COLUMNS if name not in features.columns]
    if missing:
        raise InvalidInputError(
            f"features lack the accuracy columns {missing} the baselines read; columns are {list(features.columns)}. "
            "Use analytics.assessor.features_table"
        )
    if all(name in ACCURACY_COLUMNS for name in features.columns):
        raise InvalidInputError(f"features need at least one matrix feature besides {list(ACCURACY_COLUMNS)}")
    if features.index.has_duplicates:
        raise InvalidInputError("features hold several rows for one model; keep one row per model")
    non_numeric = [name for name, dtype in features.dtypes.items() if not pd.api.types.is_numeric_dtype(dtype)]
    if non_numeric:
        raise InvalidInputError(f"features must be numeric; columns {non_numeric} are not")
    values = features.to_numpy(dtype=float)
    if not np.isfinite(values).all():
        rows = list(features.index[~np.isfinite(values).all(axis=1)])
        raise InvalidInputError(f"features hold NaN or infinite values for models {rows}; recompute or drop them")


def _check_enough(labels: pd.Series, test_size: float) -> None:
    counts = labels.value_counts().reindex(list(LABELS)).dropna().astype(int)
    counts = counts[counts > 0]
    shown = ", ".join(f"{label}: {n}" for label, n in counts.items()) or "none"
    if len(counts) < 2:
        raise InvalidInputError(
            f"the assessor needs judged models of at least two labels; got {len(labels)} judged model(s) ({shown}). "
            "Judge models that look different"
        )
    needed = _models_needed(len(counts), test_size)
    if (counts < MIN_PER_LABEL).any() or len(labels) < needed:
        raise InvalidInputError(
            f"the assessor needs at least {needed} judged models with at least {MIN_PER_LABEL} per label "
            f"(to split them {1 - test_size:.0%} train / {test_size:.0%} test by label); got {len(labels)} ({shown}). "
            "Judge more models"
        )


def _models_needed(n_labels: int, test_size: float) -> int:
    """Fewest models for which a stratified split leaves every label room in train and in test."""
    n = max(MIN_MODELS, MIN_PER_LABEL * n_labels)
    while math.ceil(n * test_size) < n_labels or n - math.ceil(n * test_size) < n_labels:
        n += 1
    return n


def _check_test_size(test_size: float) -> float:
    test_size = check_fraction(test_size, "test_size")
    if test_size >= 1:
        raise InvalidInputError(f"test_size must be in (0, 1) so some models remain for training; got {test_size}")
    return test_size
