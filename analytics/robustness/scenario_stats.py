"""Statistics of the XIMAGENET-12 scenarios (Li et al., §4, Tables 1, 3 and 5): accuracy per
scenario and per (model, scenario, class), the robustness score in the paper's two forms, and the
OLS regression of accuracy on model, scenario and class in Table 1's layout.

Inputs are the per-image predictions of :func:`analytics.robustness.scenarios.evaluate_scenarios`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from analytics._validation import check_choice
from analytics.exceptions import InvalidInputError

from .scenarios import DEFAULT_SCENARIO_SET, ORIGINAL, SCENARIO_SETS, SCENARIOS


# -- the robustness score -----------------------------------------------------------------------
def spread(accuracies: Sequence[float] | np.ndarray, mu: float, *, ddof: int = 0) -> float:
    """Σ (C − μ)² / (n − ddof): the paper's variance of accuracies around the original accuracy μ.

    ``ddof=0`` is §4's formula; Table 3 divides by n − 1 (``ddof=1``: its ResNet50 drops sum to
    0.6317 over 8 scenarios, listed as 0.0902).

    Parameters
    ----------
    accuracies : array-like of shape (n,), float in [0, 1]
    mu : float
    ddof : int, default=0
    """
    values = np.asarray(accuracies, float)
    if values.ndim != 1 or len(values) <= ddof:
        raise InvalidInputError(f"spread needs more than {ddof} accuracies in a 1-d array; got shape {values.shape}")
    return float(((values - mu) ** 2).sum() / (len(values) - ddof))


@dataclass(frozen=True)
class Robustness:
    """The XIMAGENET-12 robustness score of one model, in both of the paper's forms.

    Attributes
    ----------
    original : float
        μ, accuracy on the original images.
    external, internal : float
        σ_e² (spread of the per-scenario accuracies around μ) and σ_i² (spread of the per-class
        accuracies under the scenarios around μ), each divided by n (§4).
    score_paper : float
        §4 as written: 1 − (σ_i + σ_e), standard deviations.
    external_table3, internal_table3 : float
        The same sums of squares divided by n − 1, as Table 3's "Variance" column.
    score_table3 : float
        Table 3's arithmetic: 1 − (σ_e² + σ_i²) with those variances (ResNet50: 1 − (0.0902 +
        0.0112) = 0.8985). Variances of accuracy drops are far smaller than their square roots,
        so this form sits near 1 and the §4 form much lower; they rank models differently when one
        model's drops are concentrated in a single scenario.
    """

    original: float
    external: float
    internal: float
    score_paper: float
    external_table3: float
    internal_table3: float
    score_table3: float


def robustness_score(scenario_accuracies: Sequence[float] | np.ndarray, class_accuracies: Sequence[float] | np.ndarray, original: float) -> Robustness:
    """The robustness score S of §4 and of Table 3 from one model's accuracies.

    §4 writes σ_i² over the object classes C'(k); Table 3's "internal" rows instead come from its
    second experiment (models fine-tuned on each scenario), which needs retraining. Backdrop uses
    the written definition for both forms: C'(k) is class k's accuracy over all scenario images;
    the forms differ only in the arithmetic (see :class:`Robustness`).

    Parameters
    ----------
    scenario_accuracies : array-like of shape (n_scenarios,), float in [0, 1]
        C(i): accuracy under each scenario (the original excluded).
    class_accuracies : array-like of shape (n_classes,), float in [0, 1]
        C'(k): accuracy of each class under the scenarios.
    original : float
        μ: accuracy on the original images.

    Returns
    -------
    Robustness
    """
    external, internal = spread(scenario_accuracies, original), spread(class_accuracies, original)
    external_t3 = spread(scenario_accuracies, original, ddof=1)
    internal_t3 = spread(class_accuracies, original, ddof=1)
    return Robustness(
        original=float(original),
        external=external,
        internal=internal,
        score_paper=1.0 - (np.sqrt(internal) + np.sqrt(external)),
        external_table3=external_t3,
        internal_table3=internal_t3,
        score_table3=1.0 - (external_t3 + internal_t3),
    )


# -- tables from per-image predictions --------------------------------------------------------------


def scenario_accuracy(predictions: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per scenario (rows, the original first) and model (columns).

    Parameters
    ----------
    predictions : DataFrame
        Columns :data:`analytics.robustness.scenarios.SCENARIO_PREDICTION_COLUMNS` (``evaluate_scenarios``);
        ``model``, ``scenario`` (str) and ``correct`` (bool) are read.

    Returns
    -------
    DataFrame of float64 in [0, 1], shape (n_scenarios, n_models)
        Index ``scenario``, one column per model.
    """
    table = predictions.pivot_table(index="scenario", columns="model", values="correct", aggfunc="mean", sort=False)
    return table.reindex(_scenario_order(table.index)).astype(float)


