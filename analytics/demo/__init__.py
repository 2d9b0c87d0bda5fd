"""The demo workspace: Debian assets with their licences and the ordered, idempotent demo steps.
"""

from .assets import CACHE_ENV_VAR, default_cache_dir, fetch_packages, is_fetched
from .steps import build_demo, load_catalogue

__all__ = [
    "CACHE_ENV_VAR",
    "build_demo",
    "default_cache_dir",
    "fetch_packages",
    "is_fetched",
    "load_catalogue",
]
