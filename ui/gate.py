"""The Gate page's parts: what to check (candidate, baseline, suite, and the policy: the example, an
uploaded TOML file or rules edited on the page and shown as TOML), and a finished check's verdict
with its files as downloads.

Nothing is computed here: the policy is read by :func:`analytics.gate.parse_policy` (an upload by
:func:`analytics.gate.parse_policy_bytes`, size-capped) and written by :func:`analytics.gate.policy_toml`;
the inputs are checked by :func:`analytics.gate.check_inputs`; the check runs as the background job
``gate`` (:func:`analytics.gate.check_text`); its verdict is :func:`analytics.gate.verdict_table` and
:func:`analytics.figures.verdict_figure`, its files those the command line writes
(:func:`analytics.gate.check_files`).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from analytics._validation import ParameterNames
from analytics.exceptions import BackdropError
from analytics.figures import verdict_figure
from analytics.gate import (
    BASELINE_KEYS,
    BASELINE_RULES,
    EXAMPLE_POLICY,
    FILES,
    MAX_POLICY_MB,
    RULE_KEYS,
    RULES,
    SUITE_KEYS,
    Policy,
    RuleResult,
    check_files,
    check_inputs,
    new_check_name,
    parse_policy,
    parse_policy_bytes,
    policy_toml,
    verdict_table,
)
from analytics.jobs import Job, get_job, latest_job
from analytics.models import list_models
from analytics.suites import suite_labels_of
from analytics.workspace import Workspace
from ui import jobs as job_view
from ui.markdown import escape_markdown
from ui.uploads import upload_name

KEY = "gate."
JOB = KEY + "job"  # session-state key: the id of the gate job this session started
EXAMPLE, UPLOAD, EDIT = "example", "upload", "edit"
SOURCES = {EXAMPLE: "The example policy", UPLOAD: "Upload a policy file", EDIT: "Edit the rules here"}
EXAMPLE_NAME = "examples/policy.toml"  # the example policy's name in messages, the summary and the expander
EDITED_NAME = "policy.toml"  # the rules edited here, as the page offers them: `check --policy policy.toml` checks the same
NONE = ""  # no baseline; the suite of the policy
MIMES = {"junit": "application/xml", "summary": "text/markdown", "report": "text/html"}
FILE_HELP = {
    "junit": "One test case per rule: GitHub Actions, GitLab and Jenkins show it as test results.",
    "summary": "The Markdown summary, fit for a pull-request comment.",
    "report": "The self-contained HTML report of the candidate beside the baseline.",
}
RECIPE_METHODS = SUITE_KEYS["method"][0]


# -- what to check -----------------------------------------------------------------------------------
def request_form(workspace: Workspace) -> dict[str, Any] | None:
    """The check's inputs and its start button; the job's parameters when the button is pressed, else None."""
    models = [spec.name for spec in list_models(workspace)]
    if not models:
        st.info("Register a model first (Models page): the gate checks a registered candidate, against the last release if you have one.")
        return None
    suites = suite_labels_of(workspace)
    left, middle, right = st.columns(3)
    candidate = left.selectbox("Candidate", models, key=KEY + "candidate", help="The model under test (`check --model`).")
    baseline = middle.selectbox(
        "Baseline (optional)", [NONE, *models], format_func=lambda name: name or "none", key=KEY + "baseline",
        help="The last release (`check --baseline`): the policy's [baseline] rules compare the candidate with it.",
    )  # fmt: skip
    suite_id = right.selectbox(
        "Suite", [NONE, *suites], format_func=lambda s: suites[s] if s else "the policy's [suite]", key=KEY + "suite",
        help="A saved suite (`check --suite`), or the policy's [suite]: a saved suite's id or a recipe, built once and found again.",
    )  # fmt: skip
    policy = choose_policy()
    report = st.checkbox("Write the HTML report too", value=True, key=KEY + "report", help="report.html, as `check` writes it (`--no-report` leaves it out).")
    ready = policy is not None and inputs_hold(workspace, policy, candidate, baseline or None, suite_id or None)
    if not st.button("Run the gate", type="primary", icon=":material/play_arrow:", key=KEY + "run", disabled=not ready, help="Runs as a background job."):
        return None
    assert policy is not None  # the button is disabled without one
    return {
        "policy_text": policy.text, "policy_name": policy.path, "candidate": candidate, "baseline": baseline or None, "suite_id": suite_id or None,
        "report": bool(report), "name": new_check_name(),
    }  # fmt: skip


#: How the gate's messages name its inputs on this page: the fields above (:class:`analytics._validation.ParameterNames`).
FIELDS = ParameterNames({"baseline": "a Baseline", "suite_id": "a Suite"})


def inputs_hold(workspace: Workspace, policy: Policy, candidate: str, baseline: str | None, suite_id: str | None) -> bool:
    """Whether the check would start (:func:`analytics.gate.check_inputs`); if not, its one line as a
    warning over the disabled button: an input still to choose (the example policy's [baseline] rules
    before a baseline is picked, on every first visit), not a mistake the user made."""
    try:
        check_inputs(workspace, policy, candidate, baseline=baseline, suite_id=suite_id, names=FIELDS)
    except BackdropError as err:
        st.warning(f"Not ready to run: {escape_markdown(err)}", icon=":material/block:")
        return False
    return True


def choose_policy() -> Policy | None:
    """The policy: the example, an upload or the rules edited here, shown as TOML; None (and the reason, one line) while there is none."""
    source = st.radio("Policy", list(SOURCES), format_func=SOURCES.__getitem__, horizontal=True, key=KEY + "source")
    try:
        if source == EXAMPLE:
            policy = example_policy()
        elif source == UPLOAD:
            upload = st.file_uploader(
                f"Policy file (TOML, up to {MAX_POLICY_MB} MB)", type=["toml"], key=KEY + "upload", max_upload_size=MAX_POLICY_MB,
                help="The file `check --policy` reads; the example policy documents every key.",
            )  # fmt: skip
            if upload is None:
                st.caption("Choose a policy file; it is read and checked at once, nothing is saved.")
                return None
            policy = parse_policy_bytes(upload.getvalue(), upload_name(upload))
        else:
            text = edited_policy(example_policy())
            show_toml(text)
            policy = parse_policy(text, EDITED_NAME)
    except BackdropError as err:
        st.error(escape_markdown(err), icon=":material/error:")
        return None
    if source != EDIT:
        with st.expander(f"The policy: {escape_markdown(policy.path)}"):
            st.code(policy.text, language="toml")
    return policy


def example_policy() -> Policy:
    """The example policy, named as the project names it, not by its path on the server (shown to every team member)."""
    return parse_policy(EXAMPLE_POLICY.read_text(encoding="utf-8"), EXAMPLE_NAME)


def show_toml(text: str) -> None:
    """The edited rules as the policy file they make, with a download."""
    st.markdown("**The policy file these rules make**")
    st.code(text, language="toml")
    st.download_button(
        f"Download {EDITED_NAME}", text.encode(), file_name=EDITED_NAME, mime="application/toml", icon=":material/download:", key=KEY + "edit.download",
        help="The same check from the command line: `python -m analytics check --policy policy.toml ...`.",
    )  # fmt: skip


def edited_policy(start: Policy) -> str:
    """Rules edited on the page, starting from ``start``'s (the example policy), as the text of a policy file."""
    st.caption("Each rule's limit starts at the example policy's; `examples/policy.toml` explains every rule.")
    left, right = st.columns(2, gap="large")
    with left:
        chosen = st.multiselect("Rules on the candidate: [rules]", list(RULES), default=list(start.rules), key=KEY + "edit.rules")
        rules = {key: limit_input("rules", key, start.rules.get(key), RULE_KEYS[key]) for key in chosen}
        if "keyword_error_rate_below" in chosen:
            rules["keyword_min_composites"] = int(st.number_input("keyword_min_composites", value=start.keyword_min_composites, step=1, key=KEY + "edit.rules.kmc"))
    with right:
        chosen = st.multiselect("Rules against the baseline: [baseline]", list(BASELINE_RULES), default=list(start.baseline), key=KEY + "edit.baseline")
        margins: dict[str, Any] = {key: limit_input("baseline", key, start.baseline.get(key), BASELINE_KEYS[key]) for key in chosen}
        if "keyword_error_rate_margin" in chosen:
            margins["keyword_min_composites"] = int(
                st.number_input("keyword_min_composites", value=start.baseline_min_composites, step=1, key=KEY + "edit.baseline.kmc")
            )
        if chosen:
            margins["alpha"] = float(st.number_input("alpha (McNemar's test)", value=start.alpha, step=0.01, format="%.3f", key=KEY + "edit.alpha"))
    st.markdown("**Suite recipe** (used when the suite above is the policy's)")
    left, middle, right = st.columns(3)
    method = left.selectbox("method", RECIPE_METHODS, index=RECIPE_METHODS.index(start.suite.method or "random"), key=KEY + "edit.method")
    n = int(middle.number_input("n (backgrounds per target)", value=start.suite.n, step=1, key=KEY + "edit.n"))
    seed = int(right.number_input("seed", value=start.suite.seed, step=1, key=KEY + "edit.seed"))
    settings = {}
    if any(key.startswith("assessor_") for key in rules):
        settings["assessor_labels"] = st.radio(
            "assessor_labels", ["human", "construction"], horizontal=True, key=KEY + "edit.labels",
            help="What the assessor learns from: human judgments on the suite, or a zoo's construction labels.",
        )  # fmt: skip
    return policy_toml(suite={"method": method, "n": n, "seed": seed}, rules=rules, baseline=margins, settings=settings)


