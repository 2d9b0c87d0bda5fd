"""The automated assessor: learns the analysts' labels from matrix or accuracy features.
"""

from .assessors import ASSESSORS, INPUTS, MAX_EXACT_FEATURES, SHAP_PERMUTATIONS, FittedAssessor, feature_columns, fit_assessor, predict, shapley_values
from .evaluation import AssessorReport, evaluate_assessors
from .feature_sets import DEFAULT_FEATURE_SET, FEATURE_SETS, describe_feature
from .features import features_table
from .inputs import human_labels, judged_suite
from .verdicts import VERDICT_ASSESSOR, VERDICT_PRESET, VERDICT_SEED, held_out_verdicts, suite_verdicts

__all__ = [
    "ASSESSORS",
    "DEFAULT_FEATURE_SET",
    "FEATURE_SETS",
    "INPUTS",
    "MAX_EXACT_FEATURES",
    "SHAP_PERMUTATIONS",
    "VERDICT_ASSESSOR",
    "VERDICT_PRESET",
    "VERDICT_SEED",
    "AssessorReport",
    "FittedAssessor",
    "describe_feature",
    "evaluate_assessors",
    "feature_columns",
    "features_table",
    "fit_assessor",
    "held_out_verdicts",
    "human_labels",
    "judged_suite",
    "predict",
    "shapley_values",
    "suite_verdicts",
]
