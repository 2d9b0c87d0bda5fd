"""The assessor's verdict on a model: what the release gate, the report and the Repository page give.

One assessor (:data:`VERDICT_ASSESSOR`, seeded with :data:`VERDICT_SEED`, on the features of the
:data:`VERDICT_PRESET` matrices) and one rule for its training set: a model's verdict comes from an
assessor trained on the *other* labelled models (leave-one-out), so a judged model's verdict is never
its own label restated. Models without a label share one assessor trained on every label.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analytics.exceptions import InvalidInputError
from analytics.judging import LABELS, judgeable_runs
from analytics.variance import MatrixSettings
from analytics.workspace import Workspace

from .assessors import fit_assessor, predict
from .features import features_table
from .inputs import MIN_MODELS, human_labels

#: The assessor that gives verdicts: the paper's best, a seeded random forest on the smooth matrices' features.
VERDICT_ASSESSOR, VERDICT_SEED, VERDICT_PRESET = "random_forest", 0, "smooth"
#: Columns of :func:`held_out_verdicts`.
ASSESSOR_VERDICT_COLUMNS = ["label", *(f"p_{label}" for label in LABELS), "confidence", "trained_on", "reason"]


def held_out_verdicts(
    features: pd.DataFrame, labels: pd.Series, candidates: pd.DataFrame, *, kind: str = VERDICT_ASSESSOR, seed: int = VERDICT_SEED
) -> pd.DataFrame:
    """Each candidate's verdict from an assessor trained on the labelled models other than itself.

    Parameters
    ----------
    features : DataFrame of shape (n_models, n_features), float
        The labelled models' features (:func:`analytics.assessor.features_table`), index = model.
    labels : Series of str
        Index = model, values in ``LABELS``; models without features are ignored.
    candidates : DataFrame of shape (n_candidates, n_features), float
        The models to give a verdict on, index = model; labelled ones are left out of their own training.
    kind : str, default=VERDICT_ASSESSOR
        Key of :data:`analytics.assessor.ASSESSORS`.
    seed : int, default=VERDICT_SEED

    Returns
    -------
    DataFrame
        Index = the candidates, columns :data:`ASSESSOR_VERDICT_COLUMNS`: ``label`` (str, '' without a verdict),
        ``p_<label>`` and ``confidence`` (float in [0, 1], the probability of the verdict; NaN without
        one), ``trained_on`` (int64: labelled models it learned from, 0 without a verdict), ``reason``
        (str: why a labelled candidate has no verdict, e.g. too few labels left without it; '' otherwise).

    Raises
    ------
    InvalidInputError
        No assessor can be trained on every label (too few or too uniform; :func:`fit_assessor` says why).
    """
    known = labels.dropna()
    known = known[known.index.isin(features.index)]
    shared = fit_assessor(features, known, kind=kind, seed=seed)  # raises: no assessor at all
    rows = {}
    for model in candidates.index:
        try:
            fitted = shared if model not in known.index else fit_assessor(features.drop(index=model), known.drop(index=model), kind=kind, seed=seed)
        except InvalidInputError as err:
            rows[model] = {"label": "", "trained_on": 0, "reason": f"without its own label: {err}"}
            continue
        row = predict(fitted, candidates.loc[[model]]).iloc[0]
        rows[model] = {
            **row.to_dict(), "confidence": float(row[[f"p_{label}" for label in LABELS]].max()),
            "trained_on": len(known) - (model in known.index), "reason": "",
        }  # fmt: skip
    table = pd.DataFrame.from_dict(rows, orient="index").reindex(index=candidates.index, columns=ASSESSOR_VERDICT_COLUMNS)
    return table.fillna({"label": "", "reason": "", "trained_on": 0}).astype({"trained_on": "int64"}).rename_axis(candidates.index.name)


def suite_verdicts(workspace: Workspace, suite_id: str, run_ids: Sequence[str]) -> pd.DataFrame:
    """The verdicts (:func:`held_out_verdicts`) on the models of ``run_ids``, from the human labels of
    the suite (:func:`human_labels`) and the newest finished current runs of the labelled models there.

    Parameters
    ----------
    workspace : Workspace
    suite_id : str
    run_ids : sequence of str
        Finished runs over the suite, at most one per model.

    Returns
    -------
    DataFrame
        As :func:`held_out_verdicts`, index = the runs' models (in order).

    Raises
    ------
    InvalidInputError
        Fewer than :data:`MIN_MODELS` judged models with a run on the suite, or labels no assessor can
        be trained on.
    BackdropError
        A run's features cannot be computed.
    """
    labels = human_labels(workspace, suite_id)
    finished = judgeable_runs(workspace, suite_id)
    training = finished[finished["model"].isin(labels.index)]
    if len(training) < MIN_MODELS:
        raise InvalidInputError(f"{len(training)} model(s) judged on this suite; the assessor trains on at least {MIN_MODELS}")
    settings = MatrixSettings.of(VERDICT_PRESET)
    features = features_table(workspace, list(training["id"]), settings=settings)
    candidates = features_table(workspace, list(run_ids), settings=settings)
    return held_out_verdicts(features, labels, candidates)
