"""How far annotators agree about models (docs/method.md, 'Judgments and agreement').

Every function takes the judgments that count — one row per (annotator, model), as returned by
:func:`analytics.judging.judgments.latest_judgments` for one suite (judgments are made per suite: the same
model judged on two suites is two different decisions) — and returns a new table or number:

* Fleiss' κ across all annotators (Fleiss 1971; statsmodels),
* Cohen's κ for every pair of annotators on the models both judged (Cohen 1960),
* Krippendorff's α across all annotators (Krippendorff 2011; the ``krippendorff`` package), at the
  *ordinal* level by default — the labels are ordered invariant < borderline < variant, so calling a
  variant model borderline is a smaller disagreement than calling it invariant — and at the nominal
  level (labels unordered, comparable with κ),
* each annotator's agreement with the majority vote (see below),
* a per-model table (counts per label, majority label, share of judgments agreeing with it),
* the confusion matrix between two annotators, and the majority vote per model.

Majority vote and ties: the label most annotators gave wins; a tie goes to the *most cautious* of the
tied labels, in the order variant > borderline > invariant. Calling a model invariant is the claim a
tester must not make lightly, so it needs a strict plurality; e.g. one 'invariant' and one 'variant'
give 'variant', one 'invariant' and one 'borderline' give 'borderline'.

Agreement with the majority, per annotator, over the models the annotator judged that at least one
other annotator judged too (models judged by one annotator alone say nothing about agreement):

* ``with_others``: share of those models where the annotator's label equals the majority vote of the
  *other* annotators (the annotator left out, so no one agrees with themselves);
* ``with_all``: share where it equals the majority vote of *all* annotators, the annotator included
  (the label the assessor learns from; higher than ``with_others`` by construction with few annotators).

Sample size and uncertainty: every κ, α and agreement share is an :class:`Estimate` carrying the
number of models it was computed on and a bootstrap percentile interval (Efron & Tibshirani 1993;
``scipy.stats.bootstrap``): the models are resampled with replacement :data:`AGREEMENT_BOOTSTRAP_RESAMPLES`
times from a generator seeded with :data:`BOOTSTRAP_SEED`, the statistic is recomputed on each
resample, resamples where it is undefined (e.g. every label the same) are dropped, and the 2.5th and
97.5th percentiles bound the 95 % interval. The interval is NaN (``null`` in JSON) when the statistic
is undefined, when fewer than two models count, or when fewer than half of the resamples give a
defined value.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from itertools import combinations
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import DegenerateDataWarning, bootstrap, quantile
from statsmodels.stats.inter_rater import fleiss_kappa as _statsmodels_fleiss

from analytics.exceptions import InvalidInputError, NotFoundError

from .judgments import LABELS

CODES: dict[str, int] = {label: code for code, label in enumerate(LABELS)}
"""Integer code of each label, in the labels' order (invariant 0 < borderline 1 < variant 2)."""
CAUTION: dict[str, int] = CODES
"""Tie-break rank of each label: higher = more cautious, wins a tie (the labels' own order)."""

PER_MODEL_COLUMNS: list[str] = ["model", "n_judgments", *LABELS, "majority", "agreement"]

#: Fewest shared models for a κ, α or agreement share to be read as more than an indication. With
#: n models one changed judgment moves the observed agreement by 1/n, i.e. κ by about 1.5/n when the
#: three labels are used alike (chance agreement 1/3): below 10 models that is more than 0.15, most of a
#: Landis & Koch band (0.2 wide), and a bootstrap over so few distinct models is itself unreliable.
MIN_SHARED_MODELS = 10
#: Bootstrap resamples per interval: 1000 keeps the Monte-Carlo error of a 2.5 % percentile at about
#: ±0.5 percentage points of coverage while costing well under a second for a typical suite.
AGREEMENT_BOOTSTRAP_RESAMPLES = 1000
#: Seed of the bootstrap generator: the same judgments always give the same intervals.
BOOTSTRAP_SEED = 0
#: Coverage of the bootstrap intervals.
AGREEMENT_CONFIDENCE = 0.95
#: Krippendorff's levels of measurement offered: ordinal (the labels' order counts; the default) and nominal.
ALPHA_LEVELS: tuple[str, ...] = ("ordinal", "nominal")


