"""Running models over composites: image jobs, the composite stream and cache, the engine, evaluation.
"""

from .backoff import BackOff, DeviceMemoryError
from .composite_cache import (
    FOLDER,
    VERSION,
    CompositeCache,
)
from .device import (
    CPU_BATCH,
    HostCopy,
    cpu_count,
    cpu_threads,
    default_batch_size,
    empty_batch,
    model_threads,
    to_host,
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
    "CPU_BATCH",
    "FOLDER",
    "PREFETCH_BATCHES",
    "ROW_COLUMNS",
    "VERSION",
    "BackOff",
    "CompositeCache",
    "DeviceMemoryError",
    "Evaluation",
    "GroupPlan",
    "HostCopy",
    "RowWriter",
    "RunKeys",
    "RunPlan",
    "SuiteImage",
    "class_problems",
    "compositing_threads",
    "cpu_count",
    "cpu_threads",
    "default_batch_size",
    "empty_batch",
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
    "to_host",
    "used_classes",
    "with_foreground",
    "write_rows",
]
