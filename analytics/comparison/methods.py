"""Which sampling method makes the best test suites? Diversity, agreement and consistency per method
(docs/method.md, 'Method comparison'; Liao & Chen, Table 1).

For one model, every compared method gets suites built with several seeds (``n`` backgrounds per
target, seeds ``seeds``); the model runs on each suite. Per method the table reports:

* **coverage (recall)** — neuron coverage (:mod:`analytics.comparison.coverage`, DeepXplore) of the suite's
  composites on the model, over the embedding layer (``coverage_embedding``) and over every
  activation layer (``coverage_all``), each the mean over the method's seeds; ``recall`` is the one
  named by ``recall_layers``;
* **Fleiss' κ (precision)** — agreement of the human judgments made on the method's suites (any
  model, any seed): per annotator, model and suite the latest current judgment counts
  (:func:`analytics.judging.judgments.latest_judgments_by_suite`; judgments of replaced weights never do),
  and each (model, suite) pair is one subject rated by its annotators, since a model's matrices on
  two suites are two different things to judge; κ as :func:`analytics.judging.agreement.measure_agreement`
  computes it. NaN (N/A) when no (model, suite) of the method has judgments by two annotators;
* **F1** = 2·P·R / (P + R) with P = max(κ, 0): a κ at or below chance gives F1 = 0; NaN when κ is;
* **consistency** — how alike the model's variance matrices are across the seeds, which needs no
  annotator (defined below).

Consistency, exactly. For seeds a ≠ b and each signal s of :data:`analytics.runs.SIGNALS`,
let A and B be the two runs' variance matrices of s (same preset and grid). Their cells sit on
``[0, d_max]²`` grids whose d_max differs between suites, so both are first resampled, by bilinear
interpolation of the cell values at the cell centres (clamped to the outermost centres), onto the
same ``grid × grid`` centres over the shared range ``[0, min(d_max_a, d_max_b)]``. Then

    similarity(A, B) = 1 − mean_cells |A − B| / (max(A ∪ B) − min(A ∪ B))      (1 when the range is 0)

and ``consistency`` is the mean of ``similarity`` over all signals and all unordered seed pairs. It
lies in [0, 1]: 1 means the seeds' matrices are identical up to interpolation; it falls as the
patterns differ relative to the matrices' own range, so the score compares patterns, not levels.

Everything a comparison computes is kept in the workspace: suites and runs are content-addressed
(building or running again reuses them) and coverage is stored per (model, suite, layers) as the
per-neuron maxima, from which any threshold follows without a forward pass. A second call, or one
with a new threshold, is therefore fast, and an interrupted comparison resumes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.interpolate import RegularGridInterpolator

from analytics._progress import Progress
from analytics._validation import check_choice, check_positive_int
from analytics.exceptions import InvalidInputError
from analytics.judging import measure_agreement
from analytics.suites import SAMPLERS
from analytics.variance import PRESETS, MatrixSettings, VarianceMatrix
from analytics.workspace import Workspace, content_id, count_rows

from .coverage import DEFAULT_COVERAGE_THRESHOLD, LAYER_CHOICES, CoverageResult, _check_threshold, coverage_from_maxima, suite_coverage

if TYPE_CHECKING:
    from analytics.models import ModelSpec


# The default comparison is sized to end in about two minutes on 2 CPU cores (issue 19.1: the former
# 5 methods x 3 seeds x N=8 over every target, both layer sets, took ~50 minutes on the demo): the
# baseline and the paper's method, two seeds (consistency needs two), N=4, 12 targets, embedding layer.
DEFAULT_METHODS: tuple[str, ...] = ("random", "ontology")
DEFAULT_SEED_COUNT = 2
DEFAULT_N = 4
DEFAULT_TARGETS = 12
DEFAULT_LAYERS: tuple[str, ...] = ("embedding",)

#: Seconds per image per step before any comparison was timed in the workspace: the issue's demo
#: measurement (13 steps in 9.5 minutes, 60 targets x 9 images per suite, EfficientNet-Lite0 on CPU).
SECONDS_PER_IMAGE_STEP = 9.5 * 60 / (13 * 60 * 9)
_STEP_COST_META = "methods.seconds_per_image_step"

#: Columns of :func:`method_comparison`'s table, in order.
COMPARISON_COLUMNS: list[str] = [
    "method",
    "seeds",
    "suite_ids",
    "run_ids",
    "images",
    "coverage_embedding",
    "coverage_all",
    "recall",
    "precision",
    "n_judged_models",
    "n_annotators",
    "f1",
    "consistency",
    "worst_case_accuracy",
]


@dataclass(frozen=True)
class PaperRow:
    """One column of the paper's Table 1 (Liao & Chen): their numbers, not ours."""

    title: str
    recall: float
    precision: float
    f1: float