@dataclass(frozen=True)
class Estimate:
    """A statistic with its sample size and bootstrap interval.

    Attributes
    ----------
    value : float
        The statistic; NaN when undefined.
    n_models : int
        How many models it was computed on (shared models for a pair, models judged by at least two
        annotators for Fleiss' κ and α).
    low, high : float
        Bounds of the bootstrap :data:`AGREEMENT_CONFIDENCE` interval; NaN when it cannot be computed (module notes).
    """

    value: float
    n_models: int
    low: float = float("nan")
    high: float = float("nan")

    @property
    def below_minimum(self) -> bool:
        """Whether fewer than :data:`MIN_SHARED_MODELS` models back the value."""
        return self.n_models < MIN_SHARED_MODELS

    def to_dict(self) -> dict[str, Any]:
        """``value, n_models, ci_low, ci_high, below_minimum``; NaN becomes ``None``."""
        return {
            "value": _json_float(self.value),
            "n_models": int(self.n_models),
            "ci_low": _json_float(self.low),
            "ci_high": _json_float(self.high),
            "below_minimum": self.below_minimum,
        }


@dataclass(frozen=True, eq=False)
class Agreement:
    """Agreement among annotators over the models they judged.

    Attributes
    ----------
    annotators : tuple of str
        Everyone with at least one judgment, sorted.
    models : tuple of str
        Every judged model, sorted.
    fleiss : Estimate
        Fleiss' κ over ``fleiss_models``; NaN when undefined (fewer than two annotators, no model
        judged twice, or every judgment carries the same label).
    fleiss_models : tuple of str
        Models judged by at least two annotators: the ones Fleiss' κ and Krippendorff's α use.
    excluded_models : tuple of str
        Models judged by fewer than two annotators: left out of Fleiss' κ and α.
    cohen : dict of (str, str) to Estimate
        Cohen's κ for every annotator pair (names sorted within the pair) on the models both judged;
        NaN where they share no model or κ is undefined.
    alpha : dict of str to Estimate
        Krippendorff's α per level of measurement in :data:`ALPHA_LEVELS`.
    with_majority : dict of str to dict of str to Estimate
        Annotator -> ``{"with_others": …, "with_all": …}``: share agreeing with the majority (module notes).
    per_model : DataFrame
        Columns ``model, n_judgments, invariant, borderline, variant, majority, agreement``.
    notes : tuple of str
        Plain-language remarks on what was left out or undefined, for the page.
    warnings : tuple of str
        Plain-language warnings: too few shared models for the statistics to be more than indications.
    resamples, seed : int
        The bootstrap's resamples (0: no intervals) and seed.
    """

    annotators: tuple[str, ...]
    models: tuple[str, ...]
    fleiss: Estimate
    fleiss_models: tuple[str, ...]
    excluded_models: tuple[str, ...]
    cohen: dict[tuple[str, str], Estimate]
    alpha: dict[str, Estimate]
    with_majority: dict[str, dict[str, Estimate]]
    per_model: pd.DataFrame = field(repr=False)
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    resamples: int = AGREEMENT_BOOTSTRAP_RESAMPLES
    seed: int = BOOTSTRAP_SEED

    @property
    def fleiss_kappa(self) -> float:
        """Fleiss' κ (NaN when undefined)."""
        return self.fleiss.value

    @property
    def cohen_kappa(self) -> dict[tuple[str, str], float]:
        """Cohen's κ per sorted annotator pair (NaN when undefined)."""
        return {pair: estimate.value for pair, estimate in self.cohen.items()}

    @property
    def majority(self) -> pd.Series:
        """The majority label per model (index = model)."""
        return self.per_model.set_index("model")["majority"]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: each statistic as :meth:`Estimate.to_dict`, pairs keyed ``'a|b'``, no NaN."""
        return {
            "annotators": list(self.annotators),
            "models": list(self.models),
            "fleiss_kappa": self.fleiss.to_dict(),
            "fleiss_models": list(self.fleiss_models),
            "excluded_from_fleiss": list(self.excluded_models),
            "cohen_kappa": {f"{a}|{b}": estimate.to_dict() for (a, b), estimate in self.cohen.items()},
            "krippendorff_alpha": {level: estimate.to_dict() for level, estimate in self.alpha.items()},
            "majority_agreement": {
                name: {kind: estimate.to_dict() for kind, estimate in shares.items()} for name, shares in self.with_majority.items()
            },
            "majority": self.majority.to_dict(),
            "min_shared_models": MIN_SHARED_MODELS,
            "bootstrap": {"resamples": self.resamples, "seed": self.seed, "confidence": AGREEMENT_CONFIDENCE},
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }


def measure_agreement(judgments: pd.DataFrame, *, resamples: int = AGREEMENT_BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Agreement:
    """Fleiss' κ, pairwise Cohen's κ, Krippendorff's α, agreement with the majority, per-model table
    and majority vote in one result, each statistic with its sample size and bootstrap interval.

    Parameters
    ----------
    judgments : DataFrame
        Columns ``annotator, model, label``; one row per (annotator, model) — pass
        :func:`analytics.judging.judgments.latest_judgments` of one suite.
    resamples : int, default=AGREEMENT_BOOTSTRAP_RESAMPLES
        Bootstrap resamples per interval; 0 skips the intervals (NaN), e.g. where only κ is wanted.
    seed : int, default=BOOTSTRAP_SEED
        Seed of the bootstrap generator.

    Returns
    -------
    Agreement
    """
    judgments = _check_judgments(judgments)
    if isinstance(resamples, bool) or not isinstance(resamples, int | np.integer) or resamples < 0:
        raise InvalidInputError(f"resamples must be an integer >= 0 (0: no intervals); got {resamples!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InvalidInputError(f"seed must be an integer >= 0; got {seed!r}")
    counts = label_counts(judgments)
    n_judged = counts.sum(axis=1)
    repeated = counts[n_judged >= 2]
    excluded = tuple(counts.index[n_judged < 2])
    annotators = tuple(sorted(judgments["annotator"].unique()))
    table = repeated.to_numpy()  # one annotator judges no model twice, so this is empty then
    fleiss = _estimate(_each(fleiss_kappa), table, resamples, seed)
    return Agreement(
        annotators=annotators,
        models=tuple(counts.index),
        fleiss=fleiss,
        fleiss_models=tuple(repeated.index),
        excluded_models=excluded,
        cohen=_cohen_estimates(judgments, resamples, seed),
        alpha={level: _estimate(_each(partial(krippendorff_alpha, level=level)), table, resamples, seed) for level in ALPHA_LEVELS},
        with_majority=_majority_estimates(judgments, resamples, seed),
        per_model=per_model_agreement(judgments),
        notes=_notes(annotators, repeated, excluded, fleiss.value),
        warnings=_warnings(annotators, repeated),
        resamples=int(resamples),
        seed=int(seed),
    )


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' κ from a subjects × categories table of counts.

    κ = (P̄ − P̄ₑ) / (1 − P̄ₑ) with Pᵢ = Σⱼ nᵢⱼ(nᵢⱼ − 1) / (nᵢ(nᵢ − 1)), P̄ the mean of Pᵢ,
    pⱼ = Σᵢ nᵢⱼ / Σᵢ nᵢ and P̄ₑ = Σⱼ pⱼ² (Fleiss 1971). When every subject has the same number of
    ratings this is statsmodels' ``fleiss_kappa``, which is used. statsmodels refuses subjects with
    different numbers of ratings (models some annotators skipped), so for those the same formula is
    evaluated with each subject's own nᵢ (Fleiss, Levin & Paik 2003, §18.1).

    Parameters
    ----------
    counts : ndarray of shape (n_subjects, n_categories), int
        How many raters put subject i in category j; every subject needs at least two ratings.

    Returns
    -------
    float
        κ in [-1, 1]; NaN when chance agreement is 1 (all ratings in one category).

    Examples
    --------
    >>> round(fleiss_kappa(np.array([[2, 0], [0, 2], [1, 1]])), 3)
    0.333
    """
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[0] == 0 or (counts < 0).any():
        raise InvalidInputError(f"counts must be a non-empty (n_subjects, n_categories) table of counts >= 0; got shape {counts.shape}")
    raters = counts.sum(axis=1)
    if (raters < 2).any():
        raise InvalidInputError(f"every subject needs at least 2 ratings for Fleiss' kappa; got {int(raters.min())}")
    shares = counts.sum(axis=0) / raters.sum()
    if np.isclose((shares**2).sum(), 1.0):
        return float("nan")
    if np.all(raters == raters[0]):
        return float(_statsmodels_fleiss(counts, method="fleiss"))
    observed = ((counts * (counts - 1)).sum(axis=1) / (raters * (raters - 1))).mean()
    expected = (shares**2).sum()
    return float((observed - expected) / (1 - expected))


