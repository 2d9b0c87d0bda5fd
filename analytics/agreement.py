"""How far annotators agree about models (DESIGN §1.10).

Every function takes the judgments that count — one row per (annotator, model), as returned by
:func:`analytics.judgments.latest_judgments` for one suite (judgments are made per suite: the same
model judged on two suites is two different decisions) — and returns a new table or number:

* Fleiss' κ across all annotators (Fleiss 1971; statsmodels),
* Cohen's κ for every pair of annotators on the models both judged (Cohen 1960; scikit-learn),
* a per-model table (counts per label, majority label, share of judgments agreeing with it),
* the confusion matrix between two annotators, and the majority vote per model.

Majority vote and ties: the label most annotators gave wins; a tie goes to the *most cautious* of the
tied labels, in the order variant > borderline > invariant. Calling a model invariant is the claim a
tester must not make lightly, so it needs a strict plurality; e.g. one 'invariant' and one 'variant'
give 'variant', one 'invariant' and one 'borderline' give 'borderline'.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import cohen_kappa_score, confusion_matrix
from statsmodels.stats.inter_rater import fleiss_kappa as _statsmodels_fleiss

from .exceptions import InvalidInputError, NotFoundError
from .judgments import LABELS

CAUTION: dict[str, int] = {label: rank for rank, label in enumerate(LABELS)}
"""Tie-break rank of each label: higher = more cautious, wins a tie."""

PER_MODEL_COLUMNS: list[str] = ["model", "n_judgments", *LABELS, "majority", "agreement"]


@dataclass(frozen=True, eq=False)
class Agreement:
    """Agreement among annotators over the models they judged.

    Attributes
    ----------
    annotators : tuple of str
        Everyone with at least one judgment, sorted.
    models : tuple of str
        Every judged model, sorted.
    fleiss_kappa : float
        Fleiss' κ over ``fleiss_models``; NaN when undefined (fewer than two annotators, no model
        judged twice, or every judgment carries the same label).
    fleiss_models : tuple of str
        Models judged by at least two annotators: the ones Fleiss' κ uses.
    excluded_models : tuple of str
        Models judged by fewer than two annotators: left out of Fleiss' κ.
    cohen_kappa : dict of (str, str) to float
        Cohen's κ for every annotator pair (names sorted within the pair) on the models both judged;
        NaN where they share no model or κ is undefined.
    per_model : DataFrame
        Columns ``model, n_judgments, invariant, borderline, variant, majority, agreement``.
    notes : tuple of str
        Plain-language remarks on what was left out or undefined, for the page.
    """

    annotators: tuple[str, ...]
    models: tuple[str, ...]
    fleiss_kappa: float
    fleiss_models: tuple[str, ...]
    excluded_models: tuple[str, ...]
    cohen_kappa: dict[tuple[str, str], float]
    per_model: pd.DataFrame = field(repr=False)
    notes: tuple[str, ...] = ()

    @property
    def majority(self) -> pd.Series:
        """The majority label per model (index = model)."""
        return self.per_model.set_index("model")["majority"]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; undefined κ values become ``None`` and pairs are keyed ``'a|b'``."""
        return {
            "annotators": list(self.annotators),
            "models": list(self.models),
            "fleiss_kappa": _json_float(self.fleiss_kappa),
            "fleiss_models": list(self.fleiss_models),
            "excluded_from_fleiss": list(self.excluded_models),
            "cohen_kappa": {f"{a}|{b}": _json_float(k) for (a, b), k in self.cohen_kappa.items()},
            "majority": self.majority.to_dict(),
            "notes": list(self.notes),
        }


def measure_agreement(judgments: pd.DataFrame) -> Agreement:
    """Fleiss' κ, pairwise Cohen's κ, per-model table and majority vote in one result.

    Parameters
    ----------
    judgments : DataFrame
        Columns ``annotator, model, label``; one row per (annotator, model) — pass
        :func:`analytics.judgments.latest_judgments` of one suite.

    Returns
    -------
    Agreement
    """
    judgments = _check_judgments(judgments)
    counts = label_counts(judgments)
    n_judged = counts.sum(axis=1)
    repeated = counts[n_judged >= 2]
    excluded = tuple(counts.index[n_judged < 2])
    annotators = tuple(sorted(judgments["annotator"].unique()))
    kappa = fleiss_kappa(repeated.to_numpy()) if len(annotators) >= 2 and len(repeated) else float("nan")
    return Agreement(
        annotators=annotators,
        models=tuple(counts.index),
        fleiss_kappa=kappa,
        fleiss_models=tuple(repeated.index),
        excluded_models=excluded,
        cohen_kappa=cohen_kappas(judgments),
        per_model=per_model_agreement(judgments),
        notes=_notes(annotators, repeated, excluded, kappa),
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
    Series of str
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


def cohen_kappas(judgments: pd.DataFrame) -> dict[tuple[str, str], float]:
    """Cohen's κ for every pair of annotators, on the models both judged.

    Returns
    -------
    dict of (str, str) to float
        Keys are sorted name pairs; NaN where the pair shares no model or κ is undefined (both gave
        one and the same label throughout).
    """
    wide = _wide(_check_judgments(judgments))
    kappas = {}
    for first, second in combinations(sorted(wide.columns), 2):
        both = wide[[first, second]].dropna()
        kappas[(first, second)] = cohen_kappa(both[first], both[second]) if len(both) else float("nan")
    return kappas


def cohen_kappa(first: ArrayLike, second: ArrayLike) -> float:
    """Cohen's κ between two equally long sequences of labels (scikit-learn).

    Parameters
    ----------
    first, second : array-like of shape (n,), str
        Labels in ``LABELS``.

    Returns
    -------
    float
        κ; NaN when undefined (chance agreement 1: both use one and the same label throughout).
    """
    with warnings.catch_warnings():
        # an undefined kappa is returned as NaN and explained where it is shown; no warning needed
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return float(cohen_kappa_score(first, second, labels=list(LABELS), replace_undefined_by=np.nan))


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
        notes.append(f"{len(excluded)} model(s) judged by fewer than two annotators are left out of Fleiss' kappa: {', '.join(excluded)}.")
    if len(repeated) and np.isnan(kappa) and len(annotators) >= 2:
        notes.append("Fleiss' kappa is undefined: every judgment has the same label.")
    return tuple(notes)


def _json_float(value: float) -> float | None:
    return None if value is None or np.isnan(value) else float(value)
