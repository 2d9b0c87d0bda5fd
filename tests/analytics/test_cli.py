"""``python -m analytics``'s output conventions: strict JSON (no bare NaN) from every command."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from analytics.cli import main
from analytics.workspace import to_json


def strict_loads(text: str):
    """``json.loads`` that refuses NaN / Infinity (Python's parser accepts them by default)."""

    def refuse(constant: str):
        raise ValueError(f"invalid JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def test_suite_json_without_distances_prints_null_not_nan(capsys, tiny_workspace):
    # no registered model: the random suite stores no distances, so their mean and spread are NaN
    code = main(["suite", "--workspace", str(tiny_workspace.root), "--method", "random", "--n", "2", "--realism-threshold", "0", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    result = strict_loads(out)
    assert result["distance_mean"] is None and result["distance_std"] is None
    assert result["targets"] == 6


def test_to_json_maps_every_non_finite_value_to_null():
    value = {"a": float("nan"), "b": [np.float32("inf"), 1.5], "c": np.array([np.nan, 2.0]), 3: (-math.inf, np.int64(4))}
    assert strict_loads(to_json(value)) == {"a": None, "b": [None, 1.5], "c": [None, 2.0], "3": [None, 4]}
    with pytest.raises(TypeError, match="set is not JSON serialisable"):
        to_json({"x": {1}})
