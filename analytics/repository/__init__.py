"""A model repository run at scale: manifests and records, the run ledger, local and Ray backends.
"""

from .manifest import add_repository, create_repository, get_repository, list_repositories
from .run import REPOSITORY_STATUSES, repository_status, run_repository

__all__ = [
    "REPOSITORY_STATUSES",
    "add_repository",
    "create_repository",
    "get_repository",
    "list_repositories",
    "repository_status",
    "run_repository",
]
