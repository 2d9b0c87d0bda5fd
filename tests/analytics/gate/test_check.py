"""The release gate (analytics/gate, CLI ``check``) on a small zoo workspace.

The workspace (built once per module): the tiny workspace (2 classes x 3 targets, 12 backgrounds)
with the ``fg-bg`` backbone and ten zoo heads (strengths 0, 0.25, 0.5, 0.75, 1 x seeds 0, 1), the
suite fixtures' background keyword table, and a suite ``all-12`` that puts every target on all 12
backgrounds (72 composites). The strength-1 head follows the background (tests/fixtures/zoo.py), so
it is the candidate "made worse on purpose" against the strength-0 head.
"""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

from analytics.cli import main
from analytics.data import custom_label_space
from analytics.exceptions import InvalidInputError
from analytics.gate import BASELINE_KEYS, BASELINE_RULES, RULE_KEYS, RULES, check, parse_policy
from analytics.gate.check import suite_models
from analytics.keywords import save_keyword_table
from analytics.models import get_model_spec, register_efficientnet_lite, register_torchscript
from analytics.suites import suite_labels_of
from analytics.zoo import build_zoo
from analytics.zoo.layout import zoo_model_name
from tests.fixtures.cli import cli_error, workspace_state
from tests.fixtures.models import CENTRE_BOX, CORNER_BOXES, SIZE, TINY_SUITE, RegionNet, insert_suite, save_torchscript, write_labels
from tests.fixtures.suites import BACKGROUND_KEYWORDS, BACKGROUND_TABLE, onehot_table
from tests.fixtures.workspace import build_tiny_workspace

SUITE = "all-12"
PLAIN, WORSE = zoo_model_name(0.0, False, 0), zoo_model_name(1.0, False, 0)
ZOO = {"backbone": "fg-bg", "n_train_per_class": 36, "n_augment_per_class": 6, "pool_per_target": 8, "temperatures": ()}


@pytest.fixture(scope="module")
def gate_workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny full-batch training: extra threads only contend on a shared CPU
    try:
        workspace = build_tiny_workspace(root / "ws")
        files = root / "files"
        files.mkdir()
        checkpoint = save_torchscript(RegionNet((CENTRE_BOX, *CORNER_BOXES)), files / "fg-bg.pt", seed=3)
        labels = custom_label_space(write_labels(files / "labels.txt"))
        register_torchscript(workspace, "fg-bg", checkpoint=checkpoint, label_space=labels, input_size=SIZE)
        build_zoo(workspace, strengths=(0, 0.25, 0.5, 0.75, 1), augment=(False,), seeds=(0, 1), **ZOO)
        backgrounds = [row["id"] for row in workspace.query("SELECT id FROM backgrounds ORDER BY id")]
        save_keyword_table(workspace, onehot_table(backgrounds, BACKGROUND_KEYWORDS), name=BACKGROUND_TABLE, item_kind="background")
        insert_suite(workspace, SUITE, n=12)
        yield workspace
    finally:
        torch.set_num_threads(threads)


def _check(workspace, text: str, candidate: str, tmp_path, baseline: str | None = None, **kwargs):
    return check(workspace, parse_policy(text, "policy.toml"), candidate, baseline=baseline, suite_id=SUITE, out=tmp_path, report=False, device="cpu", **kwargs)


# -- every rule kind holds once and fails once -------------------------------------------------------
CANDIDATE_CASES = [
    # (rule, candidate, a limit it holds under, a limit it fails under)
    ("worst_case_accuracy_min", PLAIN, 0.5, 0.9),
    ("accuracy_drop_max", WORSE, 0.6, 0.2),
    ("bg_gap_max", PLAIN, 0.1, -0.1),
    ("mixed_rand_accuracy_min", PLAIN, 0.5, 0.9),
    ("robustness_score_min", WORSE, 0.2, 0.5),
    ("assessor_variant_probability_max", PLAIN, 0.5, 0.01),
    ("keyword_error_rate_below", WORSE, 0.6, 0.5),
]


