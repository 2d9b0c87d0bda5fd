"""What the results say: failures by scene keyword, galleries and flips, the self-contained report.
"""

from .failures import (
    BOOTSTRAP_RESAMPLES,
    COMPOSITE_COLUMNS,
    CONFIDENCE,
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
from .report import (
    SECTIONS,
    build_report,
    thumbnail_uri,
)

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "COMPOSITE_COLUMNS",
    "CONFIDENCE",
    "FailureTable",
    "GalleryItem",
    "KEYWORD_COLUMNS",
    "LEVEL_COLUMNS",
    "SECTIONS",
    "background_keywords",
    "build_report",
    "composite_table",
    "failure_table",
    "flips",
    "fooling_backgrounds",
    "group_statistics",
    "item_images",
    "item_saliency",
    "keyword_model_matrix",
    "thumbnail_uri",
]
