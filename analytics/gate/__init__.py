"""The release gate (``python -m analytics check``): a candidate model against a policy and the last release.

Modules, lowest first: :mod:`.policy` (the TOML policy and its schema), :mod:`.measures` (what a
rule measures, read from the stages that compute it), :mod:`.rules` (the rule kinds and McNemar's
paired test), :mod:`.junit`, :mod:`.summary` and :mod:`.table` (JUnit XML, Markdown and a DataFrame of the verdicts), :mod:`.check` (the whole check),
:mod:`.stored` (a check on a policy given as text, kept in the workspace: the Gate page's job).
"""

from .check import FILES, STEPS, CheckResult, check, check_inputs, preflight
from .policy import BASELINE_KEYS, EXAMPLE_POLICY, MAX_POLICY_MB, RULE_KEYS, SUITE_KEYS, Policy, load_policy, parse_policy, parse_policy_bytes, policy_toml
from .rules import BASELINE_RULES, RULES, RuleResult
from .stored import check_files, check_text, new_check_name
from .table import verdict_table

__all__ = [
    "BASELINE_KEYS",
    "BASELINE_RULES",
    "EXAMPLE_POLICY",
    "FILES",
    "MAX_POLICY_MB",
    "RULES",
    "RULE_KEYS",
    "STEPS",
    "SUITE_KEYS",
    "CheckResult",
    "Policy",
    "RuleResult",
    "check",
    "check_files",
    "check_inputs",
    "check_text",
    "load_policy",
    "new_check_name",
    "parse_policy",
    "parse_policy_bytes",
    "policy_toml",
    "preflight",
    "verdict_table",
]
