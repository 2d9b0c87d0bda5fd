"""Comparing test methods (the paper's Table 1): neuron coverage and the method comparison.
"""

from .coverage import DEFAULT_COVERAGE_THRESHOLD, suite_coverage
from .methods import (
    DEFAULT_METHODS,
    DEFAULT_N,
    DEFAULT_SEED_COUNT,
    DEFAULT_TARGETS,
    PAPER_TABLE,
    comparison_targets,
    estimate_seconds,
    method_comparison,
    method_requirements,
    params_estimate_seconds,
    record_step_cost,
)

__all__ = [
    "DEFAULT_METHODS",
    "DEFAULT_N",
    "DEFAULT_SEED_COUNT",
    "DEFAULT_TARGETS",
    "DEFAULT_COVERAGE_THRESHOLD",
    "PAPER_TABLE",
    "comparison_targets",
    "estimate_seconds",
    "method_comparison",
    "method_requirements",
    "params_estimate_seconds",
    "record_step_cost",
    "suite_coverage",
]