def krippendorff_alpha(counts: ArrayLike, *, level: str = "ordinal") -> float:
    """Krippendorff's α from a units × categories table of counts (the ``krippendorff`` package).

    α = 1 − D_o / D_e, observed over expected disagreement among all pairable values (Krippendorff
    2011). Units with fewer than two ratings carry no pairable value and are ignored, so models some
    annotators skipped are used as they are.

    Parameters
    ----------
    counts : array-like of shape (n_units, n_categories), int
        How many raters put unit i in category j; columns in the categories' order (``LABELS``:
        invariant < borderline < variant), which the ordinal level uses.
    level : {'ordinal', 'nominal'}, default='ordinal'
        Level of measurement: ``ordinal`` counts a disagreement by how many ratings lie between the
        two categories; ``nominal`` counts every disagreement alike.

    Returns
    -------
    float
        α ≤ 1 (1: perfect, 0: chance); NaN when no unit has two ratings or every rating is in one category.

    Examples
    --------
    >>> round(krippendorff_alpha(np.array([[2, 0, 0], [0, 0, 2], [1, 1, 0]]), level="nominal"), 3)
    0.545
    """
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[1] < 2 or (counts < 0).any():
        raise InvalidInputError(f"counts must be an (n_units, n_categories >= 2) table of counts >= 0; got shape {counts.shape}")
    if level not in ALPHA_LEVELS:
        raise InvalidInputError(f"level must be one of {', '.join(ALPHA_LEVELS)}; got {level!r}")
    pairable = counts[counts.sum(axis=1) >= 2]
    if not len(pairable):
        return float("nan")
    with warnings.catch_warnings():
        # one category throughout: expected disagreement 0, α is 0/0; NaN is returned and explained where shown
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(krippendorff.alpha(value_counts=pairable, value_domain=list(range(counts.shape[1])), level_of_measurement=level))


