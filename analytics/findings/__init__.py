"""What the results say: failures by scene keyword, galleries and flips, the self-contained report.
"""

from .baseline import keyword_changes, paired_test
from .failures import FailureTable, background_keywords, composite_table, failure_table, keyword_model_matrix
from .galleries import (
    ClassGallery,
    GalleryItem,
    flips,
    fooling_backgrounds,
    item_images,
    item_saliency,
)
from .headline import HEADLINE_ALPHA, Headline, composite_outcomes, composite_ranking, headline, main_suite_first, telling_signal
from .report import SECTIONS, build_report

__all__ = [
    "HEADLINE_ALPHA",
    "SECTIONS",
    "ClassGallery",
    "FailureTable",
    "GalleryItem",
    "Headline",
    "background_keywords",
    "build_report",
    "composite_outcomes",
    "composite_ranking",
    "composite_table",
    "failure_table",
    "flips",
    "fooling_backgrounds",
    "headline",
    "item_images",
    "item_saliency",
    "keyword_changes",
    "keyword_model_matrix",
    "main_suite_first",
    "paired_test",
    "telling_signal",
]
