"""Scene keywords: pluggable backends behind one interface, keyword tables and their storage.

A new backend = one module defining a :class:`KeywordBackend` subclass with a ``name`` + one import
line in the block below (defining the class registers it in :data:`BACKENDS`).
"""

from ._base import BACKENDS, KeywordBackend, KeywordTable, transactions_digest
from .precomputed import PrecomputedBackend, PresenceRule, read_keyword_file, write_keyword_file
from .store import delete_keyword_table, list_keyword_tables, load_keyword_table, save_keyword_table

# Backends: one import line each (importing the module registers its class in BACKENDS).
from .classifier_patch import ClassifierPatchBackend
from .scene_models import SceneModelsBackend

__all__ = [
    "BACKENDS",
    "ClassifierPatchBackend",
    "KeywordBackend",
    "KeywordTable",
    "PrecomputedBackend",
    "PresenceRule",
    "SceneModelsBackend",
    "delete_keyword_table",
    "list_keyword_tables",
    "load_keyword_table",
    "read_keyword_file",
    "save_keyword_table",
    "transactions_digest",
    "write_keyword_file",
]
