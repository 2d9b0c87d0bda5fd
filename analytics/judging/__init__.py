"""Human judgments of models (invariant / borderline / variant), team assignments and queues, agreement, adjudication.
"""

from .adjudication import add_consensus, consensus_history, current_consensus, disagreements, export_judgments_csv, training_labels
from .agreement import AGREEMENT_BOOTSTRAP_RESAMPLES, AGREEMENT_CONFIDENCE, BOOTSTRAP_SEED, MIN_SHARED_MODELS, Agreement, Estimate, cohen_kappa, confusion, label_counts, measure_agreement
from .assignments import assign, blind_name, get_plan, judgeable_runs, judging_accounts, set_plan, unassign
from .importing import import_judgments
from .judgments import LABELS, Judgment, add_judgment, judgment_history, latest_judgments, latest_judgments_by_suite, unjudged_models
from .queues import QueueItem, annotator_progress, annotator_queue, judgeable_suites, judged_suite_counts, judging_progress, last_judgment

__all__ = [
    "Agreement",
    "AGREEMENT_BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "AGREEMENT_CONFIDENCE",
    "Estimate",
    "Judgment",
    "LABELS",
    "MIN_SHARED_MODELS",
    "QueueItem",
    "add_consensus",
    "add_judgment",
    "annotator_progress",
    "annotator_queue",
    "assign",
    "blind_name",
    "cohen_kappa",
    "confusion",
    "consensus_history",
    "current_consensus",
    "disagreements",
    "export_judgments_csv",
    "get_plan",
    "import_judgments",
    "judgeable_runs",
    "judgeable_suites",
    "judged_suite_counts",
    "judging_accounts",
    "judging_progress",
    "judgment_history",
    "label_counts",
    "last_judgment",
    "latest_judgments",
    "latest_judgments_by_suite",
    "measure_agreement",
    "set_plan",
    "training_labels",
    "unassign",
    "unjudged_models",
]
