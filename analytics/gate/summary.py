"""The gate's results as short Markdown, fit for a pull-request comment.

A headline (pass or how many rules failed, and how many of those had nothing to measure), a table
of every rule (result: pass, FAIL or ERROR; measured value, limit, the one-line message) and, per
failing rule, its details (the keywords that failed or got worse,
with 95 % Wilson intervals). Names come from the workspace, so they are shown inside code spans
(whose fence is longer than any run of backticks in the name) and table pipes are escaped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from .rules import RuleResult

_OUTCOME = {"pass": "pass", "fail": "**FAIL**", "error": "**ERROR**"}


def markdown_summary(
    results: Sequence[RuleResult], *, candidate: str, baseline: str | None, suite_id: str, policy: str, report: str | None, suite_label: str | None = None
) -> str:
    """The Markdown summary of one check; the suite by ``suite_label`` (as every listing shows it) when given, with its id."""
    failed = [r for r in results if not r.passed]
    errors = sum(r.error for r in failed)
    verdict = "passed: every rule holds" if not failed else f"FAILED: {len(failed)} of {len(results)} rules"
    if errors:
        verdict += f" ({errors} with nothing to measure)"
    against = f" against baseline {_code(baseline)}" if baseline else ""
    lines = [
        f"### Backdrop check {verdict}",
        "",
        f"Candidate {_code(candidate)}{against} on suite {_suite(suite_id, suite_label)}, policy {_code(policy)}.",
        "",
        "| rule | result | measured | limit | |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in results:
        lines.append(f"| {_code(r.name)} | {_OUTCOME[r.outcome]} | {_number(r.value)} | {_number(r.limit)} | {_cell(r.message)} |")
    for r in failed:
        if r.details:
            lines += ["", f"**{_cell(r.name)}**:", "", *(f"- {_cell(line)}" for line in r.details)]
    if report:
        lines += ["", f"Full report: {_code(report)} (self-contained HTML)."]
    return "\n".join(lines) + "\n"


def _suite(suite_id: str, label: str | None) -> str:
    return _code(suite_id) if not label or label == suite_id else f"{_code(label)} (id {_code(suite_id)})"


def _number(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.3f}"


def _cell(text: str) -> str:
    """Text inside a table cell: pipes escaped, Markdown's emphasis, links and HTML characters shown literally."""
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", text)


def _code(text: str) -> str:
    """``text`` as an inline code span: the fence is one backtick longer than its longest backtick run."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"