@pytest.mark.parametrize(("rule", "candidate", "holds", "fails"), CANDIDATE_CASES)
def test_each_candidate_rule_holds_under_one_limit_and_fails_under_another(gate_workspace, tmp_path, rule, candidate, holds, fails):
    settings = '[settings]\nassessor_labels = "construction"\n'
    extra = "keyword_min_composites = 10\n" if rule == "keyword_error_rate_below" else ""
    good = _check(gate_workspace, f"[rules]\n{rule} = {holds}\n{extra}{settings}", candidate, tmp_path)
    bad = _check(gate_workspace, f"[rules]\n{rule} = {fails}\n{extra}{settings}", candidate, tmp_path)
    (held,), (failed,) = good.results, bad.results
    assert held.name == failed.name == rule
    assert held.passed and good.passed, held.message
    assert not failed.passed and not bad.passed, failed.message
    assert held.value == failed.value  # the same measurement, only the limit differs
    assert f"{failed.limit:.3f}" in failed.message and f"{failed.value:.3f}" in failed.message


def test_the_assessor_verdict_rule_fails_a_background_follower_and_passes_an_object_reader(gate_workspace, tmp_path):
    policy = '[rules]\nassessor_not_variant = true\n[settings]\nassessor_labels = "construction"\n'
    (worse,) = _check(gate_workspace, policy, WORSE, tmp_path).results
    (plain,) = _check(gate_workspace, policy, PLAIN, tmp_path).results
    assert not worse.passed and "'variant'" in worse.message
    assert plain.passed and "trained on 9 labelled models" in plain.message  # the candidate is left out of training


def test_keyword_rule_names_the_failing_keywords_with_their_intervals(gate_workspace, tmp_path):
    (result,) = _check(gate_workspace, "[rules]\nkeyword_error_rate_below = 0.5\nkeyword_min_composites = 30\n", WORSE, tmp_path).results
    assert list(result.keywords["keyword"]) == ["sky"]  # the only keyword on >= 30 of the 72 composites (6 of 12 backgrounds)
    assert result.details[0].startswith("sky: error rate") and "[" in result.details[0] and "on 36 composites" in result.details[0]


BASELINE_CASES = [
    # (key, a margin it holds under, a margin it fails under, alpha)
    ("accuracy_margin", 0.4, 0.05, 0.05),
    ("robustness_score_margin", 0.6, 0.05, 0.05),
    ("keyword_error_rate_margin", 0.4, 0.1, 0.05),
    # 5 of 6 targets worse, none better: exact McNemar p = 0.0625, significant at 0.1 only
    ("worst_case_accuracy_margin", 0.05, 0.05, 0.1),
]


@pytest.mark.parametrize(("key", "holds", "fails", "alpha"), BASELINE_CASES)
def test_each_baseline_rule_holds_under_a_wide_margin_and_fails_under_a_narrow_one(gate_workspace, tmp_path, key, holds, fails, alpha):
    strict_alpha = 0.05 if key == "worst_case_accuracy_margin" else alpha
    (held,) = _check(gate_workspace, f"[baseline]\n{key} = {holds}\nalpha = {strict_alpha}\n", WORSE, tmp_path, baseline=PLAIN).results
    (failed,) = _check(gate_workspace, f"[baseline]\n{key} = {fails}\nalpha = {alpha}\n", WORSE, tmp_path, baseline=PLAIN).results
    assert held.name == failed.name == f"baseline.{key}"
    assert held.passed, held.message
    assert not failed.passed, failed.message


def test_a_worsening_that_mcnemar_does_not_find_passes(gate_workspace, tmp_path):
    (result,) = _check(gate_workspace, "[baseline]\nworst_case_accuracy_margin = 0.05\n", WORSE, tmp_path, baseline=PLAIN).results
    assert result.value < -0.05 and result.passed
    assert "McNemar p = 0.0625 on 6 paired targets (5 worse, 0 better)" in result.message and "not significant" in result.message


