"""The workspace: one folder with a SQLite database and a content-addressed array store, its schema
migrations, the provenance keys results record, the JSON rules of stored results and the CSV rule of exports.
"""

from analytics._install import ENV_VAR, PROJECT_ROOT, default_workspace_path

from .encoding import restore_formula, to_csv, to_json
from .provenance import (
    ModelKeys,
    class_mapping_key,
    model_keys,
    pin_legacy_keys,
    suite_classes_key,
)
from .store import (
    DB_NAME,
    Workspace,
    content_id,
    count_rows,
    now,
)

__all__ = [
    "DB_NAME",
    "ENV_VAR",
    "ModelKeys",
    "PROJECT_ROOT",
    "Workspace",
    "class_mapping_key",
    "content_id",
    "count_rows",
    "default_workspace_path",
    "model_keys",
    "now",
    "pin_legacy_keys",
    "restore_formula",
    "suite_classes_key",
    "to_csv",
    "to_json",
]