def limit_input(section: str, key: str, value: Any, spec: tuple[Any, str]) -> Any:
    """One rule's limit: a checkbox for a true / false rule, else a number (its range is checked by the policy's parser)."""
    kind, example = spec
    if kind == "bool":
        return st.checkbox(key, value=True if value is None else bool(value), key=f"{KEY}edit.{section}.{key}")
    start = float(example) if value is None else float(value)
    return float(st.number_input(key, value=start, step=0.01, format="%.3f", key=f"{KEY}edit.{section}.{key}"))


# -- a check's verdict ---------------------------------------------------------------------------------
def show_check(workspace: Workspace) -> None:
    """The check this session started (else the newest of the workspace): its progress while it runs, its verdict once done."""
    job_id = st.session_state.get(JOB)
    job = get_job(workspace, job_id) if job_id else latest_job(workspace, "gate")
    if job is None:
        st.info(
            "Choose the candidate and the policy and press **Run the gate**. It runs what `python -m analytics check` runs, as a "
            "background job (Home lists it; Cancel stops it, Resume finishes it), and offers the same files."
        )
        return
    job = job_view.show_job(workspace, job.id, key=KEY)
    if job.status == "done":
        show_verdict(workspace, job)


def show_verdict(workspace: Workspace, job: Job) -> None:
    """A finished check: who against whom on which suite, the verdict figure and table, the summary, the files."""
    result = job.result
    suite = suite_labels_of(workspace).get(result["suite"], result["suite"])
    against = f" against baseline **{escape_markdown(result['baseline'])}**" if result.get("baseline") else ""
    st.subheader("Verdict", anchor=False)
    st.caption(
        f"Candidate **{escape_markdown(result['candidate'])}**{against} on suite {escape_markdown(suite)}, "
        f"policy {escape_markdown(job.params.get('policy_name', ''))} · checked in {result['seconds']:.1f} s"
    )
    table = verdict_table([RuleResult.from_record(record) for record in result["rules"]])
    st.plotly_chart(verdict_figure(table), width="stretch", key=KEY + "figure")
    with st.expander("The verdict as a table"):
        st.dataframe(table, hide_index=True, width="stretch", key=KEY + "table")
    try:
        files = check_files(workspace, result["files"])
    except BackdropError as err:
        st.warning(escape_markdown(err))
        return
    with st.expander(f"Summary ({FILES['summary']})"):
        st.code(files["summary"].decode("utf-8"), language="markdown", wrap_lines=True)
    for column, (key, data) in zip(st.columns(len(files)), files.items()):
        column.download_button(
            f"Download {FILES[key]}", data, file_name=FILES[key], mime=MIMES[key], icon=":material/download:", key=f"{KEY}download.{key}",
            help=FILE_HELP[key],
        )  # fmt: skip
    st.caption("The files `python -m analytics check` writes into `--out` for the same inputs.")
