"""The release gate (``python -m analytics check``): a candidate model against a policy and the last release.

Modules, lowest first: :mod:`.policy` (the TOML policy and its schema), :mod:`.measures` (what a
rule measures, read from the stages that compute it), :mod:`.rules` (the rule kinds and McNemar's
paired test), :mod:`.junit`, :mod:`.summary` and :mod:`.table` (JUnit XML, Markdown and a DataFrame of the verdicts), :mod:`.check` (the whole check).
"""

from .check import FILES, CheckResult, SuiteModels, check, preflight, suite_models, suite_to_check
from .junit import CLASSNAME, junit_xml
from .measures import Measures, Verdict, assessor_verdict, challenge_loader, verdict_training_labels
from .policy import BASELINE_KEYS, EXAMPLE_POLICY, RULE_KEYS, SETTING_KEYS, SUITE_KEYS, Policy, SuiteRecipe, load_policy, parse_policy
from .rules import BASELINE_RULES, RULES, RuleResult, evaluate_rules
from .summary import markdown_summary
from .table import VERDICT_TABLE_COLUMNS, verdict_table

__all__ = [
    "BASELINE_KEYS", "BASELINE_RULES", "CLASSNAME", "EXAMPLE_POLICY", "FILES", "RULES", "RULE_KEYS", "SETTING_KEYS",
    "SUITE_KEYS", "VERDICT_TABLE_COLUMNS", "CheckResult", "Measures", "Policy", "RuleResult", "SuiteModels", "SuiteRecipe", "Verdict", "assessor_verdict",
    "challenge_loader", "check", "evaluate_rules", "junit_xml", "load_policy", "markdown_summary", "parse_policy",
    "preflight", "suite_models", "suite_to_check", "verdict_table", "verdict_training_labels",
]  # fmt: skip
