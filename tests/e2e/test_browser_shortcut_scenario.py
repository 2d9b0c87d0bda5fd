"""Issue 47's "Done when" scenario in headless chromium, built from small data: two tiny models of the
workspace's own classes ``disc`` and ``square``, one that reads the object (``fg-only``: the centre
box) and one with a background shortcut (``bg-only``: the corners), both run over one suite.

The data make the shortcut real: each class's objects have one colour that ``fg-only`` reads as that
class, and each class's own photos one background colour that ``bg-only`` reads as that class. So
``bg-only`` is right on the targets' own photos and near chance once a target sits on a new
background, while ``fg-only`` is right everywhere; McNemar's test on the paired composites sets them
apart. The library computes everything (a module fixture); the browser is used for what a user sees
and does:

* Home names the shortcut model as the one composite accuracy finds hit hardest (47.1);
* the Gate page fails it with the verdicts and files ``python -m analytics check`` writes for the same
  inputs, and a keyword rule with no keyword tables is an ERROR there, not a pass (47.5b, 47.6);
* mapping a class to an ImageNet index on Data › Classes leaves every run current (47.7);
* two checkpoints of one candidate gate against one suite id and one baseline run (47.5a, library).

Waits without text and clipping at 1400 px are tests/e2e/test_browser_fit_1400.py's and
benchmarks/dashboard_waits.py's.
"""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from analytics.cli import main
from analytics.data import custom_label_space, list_class_mappings, store_backgrounds, store_targets
from analytics.findings import composite_outcomes, headline
from analytics.gate import check, parse_policy
from analytics.models import load_model, register_torchscript
from analytics.runs import current_runs, list_runs, start_runs
from analytics.suites import suite_labels_of
from analytics.workspace import Workspace
from tests.e2e.conftest import AppServer
from tests.e2e.test_browser_own_data import choose, click_until, open_page, pick_radio, settle, upload
from tests.fixtures.models import CENTRE_BOX, CORNER_BOXES, SIZE, TINY_SUITE, RegionNet, insert_suite, save_torchscript, write_labels
from tests.fixtures.workspace import CLASSES, make_background, make_target

OBJECT_READER, SHORTCUT = "fg-only", "bg-only"
#: Candidate colours of the objects and of the targets' own backgrounds: the corners of the RGB cube and grey.
PALETTE = [(r, g, b) for r in (0, 255) for g in (0, 255) for b in (0, 255)] + [(128, 128, 128)]
#: A rule the shortcut model holds (its worst case is 1 of 6 targets), one it fails, one against the
#: baseline, and a keyword rule that has nothing to measure (the workspace has no keyword tables): ERROR.
POLICY = "[rules]\nworst_case_accuracy_min = 0.1\naccuracy_drop_max = 0.25\nkeyword_error_rate_below = 0.6\n\n[baseline]\naccuracy_margin = 0.02\n"
KEYWORD_RULE = "keyword_error_rate_below"
IMAGENET_INDEX = 430  # basketball: what a user maps a class to so that an ImageNet model can screen the pool
LONG_MS = 180_000  # the gate's worker process imports torch and runs the rules on a loaded 2-core machine


@dataclass(frozen=True)
class Scenario:
    server: AppServer
    workspace: Workspace
    suite_label: str
    policy: Path  # policy.toml, as the user uploads it
    cli_files: Path  # what `python -m analytics check --no-report` wrote for the same inputs
    cli_exit: int


def colour_read_as(workspace: Workspace, model: str) -> dict[str, tuple[int, int, int]]:
    """Class -> the colour of :data:`PALETTE` that ``model`` (its mean colour of some pixel boxes) reads
    most surely as that class, on a plain image of that colour."""
    loaded = load_model(workspace, model, device="cpu")
    plain = np.stack([np.full((SIZE, SIZE, 3), colour, np.uint8) for colour in PALETTE])
    probabilities = loaded.predict(plain).probabilities
    names = list(loaded.spec.label_space.names)
    picked = {name: int(np.argmax(probabilities[:, names.index(name)])) for name in CLASSES}
    for name, row in picked.items():  # the seeded weights must read some colour as each class
        assert probabilities[row, names.index(name)] > 0.5, f"{model} reads no colour of {PALETTE} as {name}: pick another seed"
    return {name: PALETTE[row] for name, row in picked.items()}


