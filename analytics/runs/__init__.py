"""Runs: one model over one suite, read back as arrays, summarised, turned into matrices, drilled into, exported.
"""

from .colour_scale import (
    PROBABILITY_SIGNALS,
    QUANTILE_LEVELS,
    REFERENCE_PERCENTILE,
    ColourScale,
    cell_quantiles,
    pooled_percentile,
    reference_tops,
    run_cell_quantiles,
    suite_colour_scale,
)
from .drill_down import (
    cell_pairs,
    compose_images,
)
from .export import (
    VARIANCE_COLOURS,
    export_run,
    render_matrix,
)
from .matrices import (
    SUBSAMPLE_SEED,
    SUBSAMPLE_SHARE,
    cached_matrices,
    matrices_from_clouds,
    matrix_difference,
    run_matrices,
    run_point_clouds,
    subsample_matrices,
)
from .read import (
    IMAGE_COLUMNS,
    RUN_COLUMNS,
    SIGNALS,
    RunData,
    current_runs,
    image_table,
    list_runs,
    load_run,
    run_details,
    run_row,
    runs_of_class,
    runs_snapshot,
    summarize_run,
    target_table,
)
from .start import (
    complete_runs,
    start_runs,
)

__all__ = [
    "IMAGE_COLUMNS",
    "PROBABILITY_SIGNALS",
    "QUANTILE_LEVELS",
    "REFERENCE_PERCENTILE",
    "RUN_COLUMNS",
    "SIGNALS",
    "SUBSAMPLE_SEED",
    "SUBSAMPLE_SHARE",
    "VARIANCE_COLOURS",
    "ColourScale",
    "RunData",
    "cached_matrices",
    "cell_pairs",
    "cell_quantiles",
    "complete_runs",
    "compose_images",
    "current_runs",
    "export_run",
    "image_table",
    "list_runs",
    "load_run",
    "matrices_from_clouds",
    "matrix_difference",
    "pooled_percentile",
    "reference_tops",
    "render_matrix",
    "run_cell_quantiles",
    "run_details",
    "run_matrices",
    "run_point_clouds",
    "run_row",
    "runs_of_class",
    "runs_snapshot",
    "start_runs",
    "subsample_matrices",
    "suite_colour_scale",
    "summarize_run",
    "target_table",
]
