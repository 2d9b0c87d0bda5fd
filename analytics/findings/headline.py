"""Home's headline: the workspace's main suite, its models ordered for people, the models the backgrounds
hit hardest and least, and the signal that shows it best.

The *main suite* is the one most registered real models ran over (zoo heads,
:func:`analytics.zoo.is_zoo_head`, count only where no real model has a finished current run; ties:
the suite of the newest run). Real models come before zoo heads wherever both are listed
(:func:`analytics.zoo.real_models_first`): they are the models people deploy.

**The measure: composite accuracy** (issue 47.1), the share of the suite's composites (each target
pasted on a new background) a model classifies right, read from each composite's stored outcome
(:func:`composite_outcomes`). It is the measure the rest of Backdrop judges reliance on the
background by: the gate's ``baseline.accuracy_margin`` rule compares it between two models with
McNemar's exact test on the paired composites, and the Failures page's overall error rate is one
minus it. The headline used to rank by the drop from original to worst-case accuracy, which points
the wrong way for a model with a background shortcut: a target it already gets wrong on its own photo
cannot be lost to a background, so a model whose originals are lower drops less (in issue 47, 40
points against 45) while it gets far fewer composites right (0.40 against 0.62, McNemar p = 1.5e-14);
and the worst case counts a target lost under any one of N backgrounds, so it saturates as N grows.
Composite accuracy uses every composite, and models over one suite saw the same composites, so two
of them pair up for McNemar's test (:func:`analytics.findings.paired_test`).

**No ranking inside the uncertainty.** The headline names the model with the lowest composite accuracy
as the one hit hardest only when McNemar's test sets it apart from *every* other compared model at
:data:`HEADLINE_ALPHA` (an intersection-union test: no correction for the number of models is needed),
and the highest as the one hit least likewise; otherwise that end is not named (:class:`Headline`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analytics._validation import check_positive_int
from analytics.runs import SIGNALS
from analytics.variance import VarianceMatrix
from analytics.workspace import Workspace
from analytics.zoo import is_zoo_head, real_models_first

from .baseline import paired_test

#: Level of McNemar's test below which the headline names a model as hit hardest (or least) by the
#: backgrounds: the gate's default ``alpha`` (:data:`analytics.gate.policy.DEFAULT_ALPHA`).
HEADLINE_ALPHA = 0.05
#: A run id -> its composites' outcomes (:func:`composite_outcomes`, bound to a workspace, or a cached loader).
Outcomes = Callable[[str], pd.Series]


@dataclass(frozen=True)
class Headline:
    """The main suite's models by composite accuracy, and which of them Home's first sentence may name.

    Attributes
    ----------
    suite_id, suite : str
        The main suite's id and label.
    models : DataFrame
        The compared rows of :func:`main_suite_runs` (the real models unless only zoo heads ran) with
        :func:`composite_ranking`'s columns ``composite_accuracy`` (float) and ``composites`` (int),
        lowest composite accuracy first.
    most, least : Mapping or None
        The row of the lowest (``most``: hit hardest by the backgrounds) and of the highest composite
        accuracy (``least``), each only where McNemar's exact test on the paired composites sets it
        apart from every other compared model at :data:`HEADLINE_ALPHA`; None otherwise (within the
        uncertainty: not ranked), and with one model.
    p_most, p_least : float
        The largest p-value of those tests (the lowest's and the highest's against each other model;
        NaN with one model).
    pairs : int
        Composites the lowest and the highest share (the pairs of their test).
    n_models, n_zoo : int
        Models compared, zoo heads on the suite.
    mixed : bool
        Real models and zoo heads both ran over the suite (then only the real ones are compared).
    """

    suite_id: str
    suite: str
    models: pd.DataFrame
    most: Mapping | None
    least: Mapping | None
    p_most: float
    p_least: float
    pairs: int
    n_models: int
    n_zoo: int
    mixed: bool

    @property
    def lowest(self) -> Mapping:
        """The row of the lowest composite accuracy, named or not."""
        return self.models.iloc[0].to_dict()

    @property
    def highest(self) -> Mapping:
        """The row of the highest composite accuracy, named or not."""
        return self.models.iloc[-1].to_dict()


def main_suite_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The newest finished current run of each model over the main suite (module notes).

    Parameters
    ----------
    runs : DataFrame
        :func:`analytics.runs.list_runs` (newest first).

    Returns
    -------
    DataFrame
        Rows of ``runs``, one per model, real models first, each group newest first, plus a bool
        column ``zoo`` (:func:`analytics.zoo.is_zoo_head`); empty when no run is finished and current.
    """
    done = runs[(runs["status"] == "done") & ~runs["stale"].astype(bool)].drop_duplicates(["suite_id", "model"])
    done = done.assign(zoo=done["construction"].map(is_zoo_head).astype(bool))
    if done.empty:
        return done
    counted = done if done["zoo"].all() else done[~done["zoo"]]
    on_suite = done[done["suite_id"] == counted["suite_id"].value_counts().index[0]]
    return real_models_first(on_suite)


