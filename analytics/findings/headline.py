"""Home's headline: the workspace's main suite, its models ordered for people, the models that lose
most accuracy to the backgrounds, and the signal that shows it best.

The *main suite* is the one most registered real models ran over (zoo heads,
:func:`analytics.zoo.is_zoo_head`, count only where no real model has a finished current run; ties:
the suite of the newest run). Real models come before zoo heads wherever both are listed
(:func:`analytics.zoo.real_models_first`): they are the models people deploy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analytics._validation import check_positive_int
from analytics.runs import SIGNALS
from analytics.variance import VarianceMatrix
from analytics.zoo import is_zoo_head, real_models_first

__all__ = ["Headline", "headline", "largest_losses", "main_suite_first", "main_suite_runs", "telling_signal"]


@dataclass(frozen=True)
class Headline:
    """The main suite's models that vary most and least with the background (Home's first sentence).

    ``most`` and ``least`` are rows of :func:`main_suite_runs` (``loss`` added: original minus
    worst-case accuracy), among the real models unless only zoo heads ran; ``n_models`` counts those
    compared, ``n_zoo`` the zoo heads on the suite, ``mixed`` whether real models and zoo heads both
    ran over it (then only the real ones are compared).
    """

    suite_id: str
    suite: str
    most: Mapping
    least: Mapping
    n_models: int
    n_zoo: int
    mixed: bool


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


def largest_losses(runs: pd.DataFrame, *, limit: int) -> pd.DataFrame:
    """:func:`main_suite_runs`, the ``limit`` that lose most accuracy to the backgrounds: real models
    first, each group biggest loss first; column ``loss`` (float: original minus worst-case accuracy) added."""
    limit = check_positive_int(limit, "limit")
    found = main_suite_runs(runs)
    loss = found["original_accuracy"] - found["worst_case_accuracy"]
    return found.assign(loss=loss).sort_values(["zoo", "loss"], ascending=[True, False], kind="stable").head(limit)


def headline(runs: pd.DataFrame) -> Headline | None:
    """The main suite's models that lose most and least accuracy to the backgrounds (stored run
    summaries only); None while no suite has a finished current run.

    Parameters
    ----------
    runs : DataFrame
        :func:`analytics.runs.list_runs`.
    """
    on_suite = main_suite_runs(runs)
    if on_suite.empty:
        return None
    n_zoo = int(on_suite["zoo"].sum())
    named = on_suite if n_zoo == len(on_suite) else on_suite[~on_suite["zoo"]]
    named = named.assign(loss=named["original_accuracy"] - named["worst_case_accuracy"])
    most, least = named.loc[named["loss"].idxmax()], named.loc[named["loss"].idxmin()]
    return Headline(
        str(on_suite["suite_id"].iloc[0]), str(on_suite["suite"].iloc[0]), most.to_dict(), least.to_dict(), len(named), n_zoo, 0 < n_zoo < len(on_suite)
    )


def telling_signal(matrices: Mapping[str, VarianceMatrix], tops: Mapping[str, float]) -> str:
    """The signal whose matrix fills most of the suite's colour range (highest mean cell / top of the
    scale): on the fixed scale, the most yellow of the four.

    Parameters
    ----------
    matrices : mapping of str to VarianceMatrix
        A run's matrices, keyed by :data:`analytics.runs.SIGNALS`.
    tops : mapping of str to float
        Top of the suite's colour range per signal (:attr:`analytics.runs.ColourScale.tops`).
    """
    return max(SIGNALS, key=lambda signal: float(np.mean(matrices[signal].matrix)) / tops[signal])
