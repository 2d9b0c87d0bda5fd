"""The automated assessor: learns the analysts' labels from matrix or accuracy features.
"""

from .assessors import (
    ASSESSORS,
    INPUTS,
    MAX_EXACT_FEATURES,
    SHAP_PERMUTATIONS,
    AccuracyAdaBoost,
    AccuracyForest,
    AdaBoost,
    Assessor,
    Explanation,
    FittedAssessor,
    RandomForest,
    WorstCaseBaseline,
    explain,
    feature_columns,
    fit_assessor,
    predict,
)
from .evaluation import (
    AssessorReport,
    AssessorScores,
    evaluate_assessors,
)
from .feature_sets import (
    DEFAULT_FEATURE_SET,
    FEATURE_SETS,
    FeatureSet,
    describe_feature,
    matrix_feature_columns,
)
from .features import (
    ACCURACY_COLUMNS,
    FEATURE_COLUMNS,
    WORST_CASE,
    features_table,
    run_features,
)
from .inputs import (
    MIN_MODELS,
    MIN_PER_LABEL,
    human_labels,
    judged_suite,
)

__all__ = [
    "ACCURACY_COLUMNS",
    "ASSESSORS",
    "DEFAULT_FEATURE_SET",
    "FEATURE_COLUMNS",
    "FEATURE_SETS",
    "INPUTS",
    "MAX_EXACT_FEATURES",
    "MIN_MODELS",
    "MIN_PER_LABEL",
    "SHAP_PERMUTATIONS",
    "WORST_CASE",
    "AccuracyAdaBoost",
    "AccuracyForest",
    "AdaBoost",
    "Assessor",
    "AssessorReport",
    "AssessorScores",
    "Explanation",
    "FeatureSet",
    "FittedAssessor",
    "RandomForest",
    "WorstCaseBaseline",
    "describe_feature",
    "evaluate_assessors",
    "explain",
    "feature_columns",
    "features_table",
    "fit_assessor",
    "human_labels",
    "judged_suite",
    "matrix_feature_columns",
    "predict",
    "run_features",
]
