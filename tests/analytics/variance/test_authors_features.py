"""The ML4ML authors' matrix features (analytics.variance.authors) on small matrices computed by hand.

The authors measure each matrix as drawn (their ``flip_y``: the stored matrix upside down), so the
derivations below work on D = M[::-1]; their reference level is sum(cells) / (n*n - n).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from analytics.exceptions import InvalidInputError
from analytics.variance import AUTHORS_FEATURE_NAMES, authors_features, sensitivity
from analytics.variance.authors import authors_asymmetry, authors_discontinuity, authors_error_rate, authors_gradient, squared_mean
from analytics.variance.features import error_rate

# Stored orientation (row 0 = smallest d_ik); drawn: D = [[6, 5, 2], [3, 0, 1], [1, 1, 2]].
M = np.array([[1.0, 1.0, 2.0], [3.0, 0.0, 1.0], [6.0, 5.0, 2.0]])
LEVEL = 21 / 6  # sum 21 over n*n - n = 6


def test_mean_squared_mean_and_std():
    features = authors_features(M)
    assert features["mean"] == pytest.approx(21 / 9)
    # squares 1 1 4 9 0 1 36 25 4 sum to 81
    assert features["s_mean"] == squared_mean(M) == pytest.approx(9.0)
    # variance 81/9 - (7/3)^2 = 32/9
    assert features["std"] == pytest.approx(math.sqrt(32) / 3)


def test_error_rate_counts_cells_strictly_above_the_threshold():
    assert authors_error_rate(M) == pytest.approx(8 / 9)  # every cell but the 0 is above 0.15
    # above 2: 3, 6, 5; the two cells equal to 2 do not count (Backdrop's set counts >= 2: 5 cells)
    assert authors_error_rate(M, threshold=2.0) == pytest.approx(3 / 9)
    assert error_rate(M, threshold=2.0) == pytest.approx(5 / 9)


def test_discontinuity_is_the_length_weighted_std_along_equal_difference_lines():
    # drawn lines row + col = s: s=1 holds D[1,0]=3, D[0,1]=5 (std 1, length 2);
    # s=2 holds D[2,0]=1, D[1,1]=0, D[0,2]=2 (std sqrt(2/3), length 3).
    # (2 * 1 + 3 * sqrt(2/3)) / n=3, over the level 3.5
    expected = (2 + math.sqrt(6)) / 3 / LEVEL
    assert authors_discontinuity(M) == pytest.approx(expected)
    assert expected == pytest.approx(0.423761, abs=1e-6)
    assert authors_discontinuity(np.full((5, 5), 0.3)) == 0.0


def test_asymmetry_mirrors_across_the_drawn_main_diagonal():
    # |D[1,0] - D[0,1]| = 2, |D[2,0] - D[0,2]| = 1, |D[2,1] - D[1,2]| = 0: mean 1, over the level 3.5
    assert authors_asymmetry(M) == pytest.approx(2 / 7)
    symmetric_about_anti_diagonal = np.array([[1.0, 2.0, 0.0], [4.0, 3.0, 2.0], [5.0, 4.0, 1.0]])
    assert authors_asymmetry(symmetric_about_anti_diagonal) == 0.0


def test_vertical_and_horizontal_gradients_are_signed():
    # vertical (cell above minus cell, drawn): row 1: [6-3, 5-0] = [3, 5]; row 2: [3-1] = [2]
    v = authors_gradient(M, direction="vertical")
    assert v["mean"] == pytest.approx(10 / 3)
    assert v["std"] == pytest.approx(math.sqrt(14) / 3)  # variance (1 + 25 + 16) / 27
    assert v["wstd"] == pytest.approx(1.0)  # std of [3, 5]; the one-value last line is left out
    assert v["overall"] == pytest.approx(10 / 3)  # mean / wstd
    # horizontal (cell to the left minus cell): column 1: [6-5, 3-0] = [1, 3]; column 2: [5-2] = [3]
    h = authors_gradient(M, direction="horizontal")
    assert (h["mean"], h["std"], h["wstd"]) == pytest.approx((7 / 3, 2 * math.sqrt(2) / 3, 1.0))
    assert authors_gradient(M[:, ::-1], direction="horizontal")["mean"] < 0  # Backdrop's earlier set takes |differences|


def test_diagonal_gradient_and_overall():
    drawn = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 5.0, 1.0, 2.0], [3.0, 1.0, 0.0, 6.0], [2.0, 2.0, 2.0, 2.0]])
    # up-left minus cell: row 1: [1-5, 2-1] = [-4, 1]; row 2: [0-1] = [-1]
    d = authors_gradient(drawn[::-1], direction="diagonal")
    assert d["mean"] == pytest.approx(-4 / 3)
    assert d["std"] == pytest.approx(math.sqrt(38) / 3)  # variance (64 + 49 + 1) / 27
    assert d["overall"] == pytest.approx(-4 / math.sqrt(38))  # mean / std for the diagonal
    # on M the diagonal has the single difference 6 - 0 (std 0, overall 0 by convention), so the
    # overall gradient is the mean of 10/3, 7/3 and 0
    assert authors_features(M)["gradient_overall"] == pytest.approx(17 / 9)


def test_nested_centre_crops_and_sensitivity():
    framed = np.pad(M, 1, constant_values=9.0)
    features = authors_features(framed, crops=(1,))
    whole = authors_features(M)
    assert list(features)[: len(AUTHORS_FEATURE_NAMES)] == list(AUTHORS_FEATURE_NAMES)
    for name in AUTHORS_FEATURE_NAMES:
        assert features[f"{name}_crop1"] == pytest.approx(whole[name]), name
    with pytest.raises(InvalidInputError, match="crop margins"):
        authors_features(framed, crops=(2,))
    assert sensitivity(M, M - 0.5) == pytest.approx(4.5)  # nine cells, 0.5 each
    with pytest.raises(InvalidInputError, match="shape"):
        sensitivity(M, framed)


@pytest.mark.parametrize("level", [0.0, 0.3])
def test_a_flat_matrix_measures_0_where_the_authors_divide_by_0(level):
    """Issue 48: a fully background-invariant model draws a constant (often all-zero) matrix. The
    authors' code divides 0 by 0 there: NaN for discontinuity, asymmetry (all-zero only: their
    level, sum / (n*n - n), is 0) and grad_overall (each gradient's mean over its spread). Backdrop
    keeps 0 for each (docs/method.md, differences table): every feature stays finite, as the
    assessor's learners need (scikit-learn's AdaBoost refuses NaN)."""
    flat = np.full((6, 6), level)
    features = authors_features(flat, crops=(1,))
    assert all(math.isfinite(value) for value in features.values())
    for name in ("discontinuity", "asymmetry", "gradient_overall", "discontinuity_crop1", "gradient_overall_crop1"):
        assert features[name] == 0.0, name
    assert authors_discontinuity(flat) == authors_asymmetry(flat) == 0.0
    for direction in ("vertical", "horizontal", "diagonal"):
        assert authors_gradient(flat, direction=direction) == {"mean": 0.0, "std": 0.0, "wstd": 0.0, "overall": 0.0}
    assert features["mean"] == pytest.approx(level) and features["std"] == pytest.approx(0.0, abs=1e-12)