def build_workspace(root: Path) -> Workspace:
    """The tiny world's backgrounds and 2 x 3 targets, recoloured (module notes), the two models and
    their finished runs over ``tiny-suite``."""
    rng = np.random.default_rng(0)
    workspace = Workspace(root / "ws")
    workspace.set_meta("image_size", str(SIZE))
    labels = custom_label_space(write_labels(root / "labels.txt"))
    for seed, (name, boxes) in enumerate({OBJECT_READER: (CENTRE_BOX,), SHORTCUT: CORNER_BOXES}.items(), start=1):
        register_torchscript(workspace, name, checkpoint=save_torchscript(RegionNet(boxes), root / f"{name}.pt", seed=seed), label_space=labels, input_size=SIZE)
    objects, scenes = colour_read_as(workspace, OBJECT_READER), colour_read_as(workspace, SHORTCUT)
    targets = [make_target(name, i, rng) for name in CLASSES for i in range(3)]
    for target in targets:
        target.image[target.mask] = objects[target.class_name]
        target.image[~target.mask] = scenes[target.class_name]
    store_targets(workspace, targets, classes=CLASSES)
    store_backgrounds(workspace, [make_background(i, rng) for i in range(12)])
    insert_suite(workspace)
    start_runs(workspace, [OBJECT_READER, SHORTCUT], TINY_SUITE, device="cpu")
    return workspace


@pytest.fixture(scope="module")
def scenario(app_server_factory, tmp_path_factory) -> Scenario:
    root = tmp_path_factory.mktemp("shortcut")
    workspace = build_workspace(root)
    found = headline(list_runs(workspace), functools.partial(composite_outcomes, workspace))
    assert found is not None and found.most is not None and found.most["model"] == SHORTCUT, found  # the data set the models apart
    policy = root / "policy.toml"
    policy.write_text(POLICY)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)  # `--policy policy.toml`: the summary names the policy as the page names the upload
        cli_exit = main(["check", "--workspace", str(workspace.root), "--policy", policy.name, "--model", SHORTCUT, "--baseline", OBJECT_READER,
                         "--suite", TINY_SUITE, "--out", str(root / "cli"), "--no-report", "--device", "cpu"])  # fmt: skip
    return Scenario(app_server_factory(workspace), workspace, suite_labels_of(workspace)[TINY_SUITE], policy, root / "cli", cli_exit)


def outcomes(junit: str) -> dict[str, str]:
    """Rule -> pass, fail or error, as a JUnit file of the gate says."""
    cases = ET.fromstring(junit).iter("testcase")
    return {case.get("name"): next((outcome for tag, outcome in (("failure", "fail"), ("error", "error")) if case.find(tag) is not None), "pass") for case in cases}


def timeless(junit: str) -> str:
    """A JUnit file without the check's wall time and start: all that may differ between two checks."""
    return re.sub(r' (time|timestamp)="[^"]*"', r' \1="…"', junit)


def test_home_names_the_shortcut_model_by_composite_accuracy(page: Page, scenario):
    open_page(page, scenario.server.url, "Backdrop")
    expect(page.get_by_role("heading", name="Start here")).to_be_visible()
    sentence = page.get_by_test_id("stMarkdown").filter(has_text="by composite accuracy")
    expect(sentence).to_contain_text(re.compile(rf"by composite accuracy \(.*\), {SHORTCUT} is hit hardest by the backgrounds: .*; {OBJECT_READER} least"))


