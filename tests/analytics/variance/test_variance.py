"""Tests of analytics.variance: point clouds, the RBF variance matrix against a naive reference,
worst-case accuracy and the matrix features."""

from __future__ import annotations

import numpy as np
import pytest

from analytics.exceptions import InvalidInputError
from analytics.variance import (
    DEFAULT_MATRIX_GRID,
    FEATURE_NAMES,
    PRESETS,
    WINDOW_SHAPES,
    _circle_sums,
    accuracy_summary,
    cloud_matrices,
    matrix_features,
    signal_point_clouds,
    variance_matrix,
    worst_case_correct,
)
from analytics.variance.accuracy import worst_case_accuracy
from analytics.variance.features import asymmetry, discontinuity, error_rate, gradient_max, gradient_mean, matrix_mean, matrix_std
from analytics.variance.point_cloud import point_cloud
from benchmarks._naive import naive_variance_matrix


def _random_cloud(n_points: int, seed: int, *, spread: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    points = rng.gamma(2.0, 0.2, size=(n_points, 2)) * spread
    return points, rng.random(n_points)


# ---------------------------------------------------------------------------------------------------
# point_cloud
# ---------------------------------------------------------------------------------------------------


def test_point_cloud_matches_hand_computed_example():
    distances = np.array([[0.0, 0.2, 0.5], [0.0, 0.3, 0.1]])
    signals = np.array([[0.9, 0.6, 0.1], [0.8, 0.8, 0.4]])
    cloud = point_cloud(distances, signals)

    pairs = [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert cloud.pairs.tolist() == [list(p) for p in pairs] * 2
    assert cloud.targets.tolist() == [0] * 6 + [1] * 6
    expected_points = [
        [0.0, 0.2], [0.0, 0.5], [0.2, 0.0], [0.2, 0.5], [0.5, 0.0], [0.5, 0.2],
        [0.0, 0.3], [0.0, 0.1], [0.3, 0.0], [0.3, 0.1], [0.1, 0.0], [0.1, 0.3],
    ]  # fmt: skip
    expected_values = [0.3, 0.8, 0.3, 0.5, 0.8, 0.5, 0.0, 0.4, 0.0, 0.4, 0.4, 0.4]
    np.testing.assert_allclose(cloud.points, expected_points)
    np.testing.assert_allclose(cloud.values, expected_values, atol=1e-12)
    assert len(cloud) == 2 * 2 * 3
    assert cloud.points.dtype == np.float64 and cloud.targets.dtype == np.int32 and cloud.pairs.dtype == np.int32


def test_point_cloud_keys_lead_back_to_the_inputs():
    rng = np.random.default_rng(3)
    distances, signals = rng.random((7, 5)), rng.random((7, 5))
    cloud = point_cloud(distances, signals)
    t, j, k = cloud.targets, cloud.pairs[:, 0], cloud.pairs[:, 1]
    assert len(cloud) == 7 * 4 * 5
    assert (j != k).all()
    np.testing.assert_array_equal(cloud.points[:, 0], distances[t, j])
    np.testing.assert_array_equal(cloud.points[:, 1], distances[t, k])
    np.testing.assert_array_equal(cloud.values, np.abs(signals[t, j] - signals[t, k]))
    assert not cloud.points.flags.writeable


@pytest.mark.parametrize(
    ("distances", "signals", "match"),
    [
        ([[0.0, np.nan]], [[0.1, 0.2]], "distances holds 1 NaN"),
        ([[0.0, 0.1]], [[0.1, np.inf]], "signals holds 1 NaN or infinite"),
        ([[0.0, 0.1, 0.2]], [[0.1, 0.2]], "same shape"),
        ([[0.0, -0.1]], [[0.1, 0.2]], "must be >= 0"),
        ([[0.0], [0.0]], [[0.1], [0.2]], "at least one target and the original plus one composite"),
        ([0.0, 0.1], [0.1, 0.2], r"shape \(n_targets, n \+ 1\)"),
        ([["a", "b"]], [[0.1, 0.2]], "must hold numbers"),
    ],
)
def test_point_cloud_rejects_bad_input(distances, signals, match):
    with pytest.raises(InvalidInputError, match=match):
        point_cloud(distances, signals)


def test_point_clouds_of_several_signals_equal_one_cloud_each_and_share_the_points():
    rng = np.random.default_rng(11)
    distances = rng.gamma(3.0, 0.1, size=(6, 5))
    signals = {name: rng.random((6, 5)) for name in ("a", "b")}
    clouds = signal_point_clouds(distances, signals)
    assert list(clouds) == ["a", "b"]
    for name, table in signals.items():
        alone = point_cloud(distances, table)
        for field in ("points", "values", "targets", "pairs", "distances", "signals"):
            np.testing.assert_array_equal(getattr(clouds[name], field), getattr(alone, field))
    assert clouds["a"].points is clouds["b"].points and clouds["a"].pairs is clouds["b"].pairs  # built once
    assert not clouds["a"].points.flags.writeable and not clouds["b"].values.flags.writeable
    bad = signals["b"].copy()
    bad[0, 1] = np.nan
    with pytest.raises(InvalidInputError, match=r"signals\['b'\] holds 1 NaN"):
        signal_point_clouds(distances, {"a": signals["a"], "b": bad})


# ---------------------------------------------------------------------------------------------------
# variance_matrix against the naive reference
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_points", "grid", "window", "sigma", "k", "d_max_factor", "seed"),
    [
        (500, 8, 4, 1.0, 5, None, 0),
        (2_000, 16, 16, 5.0, 32, None, 1),
        (1_500, 12, 32, 10.0, 32, None, 2),  # window wider than the grid
        (20_000, 6, 3, 0.8, 7, None, 3),  # more points than one block of the fast path
        (10, 9, 2, 0.5, 32, None, 4),  # fewer points than k
        (1, 5, 2, 1.0, 3, None, 5),  # a single point
        (800, 10, 6, 2.0, 16, 0.5, 6),  # d_max cuts the cloud: points outside the grid
        (800, 7, 1, 3.0, 1, 1.7, 7),  # grid wider than the cloud, tiny window, k = 1
        (3_000, 40, 6, 2.0, 8, 0.7, 8),  # many tiles, the last one partial; points beyond d_max
        (2_000, 64, 32, 10.0, 32, None, 9),  # many tiles, each window reaching several of them
    ],
)
@pytest.mark.parametrize("window_shape", WINDOW_SHAPES)
def test_fast_matches_naive_on_random_clouds(n_points, grid, window, sigma, k, d_max_factor, seed, window_shape):
    points, values = _random_cloud(n_points, seed)
    d_max = None if d_max_factor is None else d_max_factor * float(points.max())
    result = variance_matrix(points, values, grid=grid, window=window, sigma=sigma, k=k, d_max=d_max, window_shape=window_shape)
    expected = naive_variance_matrix(
        points, values, grid=grid, window=window, sigma=sigma, k=k, d_max=result.d_max, window_shape=window_shape
    )
    assert result.matrix.shape == (grid, grid)
    np.testing.assert_allclose(result.matrix, expected, rtol=0, atol=1e-9)
    settings = {"grid": grid, "window": window, "sigma": sigma, "k": k, "window_shape": window_shape, "d_max": result.d_max}
    assert result.settings == settings


@pytest.mark.parametrize(
    ("n_targets", "n_images", "grid", "window", "sigma", "k", "d_max_factor", "seed"),
    [
        (60, 33, 32, 8, 2.0, 32, None, 0),
        (40, 9, 16, 16, 5.0, 32, None, 1),
        (25, 17, 12, 32, 10.0, 8, None, 2),  # window wider than the grid
        (3, 2, 9, 2, 0.5, 32, None, 3),  # one composite a target, fewer points than k
        (1, 2, 5, 2, 1.0, 1, None, 4),  # two points
        (30, 12, 10, 6, 2.0, 16, 0.6, 5),  # d_max cuts the cloud: points outside the grid
        (300, 7, 7, 1, 3.0, 1, 1.7, 6),  # more images than one chunk of targets, tiny window, k = 1
    ],
)
@pytest.mark.parametrize("window_shape", WINDOW_SHAPES)
def test_cloud_matrices_match_variance_matrix(n_targets, n_images, grid, window, sigma, k, d_max_factor, seed, window_shape):
    rng = np.random.default_rng(seed)
    distances = rng.gamma(3.0, 0.1, size=(n_targets, n_images))
    distances[:, 0] = 0.0
    signals = {name: rng.random((n_targets, n_images)) for name in ("a", "b", "c")}
    clouds = {name: point_cloud(distances, table) for name, table in signals.items()}
    d_max = None if d_max_factor is None else d_max_factor * float(distances.max())
    settings = {"grid": grid, "window": window, "sigma": sigma, "k": k, "d_max": d_max, "window_shape": window_shape}
    result = cloud_matrices(clouds, **settings)
    assert list(result) == list(clouds)
    for name, cloud in clouds.items():
        expected = variance_matrix(cloud.points, cloud.values, **settings)
        np.testing.assert_allclose(result[name].matrix, expected.matrix, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(result[name].edges, expected.edges)
        assert result[name].settings == expected.settings


def test_cloud_matrices_with_tied_distances_match_the_naive_reference():
    # Repeated distances put points on the diagonal and several at one distance from a centre.
    rng = np.random.default_rng(7)
    distances = rng.choice([0.1, 0.2, 0.35, 0.5], size=(20, 6))
    distances[:, 0] = 0.0
    signals = np.repeat(rng.random((20, 1)), 6, axis=1) + np.where(distances > 0.3, 0.5, 0.0)
    cloud = point_cloud(distances, signals)
    result = cloud_matrices({"s": cloud}, grid=8, window=4, sigma=1.0, k=5)["s"]
    expected = naive_variance_matrix(cloud.points, cloud.values, grid=8, window=4, sigma=1.0, k=5, d_max=result.d_max)
    # The value depends on the coordinates only, so whichever tied points fill the k nearest, u(e) is the same.
    np.testing.assert_allclose(result.matrix, expected, rtol=0, atol=1e-9)


def test_cloud_matrices_refuse_clouds_of_other_distances():
    rng = np.random.default_rng(8)
    signals = rng.random((4, 5))
    first, second = (point_cloud(rng.random((4, 5)), signals) for _ in range(2))
    with pytest.raises(InvalidInputError, match="cloud 'b' has other distances than cloud 'a'"):
        cloud_matrices({"a": first, "b": second})
    with pytest.raises(InvalidInputError, match="clouds is empty"):
        cloud_matrices({})


def test_cells_without_points_in_their_window_take_the_nearest_mean():
    # All points in the bottom-left corner; cells far away see none inside their window.
    points, values = _random_cloud(300, 11, spread=0.1)
    d_max = 10 * float(points.max())
    result = variance_matrix(points, values, grid=10, window=2, sigma=1.0, k=4, d_max=d_max)
    far = result.matrix[9, 9]
    centre = result.centres[9]
    nearest = np.argsort(np.hypot(*(points - centre).T))[:4]
    assert far == pytest.approx(values[nearest].mean(), abs=1e-12)
    expected = naive_variance_matrix(points, values, grid=10, window=2, sigma=1.0, k=4, d_max=d_max)
    np.testing.assert_allclose(result.matrix, expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_presets_match_naive(preset):
    window, sigma = PRESETS[preset]
    points, values = _random_cloud(1_000, 21)
    result = variance_matrix(points, values, window=window, sigma=sigma)  # the default grid
    assert result.grid == DEFAULT_MATRIX_GRID
    expected = naive_variance_matrix(points, values, grid=DEFAULT_MATRIX_GRID, window=window, sigma=sigma, k=32, d_max=result.d_max)
    np.testing.assert_allclose(result.matrix, expected, rtol=0, atol=1e-9)


def test_points_below_zero_reach_the_first_cells_exactly():
    points, values = _random_cloud(1_000, 22)
    points = points - 0.3  # some coordinates negative: they join the first tile
    result = variance_matrix(points, values, grid=24, window=8, sigma=3.0, d_max=float(points.max()))
    expected = naive_variance_matrix(points, values, grid=24, window=8, sigma=3.0, k=32, d_max=result.d_max)
    np.testing.assert_allclose(result.matrix, expected, rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------------------------------
# the circular window (issue 41: the paper's circle, the square one option away)
# ---------------------------------------------------------------------------------------------------

# One target on a grid of 8 cells over d_max = 8, so a distance is its coordinate in cells: images at
# x = 0, 2.5, 4.5, 3.5 with signals 0.9, 0.6, 0.1, 0.2. Window 4 (radius 2), sigma 1, K = 1.
_HAND_DISTANCES = np.array([[0.0, 2.5, 4.5, 3.5]])
_HAND_SIGNALS = np.array([[0.9, 0.6, 0.1, 0.2]])
_HAND_SETTINGS = {"grid": 8, "window": 4, "sigma": 1.0, "k": 1, "d_max": 8.0}


def _hand_cell(terms: list[tuple[float, float]], nearest: float) -> float:
    """value(e) from its points as (squared distance in cells, value) and u(e) (phi(0) = 1)."""
    phi = [np.exp(-r2 / 2) for r2, _ in terms]
    return (nearest + sum(p * v for p, (_, v) in zip(phi, terms))) / (1 + sum(phi))


def _hand_paths(window_shape: str) -> dict[str, np.ndarray]:
    cloud = point_cloud(_HAND_DISTANCES, _HAND_SIGNALS)
    settings = {**_HAND_SETTINGS, "window_shape": window_shape}
    return {
        "points": variance_matrix(cloud.points, cloud.values, **settings).matrix,
        "clouds": cloud_matrices({"s": cloud}, **settings)["s"].matrix,
    }


@pytest.mark.parametrize("path", ["points", "clouds"])
def test_circular_window_counts_the_points_within_the_radius_by_hand(path):
    circle, square = _hand_paths("circle")[path], _hand_paths("square")[path]
    # Cell (row 2, col 2), centre (2.5, 2.5). Inside the circle: (2.5, 4.5) and (4.5, 2.5) on its rim
    # (r² = 4, value |0.6 - 0.1| = 0.5), (2.5, 3.5) and (3.5, 2.5) (r² = 1, value 0.4); the nearest
    # point is one of the last two (u = 0.4). The square's corners add (4.5, 3.5) and (3.5, 4.5)
    # (r² = 5 > 4, value |0.1 - 0.2| = 0.1).
    inside = [(4, 0.5), (4, 0.5), (1, 0.4), (1, 0.4)]
    assert circle[2, 2] == pytest.approx(_hand_cell(inside, 0.4), abs=1e-15)
    assert square[2, 2] == pytest.approx(_hand_cell([*inside, (5, 0.1), (5, 0.1)], 0.4), abs=1e-15)
    # Cell (row 1, col 2), centre (2.5, 1.5): (2.5, 0) r² 2.25 value 0.3, (2.5, 3.5) on the rim value
    # 0.4, (3.5, 2.5) r² 2 value 0.4 (the nearest), (3.5, 0) r² 3.25 value 0.7. The square adds
    # (4.5, 2.5) r² 5 value 0.5, (4.5, 0) r² 6.25 value 0.8 and (4.5, 3.5) r² 8 value 0.1.
    inside = [(2.25, 0.3), (4, 0.4), (2, 0.4), (3.25, 0.7)]
    assert circle[1, 2] == pytest.approx(_hand_cell(inside, 0.4), abs=1e-15)
    assert square[1, 2] == pytest.approx(_hand_cell([*inside, (5, 0.5), (6.25, 0.8), (8, 0.1)], 0.4), abs=1e-15)
    # the mirror cell (row 2, col 1) holds the mirrored points (j, k) -> (k, j), of equal values
    assert circle[2, 1] == pytest.approx(circle[1, 2], abs=1e-15)
    cloud = point_cloud(_HAND_DISTANCES, _HAND_SIGNALS)
    expected = naive_variance_matrix(cloud.points, cloud.values, **_HAND_SETTINGS)
    np.testing.assert_allclose(circle, expected, rtol=0, atol=1e-14)


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "numba"])
@pytest.mark.parametrize("grid", [32, DEFAULT_MATRIX_GRID])
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_circle_is_exact_against_brute_force_for_every_preset(preset, grid, compiled, monkeypatch):
    if compiled:  # this small cloud takes the NumPy path (analytics.variance._circle_sums) unless told otherwise
        monkeypatch.setattr(_circle_sums, "NUMPY_MAX_WORK", 0)
    window, sigma = PRESETS[preset]
    rng = np.random.default_rng(41)
    distances = rng.gamma(3.0, 0.1, size=(24, 9))
    distances[:, 0] = 0.0
    cloud = point_cloud(distances, rng.random((24, 9)))
    settings = {"grid": grid, "window": window, "sigma": sigma, "k": 32}
    expected = naive_variance_matrix(cloud.points, cloud.values, **settings, d_max=float(distances.max()))
    np.testing.assert_allclose(cloud_matrices({"s": cloud}, **settings)["s"].matrix, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(variance_matrix(cloud.points, cloud.values, **settings).matrix, expected, rtol=0, atol=1e-12)
    square = cloud_matrices({"s": cloud}, **settings, window_shape="square")["s"]
    assert square.window_shape == "square"
    if preset != "fine":  # sigma 2 leaves the square's corners (r >= window / 2 = 16) weights of ~1e-14
        assert np.abs(square.matrix - expected).max() > 1e-3


def test_window_shape_is_checked():
    with pytest.raises(InvalidInputError, match="window_shape must be one of 'circle', 'square'; got 'round'"):
        variance_matrix([[0.1, 0.2]], [0.5], window_shape="round")
    cloud = point_cloud(_HAND_DISTANCES, _HAND_SIGNALS)
    with pytest.raises(InvalidInputError, match="window_shape must be one of"):
        cloud_matrices({"s": cloud}, window_shape="round")


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_keeps_a_failure_band_above_the_both_fail_corner(preset):
    # Predictions fail for d > 0.85: pairs with one failing image (the band) change by 0.9, pairs
    # where both fail (the far corner) or both pass hardly change.
    rng = np.random.default_rng(0)
    distances = rng.uniform(0.0, 1.0, (60, 33))
    distances[:, 0] = 0.0
    signals = np.where(distances > 0.85, 0.05, 0.95) + rng.normal(0, 0.01, distances.shape)
    cloud = point_cloud(distances, signals)
    window, sigma = PRESETS[preset]
    result = variance_matrix(cloud.points, cloud.values, window=window, sigma=sigma, d_max=1.0)
    m, fails = result.matrix, result.centres > 0.85
    band = m[np.ix_(fails, ~fails)]  # rows: d_ik > 0.85 (k fails), columns: d_ij <= 0.85 (j passes)
    corner = m[np.ix_(fails, fails)]
    row, col = np.unravel_index(m.argmax(), m.shape)
    assert fails[row] != fails[col], "the largest cell must lie in the failure band"
    assert corner.mean() < band.mean()
    assert m[-1, -1] < band.max() / 4  # the both-fail corner (true change ~0.01) stays low


def test_background_independent_signal_gives_a_zero_matrix():
    rng = np.random.default_rng(5)
    distances = rng.gamma(3.0, 0.1, size=(40, 9))
    distances[:, 0] = 0.0
    signals = np.repeat(rng.random((40, 1)), 9, axis=1)  # each target keeps its own signal on every image
    cloud = point_cloud(distances, signals)
    result = variance_matrix(cloud.points, cloud.values, grid=16, window=16, sigma=5.0)
    assert np.abs(result.matrix).max() < 1e-12


def test_background_dependent_signal_shows_up_off_the_diagonal():
    rng = np.random.default_rng(6)
    distances = rng.uniform(0.0, 1.0, size=(40, 9))
    distances[:, 0] = 0.0
    signals = distances.copy()  # the signal follows the scene: |S_ij - S_ik| = |d_ij - d_ik|
    cloud = point_cloud(distances, signals)
    result = variance_matrix(cloud.points, cloud.values, grid=16, window=4, sigma=1.0)
    assert result.matrix.mean() > 0.2
    corners = (result.matrix[0, -1] + result.matrix[-1, 0]) / 2
    assert corners > 0.6
    assert np.diag(result.matrix).max() < 0.2
    # Both orders of every pair are in the cloud, so the matrix is symmetric.
    assert asymmetry(result.matrix) < 1e-12


def test_points_in_cell_partition_the_cloud():
    points, _ = _random_cloud(2_000, 8)
    result = variance_matrix(points, np.zeros(len(points)), grid=5, window=2, sigma=1.0, d_max=0.6)
    inside = (points <= 0.6).all(axis=1)
    seen = np.zeros(len(points), dtype=int)
    for row in range(5):
        for col in range(5):
            found = result.points_in_cell(points, row, col)
            seen[found] += 1
            lo, hi = result.edges[[col, row]], result.edges[[col + 1, row + 1]]
            assert ((points[found] >= lo) & (points[found] <= hi)).all()
    np.testing.assert_array_equal(seen, inside.astype(int))
    index = np.flatnonzero(inside)[0]
    row, col = result.cell_at(*points[index])
    assert index in result.points_in_cell(points, row, col)
    assert result.cell_at(0.6, 0.6) == (4, 4)


def test_drill_down_rejects_bad_cells():
    result = variance_matrix([[0.1, 0.2], [0.3, 0.4]], [0.0, 1.0], grid=4, window=2, sigma=1.0)
    with pytest.raises(InvalidInputError, match=r"row must be an integer in \[0, 3\]"):
        result.points_in_cell(np.zeros((1, 2)), 4, 0)
    with pytest.raises(InvalidInputError, match="outside the matrix range"):
        result.cell_at(0.5, 0.1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"points": [[0.1, np.nan]]}, "points holds 1 NaN"),
        ({"points": [0.1, 0.2]}, r"shape \(n_points, 2\)"),
        ({"values": [0.1, 0.2]}, r"values must be numeric of shape \(n_points,\) = \(1,\)"),
        ({"values": ["a"]}, "dtype <U1"),
        ({"values": [np.nan]}, "values holds 1 NaN"),
        ({"grid": 0}, "grid must be an integer >= 1"),
        ({"grid": True}, "grid must be an integer >= 1"),
        ({"window": 2.5}, "window must be an integer >= 1"),
        ({"sigma": 0.0}, "sigma must be a finite number > 0"),
        ({"k": 0}, "k must be an integer >= 1"),
        ({"d_max": -1.0}, "d_max must be a finite number > 0"),
        ({"points": [[0.0, 0.0]]}, "pass d_max > 0 explicitly"),
    ],
)
def test_variance_matrix_rejects_bad_input(kwargs, match):
    arguments = {"points": [[0.1, 0.2]], "values": [0.5]} | kwargs
    points, values = arguments.pop("points"), arguments.pop("values")
    with pytest.raises(InvalidInputError, match=match):
        variance_matrix(points, values, **arguments)