def label_counts(judgments: pd.DataFrame) -> pd.DataFrame:
    """How many annotators gave each label to each model.

    Returns
    -------
    DataFrame of shape (n_models, 3), int
        Index = model (sorted), columns = ``LABELS`` in order.
    """
    judgments = _check_judgments(judgments)
    counts = pd.crosstab(judgments["model"], judgments["label"])
    return counts.reindex(columns=list(LABELS), fill_value=0).rename_axis(index="model", columns=None)


def majority_vote(judgments: pd.DataFrame) -> pd.Series:
    """The majority label per model (ties → most cautious tied label; see module notes).

    Returns
    -------
    Series of shape (n_models,), object (str)
        Index = model (sorted), values in ``LABELS``.
    """
    counts = label_counts(judgments)
    return pd.Series([_majority(row) for row in counts.to_numpy()], index=counts.index, name="majority", dtype=object)


def per_model_agreement(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per model: ``model, n_judgments, invariant, borderline, variant, majority, agreement``.

    ``agreement`` is the share of the model's judgments that equal its majority label (1.0 when
    unanimous, also for a single judgment; ``n_judgments`` tells those apart).
    """
    counts = label_counts(judgments)
    table = counts.reset_index()
    table.insert(1, "n_judgments", counts.sum(axis=1).to_numpy())
    table["majority"] = [_majority(row) for row in counts.to_numpy()]
    table["agreement"] = counts.max(axis=1).to_numpy() / table["n_judgments"].to_numpy()
    return table[PER_MODEL_COLUMNS]


def cohen_kappa(first: ArrayLike, second: ArrayLike) -> float:
    """Cohen's κ between two equally long sequences of labels.

    κ = (p_o − p_e) / (1 − p_e) with p_o the share of equal labels and p_e = Σ_j p_j¹ p_j² the
    agreement expected from each sequence's label shares (Cohen 1960; equal to scikit-learn's
    ``cohen_kappa_score``, computed directly because the bootstrap evaluates it thousands of times).

    Parameters
    ----------
    first, second : array-like of shape (n,), str
        Labels in ``LABELS``.

    Returns
    -------
    float
        κ; NaN when undefined (no labels, or chance agreement 1: both use one and the same label throughout).
    """
    first, second = _codes(first), _codes(second)
    if first.shape != second.shape:
        raise InvalidInputError(f"first and second must be equally long; got {first.size} and {second.size} labels")
    if not first.size:
        return float("nan")
    return float(_cohen_batch(np.stack([first, second], axis=1)[np.newaxis])[0])


def confusion(judgments: pd.DataFrame, first: str, second: str) -> pd.DataFrame:
    """Confusion matrix between two annotators on the models both judged.

    Returns
    -------
    DataFrame of shape (3, 3), int
        Rows = ``first``'s label, columns = ``second``'s label, both in ``LABELS`` order.

    Raises
    ------
    NotFoundError
        ``first`` or ``second`` has no judgment.
    """
    wide = _wide(_check_judgments(judgments))
    for name in (first, second):
        if name not in wide.columns:
            raise NotFoundError(f"annotator {name!r} has no judgments; annotators: {', '.join(sorted(wide.columns)) or 'none'}")
    both = wide[[first, second]].dropna()
    from sklearn.metrics import confusion_matrix  # heavy (scikit-learn, about 0.3 s): imported only when a confusion matrix is asked for

    matrix = confusion_matrix(both.iloc[:, 0], both.iloc[:, 1], labels=list(LABELS)) if len(both) else np.zeros((3, 3), int)
    return pd.DataFrame(
        matrix,
        index=pd.Index(LABELS, name=first),
        columns=pd.Index(LABELS, name=second),
    )


def _majority(row: np.ndarray) -> str:
    tied = [label for label, count in zip(LABELS, row) if count == row.max()]
    return max(tied, key=CAUTION.__getitem__)


def _wide(judgments: pd.DataFrame) -> pd.DataFrame:
    """Models × annotators table of labels (NaN where an annotator skipped a model)."""
    return judgments.pivot(index="model", columns="annotator", values="label")


def _check_judgments(judgments: pd.DataFrame) -> pd.DataFrame:
    missing = {"annotator", "model", "label"} - set(getattr(judgments, "columns", ()))
    if missing:
        raise InvalidInputError(f"judgments must have columns annotator, model, label; missing {', '.join(sorted(missing))}")
    bad = sorted(set(judgments["label"]) - set(LABELS))
    if bad:
        raise InvalidInputError(f"judgments hold unknown labels {bad}; labels are {', '.join(LABELS)}")
    if judgments.duplicated(["annotator", "model"]).any():
        raise InvalidInputError(
            "judgments hold several rows for one (annotator, model); pass latest_judgments(workspace, suite_id), "
            "which keeps only the one that counts on that suite"
        )
    return judgments


def _notes(annotators: tuple[str, ...], repeated: pd.DataFrame, excluded: tuple[str, ...], kappa: float) -> tuple[str, ...]:
    notes = []
    if len(annotators) < 2:
        notes.append("Agreement needs at least two annotators.")
    if excluded:
        notes.append(
            f"{len(excluded)} model(s) judged by fewer than two annotators are left out of Fleiss' kappa and alpha: {', '.join(excluded)}."
        )
    if len(repeated) and np.isnan(kappa) and len(annotators) >= 2:
        notes.append("Fleiss' kappa and Krippendorff's alpha are undefined: every judgment has the same label.")
    return tuple(notes)


def _warnings(annotators: tuple[str, ...], repeated: pd.DataFrame) -> tuple[str, ...]:
    if len(annotators) < 2 or len(repeated) >= MIN_SHARED_MODELS:
        return ()
    return (
        f"Only {len(repeated)} model(s) were judged by at least two annotators, fewer than {MIN_SHARED_MODELS}: "
        "one changed judgment moves kappa and alpha by more than 0.15, so read them as indications, not measurements; "
        "judge more models on this suite.",
    )


def _estimate(statistic: Callable[[np.ndarray], np.ndarray], rows: np.ndarray, resamples: int, seed: int) -> Estimate:
    """The statistic of ``rows`` with its bootstrap percentile interval (module notes; ``scipy.stats.bootstrap``).

    scipy resamples the row indices ``0 … n−1`` (one draw of shape (resamples, n) from
    ``default_rng(seed)``), so any statistic of a table of rows can be bootstrapped over models.
    scipy's interval is NaN when some resample leaves the statistic undefined; those resamples are
    dropped and the interval is the percentiles of the rest (NaN when fewer than half remain).

    Parameters
    ----------
    statistic : callable
        Maps a batch of shape (n_batches, n, ...) to one value per batch, shape (n_batches,), float
        (NaN where undefined).
    rows : ndarray of shape (n, ...)
        One entry per model (a row of counts, a pair of label codes, a flag): resampling rows
        resamples models.
    resamples, seed : int
    """
    n = len(rows)
    value = float(statistic(rows[np.newaxis])[0]) if n else float("nan")
    if resamples == 0 or n < 2 or np.isnan(value):
        return Estimate(value, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)  # undefined resamples: handled below
        result = bootstrap(
            (np.arange(n),),
            lambda picks, axis: statistic(rows[picks]),
            n_resamples=resamples,
            vectorized=True,
            confidence_level=AGREEMENT_CONFIDENCE,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    draws = result.bootstrap_distribution
    defined = ~np.isnan(draws)
    if defined.sum() < resamples / 2:
        return Estimate(value, n)
    low, high = result.confidence_interval
    if not defined.all():
        low, high = quantile(draws[defined], [(1 - AGREEMENT_CONFIDENCE) / 2, (1 + AGREEMENT_CONFIDENCE) / 2])
    return Estimate(value, n, float(low), float(high))


def _each(statistic: Callable[[np.ndarray], float]) -> Callable[[np.ndarray], np.ndarray]:
    """A statistic of one table applied to every table of a batch (for :func:`_estimate`)."""
    return lambda batch: np.array([statistic(table) for table in batch], dtype=float)


def _cohen_estimates(judgments: pd.DataFrame, resamples: int, seed: int) -> dict[tuple[str, str], Estimate]:
    """Cohen's κ of every sorted annotator pair on the models both judged."""
    codes = _wide(judgments).apply(lambda labels: labels.map(CODES))
    return {
        (first, second): _estimate(_cohen_batch, codes[[first, second]].dropna().to_numpy(dtype=int), resamples, seed)
        for first, second in combinations(sorted(codes.columns), 2)
    }


