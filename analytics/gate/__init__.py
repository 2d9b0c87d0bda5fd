"""The release gate (``python -m analytics check``): a candidate model against a policy and the last release.

Modules, lowest first: :mod:`.policy` (the TOML policy and its schema), :mod:`.measures` (what a
rule measures, read from the stages that compute it), :mod:`.rules` (the rule kinds and McNemar's
paired test), :mod:`.junit`, :mod:`.summary` and :mod:`.table` (JUnit XML, Markdown and a DataFrame of the verdicts), :mod:`.check` (the whole check),
:mod:`.stored` (a check on a policy given as text, kept in the workspace: the Gate page's job).
"""

from .check import FILES, STEPS, CheckResult, SuiteModels, check, check_inputs, preflight, suite_models, suite_to_check
from .junit import CLASSNAME, junit_xml
from .measures import Measures, Verdict, assessor_verdict, challenge_loader, verdict_training_labels
from .policy import (
    BASELINE_KEYS,
    EXAMPLE_POLICY,
    MAX_POLICY_BYTES,
    MAX_POLICY_MB,
    RULE_KEYS,
    SETTING_KEYS,
    SUITE_KEYS,
    Policy,
    SuiteRecipe,
    load_policy,
    parse_policy,
    parse_policy_bytes,
    policy_toml,
)
from .rules import BASELINE_RULES, RULES, RuleResult, evaluate_rules
from .stored import CHECKS_FOLDER, check_files, check_folder, check_text, new_check_name
from .summary import markdown_summary
from .table import VERDICT_TABLE_COLUMNS, verdict_table

__all__ = [
    "BASELINE_KEYS", "BASELINE_RULES", "CHECKS_FOLDER", "CLASSNAME", "EXAMPLE_POLICY", "FILES", "MAX_POLICY_BYTES", "MAX_POLICY_MB", "RULES", "RULE_KEYS",
    "SETTING_KEYS", "STEPS", "SUITE_KEYS", "VERDICT_TABLE_COLUMNS", "CheckResult", "Measures", "Policy", "RuleResult", "SuiteModels", "SuiteRecipe", "Verdict",
    "assessor_verdict", "challenge_loader", "check", "check_files", "check_folder", "check_inputs", "check_text", "evaluate_rules", "junit_xml", "load_policy",
    "markdown_summary", "new_check_name", "parse_policy", "parse_policy_bytes", "policy_toml", "preflight", "suite_models", "suite_to_check", "verdict_table",
    "verdict_training_labels",
]  # fmt: skip
