"""analytics.assessor's feature table on finished tiny runs (tests/fixtures/runs.py)."""

from __future__ import annotations

import pytest

from analytics.assessor import (
    ACCURACY_COLUMNS,
    FEATURE_COLUMNS,
    features_table,
    run_features,
)
from analytics.exceptions import InvalidInputError
from analytics.runs import SIGNALS, run_matrices
from analytics.variance import FEATURE_NAMES


def test_features_cover_every_signal_and_accuracy(run_workspace, run_ids):
    features = run_features(run_workspace, run_ids["bg-only"])
    assert list(features) == [*FEATURE_COLUMNS, *ACCURACY_COLUMNS]
    assert len(FEATURE_COLUMNS) == len(SIGNALS) * len(FEATURE_NAMES)
    matrices = run_matrices(run_workspace, run_ids["bg-only"])
    assert features["emb_max.mean"] == pytest.approx(matrices["emb_max"].matrix.mean())
    assert run_features(run_workspace, run_ids["bg-only"], threshold=0.0)["emb_mean.error_rate"] == 1.0
    table = features_table(run_workspace, list(run_ids.values()))
    assert table.index.tolist() == list(run_ids) and table.loc["fg-only", "true_prob.mean"] == pytest.approx(0.0, abs=1e-9)
    assert table.loc["bg-only", "true_prob.mean"] > 0
    with pytest.raises(InvalidInputError, match="one run per model"):
        features_table(run_workspace, [run_ids["tiny"], run_ids["tiny"]])