def _cohen_batch(pairs: np.ndarray) -> np.ndarray:
    """Cohen's κ of each batch of label-code pairs, vectorised over the bootstrap's resamples.

    Parameters
    ----------
    pairs : ndarray of shape (n_batches, n, 2), int
        Codes of the first and second annotator's labels; n >= 1.

    Returns
    -------
    ndarray of shape (n_batches,), float
        κ = (p_o − p_e) / (1 − p_e); NaN where chance agreement p_e is 1.
    """
    k = len(LABELS)
    batches, n = pairs.shape[:2]
    cells = (np.arange(batches)[:, np.newaxis] * k * k + pairs[..., 0] * k + pairs[..., 1]).ravel()
    tables = np.bincount(cells, minlength=batches * k * k).reshape(batches, k, k) / n
    observed = np.trace(tables, axis1=1, axis2=2)
    chance = (tables.sum(axis=2) * tables.sum(axis=1)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(chance > 1 - 1e-12, np.nan, (observed - chance) / (1 - chance))


def _majority_estimates(judgments: pd.DataFrame, resamples: int, seed: int) -> dict[str, dict[str, Estimate]]:
    """Per annotator, the share of their shared models agreeing with the others' / everyone's majority."""
    counts = label_counts(judgments)
    wide = _wide(judgments)
    result = {}
    for name in sorted(wide.columns):
        own = wide[name].dropna()
        own = own[counts.loc[own.index].sum(axis=1).to_numpy() >= 2]  # models someone else judged too
        everyone = counts.loc[own.index].to_numpy()
        others = everyone - np.eye(len(LABELS), dtype=int)[own.map(CODES).to_numpy(dtype=int)]
        flags = {
            "with_others": np.array([_majority(row) for row in others], dtype=object) == own.to_numpy(),
            "with_all": np.array([_majority(row) for row in everyone], dtype=object) == own.to_numpy(),
        }
        result[name] = {kind: _estimate(_share, agrees.astype(float), resamples, seed) for kind, agrees in flags.items()}
    return result


def _share(flags: np.ndarray) -> np.ndarray:
    """Share of true flags per batch: (n_batches, n) float -> (n_batches,)."""
    return flags.mean(axis=1)


def _codes(labels: ArrayLike) -> np.ndarray:
    """Labels -> int codes in ``LABELS`` order; unknown labels are refused."""
    labels = np.asarray(labels, dtype=object).ravel()
    bad = sorted({str(label) for label in labels} - set(LABELS))
    if bad:
        raise InvalidInputError(f"unknown labels {bad}; labels are {', '.join(LABELS)}")
    return np.array([CODES[label] for label in labels], dtype=int)


def _json_float(value: float) -> float | None:
    return None if value is None or np.isnan(value) else float(value)