# ---------------------------------------------------------------------------------------------------
# worst-case accuracy
# ---------------------------------------------------------------------------------------------------


def test_worst_case_accuracy_takes_the_worst_background():
    correct = np.array(
        [
            [True, True, True, True],  # correct everywhere
            [True, True, False, True],  # one background breaks it
            [False, True, True, True],  # original wrong, every composite right
        ]
    )
    np.testing.assert_array_equal(worst_case_correct(correct), [True, False, True])
    assert worst_case_accuracy(correct) == pytest.approx(2 / 3)
    assert worst_case_accuracy(correct, include_original=True) == pytest.approx(1 / 3)


@pytest.mark.parametrize("correct", [[[1, 0]], [[True]], [True, False], np.zeros((0, 3), dtype=bool)])
def test_worst_case_accuracy_rejects_bad_input(correct):
    with pytest.raises(InvalidInputError, match=r"bool array of shape \(n_targets, n \+ 1\)"):
        worst_case_accuracy(correct)


def test_accuracy_summary_reports_the_three_accuracies_with_the_original_out_of_the_worst_case():
    correct = np.array([[True, True, False], [False, True, True]])  # the second: wrong only on its own photo
    assert accuracy_summary(correct) == pytest.approx({"accuracy": 4 / 6, "original_accuracy": 0.5, "worst_case_accuracy": 0.5})
    with pytest.raises(InvalidInputError, match="bool array"):
        accuracy_summary([[1, 0]])


