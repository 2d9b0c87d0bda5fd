"""The automated assessor family: learn the analysts' decision from features of a model's variance
matrices (docs/method.md, 'Automated assessor'), and check that the matrices tell more than the accuracy statistics do.

Which columns an assessor reads is decided in one place, :func:`feature_columns`, from its
``inputs`` (:data:`INPUTS`); the CLI (``assess``) and the Assessor page both pass the whole table,
so they train on the same columns:

* ``'matrix'``: every column except the accuracy statistics, i.e. the variance-matrix features only
  (the assessor "learns only from the matrices");
* ``'accuracy'``: accuracy, original accuracy and worst-case accuracy;
* ``'worst_case'``: worst-case accuracy alone.

The family (:class:`Assessor` subclasses, registered in :data:`ASSESSORS`):

* ``random_forest`` and ``adaboost`` (scikit-learn) on the matrix features;
* ``accuracy_forest`` and ``accuracy_adaboost``: the same learners (subclasses, so the same
  settings) on the accuracy statistics — the learned baseline: if these score as well as the matrix
  assessors, the matrices add nothing on those models;
* ``worst_case_baseline``: the paper's worst-case-accuracy baseline, a decision tree of depth 2 on
  worst-case accuracy alone, i.e. up to three thresholds learned on the training split.

Explanations are Shapley values of the predicted class probability per
feature: TreeSHAP (``shap.TreeExplainer``, exact) for the tree-based kinds; for AdaBoost, which
TreeSHAP does not support, shap's ``Exact`` explainer when it reads at most
:data:`MAX_EXACT_FEATURES` features (it enumerates every coalition, so its cost doubles with each
feature), otherwise shap's ``Permutation`` explainer with a fixed sample budget of
:data:`SHAP_PERMUTATIONS` antithetic permutations per explained model, i.e.
``SHAP_PERMUTATIONS × (2 × n_features + 1)`` masked evaluations (970 for the 48 matrix features),
each averaged over up to 100 training rows as the reference distribution. Permutation values are an
estimate, but they add up exactly: per model, base value + Σ values = the explained probability.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from analytics._validation import check_choice
from analytics.exceptions import InvalidInputError
from analytics.judging import LABELS

from .features import ACCURACY_COLUMNS, WORST_CASE
from .inputs import _judged

if TYPE_CHECKING:
    from sklearn.base import ClassifierMixin

#: What an assessor may read (its ``inputs``) -> description; :func:`feature_columns` resolves it.
INPUTS: dict[str, str] = {
    "matrix": "variance-matrix features",
    "accuracy": "accuracy, original and worst-case accuracy",
    "worst_case": "worst-case accuracy",
}
#: Most features for which AdaBoost's Shapley values are enumerated exactly (2^n coalitions).
MAX_EXACT_FEATURES = 12
#: Sample budget of the permutation explainer (AdaBoost on more than MAX_EXACT_FEATURES features):
#: antithetic permutation pairs per explained model, i.e. SHAP_PERMUTATIONS x (2 n + 1) evaluations.
SHAP_PERMUTATIONS = 10
_MAX_BACKGROUND = 100  # training rows kept as the reference distribution of the sampling explainers



class Assessor:
    """Base class of the assessor family: class metadata plus :meth:`make`.

    Class attributes
    ----------------
    name : str         registry key (:data:`ASSESSORS`)
    title : str        display name
    short : str        prefix of its keys in :meth:`AssessorReport.to_dict`
    inputs : str       key of :data:`INPUTS`: which columns it reads (:func:`feature_columns`)
    tree_shap : bool   whether TreeSHAP can explain it
    """

    name: ClassVar[str]
    title: ClassVar[str]
    short: ClassVar[str]
    inputs: ClassVar[str]
    tree_shap: ClassVar[bool]

    @classmethod
    def make(cls, seed: int) -> ClassifierMixin:
        """An unfitted scikit-learn classifier seeded with ``seed``."""
        raise NotImplementedError


class RandomForest(Assessor):
    """A random forest of 200 trees on the variance-matrix features."""

    name, title, short, inputs, tree_shap = "random_forest", "Random forest · matrices", "rf", "matrix", True

    @classmethod
    def make(cls, seed: int) -> ClassifierMixin:
        from sklearn.ensemble import RandomForestClassifier  # heavy (scikit-learn, about 0.3 s): imported only when an assessor is fitted

        return RandomForestClassifier(n_estimators=200, random_state=seed)


class AdaBoost(Assessor):
    """AdaBoost (100 stumps) on the variance-matrix features."""

    name, title, short, inputs, tree_shap = "adaboost", "AdaBoost · matrices", "ada", "matrix", False

    @classmethod
    def make(cls, seed: int) -> ClassifierMixin:
        from sklearn.ensemble import AdaBoostClassifier  # heavy (scikit-learn, about 0.3 s): imported only when an assessor is fitted

        return AdaBoostClassifier(n_estimators=100, random_state=seed)


class AccuracyForest(RandomForest):
    """The same random forest on accuracy, original and worst-case accuracy (the learned baseline)."""

    name, title, short, inputs = "accuracy_forest", "Random forest · accuracy statistics", "acc_rf", "accuracy"


class AccuracyAdaBoost(AdaBoost):
    """The same AdaBoost on accuracy, original and worst-case accuracy (the learned baseline)."""

    name, title, short, inputs = "accuracy_adaboost", "AdaBoost · accuracy statistics", "acc_ada", "accuracy"


class WorstCaseBaseline(Assessor):
    """The paper's baseline: a depth-2 decision tree (up to three thresholds) on worst-case accuracy."""

    name, title, short, inputs, tree_shap = "worst_case_baseline", "Worst-case accuracy threshold", "baseline", "worst_case", True

    @classmethod
    def make(cls, seed: int) -> ClassifierMixin:
        from sklearn.tree import DecisionTreeClassifier  # heavy (scikit-learn, about 0.3 s): imported only when an assessor is fitted

        return DecisionTreeClassifier(max_depth=2, random_state=seed)