#: The paper's Table 1, keyed by our method names ("keyword" is the paper's CLIP keywords).
PAPER_TABLE: dict[str, PaperRow] = {
    "random": PaperRow("Random sampling", 0.681, 0.384, 0.491),
    "nearest": PaperRow("Nearest top K", 0.133, 0.906, 0.232),
    "interval": PaperRow("Interval (bin)", 0.667, 0.531, 0.591),
    "keyword": PaperRow("CLIP keywords", 0.591, 0.640, 0.615),
    "ontology": PaperRow("Ontology (paper's method)", 0.652, 0.649, 0.650),
}


# -- prerequisites -----------------------------------------------------------------------------------
def method_requirements(workspace: Workspace) -> dict[str, str]:
    """What each sampling method still needs before suites can be built with it.

    Returns
    -------
    dict of str to str
        Method name -> '' when ready, else a sentence saying what is missing and how to add it.
    """
    from analytics.keywords import list_keyword_tables  # local: the keyword stack is heavy to import
    from analytics.ontology import list_ontologies

    n_models = workspace.query_one("SELECT COUNT(*) AS n FROM models")["n"]
    kinds = set(list_keyword_tables(workspace)["item_kind"])
    has_ontology = not list_ontologies(workspace).empty
    missing = {}
    for name, sampler in SAMPLERS.items():
        if sampler.needs_distances and not n_models:
            missing[name] = "a registered model for semantic distances (Models page)"
        elif sampler.needs_keywords and not {"target", "background"} <= kinds:
            missing[name] = "keyword tables of targets and backgrounds (Ontology page or `python -m analytics keywords`)"
        elif sampler.needs_ontology and not has_ontology:
            missing[name] = "an ontology (Ontology page or `python -m analytics ontology`)"
        else:
            missing[name] = ""
    return missing


