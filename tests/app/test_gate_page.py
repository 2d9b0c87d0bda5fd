"""The Gate page (``pages/18_Gate.py``) in team mode on the tiny workspace (``fg-only`` against ``bg-only``
on ``tiny-suite``).

One check runs once for the module (:func:`gate_run`): an analyst uploads a policy, picks the models
and the suite and presses **Run the gate**; the job runs in its worker process (waited for with
:func:`analytics.jobs.wait`) and the page is run again to show the verdict. What the page hands its
download buttons is recorded, to hold it against what ``python -m analytics check`` writes.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest

from analytics import jobs
from analytics.cli import main
from analytics.exceptions import PermissionDeniedError
from analytics.jobs.process import wait
from analytics.team import accounts, active_user, add_user
from analytics.workspace import PROJECT_ROOT, Workspace
from tests.fixtures.app import APP_TIMEOUT_S, as_shown
from tests.fixtures.models import TINY_SUITE, add_tiny_models, write_tiny_model_files
from tests.fixtures.team import TEAM_PASSWORD
from tests.fixtures.workspace import build_tiny_workspace
from ui.auth import LAST_SEEN
from ui.state import SIGNED_IN

PAGE = "pages/18_Gate.py"
WAIT_S = 300
#: One rule fails, one holds, one against the baseline holds (fg-only: worst-case accuracy 0.5, no accuracy drop, 0.083 above bg-only on the composites).
POLICY = "[rules]\nworst_case_accuracy_min = 0.9\naccuracy_drop_max = 0.25\n\n[baseline]\naccuracy_margin = 0.02\n"
RULES = ["worst_case_accuracy_min", "accuracy_drop_max", "baseline.accuracy_margin"]
CHECK = ["--model", "fg-only", "--baseline", "bg-only", "--suite", TINY_SUITE]


@dataclass(frozen=True)
class GateRun:
    workspace: Workspace
    app: AppTest
    job: jobs.Job
    offered: dict[str, bytes]  # file name -> the bytes the page handed its download button


def open_as(role: str) -> AppTest:
    """The page run once, signed in as the account named after ``role``."""
    app = AppTest.from_file(str(PROJECT_ROOT / PAGE), default_timeout=APP_TIMEOUT_S)
    app.session_state[SIGNED_IN] = role
    app.session_state[LAST_SEEN] = time.time()
    return app.run()


@pytest.fixture(scope="module")
def gate_run(tmp_path_factory):
    """Team mode on the tiny workspace (an analyst and a viewer); the analyst's check, run once."""
    root = tmp_path_factory.mktemp("gate-page")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(accounts, "_HASHER", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
        workspace = add_tiny_models(build_tiny_workspace(root / "ws"), write_tiny_model_files(root / "model-files"))
        for role in ("analyst", "viewer"):
            add_user(workspace, role, role, TEAM_PASSWORD)
        patch.setenv("BACKDROP_TEAM", "1")
        patch.setenv("BACKDROP_WORKSPACE", str(workspace.root))
        offered: dict[str, bytes] = {}
        real = DeltaGenerator.download_button

        def recorded(self, label, data, *args, file_name=None, **kwargs):
            offered[file_name] = data
            return real(self, label, data, *args, file_name=file_name, **kwargs)

        patch.setattr(DeltaGenerator, "download_button", recorded)
        app = open_as("analyst")
        app.radio(key="gate.source").set_value("upload").run()
        app.file_uploader(key="gate.upload").set_value(("policy.toml", POLICY.encode(), "application/toml"))
        app.selectbox(key="gate.candidate").set_value("fg-only")
        app.selectbox(key="gate.baseline").set_value("bg-only")
        app.selectbox(key="gate.suite").set_value(TINY_SUITE)
        app = app.run()
        assert not app.exception and not app.error, [e.value for e in app.error]
        app = app.button(key="gate.run").click().run()
        assert not app.exception, app.exception
        job = wait(workspace, app.session_state["gate.job"], timeout=WAIT_S)
        offered.clear()
        app = app.run()
        yield GateRun(workspace, app, job, dict(offered))


def test_an_analysts_check_runs_as_a_job_and_the_page_shows_its_verdict(gate_run):
    job, app = gate_run.job, gate_run.app
    assert job.kind == "gate" and job.status == "done" and job.owner == "analyst", job.message
    assert job.params["policy_name"] == "policy.toml" and job.params["policy_text"] == POLICY
    assert not app.exception and not app.error
    table = app.dataframe[0].value
    assert table["rule"].tolist() == RULES and table["result"].tolist() == ["fail", "pass", "pass"]
    assert "FAILED: 1 of 3 rules" in app.get("plotly_chart")[0].proto.spec  # the verdict figure's title
    assert sorted(gate_run.offered) == ["junit.xml", "report.html", "summary.md"]
    assert gate_run.offered["report.html"].startswith(b"<!DOCTYPE html>")
    assert any("Release gate" in caption.value and "Finished" in caption.value for caption in app.caption)


def test_the_downloaded_junit_and_summary_are_what_the_command_line_writes(gate_run, tmp_path, monkeypatch, capsys):
    (tmp_path / "policy.toml").write_text(POLICY)
    monkeypatch.chdir(tmp_path)  # `--policy policy.toml`, as the upload was named
    out = tmp_path / "cli"
    assert main(["check", "--workspace", str(gate_run.workspace.root), "--policy", "policy.toml", *CHECK, "--out", str(out)]) == 1  # a rule fails
    capsys.readouterr()

    def timeless(junit: bytes) -> str:  # the check's wall time and when it ran are all that may differ
        return re.sub(r' (time|timestamp)="[^"]*"', r' \1="…"', junit.decode())

    assert timeless(gate_run.offered["junit.xml"]) == timeless((out / "junit.xml").read_bytes())
    folder = Path(gate_run.job.result["files"]["summary"]).parent  # the page's check names its own report.html
    assert gate_run.offered["summary.md"].decode() == (out / "summary.md").read_text().replace(str(out), str(folder))


def test_a_viewer_sees_the_verdict_and_may_not_start_a_check(gate_run):
    app = open_as("viewer")
    assert not app.exception
    assert not [button for button in app.button if button.key == "gate.run"]
    assert any("Running the gate needs the role admin or analyst" in caption.value for caption in app.caption)
    assert app.dataframe[0].value["rule"].tolist() == RULES  # the newest check, read only
    viewer = active_user(gate_run.workspace, "viewer")
    with pytest.raises(PermissionDeniedError, match="may not run models"):
        jobs.start(gate_run.workspace.acting_as(viewer), "gate", gate_run.job.params)
    assert len(jobs.list_jobs(gate_run.workspace, kind="gate")) == 1


def test_rules_edited_on_the_page_are_shown_as_toml_and_a_bad_policy_is_one_line(gate_run):
    app = open_as("analyst")
    app.radio(key="gate.source").set_value("edit").run()
    app.multiselect(key="gate.edit.rules").set_value(["worst_case_accuracy_min"])
    app.multiselect(key="gate.edit.baseline").set_value([])
    app = app.run()
    shown = app.code[0].value
    assert shown.endswith("[rules]\nworst_case_accuracy_min = 0.3") and "[baseline]" not in shown and '[suite]\nmethod = "random"' in shown
    assert not app.error and not app.button(key="gate.run").disabled
    app = app.number_input(key="gate.edit.rules.worst_case_accuracy_min").set_value(1.5).run()
    (error,) = app.error
    assert "policy.toml: [rules] worst_case_accuracy_min = 1.5 must be a number in [0, 1]" in as_shown(error.value)
    assert app.button(key="gate.run").disabled
    app.radio(key="gate.source").set_value("upload").run()
    app = app.file_uploader(key="gate.upload").set_value(("typo.toml", b"[rules]\nworst_case_acuracy_min = 0.5\n", "application/toml")).run()
    (error,) = app.error
    assert "typo.toml: unknown key 'worst_case_acuracy_min' in [rules] (did you mean 'worst_case_accuracy_min'?)" in as_shown(error.value)
    assert app.button(key="gate.run").disabled
