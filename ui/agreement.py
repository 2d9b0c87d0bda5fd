"""Agreement of annotators with each other (Agreement page) and of the automated assessor with them
(Assessor page): cached computations and tables; their figures are :mod:`analytics.figures`'.

Builders take :mod:`analytics` results and return a DataFrame; they compute nothing beyond what
showing needs and never draw, so pages pass them to Streamlit and tests inspect them directly. The assessor's features, evaluation and fitted model are
``st.cache_data`` keyed on the runs (id and finishing time), the labels and the settings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd
import streamlit as st

from analytics.assessor import (
    ASSESSORS,
    DEFAULT_FEATURE_SET,
    AssessorReport,
    FittedAssessor,
    describe_feature,
    evaluate_assessors,
    features_table,
    fit_assessor,
)
from analytics.judging import (
    AGREEMENT_BOOTSTRAP_RESAMPLES,
    AGREEMENT_CONFIDENCE,
    LABELS,
    MIN_SHARED_MODELS,
    Agreement,
    Estimate,
    judged_suite_counts,
    measure_agreement,
)
from analytics.variance import MatrixSettings
from analytics.workspace import Workspace
from ui import state

#: One colour per label on every page: invariant green, borderline amber, variant red.
LABEL_COLOURS: dict[str, str] = {"invariant": "#1a9850", "borderline": "#f0a30a", "variant": "#d73027"}
#: Landis & Koch (1977) bands: upper bound of κ -> words.
KAPPA_BANDS: tuple[tuple[float, str], ...] = (
    (0.0, "worse than chance"),
    (0.20, "slight"),
    (0.40, "fair"),
    (0.60, "moderate"),
    (0.80, "substantial"),
    (1.0, "almost perfect"),
)
KAPPA_EXPLAINED = (
    "κ = (observed agreement − agreement expected by chance) / (1 − agreement expected by chance): "
    "1 is perfect agreement, 0 is what chance alone gives, below 0 is worse than chance."
)
ALPHA_EXPLAINED = (
    "Krippendorff's α = 1 − observed disagreement / disagreement expected by chance, on the same scale as κ. "
    "Ordinal: the labels are ordered invariant < borderline < variant, so invariant vs variant is a larger "
    "disagreement than invariant vs borderline; nominal treats every disagreement alike. "
    "Krippendorff suggests α ≥ 0.80 for conclusions, ≥ 0.67 for tentative ones."
)
INTERVAL_EXPLAINED = (
    f"Intervals: {AGREEMENT_CONFIDENCE:.0%} bootstrap (the models resampled with replacement {AGREEMENT_BOOTSTRAP_RESAMPLES} times, seeded, "
    f"percentiles). Below {MIN_SHARED_MODELS} shared models a statistic is an indication, not a measurement."
)


def judged_suites(workspace: Workspace) -> pd.DataFrame:
    """:func:`analytics.judging.judged_suite_counts` with the picker's ``label``: columns ``id, label, models, annotators``."""
    table = judged_suite_counts(workspace)
    labels = [f"{suite} · {models} models, {annotators} annotators" for suite, models, annotators in zip(table["suite"], table["models"], table["annotators"])]
    return table.drop(columns="suite").assign(label=labels)[["id", "label", "models", "annotators"]]


def kappa_words(kappa: float) -> str:
    """Landis & Koch's name for a κ value ('undefined' for NaN)."""
    if kappa is None or math.isnan(kappa):
        return "undefined"
    return next((words for bound, words in KAPPA_BANDS if kappa <= bound), KAPPA_BANDS[-1][1])


def format_interval(estimate: Estimate) -> str:
    """'0.12 to 0.80', or 'N/A' when the interval could not be computed."""
    return "N/A" if math.isnan(estimate.low) else f"{estimate.low:.2f} to {estimate.high:.2f}"


def estimate_caption(estimate: Estimate) -> str:
    """What backs a statistic: '8 shared models (fewer than 10) · 95% CI 0.12 to 0.80'."""
    few = f" (fewer than {MIN_SHARED_MODELS})" if estimate.below_minimum else ""
    return f"{estimate.n_models} shared models{few} · {AGREEMENT_CONFIDENCE:.0%} CI {format_interval(estimate)}"


@st.cache_data(max_entries=16, show_spinner="Bootstrapping the agreement intervals…")
def measured(judgments: pd.DataFrame) -> Agreement:
    """:func:`analytics.judging.agreement.measure_agreement` with its default bootstrap (cached on the judgments)."""
    return measure_agreement(judgments)