def main_suite_first(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` reordered for a run picker: the runs over the main suite, real models before zoo heads,
    then every other run in its given order."""
    found = main_suite_runs(runs)
    if found.empty:
        return runs
    suite_id = found["suite_id"].iloc[0]
    return pd.concat([real_models_first(runs[runs["suite_id"] == suite_id]), runs[runs["suite_id"] != suite_id]])


def composite_outcomes(workspace: Workspace, run_id: str) -> pd.Series:
    """Right or wrong on each composite of a run (position >= 1; stored rows only, any status).

    Returns
    -------
    Series of bool
        Indexed by (target_id, position); runs over one suite share the index, so two runs' outcomes
        pair up (:func:`analytics.findings.paired_test`).
    """
    rows = workspace.query("SELECT target_id, position, correct FROM run_images WHERE run_id = ? AND position > 0 ORDER BY target_id, position", (run_id,))
    table = pd.DataFrame([tuple(r) for r in rows], columns=["target_id", "position", "correct"])
    return table.astype({"position": int, "correct": bool}).set_index(["target_id", "position"])["correct"]


def composite_ranking(runs: pd.DataFrame, outcomes: Outcomes, *, limit: int | None = None) -> pd.DataFrame:
    """:func:`main_suite_runs` by composite accuracy (module notes): real models first, each group lowest
    composite accuracy first (the model the backgrounds hit hardest); ties keep the people order.

    Parameters
    ----------
    runs : DataFrame
        :func:`analytics.runs.list_runs`.
    outcomes : callable
        Run id -> :func:`composite_outcomes` of the run.
    limit : int, optional
        The first ``limit`` rows only.

    Returns
    -------
    DataFrame
        Rows of :func:`main_suite_runs` plus ``composite_accuracy`` (float; NaN without composites) and
        ``composites`` (int).
    """
    limit = None if limit is None else check_positive_int(limit, "limit")
    ranked, _ = _ranked(runs, outcomes)
    return ranked if limit is None else ranked.head(limit)


def headline(runs: pd.DataFrame, outcomes: Outcomes) -> Headline | None:
    """The main suite's models by composite accuracy, and which end of the ranking stands apart (module
    notes); None while no suite has a finished current run.

    Parameters
    ----------
    runs : DataFrame
        :func:`analytics.runs.list_runs`.
    outcomes : callable
        Run id -> :func:`composite_outcomes` of the run, e.g. ``functools.partial(composite_outcomes, workspace)``.
    """
    ranked, correct = _ranked(runs, outcomes)
    if ranked.empty:
        return None
    n_zoo = int(ranked["zoo"].sum())
    named = (ranked if n_zoo == len(ranked) else ranked[~ranked["zoo"]]).reset_index(drop=True)
    compared = {run_id: correct[run_id] for run_id in named["id"]}
    lowest, highest = named["id"].iloc[0], named["id"].iloc[-1]
    p_most, p_least = _largest_p(lowest, compared), _largest_p(highest, compared)
    return Headline(
        suite_id=str(ranked["suite_id"].iloc[0]), suite=str(ranked["suite"].iloc[0]), models=named,
        most=named.iloc[0].to_dict() if p_most < HEADLINE_ALPHA else None, least=named.iloc[-1].to_dict() if p_least < HEADLINE_ALPHA else None,
        p_most=p_most, p_least=p_least, pairs=paired_test(compared[lowest], compared[highest]).pairs, n_models=len(named), n_zoo=n_zoo,
        mixed=0 < n_zoo < len(ranked),
    )  # fmt: skip


def _ranked(runs: pd.DataFrame, outcomes: Outcomes) -> tuple[pd.DataFrame, dict[str, pd.Series]]:
    """:func:`composite_ranking` (all rows) and the outcomes it read, by run id (each run read once)."""
    found = main_suite_runs(runs)
    correct = {run_id: outcomes(run_id) for run_id in found["id"]}
    ranked = found.assign(
        composite_accuracy=[float(c.mean()) if len(c) else float("nan") for c in correct.values()], composites=[len(c) for c in correct.values()]
    )
    return ranked.sort_values(["zoo", "composite_accuracy"], ascending=[True, True], kind="stable"), correct


def _largest_p(run_id: str, correct: Mapping[str, pd.Series]) -> float:
    """The largest p of McNemar's test between ``run_id``'s composites and each other run's (NaN without another run)."""
    others = [paired_test(correct[run_id], theirs).p_value for other, theirs in correct.items() if other != run_id]
    return max(others) if others else float("nan")


def telling_signal(matrices: Mapping[str, VarianceMatrix], tops: Mapping[str, float], bottoms: Mapping[str, float] | None = None) -> str:
    """The signal whose matrix fills most of the suite's colour range (highest mean of (cell - bottom) /
    (top - bottom)): on the fixed scale, the most yellow of the four.

    Parameters
    ----------
    matrices : mapping of str to VarianceMatrix
        A run's matrices, keyed by :data:`analytics.runs.SIGNALS`.
    tops : mapping of str to float
        Top of the suite's colour range per signal (:attr:`analytics.runs.ColourScale.tops`).
    bottoms : mapping of str to float, optional
        Bottom per signal (:attr:`analytics.runs.ColourScale.bottoms`); a signal it lacks starts at 0.
    """
    low = bottoms or {}

    def filled(signal: str) -> float:
        bottom = float(low.get(signal, 0.0))
        return (float(np.mean(matrices[signal].matrix)) - bottom) / (tops[signal] - bottom)

    return max(SIGNALS, key=filled)
