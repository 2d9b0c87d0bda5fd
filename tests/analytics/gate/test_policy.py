"""The policy schema (analytics/gate/policy.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analytics.exceptions import InvalidInputError
from analytics.gate import load_policy, parse_policy

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "policy.toml"


def test_the_example_policy_is_valid_and_uses_every_rule():
    """Every rule, the assessor's commented out: a suite the recipe builds has no judgments yet, so
    the README's flow would stop at the preflight (issue 42.8); uncommented, it is valid."""
    policy = load_policy(EXAMPLE)
    assert set(policy.rules) == {
        "worst_case_accuracy_min", "accuracy_drop_max", "bg_gap_max", "mixed_rand_accuracy_min", "robustness_score_min",
        "keyword_error_rate_below",
    }  # fmt: skip
    assert "keyword_error_rate_margin" in policy.baseline and policy.alpha == 0.05
    enabled = EXAMPLE.read_text().replace("# assessor_variant_probability_max", "assessor_variant_probability_max")
    assert "assessor_variant_probability_max" in parse_policy(enabled, "policy.toml").rules


def test_defaults_fill_the_settings_and_qualifiers_are_no_rules():
    policy = parse_policy("[rules]\nkeyword_error_rate_below = 0.5\nkeyword_min_composites = 3\n[baseline]\naccuracy_margin = 0.02\nalpha = 0.01\n")
    assert policy.rules == {"keyword_error_rate_below": 0.5} and policy.keyword_min_composites == 3
    assert policy.baseline == {"accuracy_margin": 0.02} and policy.alpha == 0.01
    assert policy.settings == {"challenge_seed": 0, "challenge_blend": False, "scenario_seed": 0, "robustness_form": "paper", "assessor_labels": "human"}
    assert policy.rule_names == ["keyword_error_rate_below", "baseline.accuracy_margin"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[rule]\nworst_case_accuracy_min = 0.5\n", "p.toml: unknown section [rule] (did you mean 'rules'?)"),
        ("[rules]\nbg_gap = 0.1\n", "p.toml: unknown key 'bg_gap' in [rules] (did you mean 'bg_gap_max'?); keys there are"),
        ("[rules]\naccuracy_drop_max = true\n", "p.toml: [rules] accuracy_drop_max = true must be a number in [0, 1]"),
        ("[rules]\nbg_gap_max = -2\n", "[rules] bg_gap_max = -2 must be a number in [-1, 1]"),
        ("[rules]\nkeyword_min_composites = 0\nkeyword_error_rate_below = 0.5\n", "keyword_min_composites = 0 must be an integer >= 1"),
        ("[rules]\nkeyword_min_composites = 5\n", "keyword_min_composites needs keyword_error_rate_below"),
        ('[settings]\nrobustness_form = "sec4"\n', "robustness_form = 'sec4' must be one of 'paper', 'table3'"),
        ("[settings]\nscenario_seed = 1\n", "p.toml: no rule; add one under [rules]"),
        ('[suite]\nid = "s"\nn = 4\n[rules]\naccuracy_drop_max = 0.1\n', "[suite] gives id and a recipe (n); keep one of them"),
        ("[rules]\nworst_case_accuracy_min = \n", "p.toml: not valid TOML (Invalid value (at line 2, column 27))"),
        ("rules = 3\n", "p.toml: rules must be a table"),
    ],
)
def test_each_bad_key_or_value_is_one_line_naming_the_file_key_and_fix(text, message):
    with pytest.raises(InvalidInputError) as raised:
        parse_policy(text, "p.toml")
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_an_unreadable_policy_names_the_file(tmp_path):
    with pytest.raises(InvalidInputError, match=r"policy .*nope.toml: cannot read it \(No such file or directory\)"):
        load_policy(tmp_path / "nope.toml")


# -- the Gate page's policies: an upload's bytes, rules edited on the page written as TOML ------------------------------
def test_an_uploaded_policy_is_capped_and_must_be_utf8_in_one_line():
    from analytics.gate import parse_policy_bytes
    from analytics.gate.policy import MAX_POLICY_BYTES

    text = "[rules]\nworst_case_accuracy_min = 0.5\n"
    assert parse_policy_bytes(text.encode(), "mine.toml").text == text and parse_policy_bytes(text.encode(), "mine.toml").path == "mine.toml"
    with pytest.raises(InvalidInputError, match=rf"^big\.toml: {MAX_POLICY_BYTES + 1:,} bytes; a policy file may have at most {MAX_POLICY_BYTES:,} \(1 MB\)"):
        parse_policy_bytes(b"#" * (MAX_POLICY_BYTES + 1), "big.toml")
    with pytest.raises(InvalidInputError, match=r"^latin\.toml: not UTF-8 text; save the policy as a UTF-8 TOML file"):
        parse_policy_bytes("# café\n".encode("latin-1"), "latin.toml")


def test_policy_toml_writes_what_parse_policy_reads_back():
    from analytics.gate import policy_toml

    text = policy_toml(
        suite={"method": "random", "n": 8, "seed": 2, "realism_threshold": None}, rules={"worst_case_accuracy_min": 0.3, "assessor_not_variant": True},
        baseline={"accuracy_margin": 1e-05, "alpha": 0.1}, settings={"assessor_labels": "construction"},
    )  # fmt: skip
    policy = parse_policy(text, "edited.toml")
    assert (policy.suite.method, policy.suite.n, policy.suite.seed, policy.suite.realism_threshold) == ("random", 8, 2, None)
    assert policy.rules == {"worst_case_accuracy_min": 0.3, "assessor_not_variant": True}
    assert policy.baseline == {"accuracy_margin": 1e-05} and policy.alpha == 0.1 and policy.settings["assessor_labels"] == "construction"
    assert text.startswith("# ") and "realism_threshold" not in text and "[settings]" in text
    odd = 'a"b\\c\x7fé'  # quotes, a backslash, DEL, non-ASCII: a suite id survives the trip
    assert parse_policy(policy_toml(suite={"id": odd}, rules={"accuracy_drop_max": 0.2})).suite.id == odd
    assert "[baseline]" not in policy_toml(rules={"accuracy_drop_max": 0.2}, baseline={})
