"""What a person reads for a run: its model and the label of its suite.

Run ids are random hex, kept as the key (the CLI still takes them); pages, the report and the CLI
show :func:`run_labels`' text instead, e.g. ``EfficientNet-Lite0 on ontology, N = 32, seed 0, 60
targets``. Plain text: pages escape it, the report HTML-escapes it.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from analytics.suites import distinct_labels


def run_label(model: str, suite: str) -> str:
    """``<model> on <suite label>`` (``suite``: the suite's :func:`analytics.suites.suite_labels` text)."""
    return f"{model} on {suite}"


def run_labels(runs: pd.DataFrame, suite_labels: Mapping[str, str]) -> dict[str, str]:
    """Run id -> :func:`run_label`, unique within ``runs`` (runs of one model on one suite get
    ``· started <time>``; see :func:`analytics.suites.distinct_labels`).

    Parameters
    ----------
    runs : DataFrame with columns id, model, suite_id, created
    suite_labels : mapping of suite id to its label (a suite missing from it is called by its id)
    """
    labels = [run_label(model, suite_labels.get(suite, suite)) for model, suite in zip(runs["model"], runs["suite_id"])]
    return distinct_labels(list(runs["id"]), labels, list(runs["created"]), verb="started")