ALL_BASELINE = "[baseline]\n" + "\n".join(f"{key} = 0.05" for key in BASELINE_RULES if key != "keyword_error_rate_margin") + "\nkeyword_error_rate_margin = 0.1\n"


def test_a_candidate_equal_to_the_baseline_passes_every_baseline_rule(gate_workspace, tmp_path):
    result = _check(gate_workspace, ALL_BASELINE, PLAIN, tmp_path, baseline=PLAIN)
    assert [r.name for r in result.results] == [f"baseline.{key}" for key in BASELINE_RULES]
    assert result.passed, [r.message for r in result.results if not r.passed]
    assert all(r.value == 0 for r in result.results)


def test_a_candidate_of_higher_background_strength_fails_and_names_the_keywords_that_got_worse(gate_workspace, tmp_path):
    result = _check(gate_workspace, ALL_BASELINE, WORSE, tmp_path, baseline=PLAIN)
    keyword = next(r for r in result.results if r.name == "baseline.keyword_error_rate_margin")
    assert not result.passed and not keyword.passed
    worse = list(keyword.keywords["keyword"])
    assert worse and set(worse) <= {"sky", "tree", "grass", "sea", "sand"}
    assert all(word in keyword.message for word in worse)
    assert (keyword.keywords["error_rate"] - keyword.keywords["baseline_error_rate"] > 0.1).all()
    assert (keyword.keywords["p_value"] < 0.05).all()
    junit = ET.parse(result.files["junit"]).getroot()
    failure = junit.find(".//testcase[@name='baseline.keyword_error_rate_margin']/failure")
    assert failure is not None and all(f"{word}: error rate" in failure.text for word in worse)
    assert all(word in result.summary for word in worse)


# -- the files ---------------------------------------------------------------------------------------
def test_junit_parses_with_one_case_per_rule_and_the_value_and_limit_in_each_message(gate_workspace, tmp_path):
    text = f"[rules]\nworst_case_accuracy_min = 0.5\naccuracy_drop_max = 0.2\nkeyword_error_rate_below = 0.5\n{ALL_BASELINE}"
    result = _check(gate_workspace, text, WORSE, tmp_path, baseline=PLAIN)
    root = ET.parse(tmp_path / "junit.xml").getroot()
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [r.name for r in result.results] == parse_policy(text).rule_names
    failed = [c for c in cases if c.find("failure") is not None]
    assert int(suite.get("tests")) == len(cases) and int(suite.get("failures")) == len(failed) == sum(not r.passed for r in result.results)
    for case, rule in zip(cases, result.results):
        shown = case.find("failure").get("message") if not rule.passed else case.find("system-out").text
        assert shown == rule.message and f"{rule.value:.3f}" in shown
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props == {"candidate": WORSE, "baseline": PLAIN, "suite": SUITE, "policy": "policy.toml"}
    summary = (tmp_path / "summary.md").read_text()
    assert summary == result.summary and summary.startswith(f"### Backdrop check FAILED: {len(failed)} of {len(cases)} rules")
    assert summary.count("| **FAIL** |") == len(failed)


# -- the command -------------------------------------------------------------------------------------
def _policy(tmp_path, text: str):
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return str(path)


def _argv(workspace, policy: str, out, *more: str) -> list[str]:
    return ["check", "--workspace", str(workspace.root), "--policy", policy, "--suite", SUITE, "--out", str(out), "--device", "cpu", "--no-report", *more]


