"""Running models over composites: image jobs, the composite stream and cache, the engine, evaluation.
"""

from .backoff import DeviceMemoryError
from .composite_cache import (
    FOLDER,
    VERSION,
    CompositeCache,
)
from .device import (
    cpu_count,
    cpu_threads,
    model_threads,
)
from .engine import (
    COMMIT_EVERY,
    ROW_COLUMNS,
    GroupPlan,
    RowWriter,
    RunKeys,
    RunPlan,
    finish_runs,
    group_rows,
    plan_runs,
    run_models,
    set_run_status,
    write_rows,
)
from .evaluation import (
    Evaluation,
    evaluate,
)
from .stream import (
    CACHE_ITEMS,
    PREFETCH_BATCHES,
    compositing_threads,
    iter_composites,
    prefetch_for,
)
from .suite_images import (
    SuiteImage,
    class_problems,
    image_hashes,
    stored_suite_images,
    target_classes,
    used_classes,
    with_foreground,
)

__all__ = [
    "CACHE_ITEMS",
    "COMMIT_EVERY",
    "FOLDER",
    "PREFETCH_BATCHES",
    "ROW_COLUMNS",
    "VERSION",
    "CompositeCache",
    "DeviceMemoryError",
    "Evaluation",
    "GroupPlan",
    "RowWriter",
    "RunKeys",
    "RunPlan",
    "SuiteImage",
    "class_problems",
    "compositing_threads",
    "cpu_count",
    "cpu_threads",
    "evaluate",
    "finish_runs",
    "group_rows",
    "image_hashes",
    "iter_composites",
    "model_threads",
    "plan_runs",
    "prefetch_for",
    "run_models",
    "set_run_status",
    "stored_suite_images",
    "target_classes",
    "used_classes",
    "with_foreground",
    "write_rows",
]
