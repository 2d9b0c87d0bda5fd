"""Worst-case accuracy (docs/method.md, 'Worst-case accuracy'): the statistic the paper argues is not enough on its own.

The one place it is computed: run summaries (:func:`analytics.runs.summarize_run`), a run's
class subsets (:func:`analytics.runs.run_accuracies`, the Matrices page's Classes filter) and the
assessor's accuracy features (:func:`analytics.assessor.run_features`) call it.
"""

from __future__ import annotations

import numpy as np

from analytics.exceptions import InvalidInputError


def worst_case_correct(correct: np.ndarray, *, include_original: bool = False) -> np.ndarray:
    """Per target: is it still classified correctly under the worst of its backgrounds?

    The worst background is the one where the target is misclassified, so a target counts as correct
    when all of its composites are. The original (column 0) is left out by default: it has no new
    background, and its accuracy is reported separately as the plain accuracy.

    Parameters
    ----------
    correct : array-like of shape (n_targets, n + 1), bool
        Correctness of each image; column 0 is the original, columns 1..n the composites.
    include_original : bool, default=False
        Also require the original to be correct.

    Returns
    -------
    ndarray of shape (n_targets,), bool
    """
    correct = np.asarray(correct)
    if correct.dtype != np.bool_ or correct.ndim != 2 or correct.shape[0] < 1 or correct.shape[1] < 2:
        raise InvalidInputError(
            "correct must be a bool array of shape (n_targets, n + 1) (original, then n composites) with at "
            f"least one target and one composite; got shape {correct.shape}, dtype {correct.dtype}"
        )
    return correct[:, 0 if include_original else 1 :].all(axis=1)


def worst_case_accuracy(correct: np.ndarray, *, include_original: bool = False) -> float:
    """Mean over targets of the accuracy under each target's worst background (docs/method.md, 'Worst-case accuracy').

    Parameters
    ----------
    correct : array-like of shape (n_targets, n + 1), bool
        Correctness of each image; column 0 is the original.
    include_original : bool, default=False
        See :func:`worst_case_correct`.

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> worst_case_accuracy([[True, True, True], [True, False, True]])
    0.5
    """
    return float(worst_case_correct(correct, include_original=include_original).mean())


def accuracy_summary(correct: np.ndarray) -> dict[str, float]:
    """The three accuracies a run reports, over the targets of ``correct``.

    Parameters
    ----------
    correct : array-like of shape (n_targets, n + 1), bool
        Correctness of each image; column 0 is the original.

    Returns
    -------
    dict
        ``accuracy`` (over every image, originals and composites), ``original_accuracy`` (column 0)
        and ``worst_case_accuracy`` (:func:`worst_case_accuracy`, the original left out), floats in [0, 1].

    Examples
    --------
    >>> accuracy_summary([[False, True, True], [True, False, True]])
    {'accuracy': 0.6666666666666666, 'original_accuracy': 0.5, 'worst_case_accuracy': 0.5}
    """
    worst = worst_case_accuracy(correct)  # validates the shape and dtype
    correct = np.asarray(correct)
    return {"accuracy": float(correct.mean()), "original_accuracy": float(correct[:, 0].mean()), "worst_case_accuracy": worst}
