"""Checks kept in the workspace (analytics/gate/stored.py): their folders and files read back.
The check itself, run as the Gate page's job, is tested with the page (tests/app/test_gate_page.py)."""

from __future__ import annotations

import json
import math

import pytest

from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.gate import RuleResult, check_files, new_check_name
from analytics.gate.stored import CHECKS_FOLDER, check_folder
from analytics.workspace import Workspace, to_json


def test_check_folders_are_plain_names_inside_the_workspace(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    name = new_check_name()
    assert check_folder(workspace, name) == workspace.root / CHECKS_FOLDER / name
    for bad in ("..", "../x", ".hidden", "a/b", "", "x" * 65):
        with pytest.raises(InvalidInputError, match="use letters, digits"):
            check_folder(workspace, bad)


def test_check_files_reads_a_checks_files_and_nothing_else(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    folder = check_folder(workspace, "one")
    folder.mkdir(parents=True)
    (folder / "junit.xml").write_text("<testsuites/>\n")
    assert check_files(workspace, {"junit": str(folder / "junit.xml")}) == {"junit": b"<testsuites/>\n"}
    (tmp_path / "secret.xml").write_text("no")
    for files in ({"junit": str(tmp_path / "secret.xml")}, {"junit": str(folder / ".." / ".." / ".." / "secret.xml")}, {"junit": str(folder / "summary.md")}):
        with pytest.raises(InvalidInputError, match="not a file of a check kept in"):
            check_files(workspace, files)
    with pytest.raises(InvalidInputError, match="check file 'log' is unknown"):
        check_files(workspace, {"log": str(folder / "junit.xml")})
    with pytest.raises(NotFoundError, match="is gone"):
        check_files(workspace, {"summary": str(folder / "summary.md")})


def test_a_rule_result_survives_the_json_of_a_jobs_result():
    results = [
        RuleResult("worst_case_accuracy_min", True, 0.5, 0.3, "ok", ("a", "b")),
        RuleResult("keyword_error_rate_below", False, math.nan, 0.6, "nothing to measure", error=True),
    ]
    back = [RuleResult.from_record(record) for record in json.loads(to_json([r.to_record() for r in results]))]
    assert back[0] == results[0]
    assert back[1].error and not back[1].passed and math.isnan(back[1].value) and back[1].outcome == "error"
