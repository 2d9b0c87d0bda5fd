"""Point clouds and RBF-interpolated variance matrices, their features (Backdrop's and the ML4ML authors') and worst-case accuracy.
"""

from .accuracy import accuracy_summary, worst_case_correct
from .authors import AUTHORS_FEATURE_NAMES, authors_features, sensitivity
from .features import DEFAULT_ERROR_THRESHOLD, FEATURE_NAMES, matrix_features
from .matrix import (
    CUSTOM,
    DEFAULT_K,
    DEFAULT_MATRIX_GRID,
    DEFAULT_SETTINGS,
    PRESETS,
    WINDOW_SHAPES,
    MatrixSettings,
    VarianceMatrix,
    cloud_matrices,
    variance_matrix,
)
from .point_cloud import PointCloud, signal_point_clouds

__all__ = [
    "AUTHORS_FEATURE_NAMES",
    "CUSTOM",
    "DEFAULT_ERROR_THRESHOLD",
    "DEFAULT_K",
    "DEFAULT_MATRIX_GRID",
    "DEFAULT_SETTINGS",
    "FEATURE_NAMES",
    "PRESETS",
    "WINDOW_SHAPES",
    "MatrixSettings",
    "PointCloud",
    "VarianceMatrix",
    "accuracy_summary",
    "authors_features",
    "cloud_matrices",
    "matrix_features",
    "sensitivity",
    "signal_point_clouds",
    "variance_matrix",
    "worst_case_correct",
]
