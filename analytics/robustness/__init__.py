"""Neighbouring benchmarks: the Backgrounds Challenge, XIMAGENET-12 scenarios, ImageNet-X factors.
"""

from . import bgchallenge
from .factors import FactorAnalysis, analyse_models, check_file_size, factor_names, load_predictions, matched_rows, predict_imagenet_val
from .scenario_stats import Regression, class_accuracy, robustness_scores, scenario_accuracy, scenario_regression
from .scenarios import DEFAULT_SCENARIO_SET, ORIGINAL, SCENARIO_SETS, SCENARIOS, evaluate_scenarios, scenario_examples

__all__ = [
    "ORIGINAL",
    "SCENARIOS",
    "DEFAULT_SCENARIO_SET",
    "SCENARIO_SETS",
    "FactorAnalysis",
    "Regression",
    "analyse_models",
    "bgchallenge",
    "check_file_size",
    "class_accuracy",
    "evaluate_scenarios",
    "factor_names",
    "load_predictions",
    "matched_rows",
    "predict_imagenet_val",
    "robustness_scores",
    "scenario_accuracy",
    "scenario_examples",
    "scenario_regression",
]