#: The registered assessors, in display order: matrix learners, accuracy learners, threshold baseline.
ASSESSORS: dict[str, type[Assessor]] = {
    kind.name: kind for kind in (RandomForest, AdaBoost, AccuracyForest, AccuracyAdaBoost, WorstCaseBaseline)
}


def feature_columns(columns: Iterable[str], kind: str) -> list[str]:
    """The columns of a feature table that one assessor reads (the one place that decides it).

    Parameters
    ----------
    columns : iterable of str
        Column names of a feature table (e.g. ``features.columns`` of
        :func:`features_table`).
    kind : str
        Key of :data:`ASSESSORS`.

    Returns
    -------
    list of str
        In table order: for ``inputs='matrix'`` every column not in :data:`ACCURACY_COLUMNS`; for
        ``'accuracy'`` the accuracy statistics present; for ``'worst_case'`` ``worst_case_accuracy``.
    """
    inputs = ASSESSORS[check_choice(kind, "kind", ASSESSORS)].inputs
    columns = [str(name) for name in columns]
    if inputs == "matrix":
        return [name for name in columns if name not in ACCURACY_COLUMNS]
    chosen = ACCURACY_COLUMNS if inputs == "accuracy" else (WORST_CASE,)
    return [name for name in columns if name in chosen]



@dataclass(frozen=True, eq=False)
class FittedAssessor:
    """An assessor trained on every judged model, ready for :func:`predict` and :func:`shapley_values`.

    ``background`` (ndarray of shape (n_rows, n_features), float64) holds up to 100 training rows,
    the reference distribution for Shapley values of kinds TreeSHAP cannot explain; ``seed`` (the
    training seed) also seeds the permutation explainer.
    """

    kind: str
    estimator: ClassifierMixin = field(repr=False)
    feature_names: tuple[str, ...]
    classes: tuple[str, ...]
    background: np.ndarray = field(repr=False)
    seed: int = 0


@dataclass(frozen=True, eq=False)
class ShapleyValues:
    """Shapley values of each model's explained class probability.

    ``values`` (models × features) plus ``base_value`` (per model) sum to the probability the assessor
    gives ``target`` (per model). ``method`` names the explainer and, for the permutation explainer,
    its sample budget.
    """

    values: pd.DataFrame
    base_value: pd.Series
    target: pd.Series
    method: str



def fit_assessor(features: pd.DataFrame, labels: pd.Series, *, kind: str = "random_forest", seed: int = 0) -> FittedAssessor:
    """Train one assessor on every judged model (same data rules as :func:`evaluate_assessors`).

    Parameters
    ----------
    features : DataFrame of shape (n_models, n_features), float
    labels : Series of str
    kind : str, default='random_forest'
        Key of :data:`ASSESSORS`.
    seed : int, default=0

    Returns
    -------
    FittedAssessor

    Raises
    ------
    InvalidInputError
        Bad data (as :func:`evaluate_assessors`), or scikit-learn refuses to fit ``kind`` on it.
    """
    check_choice(kind, "kind", ASSESSORS)
    x, y = _judged(features, labels, 1 / 3)
    columns = feature_columns(x.columns, kind)
    try:
        estimator = ASSESSORS[kind].make(seed).fit(x[columns].to_numpy(), y)
    except ValueError as err:  # e.g. AdaBoost "worse than random" on columns that do not vary
        raise InvalidInputError(
            f"{ASSESSORS[kind].title} cannot be fitted on these {len(x)} labelled models (scikit-learn: {err}); the "
            f"columns it reads ({', '.join(columns)}) give nothing to split on: pick another assessor or label more varied models"
        ) from err
    background = x[columns].to_numpy(dtype=float)
    if len(background) > _MAX_BACKGROUND:
        background = background[np.random.default_rng(seed).choice(len(background), _MAX_BACKGROUND, replace=False)]
    return FittedAssessor(kind, estimator, tuple(columns), tuple(str(label) for label in estimator.classes_), background, seed)