# ---------------------------------------------------------------------------------------------------
# features
# ---------------------------------------------------------------------------------------------------

RAMP = np.tile(np.arange(5.0), (5, 1))  # value = column index: slope 1 along x only


def test_constant_matrix_has_no_spread_gradient_or_discontinuity():
    matrix = np.full((6, 6), 0.3)
    assert matrix_mean(matrix) == pytest.approx(0.3)
    assert matrix_std(matrix) == pytest.approx(0.0, abs=1e-15)
    assert discontinuity(matrix) == pytest.approx(0.0, abs=1e-12)
    for direction in ("vertical", "horizontal", "diagonal"):
        assert gradient_mean(matrix, direction=direction) == pytest.approx(0.0, abs=1e-15)
        assert gradient_max(matrix, direction=direction) == pytest.approx(0.0, abs=1e-15)


def test_gradients_of_a_ramp_follow_its_direction():
    assert gradient_mean(RAMP, direction="horizontal") == 1.0
    assert gradient_max(RAMP, direction="horizontal") == 1.0
    assert gradient_mean(RAMP, direction="vertical") == 0.0
    assert gradient_max(RAMP.T, direction="vertical") == 1.0
    assert gradient_mean(RAMP, direction="diagonal") == 1.0
    spike = np.zeros((4, 4))
    spike[2, 1] = 3.0
    assert gradient_max(spike, direction="diagonal") == 3.0
    assert gradient_mean(spike, direction="vertical") == pytest.approx(6.0 / 12)