# -- the comparison ----------------------------------------------------------------------------------
def method_comparison(
    workspace: Workspace,
    *,
    model: str,
    methods: Sequence[str] | None = None,
    seeds: int | Sequence[int] = DEFAULT_SEED_COUNT,
    n: int = DEFAULT_N,
    targets: int | None = DEFAULT_TARGETS,
    threshold: float = DEFAULT_COVERAGE_THRESHOLD,
    layers: Sequence[str] = DEFAULT_LAYERS,
    recall_layers: str = "embedding",
    preset: str = "smooth",
    device: str | None = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Coverage (recall), Fleiss' κ (precision), F1 and run-to-run consistency per sampling method.

    Parameters
    ----------
    workspace : Workspace
    model : str
        The registered model whose coverage and matrices are compared.
    methods : sequence of str, default=None
        Sampling methods (:data:`analytics.suites.sampling.SAMPLERS`); None = every method whose
        prerequisites the workspace has (:func:`method_requirements`).
    seeds : int or sequence of int, default=2
        An int k means seeds 0 … k−1; consistency needs at least two.
    n : int, default=4
        Backgrounds per target of each suite.
    targets : int or None, default=12
        Suites cover this many targets (:func:`comparison_targets`, spread over the classes);
        None = every target of the workspace.
    threshold : float in [0, 1), default=0.5
        Neuron coverage threshold on min-max scaled activations.
    layers : sequence of {'embedding', 'all'}, default=('embedding',)
        Coverage computed over these layer sets (the other column stays NaN).
    recall_layers : {'embedding', 'all'}, default='embedding'
        Which coverage is the recall; must be in ``layers``.
    preset : {'fine', 'medium', 'smooth'}, default='smooth'
        Variance-matrix interpolation preset (:data:`analytics.variance.PRESETS`) for consistency.
    device : str or None, default=None
        Where the model runs (None: CUDA when available, else CPU).
    progress : callable (done, total, step) or None
        Called after every step (build suite, run, coverage, matrices) of every seed, and with the
        same ``done`` during a suite's distances and a run's batches.

    Returns
    -------
    DataFrame
        One row per method with the columns :data:`COMPARISON_COLUMNS`: ``method`` (str); ``seeds``
        (tuple of int), ``suite_ids``, ``run_ids`` (tuples of str); ``images`` (int) counts composites
        per suite; ``coverage_embedding``, ``coverage_all`` (float, NaN for a layer set not asked
        for) are means over seeds; ``recall``, ``precision`` (Fleiss' κ), ``f1``, ``consistency``
        (float); ``n_judged_models`` (int) the models in κ, ``n_annotators`` (int) the annotators
        with a judgment on the method's suites; ``worst_case_accuracy`` (float) is the mean over
        seeds of the model's runs.

    Raises
    ------
    InvalidInputError
        Unknown method or one whose prerequisites are missing; bad options.
    NotFoundError
        Unknown model.
    """
    from analytics.models import get_model_spec

    spec = get_model_spec(workspace, model)
    methods = _check_methods(workspace, methods)
    seeds = _check_seeds(seeds)
    n = check_positive_int(n, "n")
    threshold = _check_threshold(threshold)  # before any suite is built: the check is coverage's own
    layers = _check_layers(layers, recall_layers)
    check_choice(preset, "preset", PRESETS)
    target_ids = None if targets is None else comparison_targets(workspace, targets)
    steps = _Steps(progress, comparison_steps(len(methods), len(seeds), len(layers)))
    precision = method_precision(workspace)
    rows = []
    for method in methods:
        per_seed = [_seed_result(workspace, spec, method, seed, n, target_ids, layers, threshold, preset, device, steps) for seed in seeds]
        kappa, n_judged, n_annotators = precision.get(method, (float("nan"), 0, 0))
        recall = float(np.mean([r.coverage[recall_layers] for r in per_seed]))
        rows.append(
            {
                "method": method,
                "seeds": tuple(seeds),
                "suite_ids": tuple(r.suite_id for r in per_seed),
                "run_ids": tuple(r.run_id for r in per_seed),
                "images": int(np.mean([r.images for r in per_seed])),
                **{f"coverage_{name}": _mean_coverage(per_seed, name) for name in LAYER_CHOICES},
                "recall": recall,
                "precision": kappa,
                "n_judged_models": n_judged,
                "n_annotators": n_annotators,
                "f1": kappa_coverage_f1(kappa, recall),
                "consistency": matrix_consistency([r.matrices for r in per_seed]),
                "worst_case_accuracy": float(np.mean([r.worst_case_accuracy for r in per_seed])),
            }
        )
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def comparison_targets(workspace: Workspace, count: int, *, classes: Sequence[str] | None = None) -> list[str]:
    """``count`` targets spread over the classes (only ``classes`` when given): round-robin over
    classes, ids in order (deterministic).

    Returns
    -------
    list of str
        At most ``count`` target ids (all of them when the workspace has fewer).
    """
    from analytics.data import list_targets

    count = check_positive_int(count, "targets")
    table = list_targets(workspace)
    if classes is not None:
        table = table[table["class_name"].isin(list(classes))]
    by_class = [group["id"].tolist() for _, group in table.groupby("class_name", sort=True)]
    spread = [ids[i] for i in range(max(map(len, by_class), default=0)) for ids in by_class if i < len(ids)]
    return sorted(spread[:count])


def comparison_steps(n_methods: int, n_seeds: int, n_layers: int) -> int:
    """Steps of a comparison: per method and seed, the suite, the run, each coverage and the matrices."""
    return n_methods * n_seeds * (3 + n_layers)


def estimate_seconds(workspace: Workspace, *, methods: int, seeds: int, n: int, targets: int, layers: int) -> float:
    """How long a comparison of this size should take, before it starts.

    Seconds per image per step × images per suite (``targets`` × (``n`` + 1)) × steps
    (:func:`comparison_steps`). The cost per image-step is the one measured by the workspace's last
    finished comparison (:func:`record_step_cost`), else :data:`SECONDS_PER_IMAGE_STEP`. Reused
    suites, runs and coverage make a repeated comparison much faster than this.

    Parameters
    ----------
    workspace : Workspace
    methods, seeds, n, targets, layers : int
        Methods compared, seeds per method, backgrounds per target, targets covered, layer sets.

    Returns
    -------
    float
        Seconds.
    """
    cost = float(workspace.get_meta(_STEP_COST_META) or SECONDS_PER_IMAGE_STEP)
    return cost * targets * (n + 1) * comparison_steps(methods, seeds, layers)


def record_step_cost(workspace: Workspace, params: Mapping, seconds: float) -> None:
    """Store the measured seconds per image-step of a finished comparison (``params`` as it ran).

    Only a comparison that took at least a second counts: one that reused everything measures
    lookups, not work.
    """
    if seconds < 1:
        return
    steps, images = _size(workspace, params)
    workspace.set_meta(_STEP_COST_META, repr(seconds / (steps * images)))


def params_estimate_seconds(workspace: Workspace, params: Mapping) -> float:
    """:func:`estimate_seconds` of a comparison given as the keyword arguments of
    :func:`method_comparison` (what a ``methods`` job holds; defaults where one is left out)."""
    steps, images = _size(workspace, params)
    return float(workspace.get_meta(_STEP_COST_META) or SECONDS_PER_IMAGE_STEP) * steps * images


def _size(workspace: Workspace, params: Mapping) -> tuple[int, int]:
    """Steps of the comparison ``params`` and the images of each of its suites (targets × (n + 1))."""
    methods = params.get("methods") or [name for name, missing in method_requirements(workspace).items() if not missing]
    seeds = params.get("seeds", DEFAULT_SEED_COUNT)
    n_seeds = seeds if isinstance(seeds, int) else len(seeds)
    targets = params.get("targets", DEFAULT_TARGETS)
    n_targets = len(comparison_targets(workspace, targets)) if targets else count_rows(workspace, ["targets"])["targets"]
    steps = comparison_steps(len(methods), n_seeds, len(params.get("layers", DEFAULT_LAYERS)))
    return steps, n_targets * (params.get("n", DEFAULT_N) + 1)


@dataclass(frozen=True)
class _SeedResult:
    suite_id: str
    run_id: str
    images: int
    coverage: dict[str, float]
    matrices: dict[str, VarianceMatrix]
    worst_case_accuracy: float


class _Steps:
    """Counts finished steps and reports them."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    def finished(self, step: str) -> None:
        self.done += 1
        self.working(step)

    def working(self, step: str) -> None:
        """Report the current count again, during a step (a job checks for a cancel on each report)."""
        if self.progress is not None:
            self.progress(self.done, self.total, step)


def _seed_result(
    workspace: Workspace,
    spec: ModelSpec,
    method: str,
    seed: int,
    n: int,
    target_ids: list[str] | None,
    layers: list[str],
    threshold: float,
    preset: str,
    device: str | None,
    steps: _Steps,
) -> _SeedResult:
    """Build (or reuse) the seed's suite, run the model on it, and measure coverage and matrices."""
    from analytics.runs import list_runs, run_matrices, start_runs
    from analytics.suites import build_suite

    label = f"{method}, seed {seed}"
    suite = build_suite(workspace, method=method, n=n, seed=seed, target_ids=target_ids, device=device, progress=lambda *_: steps.working(f"{label}: suite"))
    steps.finished(f"{label}: suite")
    run_id = start_runs(workspace, [spec.name], suite.id, device=device, progress=lambda *_: steps.working(f"{label}: run"))[0]
    steps.finished(f"{label}: run")
    coverage = {}
    for name in layers:
        coverage[name] = cached_suite_coverage(workspace, spec.name, suite.id, layers=name, device=device).at(threshold).coverage
        steps.finished(f"{label}: coverage ({name})")
    matrices = run_matrices(workspace, run_id, settings=MatrixSettings.of(preset))
    steps.finished(f"{label}: matrices")
    worst = list_runs(workspace, model=spec.name, suite_id=suite.id).set_index("id").at[run_id, "worst_case_accuracy"]
    return _SeedResult(suite.id, run_id, len(suite.items), coverage, matrices, float(worst))


def _mean_coverage(per_seed: list[_SeedResult], layers: str) -> float:
    values = [r.coverage[layers] for r in per_seed if layers in r.coverage]
    return float(np.mean(values)) if values else float("nan")


# -- coverage, kept in the workspace -----------------------------------------------------------------
def cached_suite_coverage(
    workspace: Workspace, model: str, suite_id: str, *, layers: str = "embedding", device: str | None = None
) -> CoverageResult:
    """:func:`analytics.comparison.coverage.suite_coverage` at the default threshold, stored in the workspace.

    The per-neuron maxima are cached under the model's spec, the suite and ``layers``, so the same
    coverage at another threshold is ``result.at(threshold)`` without a forward pass, also in a
    later session.

    Returns
    -------
    CoverageResult
    """
    from analytics.models import get_model_spec

    check_choice(layers, "layers", LAYER_CHOICES)
    key = f"coverage:{content_id(get_model_spec(workspace, model).content_key(), suite_id, layers)}"
    values, layout = workspace.cache_get(f"{key}:maxima"), workspace.cache_get(f"{key}:layout")
    if values is not None and layout is not None:
        names, sizes = json.loads(layout.item())
        return coverage_from_maxima(dict(zip(names, np.split(values, np.cumsum(sizes)[:-1]))))
    result = suite_coverage(workspace, model, suite_id, layers=layers, device=device)
    names = list(result.maxima)
    workspace.cache_put(f"{key}:maxima", np.concatenate([result.maxima[name] for name in names]).astype(np.float32))
    workspace.cache_put(f"{key}:layout", np.array(json.dumps([names, [int(result.maxima[name].size) for name in names]])))
    return result


# -- precision: agreement on each method's suites ----------------------------------------------------
def method_precision(workspace: Workspace) -> dict[str, tuple[float, int, int]]:
    """Fleiss' κ of the human judgments made on each method's suites.

    Per (annotator, model, suite) the latest current judgment counts; the subjects of κ are the
    (model, suite) pairs of the method's suites (module notes).

    Returns
    -------
    dict of str to (float, int, int)
        Method -> (κ, models with a (model, suite) judged by at least two annotators, annotators);
        κ is NaN when undefined. Methods without any judgment are absent.
    """
    from analytics.judging import latest_judgments_by_suite

    latest = latest_judgments_by_suite(workspace)
    methods = {row["id"]: row["method"] for row in workspace.query("SELECT id, method FROM suites")}
    latest = latest.assign(method=latest["suite_id"].map(methods), subject=latest["model"] + " @ " + latest["suite_id"])
    result = {}
    for method, judged in latest.groupby("method"):
        # only κ is used here: resamples=0 skips the bootstrap intervals
        agreement = measure_agreement(judged[["annotator", "subject", "label"]].rename(columns={"subject": "model"}), resamples=0)
        n_models = judged.loc[judged["subject"].isin(agreement.fleiss_models), "model"].nunique()
        result[str(method)] = (agreement.fleiss_kappa, int(n_models), len(agreement.annotators))
    return result


def kappa_coverage_f1(precision: float, recall: float) -> float:
    """Table 1's F1 of a test method: 2PR / (P + R) with precision P = max(κ, 0) and recall R = coverage.

    NaN when either is NaN, 0 when both are 0 (not scikit-learn's f1_score, which counts labels).

    Examples
    --------
    >>> round(kappa_coverage_f1(0.649, 0.652), 3)
    0.65
    """
    if np.isnan(precision) or np.isnan(recall):
        return float("nan")
    p = max(float(precision), 0.0)  # κ below chance is no precision at all
    return 0.0 if p + recall == 0 else 2 * p * recall / (p + recall)


# -- consistency -------------------------------------------------------------------------------------
def matrix_consistency(runs: Sequence[Mapping[str, VarianceMatrix]]) -> float:
    """Mean similarity of the variance matrices of several runs (seeds), over signals and seed pairs.

    See the module notes for the exact definition.

    Parameters
    ----------
    runs : sequence of mapping of str to VarianceMatrix
        One mapping per seed, signal name -> matrix (the same signals and grid size in each).

    Returns
    -------
    float
        In [0, 1]; NaN with fewer than two runs.

    Examples
    --------
    >>> edges = np.linspace(0, 1, 4)
    >>> a = VarianceMatrix(np.eye(3), edges, 32, 10.0, 32)
    >>> matrix_consistency([{"s": a}, {"s": a}])
    1.0
    """
    if len(runs) < 2:
        return float("nan")
    signals = list(runs[0])
    if any(set(run) != set(signals) for run in runs):
        raise InvalidInputError(f"every run must have matrices of the same signals; got {[sorted(run) for run in runs]}")
    scores = [similarity(first[s], second[s]) for first, second in combinations(runs, 2) for s in signals]
    return float(np.mean(scores))


def similarity(first: VarianceMatrix, second: VarianceMatrix) -> float:
    """1 − mean |A − B| / range(A ∪ B) on a shared grid (module notes); 1 when the range is 0.

    Returns
    -------
    float
        In [0, 1].
    """
    if first.grid != second.grid:
        raise InvalidInputError(f"matrices must have the same grid to be compared; got {first.grid} and {second.grid}")
    d_max = min(first.d_max, second.d_max)
    a, b = _resampled(first, d_max), _resampled(second, d_max)
    span = max(a.max(), b.max()) - min(a.min(), b.min())
    return 1.0 if span <= 0 else float(1 - np.abs(a - b).mean() / span)


def _resampled(matrix: VarianceMatrix, d_max: float) -> np.ndarray:
    """The matrix's values at the centres of a same-size grid over [0, d_max]² (bilinear, clamped).

    Returns ndarray of shape (grid, grid), float64, rows = y as in :class:`VarianceMatrix`.
    """
    centres = matrix.centres
    if d_max == matrix.d_max:
        return np.asarray(matrix.matrix, dtype=np.float64)
    wanted = np.clip((np.arange(matrix.grid) + 0.5) * d_max / matrix.grid, centres[0], centres[-1])
    interpolate = RegularGridInterpolator((centres, centres), np.asarray(matrix.matrix, dtype=np.float64))
    ys, xs = np.meshgrid(wanted, wanted, indexing="ij")
    return interpolate(np.stack([ys.ravel(), xs.ravel()], axis=1)).reshape(matrix.grid, matrix.grid)


# -- checks ------------------------------------------------------------------------------------------
def _check_methods(workspace: Workspace, methods: Sequence[str] | None) -> list[str]:
    requirements = method_requirements(workspace)
    if methods is None:
        chosen = [name for name, missing in requirements.items() if not missing]
    else:
        chosen = list(dict.fromkeys(methods))
        for name in chosen:
            check_choice(name, "methods", SAMPLERS)
            if requirements[name]:
                raise InvalidInputError(f"method {name!r} needs {requirements[name]}; add it or leave {name!r} out of methods")
    if not chosen:
        raise InvalidInputError(f"methods must name at least one sampling method ({', '.join(SAMPLERS)}); got none")
    return chosen


def _check_seeds(seeds: int | Sequence[int]) -> list[int]:
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        return list(range(check_positive_int(seeds, "seeds")))
    values = list(dict.fromkeys(check_positive_int(seed, "seeds", minimum=0) for seed in seeds))
    if not values:
        raise InvalidInputError("seeds must be a count >= 1 or a non-empty list of seeds >= 0; got an empty list")
    return values


def _check_layers(layers: Sequence[str], recall_layers: str) -> list[str]:
    chosen = list(dict.fromkeys(layers))
    for name in chosen:
        check_choice(name, "layers", LAYER_CHOICES)
    check_choice(recall_layers, "recall_layers", chosen)
    return chosen
