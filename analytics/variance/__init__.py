"""Point clouds and RBF-interpolated variance matrices, their features (Backdrop's and the ML4ML authors') and worst-case accuracy.
"""

from .accuracy import (
    worst_case_accuracy,
    worst_case_correct,
)
from .authors import (
    AUTHORS_FEATURE_NAMES,
    AUTHORS_GRADIENT_STATS,
    authors_asymmetry,
    authors_discontinuity,
    authors_error_rate,
    authors_features,
    authors_gradient,
    gradient_overall,
    sensitivity,
    squared_mean,
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
    cloud_matrices,
    variance_matrix,
)
from .point_cloud import (
    PointCloud,
    point_cloud,
)

__all__ = [
    "AUTHORS_FEATURE_NAMES",
    "AUTHORS_GRADIENT_STATS",
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
    "authors_asymmetry",
    "authors_discontinuity",
    "authors_error_rate",
    "authors_features",
    "authors_gradient",
    "cloud_matrices",
    "discontinuity",
    "error_rate",
    "gradient_max",
    "gradient_mean",
    "gradient_overall",
    "matrix_features",
    "matrix_mean",
    "matrix_std",
    "point_cloud",
    "sensitivity",
    "squared_mean",
    "variance_matrix",
    "worst_case_accuracy",
    "worst_case_correct",
]
