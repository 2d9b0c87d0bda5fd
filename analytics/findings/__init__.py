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
    ClassGallery,
    GalleryItem,
    flips,
    fooling_backgrounds,
    item_images,
    item_saliency,
)
from .headline import (
    HEADLINE_ALPHA,
    Headline,
    composite_outcomes,
    composite_ranking,
    headline,
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
    "HEADLINE_ALPHA",
    "KEYWORD_COLUMNS",
    "LEVEL_COLUMNS",
    "SECTIONS",
    "ClassGallery",
    "FailureTable",
    "GalleryItem",
    "Headline",
    "PairedTest",
    "background_keywords",
    "build_report",
    "composite_outcomes",
    "composite_ranking",
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
    "main_suite_first",
    "main_suite_runs",
    "paired_test",
    "telling_signal",
    "thumbnail_uri",
]