def test_cli_exits_0_when_every_rule_holds_and_1_when_one_fails(gate_workspace, tmp_path, capsys):
    policy = _policy(tmp_path, "[rules]\nworst_case_accuracy_min = 0.5\n[baseline]\naccuracy_margin = 0.05\n")
    assert main(_argv(gate_workspace, policy, tmp_path / "ok", "--model", PLAIN, "--baseline", PLAIN)) == 0
    assert "### Backdrop check passed" in capsys.readouterr().out
    assert main(_argv(gate_workspace, policy, tmp_path / "bad", "--model", WORSE, "--baseline", PLAIN)) == 1
    out = capsys.readouterr().out
    assert "### Backdrop check FAILED: 2 of 2 rules" in out and "worst-case accuracy 0.000 \\< 0.500" in out
    assert sorted(p.name for p in (tmp_path / "bad").iterdir()) == ["junit.xml", "summary.md"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[rules]\nworst_case_acuracy_min = 0.5\n", "unknown key 'worst_case_acuracy_min' in [rules] (did you mean 'worst_case_accuracy_min'?)"),
        ("[rules]\nworst_case_accuracy_min = 1.5\n", "[rules] worst_case_accuracy_min = 1.5 must be a number in [0, 1]; e.g. worst_case_accuracy_min = 0.5"),
        ('[rules]\nassessor_not_variant = "yes"\n', "[rules] assessor_not_variant = 'yes' must be true or false"),
        ("[baseline]\naccuracy_margin = 0.05\n", "[baseline] rules (accuracy_margin) need a baseline model; give --baseline or remove them"),
    ],
)
def test_cli_bad_policy_is_exit_2_with_one_line_and_changes_nothing(gate_workspace, tmp_path, capsys, text, expected):
    policy = _policy(tmp_path, text)
    before = workspace_state(gate_workspace)
    line = cli_error(_argv(gate_workspace, policy, tmp_path / "out", "--model", "new-candidate", "--arch", "torchscript",
                           "--checkpoint", str(tmp_path / "missing.pt"), "--labels", str(tmp_path / "labels.txt")), capsys)  # fmt: skip
    assert expected in line and line.startswith(f"error: {policy}: ")
    assert workspace_state(gate_workspace) == before
    assert not (tmp_path / "out" / "junit.xml").exists()


def test_cli_registers_a_torchscript_candidate_on_the_fly_with_add_models_checks(gate_workspace, tmp_path, capsys):
    files = tmp_path / "files"
    files.mkdir()
    checkpoint = save_torchscript(RegionNet((CENTRE_BOX,)), files / "candidate.pt", seed=5)
    labels = write_labels(files / "labels.txt")
    policy = _policy(tmp_path, "[rules]\naccuracy_drop_max = 0.0\n")  # an object-only network: its composites score as its originals
    argv = _argv(gate_workspace, policy, tmp_path / "out", "--model", "object-reader", "--arch", "torchscript", "--checkpoint", str(checkpoint),
                 "--labels", str(labels), "--input-size", str(SIZE))  # fmt: skip
    assert main(argv) == 0, capsys.readouterr()
    capsys.readouterr()
    assert get_model_spec(gate_workspace, "object-reader").source == "torchscript"
    again = cli_error(argv, capsys)  # registered already: add-model's rule, one line, nothing changed
    assert "already registered" in again and "replace" in again
    assert main([*argv, "--replace"]) == 0


def test_every_rule_key_has_a_rule():
    assert set(RULE_KEYS) == set(RULES) | {"keyword_min_composites"}
    assert set(BASELINE_KEYS) == set(BASELINE_RULES) | {"keyword_min_composites", "alpha"}


