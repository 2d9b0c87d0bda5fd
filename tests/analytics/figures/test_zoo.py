"""analytics/figures/zoo.py: the zoo's worst-case accuracy against construction strength."""

from __future__ import annotations

import pandas as pd
import pytest

from analytics.figures import MIN_HEIGHT, reliance_chart
from analytics.figures.zoo import RELIANCE_LINE_NAMES

CURVE = pd.DataFrame(
    {
        "strength": [1.0, 0.0, 0.0, 1.0],
        "augment": [False, False, True, True],
        "worst_case_accuracy": [0.27, 0.8, 0.75, 0.6],
        "lowest": [0.2, 0.7, 0.7, 0.5],
        "highest": [0.3, 0.9, 0.8, 0.65],
        "heads": [3, 3, 3, 3],
    }
)


def test_reliance_chart_draws_plain_and_augmented_heads_as_lines_with_the_seeds_range():
    figure = reliance_chart(CURVE)
    plain, augmented = figure.data
    assert (plain.name, augmented.name) == (RELIANCE_LINE_NAMES[False], RELIANCE_LINE_NAMES[True])
    assert list(plain.x) == [0.0, 1.0] and list(plain.y) == [0.8, 0.27]  # sorted by strength
    assert list(plain.error_y.array) == pytest.approx([0.1, 0.03]) and list(plain.error_y.arrayminus) == pytest.approx([0.1, 0.07])
    assert figure.layout.height >= MIN_HEIGHT and figure.layout.yaxis.tickformat == ".0%"


def test_reliance_chart_of_an_empty_curve_has_no_lines():
    assert not reliance_chart(CURVE.iloc[:0]).data