def predict(assessor: FittedAssessor, features: pd.DataFrame) -> pd.DataFrame:
    """Predict the label of (typically unjudged) models.

    Parameters
    ----------
    assessor : FittedAssessor
    features : DataFrame of shape (n_models, n_features), float
        Must hold the columns the assessor was trained on.

    Returns
    -------
    DataFrame
        Index = model; column ``label`` and one probability column ``p_<label>`` per label of
        ``LABELS`` (0 for labels absent from training).
    """
    x = _columns_for(assessor, features)
    probabilities = assessor.estimator.predict_proba(x)
    table = pd.DataFrame(0.0, index=features.index, columns=[f"p_{label}" for label in LABELS])
    for column, label in enumerate(assessor.classes):
        table[f"p_{label}"] = probabilities[:, column]
    table.insert(0, "label", np.asarray(assessor.classes, dtype=object)[probabilities.argmax(axis=1)])
    return table


def shapley_values(assessor: FittedAssessor, features: pd.DataFrame, *, target: str | None = None) -> ShapleyValues:
    """Per-model Shapley values of the features for the probability of ``target``.

    Parameters
    ----------
    assessor : FittedAssessor
    features : DataFrame of shape (n_models, n_features), float
    target : str, default=None
        The label to explain for every model; ``None`` explains each model's predicted label.

    Returns
    -------
    ShapleyValues
    """
    x = _columns_for(assessor, features)
    if target is not None:
        check_choice(target, "target", assessor.classes)
    result, method = _shapley(assessor, x)
    probabilities = assessor.estimator.predict_proba(x)
    columns = (
        np.full(len(x), assessor.classes.index(target)) if target is not None else probabilities.argmax(axis=1)
    )
    rows = np.arange(len(x))
    return ShapleyValues(
        values=pd.DataFrame(result.values[rows, :, columns], index=features.index, columns=list(assessor.feature_names)),
        base_value=pd.Series(result.base_values[rows, columns], index=features.index, name="base_value"),
        target=pd.Series(np.asarray(assessor.classes, dtype=object)[columns], index=features.index, name="target"),
        method=method,
    )


def _shapley(assessor: FittedAssessor, x: np.ndarray) -> tuple[Any, str]:
    """shap's Explanation (values of shape (n, n_features, n_classes), base_values (n, n_classes))
    and the name of the explainer used."""
    import shap  # heavy import, needed only here

    if ASSESSORS[assessor.kind].tree_shap:
        return shap.TreeExplainer(assessor.estimator)(x), "TreeSHAP (exact)"
    masker = shap.maskers.Independent(assessor.background, max_samples=_MAX_BACKGROUND)
    n_features = len(assessor.feature_names)
    if n_features <= MAX_EXACT_FEATURES:
        return shap.explainers.Exact(assessor.estimator.predict_proba, masker)(x), "exact enumeration of coalitions"
    evaluations = SHAP_PERMUTATIONS * (2 * n_features + 1)
    state = np.random.get_state()  # shap's Permutation explainer seeds and draws from numpy's global generator
    try:
        explainer = shap.explainers.Permutation(assessor.estimator.predict_proba, masker, seed=assessor.seed)
        result = explainer(x, max_evals=evaluations, silent=True)
    finally:
        np.random.set_state(state)
    return result, f"permutation sampling ({SHAP_PERMUTATIONS} antithetic permutations, {evaluations} evaluations per model)"


def _columns_for(assessor: FittedAssessor, features: pd.DataFrame) -> np.ndarray:
    """The assessor's columns of ``features`` as float64 (n_models, n_features), checked."""
    if not isinstance(features, pd.DataFrame):
        raise InvalidInputError(f"features must be a DataFrame (rows = models, columns = features); got {type(features).__name__}")
    missing = [name for name in assessor.feature_names if name not in features.columns]
    if missing:
        raise InvalidInputError(f"features lack the columns {missing} the assessor was trained on; compute them first")
    values = features[list(assessor.feature_names)].to_numpy(dtype=float)
    if not np.isfinite(values).all():
        raise InvalidInputError("features hold NaN or infinite values; recompute or drop those models")
    return values
