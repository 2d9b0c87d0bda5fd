"""The assessor's two matrix feature sets and a plain label and meaning for every feature column.

``authors`` (the default) is the ML4ML authors' set (:func:`analytics.variance.authors_features`
plus the subsample sensitivity ``sstv``) on the matrices of the correctly classified targets, so an
assessor trained here reads what theirs reads;
``backdrop`` is Backdrop's earlier set (:func:`analytics.variance.matrix_features`): scale-free
discontinuity and asymmetry, absolute gradients with their maxima.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from analytics._validation import check_choice
from analytics.exceptions import InvalidInputError
from analytics.runs import SIGNALS
from analytics.variance import AUTHORS_FEATURE_NAMES, FEATURE_NAMES, authors_features, matrix_features


@dataclass(frozen=True)
class FeatureSet:
    """One way to describe a variance matrix by numbers.

    Attributes
    ----------
    name : str
        Key of :data:`FEATURE_SETS`.
    title : str
        For pickers.
    names : tuple of str
        Features per matrix, in column order (``sstv`` last where ``subsample``).
    compute : callable (matrix, *, threshold) -> dict of str to float
        The features of one matrix besides ``sstv``.
    subsample : bool
        Whether the set holds the authors' sensitivity ``sstv`` (needs matrices of a subsample).
    targets : str
        The targets whose matrices it measures by default (:data:`analytics.runs.MATRIX_TARGETS`):
        ``'correct'``, those whose original image the model classifies correctly (ML4ML's assessor
        reads only those), or ``'all'``.
    """

    name: str
    title: str
    names: tuple[str, ...]
    compute: Callable[..., dict[str, float]]
    subsample: bool
    targets: str = "all"


#: The feature sets by name; the first is the default.
FEATURE_SETS: dict[str, FeatureSet] = {
    "authors": FeatureSet("authors", "The ML4ML authors' features (default)", (*AUTHORS_FEATURE_NAMES, "sstv"), authors_features, True, "correct"),
    "backdrop": FeatureSet("backdrop", "Backdrop's earlier features", FEATURE_NAMES, matrix_features, False),
}
DEFAULT_FEATURE_SET = "authors"


def matrix_feature_columns(feature_set: str = DEFAULT_FEATURE_SET, crops: Sequence[int] = ()) -> list[str]:
    """The matrix feature columns of :func:`analytics.assessor.run_features`: ``<signal>.<feature>`` per signal of :data:`SIGNALS`.

    Parameters
    ----------
    feature_set : str, default='authors'
        Key of :data:`FEATURE_SETS`.
    crops : sequence of int, default=()
        Margins of nested centre crops (``authors`` only): every feature but ``sstv`` again as ``<name>_crop<margin>``.
    """
    chosen = FEATURE_SETS[check_choice(feature_set, "feature_set", FEATURE_SETS)]
    if crops and not chosen.subsample:
        raise InvalidInputError(f"nested centre crops belong to the authors' feature set; got crops {list(crops)} with feature_set {feature_set!r}")
    names = [*chosen.names, *(f"{name}_crop{margin}" for margin in crops for name in chosen.names if name != "sstv")]
    return [f"{signal}.{name}" for signal in SIGNALS for name in names]


_DIRECTIONS = {
    "vertical": "from a cell to the one above (the second background further away)",
    "horizontal": "from a cell to the one left of it (the first background nearer)",
    "diagonal": "from a cell to the one up and left",
}
#: Plain label and one-line meaning of each statistic (both sets; gradients are composed below).
_STATISTICS: dict[str, tuple[str, str]] = {
    "mean": ("Mean variance", "Average cell: how much the output changes between two backgrounds overall."),
    "s_mean": ("Mean squared variance", "Average squared cell: like the mean, but large changes weigh more."),
    "std": ("Spread of variance", "Standard deviation of the cells: how uneven the changes are across the matrix."),
    "error_rate": ("Share of large changes", "Share of cells above the threshold (0.15 for probabilities)."),
    "discontinuity": ("Abruptness", "How sharply the variance jumps between neighbouring background distances."),
    "asymmetry": ("Asymmetry", "How differently the model treats near-background pairs and far-background pairs."),
    "asymmetry_anti_diagonal": ("Near/far asymmetry", "Difference between pairs of near backgrounds and pairs of far ones."),
    "gradient_overall": ("Overall gradient", "Mean over directions of the gradient's mean relative to its spread: a steady trend scores high."),
    "sstv": ("Sensitivity to a subsample", "Summed change of the matrix when rebuilt from a random 90 % of the images: how stable it is."),
}
#: Where Backdrop's earlier set means something else by the same name.
_BACKDROP_STATISTICS: dict[str, tuple[str, str]] = {
    "asymmetry": ("Pair-order asymmetry", "Difference between a pair of backgrounds and the same pair in the other order (about 0 by construction)."),
    "discontinuity": ("Abruptness", "Mean second difference between neighbouring cells relative to the mean: steps and spikes, not slopes."),
}
_GRADIENT_STATISTICS = {
    "mean": ("mean", "Average signed change {d}: positive when variance falls that way."),
    "abs_mean": ("mean size", "Average size of the change {d}, whatever its sign."),
    "std": ("spread", "Standard deviation of the change {d}."),
    "wstd": ("spread per line", "Mean spread of the change {d}, line by line: unevenness within a distance band."),
    "max": ("largest jump", "Largest change {d}."),
}


def _describe(statistic: str, feature_set: str) -> tuple[str, str]:
    statistics = {**_STATISTICS, **_BACKDROP_STATISTICS} if feature_set == "backdrop" else _STATISTICS
    if statistic in statistics:
        return statistics[statistic]
    crop = ""
    if "_crop" in statistic:
        statistic, margin = statistic.rsplit("_crop", 1)
        crop = f" (centre crop, {margin} cells in)"
    if statistic in statistics:
        label, meaning = statistics[statistic]
        return label + crop, meaning
    _, direction, stat = statistic.split("_", 2) if statistic.startswith("gradient_") else ("", "", "")
    stat = "abs_mean" if feature_set == "backdrop" and stat == "mean" else stat
    if direction in _DIRECTIONS and stat in _GRADIENT_STATISTICS:
        word, meaning = _GRADIENT_STATISTICS[stat]
        return f"{direction.capitalize()} gradient, {word}{crop}", meaning.format(d=_DIRECTIONS[direction])
    return statistic + crop, ""


def describe_feature(column: str, feature_set: str = DEFAULT_FEATURE_SET) -> tuple[str, str]:
    """A plain label and a one-line meaning of a feature column, e.g. ``'max_prob.sstv'`` ->
    ``('Max probability (confidence): sensitivity to a subsample', 'Summed change …')``.

    ``feature_set`` (a key of :data:`FEATURE_SETS`) picks the meaning where the two sets use one
    name differently (asymmetry, discontinuity, gradient means).

    Accuracy columns and unknown names come back with their own name and an empty meaning where
    nothing better is known.
    """
    accuracy = {
        "accuracy": ("Accuracy", "Share of all images (originals and composites) classified correctly."),
        "original_accuracy": ("Original accuracy", "Share of the original images classified correctly."),
        "worst_case_accuracy": ("Worst-case accuracy", "Share of targets correct under every one of their backgrounds."),
    }
    if column in accuracy:
        return accuracy[column]
    signal, _, statistic = column.partition(".")
    if signal not in SIGNALS or not statistic:
        return column, ""
    label, meaning = _describe(statistic, check_choice(feature_set, "feature_set", FEATURE_SETS))
    return f"{SIGNALS[signal]}: {label[0].lower()}{label[1:]}", meaning