def test_backdrop_sh_check_passes_the_arguments_and_the_exit_status_through(tmp_path):
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        ["bash", str(root / "backdrop.sh"), "check", "--policy", str(tmp_path / "missing.toml"), "--model", "m", "--workspace", str(tmp_path / "ws")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == f"error: policy {tmp_path / 'missing.toml'}: cannot read it (No such file or directory); pass a TOML file such as examples/policy.toml"


def test_a_suite_recipe_builds_the_suite_once_and_finds_it_again(gate_workspace, tmp_path):
    policy = parse_policy('[suite]\nmethod = "random"\nn = 3\nseed = 7\n[rules]\naccuracy_drop_max = 1.0\n')
    first = check(gate_workspace, policy, PLAIN, out=tmp_path / "a", report=False, device="cpu")
    suites = gate_workspace.query("SELECT id, n, seed FROM suites WHERE method = 'random' AND n = 3")
    again = check(gate_workspace, policy, PLAIN, out=tmp_path / "b", report=False, device="cpu")
    assert first.passed and again.suite_id == first.suite_id == suites[0]["id"] and len(suites) == 1 and suites[0]["seed"] == 7


def test_cli_unknown_suite_or_baseline_is_exit_2_and_changes_nothing(gate_workspace, tmp_path, capsys):
    policy = _policy(tmp_path, "[rules]\naccuracy_drop_max = 0.5\n")
    before = workspace_state(gate_workspace)
    argv = ["check", "--workspace", str(gate_workspace.root), "--policy", policy, "--model", PLAIN, "--out", str(tmp_path / "out")]
    assert "no suite 'nope'" in cli_error([*argv, "--suite", "nope"], capsys)
    assert "no suite; give --suite or [suite] id" in cli_error(argv, capsys)
    assert "nobody" in cli_error([*argv, "--suite", SUITE, "--baseline", "nobody"], capsys)
    judged = _policy(tmp_path, "[rules]\nassessor_not_variant = true\n")  # human labels: nobody judged a model on the suite
    line = cli_error([*argv[:4], judged, *argv[5:], "--suite", SUITE], capsys)
    assert "the assessor rules need human labels of models other than" in line and "judge models on suite 'all-12'" in line
    assert workspace_state(gate_workspace) == before


# -- issue 42.8: a fresh suite's assessor rules are refused before any work; the suite by its label; stage lines --------------
ASSESSOR_ON_A_RECIPE = '[suite]\nmethod = "random"\nn = 4\nseed = 0\n\n[rules]\nassessor_variant_probability_max = 0.5\n'


def test_assessor_rules_on_a_suite_not_built_yet_are_refused_before_any_work(tiny_model_workspace, tmp_path):
    from analytics.gate import preflight

    suites_before = workspace_state(tiny_model_workspace)
    with pytest.raises(InvalidInputError, match="no saved suite of the recipe .* has any: judge models on it first"):
        preflight(tiny_model_workspace, parse_policy(ASSESSOR_ON_A_RECIPE, "policy.toml"), "tiny", baseline=None, suite_id=None, out=tmp_path / "out")
    assert workspace_state(tiny_model_workspace) == suites_before and not (tmp_path / "out").exists()


def test_the_cli_prints_a_line_per_stage_and_names_the_suite_by_its_label(tiny_model_workspace, tmp_path, capsys):
    policy = tmp_path / "policy.toml"
    policy.write_text('[suite]\nmethod = "random"\nn = 4\nseed = 0\n\n[rules]\nworst_case_accuracy_min = 0.0\n')
    code = main(["check", "--workspace", str(tiny_model_workspace.root), "--policy", str(policy), "--model", "fg-only",
                 "--out", str(tmp_path / "out"), "--no-report", "--device", "cpu"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    lines = [line for line in captured.err.splitlines() if line.startswith("[backdrop check]") and not re.search(r"\d+ of \d+$", line)]
    stages = [line.split(" ", 3)[3].split(":")[0] for line in lines]
    assert stages == ["suite", "runs", "rules", "done"]  # capsys is no terminal: lines, no bar
    label, suite_id = re.search(r"on suite `([^`]+)` \(id `([0-9a-f]+)`\)", captured.out).groups()
    assert label == suite_labels_of(tiny_model_workspace)[suite_id] and label.startswith("random, N = 4")


def test_without_a_terminal_a_long_step_prints_its_count_every_twenty_seconds(capsys):
    from analytics.commands.check import StageLines

    now = [0.0]
    stages = StageLines({"runs": "runs: the models on the suite"}, counts=True, clock=lambda: now[0])
    for second, done in ((0, 0), (5, 10), (21, 40), (30, 60), (42, 90)):
        now[0] = second
        stages(done, 100, "runs")
    stages.end()
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "[backdrop check] 0:00 runs: the models on the suite",
        "[backdrop check] 0:21   runs: 40 of 100",
        "[backdrop check] 0:42   runs: 90 of 100",
        "[backdrop check] 0:42 done",
    ]


# -- issue 47.5a: the suite a recipe builds does not depend on the candidate ------------------------------------
def _baseline_runs(workspace, suite_id: str) -> list[tuple]:
    return [tuple(row) for row in workspace.query("SELECT id, created, finished FROM runs WHERE model = ? AND suite_id = ?", (PLAIN, suite_id))]


def test_two_candidate_checkpoints_gate_on_one_suite_and_reuse_the_baselines_run(gate_workspace, tmp_path):
    """As a CI job does: each new checkpoint is registered under one name with --replace. The suite's
    distances come from the baseline, not from every registered model (the candidate included), so
    the second checkpoint finds the first one's suite and the baseline's finished run on it."""
    files, labels = tmp_path / "files", custom_label_space(write_labels(tmp_path / "labels.txt"))
    files.mkdir()
    policy = parse_policy('[suite]\nmethod = "random"\nn = 5\nseed = 3\n\n[baseline]\naccuracy_margin = 1.0\n', "policy.toml")
    checks, runs = [], []
    for seed in (5, 6):  # two checkpoints of the candidate: different weights, one name
        checkpoint = save_torchscript(RegionNet((CENTRE_BOX, *CORNER_BOXES)), files / f"candidate-{seed}.pt", seed=seed)
        register_torchscript(gate_workspace, "candidate", checkpoint=checkpoint, label_space=labels, input_size=SIZE, replace=True)
        checks.append(check(gate_workspace, policy, "candidate", baseline=PLAIN, out=tmp_path / f"out-{seed}", report=False, device="cpu"))
        runs.append(_baseline_runs(gate_workspace, checks[-1].suite_id))
    first, second = checks
    assert second.suite_id == first.suite_id
    assert len(runs[0]) == 1 and runs[1] == runs[0]  # the same run, its created and finished times untouched: not run again
    (params,) = [json.loads(row["params"]) for row in gate_workspace.query("SELECT params FROM suites WHERE id = ?", (first.suite_id,))]
    assert list(params["distance_models"]) == [PLAIN]  # the baseline's embeddings, never the candidate's


def test_suite_models_never_pick_the_candidate_while_another_model_is_registered(tiny_model_workspace):
    assert suite_models(tiny_model_workspace, "tiny", "fg-only").distances == ("fg-only",)  # no EfficientNet-Lite: the baseline
    without_baseline = suite_models(tiny_model_workspace, "tiny")
    assert set(without_baseline.distances) == {"fg-only", "bg-only"} and without_baseline.screening is None  # no ImageNet classifier
    register_efficientnet_lite(tiny_model_workspace, 0)
    assert suite_models(tiny_model_workspace, "tiny", "fg-only") == suite_models(tiny_model_workspace, "bg-only", "fg-only")
    assert suite_models(tiny_model_workspace, "tiny", "fg-only").distances == ("efficientnet-lite0",)
    assert suite_models(tiny_model_workspace, "tiny", "fg-only").screening == "efficientnet-lite0"
    assert suite_models(tiny_model_workspace, "efficientnet-lite0", "fg-only").distances == ("fg-only",)  # a Lite candidate is left out


# -- issue 47.5b: a keyword rule with nothing to measure is an error, never a pass -------------------------------
KEYWORD_RULES = "[rules]\nkeyword_error_rate_below = 0.6\n\n[baseline]\nkeyword_error_rate_margin = 0.1\n"


def test_keyword_rules_without_a_keyword_table_are_errors_that_name_the_keywords_command(tiny_model_workspace, tmp_path, capsys):
    policy = _policy(tmp_path, KEYWORD_RULES)
    argv = ["check", "--workspace", str(tiny_model_workspace.root), "--policy", policy, "--model", "fg-only", "--baseline", "bg-only",
            "--suite", TINY_SUITE, "--out", str(tmp_path / "out"), "--no-report", "--device", "cpu", "--json"]  # fmt: skip
    assert main(argv) == 1  # failing, as a failed rule: CI stops
    rules = json.loads(capsys.readouterr().out)["rules"]
    command = f"python -m analytics keywords --workspace {tiny_model_workspace.root} --items backgrounds"
    assert [(r["name"], r["passed"], r["result"]) for r in rules] == [
        ("keyword_error_rate_below", False, "error"), ("baseline.keyword_error_rate_margin", False, "error")
    ]
    assert all("no background keyword table" in r["message"] and command in r["message"] for r in rules)
    suite = ET.parse(tmp_path / "out" / "junit.xml").getroot().find("testsuite")
    assert (suite.get("errors"), suite.get("failures")) == ("2", "0")
    errors = suite.findall("testcase/error")
    assert len(errors) == 2 and all(e.get("type") == "NothingToMeasure" and command in e.get("message") for e in errors)
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert summary.startswith("### Backdrop check FAILED: 2 of 2 rules (2 with nothing to measure)") and summary.count("| **ERROR** |") == 2


def test_a_keyword_rule_whose_keywords_are_all_too_rare_is_an_error_that_says_so(gate_workspace, tmp_path):
    (result,) = _check(gate_workspace, "[rules]\nkeyword_error_rate_below = 0.6\nkeyword_min_composites = 100\n", WORSE, tmp_path).results
    assert result.error and not result.passed and result.outcome == "error"
    assert "no scene keyword is on >= 100 composites of the suite (the most: 36)" in result.message and "keyword_min_composites" in result.message


# -- issue 47.2: the robustness score is held beside accuracy -----------------------------------------------------
SCORE_RULES_POLICY = "[rules]\nrobustness_score_min = 0.4\n\n[baseline]\nrobustness_score_margin = 0.05\n"


def test_a_higher_robustness_score_with_significantly_lower_accuracy_fails_and_says_why(gate_workspace, tmp_path):
    """``fg-bg`` (the zoo's untrained backbone) is right on half of the scored images and the
    background follower on 40 of 54; fg-bg's accuracies spread less, so it scores higher."""
    minimum, margin = _check(gate_workspace, SCORE_RULES_POLICY, "fg-bg", tmp_path, baseline=WORSE).results
    assert margin.value > 0 and minimum.value >= minimum.limit  # the score alone would pass both
    for rule in (minimum, margin):
        assert not rule.passed and not rule.error, rule.message
        assert "accuracy on the 54 scored images 0.500 vs baseline 0.741, McNemar p = 0.00443 (16 worse, 3 better), alpha 0.05" in rule.message
        assert "significantly lower, so the rule fails" in rule.message


def test_the_robustness_rules_show_accuracy_and_pass_when_it_is_not_significantly_lower(gate_workspace, tmp_path):
    minimum, margin = _check(gate_workspace, SCORE_RULES_POLICY, PLAIN, tmp_path, baseline=WORSE).results
    assert minimum.passed and margin.passed and "vs baseline 0.741" in margin.message and "significantly" not in margin.message
    (alone,) = _check(gate_workspace, "[rules]\nrobustness_score_min = 0.4\n", "fg-bg", tmp_path).results  # no baseline: shown, not tested
    assert alone.passed and alone.message.endswith("; accuracy on the 54 scored images 0.500")