def test_the_gate_page_fails_the_shortcut_model_as_the_command_line_does(page: Page, scenario):
    cli_junit = (scenario.cli_files / "junit.xml").read_text()
    expected = outcomes(cli_junit)
    assert scenario.cli_exit == 1 and expected[KEYWORD_RULE] == "error" and expected["baseline.accuracy_margin"] == "fail", expected

    page.goto(f"{scenario.server.url}/Gate")
    # the example policy, chosen at first, has [baseline] rules: until a baseline is chosen the page says so
    expect(page.get_by_test_id("stAlertContentWarning")).to_contain_text("need a baseline model; give a Baseline or remove them")
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)  # a choice still to make, not a mistake: no red on a first visit
    choose(page, page, "Baseline (optional)", OBJECT_READER)
    choose(page, page, "Candidate", SHORTCUT)
    choose(page, page, "Suite", scenario.suite_label)
    pick_radio(page, page, "Upload a policy file")
    upload(page, page, "Policy file", scenario.policy)
    page.get_by_text("Write the HTML report too").click()  # as `--no-report`
    settle(page)
    click_until(page, page.get_by_role("button", name="Run the gate"), page.get_by_text(re.compile("^(Finished: )?Release gate ")))
    expect(page.get_by_role("heading", name="Verdict")).to_be_visible(timeout=LONG_MS)
    settle(page)

    # the verdict figure: its title and its result column, one row per rule as the command line's
    figure = page.locator(".js-plotly-plot").first
    failed = sum(outcome != "pass" for outcome in expected.values())
    expect(figure).to_contain_text(f"Backdrop check FAILED: {failed} of {len(expected)} rules (1 with nothing to measure)")
    rules, results = (figure.locator(".y-column").nth(n).locator(".cell-text").all_text_contents() for n in (0, 1))  # SVG text: no inner text
    shown = dict(zip(rules, results))
    assert shown.pop("rule") == "result"  # the header, drawn after the cells
    assert shown == {rule: outcome if outcome == "pass" else outcome.upper() for rule, outcome in expected.items()}

    downloaded = {}
    for name in ("junit.xml", "summary.md"):
        with page.expect_download() as download:
            page.get_by_role("button", name=f"Download {name}").click()
        downloaded[name] = Path(download.value.path()).read_text()
        settle(page)
    assert timeless(downloaded["junit.xml"]) == timeless(cli_junit)
    assert downloaded["summary.md"] == (scenario.cli_files / "summary.md").read_text()
    assert "| `keyword_error_rate_below` | **ERROR** |" in downloaded["summary.md"]


def test_mapping_a_class_to_an_imagenet_index_leaves_the_runs_current(page: Page, scenario):
    workspace = scenario.workspace
    before = current_runs(workspace)["id"].tolist()
    assert before and not list_runs(workspace)["stale"].any()
    open_page(page, f"{scenario.server.url}/Data", "Data")
    page.get_by_role("tab", name="Classes", exact=True).click()
    panel = page.get_by_role("tabpanel", name="Classes", exact=True)
    settle(page)
    # both models score disc and square by their own names: nothing is "not mapped yet"
    expect(panel.get_by_test_id("stAlertContentWarning")).to_have_count(0)
    name = next(c for c, mapping in list_class_mappings(workspace).items() if not mapping.imagenet)  # a rerun maps the other class
    choose(page, panel, "Class to map", name)
    choose(page, panel, "ImageNet-1k indices", re.compile(rf"^{IMAGENET_INDEX} · "))
    click_until(page, panel.get_by_role("button", name=f"Save mapping of {name}"), page.get_by_text(re.compile(rf"^Saved {name}: ImageNet \[{IMAGENET_INDEX}\]")))
    settle(page)
    assert current_runs(workspace)["id"].tolist() == before  # both models score the class by its name as before: no run turned stale


def test_two_checkpoints_of_a_candidate_gate_against_one_suite_and_one_baseline_run(scenario, tmp_path):
    workspace, labels = scenario.workspace, custom_label_space(write_labels(tmp_path / "labels.txt"))
    policy = parse_policy('[suite]\nmethod = "random"\nn = 3\nseed = 5\n\n[baseline]\naccuracy_margin = 0.02\n', "policy.toml")
    suites, baseline_runs = [], []
    for seed in (7, 8):  # a CI job registers each new checkpoint under one name
        checkpoint = save_torchscript(RegionNet(CORNER_BOXES), tmp_path / f"rc-{seed}.pt", seed=seed)
        register_torchscript(workspace, "shortcut-rc", checkpoint=checkpoint, label_space=labels, input_size=SIZE, replace=True)
        suites.append(check(workspace, policy, "shortcut-rc", baseline=OBJECT_READER, out=tmp_path / f"out-{seed}", report=False, device="cpu").suite_id)
        baseline_runs.append(list_runs(workspace, model=OBJECT_READER, suite_id=suites[-1])[["id", "created", "finished"]].to_dict("records"))
    assert suites[0] == suites[1] != TINY_SUITE
    assert len(baseline_runs[0]) == 1 and baseline_runs[1] == baseline_runs[0]  # the baseline ran once, on the first checkpoint's check
