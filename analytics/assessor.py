"""The automated assessor: learn the analysts' decision from features of a model's variance matrices
(DESIGN §1.13), and check that the matrices tell more than the accuracy statistics do.

Input is a feature table — one row per model, as :func:`analytics.runs.features_table` gives it: the
matrix features of :func:`analytics.variance.matrix_features` over the model's four matrices plus
the three accuracy statistics :data:`ACCURACY_COLUMNS` — and a label per judged model (a lead's
consensus where recorded, else the annotators' majority vote: :func:`analytics.adjudication.training_labels`;
or a zoo model's construction label).

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

Evaluation follows the paper: a stratified random split, 2/3 train and 1/3 test, repeated 10 times;
accuracy mean ± standard deviation and Cohen's κ against the label on the test models. Every assessor
sees the same splits. Explanations are Shapley values of the predicted class probability per
feature: TreeSHAP (``shap.TreeExplainer``, exact) for the tree-based kinds; for AdaBoost, which
TreeSHAP does not support, shap's ``Exact`` explainer when it reads at most
:data:`MAX_EXACT_FEATURES` features (it enumerates every coalition, so its cost doubles with each
feature), otherwise shap's ``Permutation`` explainer with a fixed sample budget of
:data:`SHAP_PERMUTATIONS` antithetic permutations per explained model, i.e.
``SHAP_PERMUTATIONS × (2 × n_features + 1)`` masked evaluations (970 for the 48 matrix features),
each averaged over up to 100 training rows as the reference distribution. Permutation values are an
estimate, but they add up exactly: per model, base value + Σ values = the explained probability.

A fit scikit-learn refuses on one split (AdaBoost's "worse than random" when its columns do not
vary, e.g. identical accuracy statistics) is skipped and counted, not raised; the report and
``assess --json`` say how many fits failed and why.

Enough judged models: at least :data:`MIN_MODELS`, at least two labels, at least two models per
label (stratification puts one in train and one in test), and enough that both the train and the
test split can hold every label. Fewer raise :class:`InvalidInputError` saying how many are needed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import ClassifierMixin
from sklearn.ensemble import AdaBoostClassifier, RandomForestClassifier
from sklearn.metrics import accuracy_score
from sklearn.model_selection import StratifiedShuffleSplit
from sklearn.tree import DecisionTreeClassifier

from ._validation import check_choice, check_fraction, check_positive_int
from .adjudication import training_labels
from .agreement import cohen_kappa
from .exceptions import InvalidInputError
from .judgments import LABELS, latest_judgments_by_suite
from .workspace import Workspace

WORST_CASE = "worst_case_accuracy"
#: The accuracy statistics of a run (:func:`analytics.runs.run_features`); never matrix features.
ACCURACY_COLUMNS = ("accuracy", "original_accuracy", WORST_CASE)
#: What an assessor may read (its ``inputs``) -> description; :func:`feature_columns` resolves it.
INPUTS: dict[str, str] = {
    "matrix": "variance-matrix features",
    "accuracy": "accuracy, original and worst-case accuracy",
    "worst_case": "worst-case accuracy",
}
MIN_MODELS = 6
MIN_PER_LABEL = 2
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
        return RandomForestClassifier(n_estimators=200, random_state=seed)


class AdaBoost(Assessor):
    """AdaBoost (100 stumps) on the variance-matrix features."""

    name, title, short, inputs, tree_shap = "adaboost", "AdaBoost · matrices", "ada", "matrix", False

    @classmethod
    def make(cls, seed: int) -> ClassifierMixin:
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
        :func:`analytics.runs.features_table`).
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


@dataclass(frozen=True, eq=False)
class FittedAssessor:
    """An assessor trained on every judged model, ready for :func:`predict` and :func:`explain`.

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
class Explanation:
    """Shapley values of each model's explained class probability.

    ``values`` (models × features) plus ``base_value`` (per model) sum to the probability the assessor
    gives ``target`` (per model). ``method`` names the explainer and, for the permutation explainer,
    its sample budget.
    """

    values: pd.DataFrame
    base_value: pd.Series
    target: pd.Series
    method: str


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
        :data:`ACCURACY_COLUMNS` (as :func:`analytics.runs.features_table` gives them). Each assessor
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


def human_labels(workspace: Workspace, suite_id: str) -> pd.Series:
    """The human label of each model judged on one suite: the consensus a lead recorded there, else
    the majority vote of the annotators' latest current judgments (:func:`analytics.adjudication.training_labels`).

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


def explain(assessor: FittedAssessor, features: pd.DataFrame, *, target: str | None = None) -> Explanation:
    """Per-model Shapley values of the features for the probability of ``target``.

    Parameters
    ----------
    assessor : FittedAssessor
    features : DataFrame of shape (n_models, n_features), float
    target : str, default=None
        The label to explain for every model; ``None`` explains each model's predicted label.

    Returns
    -------
    Explanation
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
    return Explanation(
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
            "Use analytics.runs.features_table"
        )
    if not feature_columns(features.columns, RandomForest.name):
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