def test_discontinuity_separates_steps_from_slopes():
    assert discontinuity(RAMP) == pytest.approx(0.0, abs=1e-12)
    checkerboard = (np.indices((4, 4)).sum(axis=0) % 2).astype(float)
    # interior Laplacians are all +-4, the mean cell is 0.5
    assert discontinuity(checkerboard) == pytest.approx(8.0)
    step = np.zeros((6, 6))
    step[:, 3:] = 1.0
    assert discontinuity(step) > 0.5
    assert discontinuity(np.zeros((3, 3))) == 0.0


def test_asymmetry_is_zero_for_symmetric_and_one_for_antisymmetric():
    rng = np.random.default_rng(9)
    a = rng.random((5, 5))
    assert asymmetry(a + a.T) == pytest.approx(0.0, abs=1e-15)
    assert asymmetry(a - a.T) == pytest.approx(1.0)
    anti_symmetric = (a + a[::-1, ::-1].T) / 2
    assert asymmetry(anti_symmetric, about="anti-diagonal") == pytest.approx(0.0, abs=1e-15)
    assert asymmetry(anti_symmetric) > 0.01
    assert asymmetry(np.zeros((3, 3))) == 0.0
    with pytest.raises(InvalidInputError, match="about must be one of"):
        asymmetry(a, about="rows")