# -- annotators ----------------------------------------------------------------------------------
def cohen_table(agreement: Agreement) -> pd.DataFrame:
    """One row per annotator pair: ``Annotator A, Annotator B, Shared models, Cohen's κ, 95% CI, Strength``.

    ``Strength`` says '(few models)' after the words where the pair shares fewer than
    :data:`analytics.judging.agreement.MIN_SHARED_MODELS` models.
    """
    rows = [
        (first, second, e.n_models, e.value, format_interval(e), kappa_words(e.value) + (" (few models)" if e.below_minimum else ""))
        for (first, second), e in agreement.cohen.items()
    ]
    return pd.DataFrame(rows, columns=["Annotator A", "Annotator B", "Shared models", "Cohen's κ", f"{AGREEMENT_CONFIDENCE:.0%} CI", "Strength"])


def majority_table(agreement: Agreement) -> pd.DataFrame:
    """One row per annotator: ``Annotator, Shared models, With the others' majority, 95% CI (others),
    With everyone's majority, 95% CI (everyone)``.

    Shares are fractions in [0, 1] (NaN for an annotator who shares no model); see
    :mod:`analytics.judging.agreement` for the two majorities.
    """
    rows = [
        (name, shares["with_others"].n_models, shares["with_others"].value, format_interval(shares["with_others"]),
         shares["with_all"].value, format_interval(shares["with_all"]))
        for name, shares in agreement.with_majority.items()
    ]  # fmt: skip
    ci = f"{AGREEMENT_CONFIDENCE:.0%} CI"
    columns = ["Annotator", "Shared models", "With the others' majority", f"{ci} (others)", "With everyone's majority", f"{ci} (everyone)"]
    return pd.DataFrame(rows, columns=columns)


def majority_summary(majority: pd.Series) -> str:
    """'3 invariant · 1 borderline · 2 variant' (labels in order, zero counts left out)."""
    counts = majority.value_counts()
    return " · ".join(f"{int(counts[label])} {label}" for label in LABELS if label in counts) or "no models"


# -- the assessor --------------------------------------------------------------------------------
@st.cache_data(max_entries=16, show_spinner="Computing the matrix features…")
def assessor_features(workspace_path: str, runs: tuple[tuple[str, str], ...], preset: str, feature_set: str = DEFAULT_FEATURE_SET) -> pd.DataFrame:
    """:func:`analytics.assessor.features_table` of the runs (index = model) with one feature set of
    :data:`analytics.assessor.FEATURE_SETS`, whole: which columns each assessor reads is
    :func:`analytics.assessor.feature_columns`'s decision, as in the CLI.

    ``runs`` holds (run id, finishing time) pairs: the time keys the cache, so a redone run is
    recomputed.
    """
    return features_table(
        state.open_workspace(workspace_path), [run_id for run_id, _ in runs], settings=MatrixSettings.of(preset), feature_set=feature_set
    )


@st.cache_data(max_entries=16, show_spinner="Evaluating the assessors over random splits…")
def assessor_report(features: pd.DataFrame, labels: pd.Series, repeats: int) -> AssessorReport:
    """:func:`analytics.assessor.evaluate_assessors` (cached on the data and ``repeats``)."""
    return evaluate_assessors(features, labels, repeats=repeats)


@st.cache_data(max_entries=16, show_spinner="Training the assessor on every labelled model…")
def fitted_assessor(features: pd.DataFrame, labels: pd.Series, kind: str) -> FittedAssessor:
    """:func:`analytics.assessor.fit_assessor` (cached on the data and ``kind``)."""
    return fit_assessor(features, labels, kind=kind)


def report_table(report: AssessorReport) -> pd.DataFrame:
    """The report as shown: ``Assessor, Reads, Accuracy, ± std, κ`` (fractions; κ NaN where undefined)."""
    table = report.table()
    return table.rename(
        columns={"assessor": "Assessor", "inputs": "Reads", "accuracy_mean": "Accuracy", "accuracy_std": "± std", "kappa_mean": "κ"}
    )


def assessor_inputs_table(report: AssessorReport) -> pd.DataFrame:
    """The columns each assessor read: ``Assessor, Features`` (count), ``Columns`` (comma-separated)."""
    return pd.DataFrame(
        [(ASSESSORS[name].title, len(columns), ", ".join(columns)) for name, columns in report.assessor_features.items()],
        columns=["Assessor", "Features", "Columns"],
    )


def feature_glossary(columns: Iterable[str], feature_set: str = DEFAULT_FEATURE_SET) -> pd.DataFrame:
    """``Feature, Meaning, Column`` for feature columns: the plain label and one-line meaning
    (:func:`analytics.assessor.describe_feature`) beside the id the CLI's JSON uses."""
    rows = [(*describe_feature(column, feature_set), column) for column in columns]
    return pd.DataFrame(rows, columns=["Feature", "Meaning", "Column"])
