"""A model repository run at scale: manifests and records, the run ledger, local and Ray backends.
"""

from .ledger import (
    RunLedger,
    backbone_groups,
    group_label,
)
from .manifest import (
    META_PREFIX,
    OPTIONAL_MANIFEST_COLUMNS,
    REQUIRED_MANIFEST_COLUMNS,
    AddReport,
    RepositoryEntry,
    add_repository,
    create_repository,
    failure_reason,
    get_repository,
    list_repositories,
    read_manifest,
    record_outcomes,
)
from .ray_backend import (
    TARGETS_PER_TASK,
    WAIT_S,
    connect,
    run_on_ray,
    target_chunks,
)
from .run import (
    REPOSITORY_STATUSES,
    STATUS_COLUMNS,
    repository_status,
    run_repository,
)

__all__ = [
    "AddReport",
    "META_PREFIX",
    "OPTIONAL_MANIFEST_COLUMNS",
    "REQUIRED_MANIFEST_COLUMNS",
    "RepositoryEntry",
    "RunLedger",
    "REPOSITORY_STATUSES",
    "STATUS_COLUMNS",
    "TARGETS_PER_TASK",
    "WAIT_S",
    "add_repository",
    "backbone_groups",
    "connect",
    "create_repository",
    "failure_reason",
    "get_repository",
    "group_label",
    "list_repositories",
    "read_manifest",
    "record_outcomes",
    "repository_status",
    "run_on_ray",
    "run_repository",
    "target_chunks",
]
