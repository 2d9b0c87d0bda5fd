"""Scene keywords: pluggable backends behind one interface, keyword tables and their storage.

A new backend = one module defining a :class:`KeywordBackend` subclass with a ``name`` + one import
line in the block below (defining the class registers it in :data:`BACKENDS`).
"""

from ._base import KeywordTable, transactions_digest

# Backends: one import line each (importing the module registers its class in BACKENDS).
from .classifier_patch import VOCABULARIES, ClassifierPatchBackend, class_outputs, fill_objects
from .compute import build_keyword_tables, compute_keywords, keyword_table_name
from .importing import import_keyword_table
from .readers import check_csv_size, read_keyword_csv, read_keyword_file, read_row_names
from .scene_models import SceneModelsBackend
from .store import KEYWORD_ITEM_KINDS, list_keyword_tables, load_keyword_table, newest_keyword_tables, save_keyword_table, table_summary
from .view_cache import computed_views, stored_views, view_cache_keys

__all__ = [
    "KEYWORD_ITEM_KINDS",
    "VOCABULARIES",
    "ClassifierPatchBackend",
    "KeywordTable",
    "SceneModelsBackend",
    "build_keyword_tables",
    "check_csv_size",
    "class_outputs",
    "compute_keywords",
    "computed_views",
    "fill_objects",
    "import_keyword_table",
    "keyword_table_name",
    "list_keyword_tables",
    "load_keyword_table",
    "newest_keyword_tables",
    "read_keyword_csv",
    "read_keyword_file",
    "read_row_names",
    "save_keyword_table",
    "stored_views",
    "table_summary",
    "transactions_digest",
    "view_cache_keys",
]
