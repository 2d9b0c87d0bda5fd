"""What the results say: failures by scene keyword, galleries and flips, the self-contained report.
"""

from .baseline import (
    CHANGE_COLUMNS,
    PairedTest,
    keyword_changes,
    paired_test,
)
from .failures import (
    COMPOSITE_COLUMNS,
    FAILURE_BOOTSTRAP_RESAMPLES,
    FAILURE_CONFIDENCE,
    KEYWORD_COLUMNS,
    LEVEL_COLUMNS,
    FailureTable,
    background_keywords,
    composite_table,
    failure_table,
    group_statistics,
    keyword_model_matrix,
)
from .galleries import (
    GalleryItem,
    flips,
    fooling_backgrounds,
    item_images,
    item_saliency,
)
from .headline import (
    Headline,
    headline,
    largest_losses,
    main_suite_first,
    main_suite_runs,
    telling_signal,
)
from .report import (
    SECTIONS,
    build_report,
    thumbnail_uri,
)

__all__ = [
    "CHANGE_COLUMNS",
    "COMPOSITE_COLUMNS",
    "FAILURE_BOOTSTRAP_RESAMPLES",
    "FAILURE_CONFIDENCE",
    "KEYWORD_COLUMNS",
    "LEVEL_COLUMNS",
    "SECTIONS",
    "FailureTable",
    "GalleryItem",
    "Headline",
    "PairedTest",
    "background_keywords",
    "build_report",
    "composite_table",
    "failure_table",
    "flips",
    "fooling_backgrounds",
    "group_statistics",
    "headline",
    "item_images",
    "item_saliency",
    "keyword_changes",
    "keyword_model_matrix",
    "largest_losses",
    "main_suite_first",
    "main_suite_runs",
    "paired_test",
    "telling_signal",
    "thumbnail_uri",
]
