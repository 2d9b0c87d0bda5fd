"""Runs: one model over one suite, read back as arrays, summarised, turned into matrices, drilled into, exported.
"""

from analytics._choices import CONV_SIGNALS, SIGNALS

from .colour_scale import EMBEDDING_RANGE, PROBABILITY_SIGNALS, ColourScale, missing_cell_quantiles, suite_colour_scale
from .drill_down import (
    cell_pairs,
    compose_images,
)
from .export import (
    VARIANCE_COLOURS,
    export_run,
    render_matrix,
)
from .matrices import MATRIX_TARGETS, cached_matrices, matrix_difference, run_matrices, run_point_clouds, subsample_matrices
from .read import (
    RunData,
    check_run_classes,
    current_runs,
    image_table,
    list_runs,
    load_run,
    run_accuracies,
    run_of_classes,
    run_row,
    run_summary,
    runs_of_class,
    runs_snapshot,
    signal_peaks,
    target_table,
)
from .signal_differences import suite_signal_differences
from .start import complete_runs, start_runs, start_runs_that_can

__all__ = [
    "CONV_SIGNALS",
    "PROBABILITY_SIGNALS",
    "EMBEDDING_RANGE",
    "SIGNALS",
    "MATRIX_TARGETS",
    "VARIANCE_COLOURS",
    "ColourScale",
    "RunData",
    "cached_matrices",
    "cell_pairs",
    "check_run_classes",
    "complete_runs",
    "compose_images",
    "current_runs",
    "export_run",
    "image_table",
    "list_runs",
    "load_run",
    "matrix_difference",
    "missing_cell_quantiles",
    "suite_signal_differences",
    "render_matrix",
    "run_accuracies",
    "run_matrices",
    "run_of_classes",
    "run_point_clouds",
    "run_row",
    "run_summary",
    "runs_of_class",
    "runs_snapshot",
    "signal_peaks",
    "start_runs",
    "start_runs_that_can",
    "subsample_matrices",
    "suite_colour_scale",
    "target_table",
]
