"""Running models over composites: image jobs, the composite stream and cache, the engine, evaluation.
"""

from .backoff import BackOff
from .composite_cache import CompositeCache
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
from .engine import ROW_COLUMNS, GroupPlan, RowWriter, RunPlan, finish_runs, group_rows, plan_runs, run_models, set_run_status, write_rows
from .evaluation import (
    Evaluation,
    evaluate,
)
from .stream import compositing_threads, iter_composites, prefetch_for
from .suite_images import SuiteImage, class_problems, stored_suite_images, target_classes, used_classes, with_foreground

__all__ = [
    "CPU_BATCH",
    "ROW_COLUMNS",
    "BackOff",
    "CompositeCache",
    "Evaluation",
    "GroupPlan",
    "HostCopy",
    "RowWriter",
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
