"""The gate's rule kinds: each measures one thing (:class:`analytics.gate.measures.Measures`) and
compares it with the policy's limit.

Candidate rules (``[rules]``) compare the candidate with a fixed limit. Baseline rules
(``[baseline]``) compare it with the baseline model on the same suite: a metric may be worse by at
most its margin. Where both models saw the same images (the suite's composites, the targets for
worst-case accuracy, the Mixed-Rand images of one pairing seed, the composites of one keyword), a
worsening beyond the margin fails only when McNemar's exact test on the paired correct/incorrect
outcomes (:func:`statsmodels.stats.contingency_tables.mcnemar`) finds it at level ``alpha``, so
that a few composites flipping by chance do not fail a release. BG-Gap and the robustness score
are differences of accuracies on different image sets and have no paired test of their own: the
margin decides (the robustness score's rules also test accuracy, below).

**The robustness score and accuracy.** The XIMAGENET-12 score S = 1 − (σ_i + σ_e) measures how far a
model's accuracies spread around its accuracy on the originals, so a model that is uniformly *less*
accurate scores as *more* robust. The score is the paper's and stays as it is; the two rules on it
(``robustness_score_min``, ``baseline.robustness_score_margin``) show the accuracy on the images the
score reads beside it, and with a baseline they fail a candidate whose accuracy there is
significantly lower than the baseline's (McNemar's exact test on the paired images at ``alpha``),
whatever its score.

**Nothing to measure is an error, not a pass.** A rule whose measurement is empty (no scene keyword
on enough composites, often because the workspace has no background keyword table) or NaN (a
variant with no image) cannot hold: its result has ``error`` set (``passed`` False), the summary
shows it as ERROR, the JUnit file as an ``<error>`` and the check exits 1, with a message naming
the step that would give it something to measure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from analytics.findings import keyword_changes, paired_test

from .measures import Measures
from .policy import Policy

#: The command that builds the background keyword table the keyword rules measure (``DIR``: the workspace).
KEYWORD_TABLE_COMMAND = "python -m analytics keywords --workspace DIR --items backgrounds"
#: Rules on the XIMAGENET-12 robustness score, held beside the accuracy on the images it reads (module notes).
SCORE_RULES = frozenset({"robustness_score_min", "baseline.robustness_score_margin"})


@dataclass(frozen=True)
class RuleResult:
    """One rule's outcome.

    Attributes
    ----------
    name : str
        The policy key (``baseline.`` in front for a baseline rule): the JUnit test case's name.
    passed : bool
    value, limit : float
        What was measured and the limit it was held to (baseline rules: candidate − baseline, and
        the margin as a signed difference); NaN where a rule has no number (the assessor's label)
        or nothing could be measured.
    message : str
        One line with the measured value and the limit, or, for an error, what is missing and the step that supplies it.
    details : tuple of str
        Further lines, e.g. the keywords that failed or got worse, with their intervals.
    keywords : DataFrame or None
        Keyword rules: one row per keyword that failed or got worse.
    error : bool
        The rule had nothing to measure (module notes): never ``passed``; JUnit's ``<error>``.
    """

    name: str
    passed: bool
    value: float
    limit: float
    message: str
    details: tuple[str, ...] = ()
    keywords: pd.DataFrame | None = field(default=None, compare=False)
    error: bool = False

    def __post_init__(self) -> None:
        if self.error and self.passed:
            raise ValueError(f"rule {self.name!r}: a rule with nothing to measure cannot pass")

    @property
    def outcome(self) -> str:
        """``'pass'``, ``'fail'`` or ``'error'`` (nothing to measure)."""
        return "error" if self.error else "pass" if self.passed else "fail"

    def to_record(self) -> dict[str, Any]:
        """JSON-ready form: one entry of ``rules`` in ``check --json`` (and a ``gate`` job's result); no ``keywords``."""
        return {
            "name": self.name, "passed": self.passed, "result": self.outcome, "value": self.value, "limit": self.limit, "message": self.message,
            "details": list(self.details),
        }  # fmt: skip

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RuleResult:
        """The result :meth:`to_record` gave, read back (a JSON ``null`` value or limit, NaN written as JSON, is NaN again)."""

        def number(value: Any) -> float:
            return math.nan if value is None else float(value)

        error = record["result"] == "error"
        return cls(
            str(record["name"]), bool(record["passed"]) and not error, number(record["value"]), number(record["limit"]), str(record["message"]),
            tuple(record.get("details", ())), error=error,
        )  # fmt: skip


# -- candidate rules -----------------------------------------------------------------------------
def _at_least(name: str, label: str, measure: Callable[[Measures], float]) -> Callable[[Measures, float, Policy], RuleResult]:
    def rule(candidate: Measures, limit: float, policy: Policy) -> RuleResult:
        value = measure(candidate)
        passed = bool(value >= limit)
        return RuleResult(name, passed, value, limit, f"{label} {value:.3f} {'>=' if passed else '<'} {limit:.3f} (minimum)")

    return rule


def _at_most(name: str, label: str, measure: Callable[[Measures], float]) -> Callable[[Measures, float, Policy], RuleResult]:
    def rule(candidate: Measures, limit: float, policy: Policy) -> RuleResult:
        value = measure(candidate)
        passed = bool(value <= limit)
        return RuleResult(name, passed, value, limit, f"{label} {value:.3f} {'<=' if passed else '>'} {limit:.3f} (maximum)")

    return rule


def _not_variant(candidate: Measures, wanted: bool, policy: Policy) -> RuleResult:
    verdict = candidate.verdict
    passed = not wanted or verdict.label != "variant"
    return RuleResult(
        "assessor_not_variant", passed, float("nan"), float("nan"),
        f"assessor verdict {verdict.label!r} (P(variant) {verdict.p_variant:.3f}; trained on {verdict.trained_on} labelled models); "
        f"{'must not be' if wanted else 'may be'} 'variant'",
    )  # fmt: skip


def _variant_probability(candidate: Measures, limit: float, policy: Policy) -> RuleResult:
    verdict = candidate.verdict
    passed = verdict.p_variant <= limit
    return RuleResult(
        "assessor_variant_probability_max", passed, verdict.p_variant, limit,
        f"assessor P(variant) {verdict.p_variant:.3f} {'<=' if passed else '>'} {limit:.3f} (maximum; verdict {verdict.label!r}, "
        f"trained on {verdict.trained_on} labelled models)",
    )  # fmt: skip


def _keyword_errors(candidate: Measures, limit: float, policy: Policy) -> RuleResult:
    n = policy.keyword_min_composites
    table = candidate.failures(n).keywords
    if table.empty:
        return _no_keywords("keyword_error_rate_below", limit, candidate, n, "[rules]")
    failing = table[table["error_rate"] >= limit]
    worst = float(table["error_rate"].max()) if len(table) else 0.0
    details = tuple(
        f"{r.keyword}: error rate {r.error_rate:.3f} [{r.error_low:.3f}, {r.error_high:.3f}] on {r.count} composites" for r in failing.itertuples()
    )
    message = (
        f"{len(failing)} of {len(table)} scene keywords with >= {n} composites have an error rate >= {limit:.3f}"
        + f" (highest {worst:.3f})" + (f": {', '.join(failing['keyword'])}" if len(failing) else "")
    )
    return RuleResult("keyword_error_rate_below", failing.empty, worst, limit, message, details, failing.reset_index(drop=True))


#: ``[rules]`` key -> rule.
RULES: dict[str, Callable[[Measures, float, Policy], RuleResult]] = {
    "worst_case_accuracy_min": _at_least("worst_case_accuracy_min", "worst-case accuracy", lambda m: m.worst_case_accuracy),
    "accuracy_drop_max": _at_most("accuracy_drop_max", "accuracy drop (original − composites)", lambda m: m.accuracy_drop),
    "bg_gap_max": _at_most("bg_gap_max", "BG-Gap (Mixed-Same − Mixed-Rand)", lambda m: m.bg_gap),
    "mixed_rand_accuracy_min": _at_least("mixed_rand_accuracy_min", "Mixed-Rand accuracy", lambda m: m.mixed_rand_accuracy),
    "robustness_score_min": _at_least("robustness_score_min", "XIMAGENET-12 robustness score", lambda m: m.robustness_score),
    "assessor_not_variant": _not_variant,
    "assessor_variant_probability_max": _variant_probability,
    "keyword_error_rate_below": _keyword_errors,
}


# -- baseline rules ------------------------------------------------------------------------------
def _no_worse(
    name: str, label: str, measure: Callable[[Measures], float], *, higher_is_better: bool = True,
    paired: Callable[[Measures], pd.Series] | None = None, unit: str = "",
) -> Callable[[Measures, Measures, float, Policy], RuleResult]:  # fmt: skip
    """A rule: the candidate's metric is at most ``margin`` worse than the baseline's (significantly so, where ``paired``)."""

    def rule(candidate: Measures, baseline: Measures, margin: float, policy: Policy) -> RuleResult:
        ours, theirs = measure(candidate), measure(baseline)
        change = ours - theirs
        worse_by = -change if higher_is_better else change
        beyond = bool(worse_by > margin)
        limit = -margin if higher_is_better else margin
        text = f"{label} {ours:.3f} vs baseline {theirs:.3f} ({change:+.3f}; allowed {limit:+.3f})"
        if paired is None:
            return RuleResult(name, not beyond, change, limit, text)
        test = paired_test(paired(baseline), paired(candidate))
        significant = test.p_value < policy.alpha
        text += (
            f"; McNemar p = {test.p_value:.3g} on {test.pairs} paired {unit} ({test.worse} worse, {test.better} better), alpha {policy.alpha:g}"
            + ("" if significant or not beyond else ": not significant")
        )
        return RuleResult(name, not (beyond and significant), change, limit, text)

    return rule


def _keyword_rise(candidate: Measures, baseline: Measures, margin: float, policy: Policy) -> RuleResult:
    """Fails when a keyword's error rate rose by more than ``margin`` (and McNemar finds it on its composites)."""
    n = policy.baseline_min_composites
    table = keyword_changes(
        candidate.workspace, candidate.run_id, baseline.run_id, min_count=n, composites=(candidate.keyword_composites, baseline.keyword_composites)
    )
    if table.empty:
        return _no_keywords("baseline.keyword_error_rate_margin", margin, candidate, n, "[baseline]")
    worse = table[(table["rise"] > margin) & (table["p_value"] < policy.alpha)].reset_index(drop=True)
    top = float(table["rise"].max()) if len(table) else 0.0
    details = tuple(
        f"{r.keyword}: error rate {r.baseline_error_rate:.3f} [{r.baseline_low:.3f}, {r.baseline_high:.3f}] -> {r.error_rate:.3f} "
        f"[{r.error_low:.3f}, {r.error_high:.3f}] on {r.count} composites ({r.rise:+.3f}; McNemar p = {r.p_value:.3g})"
        for r in worse.itertuples()
    )
    message = (
        f"{len(worse)} of {len(table)} scene keywords with >= {n} composites got worse by more than {margin:.3f} in error rate "
        f"(McNemar at alpha {policy.alpha:g}; largest rise {top:+.3f})" + (f": {', '.join(worse['keyword'])}" if len(worse) else "")
    )
    return RuleResult("baseline.keyword_error_rate_margin", worse.empty, top, margin, message, details, worse)


def _no_keywords(name: str, limit: float, candidate: Measures, min_count: int, section: str) -> RuleResult:
    """The error of a keyword rule without a keyword to measure, naming why and the step that fixes it.

    "0 of 0 keywords" used to pass: a CI job that never built a keyword table passed both keyword
    rules, then failed them the day a table appeared. Three causes, each with its own fix.
    """
    key = name.removeprefix("baseline.")
    composites = candidate.keyword_composites
    if composites.empty and candidate.keyword_source == "suite items":
        command = KEYWORD_TABLE_COMMAND.replace("DIR", str(candidate.workspace.root))
        why = (
            f"nothing to measure: the workspace has no background keyword table, so no composite of the suite has a scene keyword; "
            f"build one before the check with `{command}` (or remove {key} from {section})"
        )
        details: tuple[str, ...] = (
            "The keywords command's default classifier-patch backend needs a registered ImageNet classifier: "
            "`python -m analytics add-model --arch efficientnet-lite0` registers one that needs no checkpoint; "
            "`keywords --backend precomputed --file FILE` imports a keyword CSV instead.",
        )
    elif composites.empty:
        why = (
            f"nothing to measure: the background keyword {candidate.keyword_source} gives none of the suite's backgrounds a scene keyword; "
            f"build a keyword table that covers them (`{KEYWORD_TABLE_COMMAND}`) or remove {key} from {section}"
        )
        details = ()
    else:
        most = int(composites.groupby("keywords").size().max())
        why = (
            f"nothing to measure: no scene keyword is on >= {min_count} composites of the suite (the most: {most}); "
            f"lower keyword_min_composites in {section} or check on a larger suite"
        )
        details = ()
    return RuleResult(name, False, float("nan"), limit, why, details, error=True)


#: ``[baseline]`` key -> rule.
BASELINE_RULES: dict[str, Callable[[Measures, Measures, float, Policy], RuleResult]] = {
    "accuracy_margin": _no_worse(
        "baseline.accuracy_margin", "composite accuracy", lambda m: m.composite_accuracy, paired=lambda m: m.composites["correct"], unit="composites"
    ),
    "worst_case_accuracy_margin": _no_worse(
        "baseline.worst_case_accuracy_margin", "worst-case accuracy", lambda m: m.worst_case_accuracy,
        paired=lambda m: m.targets["worst_case_correct"], unit="targets",
    ),
    "mixed_rand_accuracy_margin": _no_worse(
        "baseline.mixed_rand_accuracy_margin", "Mixed-Rand accuracy", lambda m: m.mixed_rand_accuracy, paired=lambda m: m.mixed_rand, unit="images"
    ),
    "bg_gap_margin": _no_worse("baseline.bg_gap_margin", "BG-Gap", lambda m: m.bg_gap, higher_is_better=False),
    "robustness_score_margin": _no_worse("baseline.robustness_score_margin", "XIMAGENET-12 robustness score", lambda m: m.robustness_score),
    "keyword_error_rate_margin": _keyword_rise,
}


def evaluate_rules(policy: Policy, candidate: Measures, baseline: Measures | None) -> list[RuleResult]:
    """Every rule of ``policy`` in :attr:`Policy.rule_names` order (baseline rules need ``baseline``).

    The robustness-score rules (:data:`SCORE_RULES`) are held beside the accuracy on the scored images
    (:func:`_beside_accuracy`), with the baseline's where there is one."""
    results = [RULES[key](candidate, limit, policy) for key, limit in policy.rules.items()]
    if policy.baseline:
        if baseline is None:
            raise ValueError("baseline rules need a baseline model")  # the command checks this first
        results += [BASELINE_RULES[key](candidate, baseline, margin, policy) for key, margin in policy.baseline.items()]
    results = [_beside_accuracy(result, candidate, baseline, policy) if result.name in SCORE_RULES else result for result in results]
    return [_finite(result) for result in results]


def _beside_accuracy(result: RuleResult, candidate: Measures, baseline: Measures | None, policy: Policy) -> RuleResult:
    """A robustness-score rule's result with the accuracy on the images the score reads beside the score.

    With a baseline, the rule fails when that accuracy is significantly lower than the baseline's
    (McNemar's exact test on the paired images at ``alpha``), whatever the score: a uniformly less
    accurate model has accuracies that spread less, so it scores as more robust (module notes).
    """
    if np.isnan(result.value):
        return result  # no score: _finite makes it an error
    ours = candidate.scenario_accuracy
    if baseline is None:
        return replace(result, message=f"{result.message}; accuracy on the {len(candidate.scenario_correct)} scored images {ours:.3f}")
    test = paired_test(baseline.scenario_correct, candidate.scenario_correct)
    lower = test.worse > test.better and test.p_value < policy.alpha
    message = (
        f"{result.message}; accuracy on the {test.pairs} scored images {ours:.3f} vs baseline {baseline.scenario_accuracy:.3f}, "
        f"McNemar p = {test.p_value:.3g} ({test.worse} worse, {test.better} better), alpha {policy.alpha:g}"
    )
    if lower:
        message += ": significantly lower, so the rule fails (a uniformly less accurate model scores as more robust)"
    return replace(result, passed=result.passed and not lower, message=message)


def _finite(result: RuleResult) -> RuleResult:
    """A rule whose measured value is NaN (e.g. a variant with no image) had nothing to measure: an error."""
    if not result.error and np.isnan(result.value) and not np.isnan(result.limit):
        return replace(result, passed=False, error=True, message=result.message + " (could not be measured)")
    return result
