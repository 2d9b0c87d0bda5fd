"""Point clouds and RBF-interpolated variance matrices, their features and worst-case accuracy.
"""

from .accuracy import (
    worst_case_accuracy,
    worst_case_correct,
)
from .features import (
    DEFAULT_THRESHOLD,
    FEATURE_NAMES,
    GRADIENT_DIRECTIONS,
    asymmetry,
    discontinuity,
    error_rate,
    gradient_max,
    gradient_mean,
    matrix_features,
    matrix_mean,
    matrix_std,
)
from .matrix import (
    CUSTOM,
    DEFAULT_GRID,
    DEFAULT_K,
    DEFAULT_SETTINGS,
    PRESETS,
    MatrixSettings,
    VarianceMatrix,
    variance_matrix,
)
from .point_cloud import (
    PointCloud,
    point_cloud,
)

__all__ = [
    "CUSTOM",
    "DEFAULT_GRID",
    "DEFAULT_K",
    "DEFAULT_SETTINGS",
    "DEFAULT_THRESHOLD",
    "FEATURE_NAMES",
    "GRADIENT_DIRECTIONS",
    "PRESETS",
    "MatrixSettings",
    "PointCloud",
    "VarianceMatrix",
    "asymmetry",
    "discontinuity",
    "error_rate",
    "gradient_max",
    "gradient_mean",
    "matrix_features",
    "matrix_mean",
    "matrix_std",
    "point_cloud",
    "variance_matrix",
    "worst_case_accuracy",
    "worst_case_correct",
]