def class_accuracy(predictions: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per (model, scenario, class): the cells of Table 5 and of the regression.

    Parameters
    ----------
    predictions : DataFrame
        Columns :data:`analytics.robustness.scenarios.SCENARIO_PREDICTION_COLUMNS`; ``model``, ``scenario``,
        ``class`` (str) and ``correct`` (bool) are read.

    Returns
    -------
    DataFrame
        One row per cell; columns model, scenario, class (str), accuracy (float64), n (int64).
    """
    grouped = predictions.groupby(["model", "scenario", "class"], sort=False)["correct"]
    table = grouped.agg(accuracy="mean", n="size").reset_index()
    table["accuracy"] = table["accuracy"].astype(float)
    return table


def robustness_scores(predictions: pd.DataFrame, *, scenario_set: str = DEFAULT_SCENARIO_SET) -> pd.DataFrame:
    """:func:`robustness_score` of every model in ``predictions`` (which must hold the original).

    Parameters
    ----------
    predictions : DataFrame
        Columns :data:`analytics.robustness.scenarios.SCENARIO_PREDICTION_COLUMNS`; ``model``, ``scenario``,
        ``class`` (str) and ``correct`` (bool) are read.
    scenario_set : {'table3', 'all'}, default='table3'
        Which evaluated scenarios the score spans (:data:`analytics.robustness.scenarios.SCENARIO_SETS`):
        those of the paper's Table 3 (its eight; rainbow, brightness and transparent left out), so
        scores compare with the paper's, or every scenario evaluated.

    Returns
    -------
    DataFrame
        Index ``model``; the fields of :class:`Robustness` (float) and ``n_scenarios`` (int).

    Raises
    ------
    InvalidInputError
        No original, or fewer than two of the set's scenarios evaluated for a model.
    """
    check_choice(scenario_set, "scenario_set", list(SCENARIO_SETS))
    rows = {}
    for model, own in predictions.groupby("model", sort=False):
        changed = own[own["scenario"].isin(SCENARIO_SETS[scenario_set]) if scenario_set != "all" else own["scenario"] != ORIGINAL]
        if not (own["scenario"] == ORIGINAL).any():
            raise InvalidInputError(f"robustness of {model!r} needs the original and at least two scenarios")
        per_scenario = changed.groupby("scenario")["correct"].mean()
        if len(per_scenario) < 2:
            raise InvalidInputError(
                f"robustness of {model!r} over the {scenario_set!r} scenarios needs at least two of them (Table 3 divides by n - 1); "
                f"got {list(per_scenario.index)}; evaluate more of {', '.join(SCENARIO_SETS[scenario_set])} or score over scenario_set='all'"
            )
        score = robustness_score(per_scenario.to_numpy(float), changed.groupby("class")["correct"].mean().to_numpy(float), own.loc[own["scenario"] == ORIGINAL, "correct"].mean())
        rows[model] = {**asdict(score), "n_scenarios": len(per_scenario)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("model")


def _scenario_order(names: Sequence[str]) -> list[str]:
    """The original first, then the registry's order, then anything else."""
    known = [ORIGINAL, *SCENARIOS]
    return sorted(names, key=lambda n: (known.index(n) if n in known else len(known), n))


# -- the regression of Table 1 -----------------------------------------------------------------------
TERM_LABELS = {"model": "Model Name", "scenario": "Image Scenario", "class": "Image Class"}


@dataclass(frozen=True)
class Regression:
    """OLS accuracy ~ model + scenario + class over (model, scenario, class) cells (Table 1).

    Attributes
    ----------
    table : DataFrame
        One row per term, the paper's layout: Variable, Estimate, Standard error, t, CI low,
        CI high (95 %), P value, P value summary (GraphPad stars: **** < 0.0001, *** < 0.001,
        ** < 0.01, * < 0.05, ns).
    baseline : dict of str to str
        The reference level of each factor (the intercept's model, scenario and class).
    n_cells : int
    r_squared, f_value, f_pvalue : float
        Fit of the whole regression (the paper's "F(23, 516) = 99.40").
    anova : DataFrame
        Type II sums of squares per factor (Table 4's layout: sum_sq, df, F, PR(>F)).
    """

    table: pd.DataFrame
    baseline: dict
    n_cells: int
    r_squared: float
    f_value: float
    f_pvalue: float
    anova: pd.DataFrame


def fit_regression(cells: pd.DataFrame, *, baseline_model: str | None = None) -> Regression:
    """OLS (statsmodels formula API) of cell accuracy on treatment-coded model, scenario and class.

    As in Table 1 the units are accuracies per (model, scenario, class), the baseline is the
    original image, the first model (or ``baseline_model``) and the first class; a factor with a
    single level is left out of the formula.

    Parameters
    ----------
    cells : DataFrame
        Columns model, scenario, class, accuracy (float in [0, 1]) — :func:`class_accuracy`.
    baseline_model : str, optional

    Returns
    -------
    Regression

    Raises
    ------
    InvalidInputError
        Missing columns, an unknown baseline model, or no more cells than coefficients.
    """
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    missing = {"model", "scenario", "class", "accuracy"} - set(cells.columns)
    if missing:
        raise InvalidInputError(f"regression cells lack the columns {sorted(missing)}; pass class_accuracy(predictions)")
    data = cells.rename(columns={"class": "klass"})[["model", "scenario", "klass", "accuracy"]].astype({"model": str, "scenario": str, "klass": str})
    models = list(dict.fromkeys(data["model"]))
    if baseline_model is not None and baseline_model not in models:
        raise InvalidInputError(f"baseline_model {baseline_model!r} is not among the models {models}")
    scenarios = list(dict.fromkeys(data["scenario"]))
    baseline = {
        "model": baseline_model or models[0],
        "scenario": ORIGINAL if ORIGINAL in scenarios else _scenario_order(scenarios)[0],
        "class": sorted(set(data["klass"]))[0],
    }
    levels = {"model": models, "scenario": _scenario_order(scenarios), "klass": sorted(set(data["klass"]))}  # table rows in this order
    terms = [
        f"C({column}, Treatment(reference={baseline[factor]!r}), levels={levels[column]!r})"
        for factor, column in (("model", "model"), ("scenario", "scenario"), ("class", "klass"))
        if data[column].nunique() > 1
    ]
    n_params = 1 + sum(data[column].nunique() - 1 for column in ("model", "scenario", "klass") if data[column].nunique() > 1)
    if len(data) <= n_params:
        raise InvalidInputError(f"the regression needs more cells than its {n_params} coefficients; got {len(data)} (add models, scenarios or classes)")
    fit = smf.ols("accuracy ~ " + (" + ".join(terms) or "1"), data=data).fit()
    anova = sm.stats.anova_lm(fit, typ=2) if terms else pd.DataFrame()
    return Regression(
        table=_paper_table(fit),
        baseline=baseline,
        n_cells=len(data),
        r_squared=float(fit.rsquared),
        f_value=float(fit.fvalue) if terms else float("nan"),
        f_pvalue=float(fit.f_pvalue) if terms else float("nan"),
        anova=anova.rename(index=lambda term: _term_label(term, with_level=False)),
    )


def scenario_regression(predictions: pd.DataFrame, *, baseline_model: str | None = None) -> Regression:
    """:func:`fit_regression` on the (model, scenario, class) accuracies of ``predictions``.

    Parameters
    ----------
    predictions : DataFrame
        Columns :data:`analytics.robustness.scenarios.SCENARIO_PREDICTION_COLUMNS` (see :func:`class_accuracy`).
    baseline_model : str, optional

    Returns
    -------
    Regression
    """
    return fit_regression(class_accuracy(predictions), baseline_model=baseline_model)


def _paper_table(fit) -> pd.DataFrame:
    interval = fit.conf_int(0.05)
    table = pd.DataFrame({
        "Variable": [_term_label(name) for name in fit.params.index],
        "Estimate": fit.params.to_numpy(),
        "Standard error": fit.bse.to_numpy(),
        "t": fit.tvalues.to_numpy(),
        "CI low": interval[0].to_numpy(),
        "CI high": interval[1].to_numpy(),
        "P value": fit.pvalues.to_numpy(),
    })
    table["P value summary"] = [_stars(p) for p in table["P value"]]
    return table


def _term_label(term: str, *, with_level: bool = True) -> str:
    """``C(model, Treatment(reference='a'))[T.b]`` -> ``Model Name[b]``; ``Intercept`` stays."""
    if not term.startswith("C("):
        return term
    column = term[2 : term.index(",")]
    label = TERM_LABELS["class" if column == "klass" else column]
    if not with_level:
        return label
    return f"{label}[{term[term.rindex('[T.') + 3 : -1]}]"


def _stars(p: float) -> str:
    for bound, stars in ((1e-4, "****"), (1e-3, "***"), (1e-2, "**"), (0.05, "*")):
        if p < bound:
            return stars
    return "ns"