def test_error_rate_counts_cells_at_or_above_the_threshold():
    matrix = np.arange(16.0).reshape(4, 4) / 16
    assert error_rate(matrix, threshold=0.5) == 0.5  # 8/16 .. 15/16
    assert error_rate(matrix, threshold=15 / 16) == 1 / 16
    assert error_rate(matrix, threshold=2.0) == 0.0
    with pytest.raises(InvalidInputError, match="threshold must be a finite number"):
        error_rate(matrix, threshold=np.nan)


def test_matrix_features_collects_every_feature():
    rng = np.random.default_rng(10)
    matrix = rng.random((8, 8))
    features = matrix_features(matrix, threshold=0.4)
    assert tuple(features) == FEATURE_NAMES
    assert features["mean"] == matrix_mean(matrix)
    assert features["error_rate"] == error_rate(matrix, threshold=0.4)
    assert features["asymmetry_anti_diagonal"] == asymmetry(matrix, about="anti-diagonal")
    assert features["gradient_diagonal_max"] == gradient_max(matrix, direction="diagonal")
    assert all(isinstance(value, float) for value in features.values())


@pytest.mark.parametrize(
    ("matrix", "match"),
    [
        (np.zeros((2, 2)), "at least 3 x 3"),
        (np.zeros((3, 4)), "square numeric array"),
        (np.array([[0.0, np.nan, 0.0]] * 3), "matrix holds 3 NaN"),
    ],
)
def test_features_reject_bad_matrices(matrix, match):
    with pytest.raises(InvalidInputError, match=match):
        matrix_features(matrix)
    with pytest.raises(InvalidInputError, match="direction must be one of"):
        gradient_mean(np.zeros((3, 3)), direction="up")
