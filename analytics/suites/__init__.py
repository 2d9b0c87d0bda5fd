"""Suites: N backgrounds per target picked by a sampler, screened, with semantic distances and provenance.
"""

from .build import DEFAULT_REALISM, DEFAULT_REALISM_THRESHOLD, build_suite, ensure_keyword_tables, ensure_ontology, select_targets
from .naming import NAME_MAX_LENGTH, check_suite_name, distinct_labels
from .sampling import SAMPLERS
from .screening import DEFAULT_SCREENING_THRESHOLD, default_keyword_model, exclusion_summary, own_photo_backgrounds, screen_pool, screening_gaps, screening_warning
from .similarity import default_distance_models, proxy_distances
from .store import Suite, list_suites, load_suite, resolve_suite, suite_exists, suite_labels_of, suite_params, suite_stats

__all__ = [
    "DEFAULT_REALISM",
    "DEFAULT_REALISM_THRESHOLD",
    "DEFAULT_SCREENING_THRESHOLD",
    "NAME_MAX_LENGTH",
    "SAMPLERS",
    "Suite",
    "build_suite",
    "check_suite_name",
    "default_distance_models",
    "default_keyword_model",
    "distinct_labels",
    "ensure_keyword_tables",
    "ensure_ontology",
    "exclusion_summary",
    "list_suites",
    "load_suite",
    "own_photo_backgrounds",
    "proxy_distances",
    "resolve_suite",
    "screen_pool",
    "screening_gaps",
    "screening_warning",
    "select_targets",
    "suite_exists",
    "suite_labels_of",
    "suite_params",
    "suite_stats",
]
