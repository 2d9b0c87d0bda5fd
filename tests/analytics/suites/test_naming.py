"""Suite names and labels: what a person reads instead of a suite's content hash (issue 27.10)."""

from __future__ import annotations

import json
import sqlite3

import pytest

import analytics.workspace.store as workspace_module
from analytics.cli import main
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.suites import NAME_MAX_LENGTH, build_suite, check_suite_name, distinct_labels, list_suites, load_suite, resolve_suite
from analytics.suites.naming import suite_label, suite_labels
from analytics.suites.store import name_suite
from analytics.workspace import Workspace
from analytics.workspace._schema import MIGRATIONS

ROW = {"id": "a0fafd22fe26", "method": "ontology", "n": 8, "seed": 0, "targets": 12, "name": "", "classes": ()}


def test_a_label_says_method_n_seed_and_targets():
    assert suite_label(ROW) == "ontology, N = 8, seed 0, 12 targets"
    assert suite_label({**ROW, "targets": 1, "seed": 7}) == "ontology, N = 8, seed 7, 1 target"
    assert suite_label({**ROW, "targets": 6, "classes": ("my_ball",)}) == "ontology, N = 8, seed 0, 6 targets of my_ball"
    assert suite_label({**ROW, "classes": ("a", "b", "c", "d")}) == "ontology, N = 8, seed 0, 12 targets of 4 classes"
    assert ROW["id"] not in suite_label(ROW)


def test_a_given_name_leads_the_label():
    assert suite_label({**ROW, "name": "Cups check"}) == "Cups check (ontology, N = 8, seed 0, 12 targets)"


@pytest.mark.parametrize(
    ("given", "kept"), [(None, ""), ("   ", ""), ("  Cups check ", "Cups check"), ("Tassen: Küche #2 (v1.0)", "Tassen: Küche #2 (v1.0)")]
)
def test_names_are_trimmed_and_plain_ones_kept(given, kept):
    assert check_suite_name(given) == kept


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ("x" * (NAME_MAX_LENGTH + 1), f"has {NAME_MAX_LENGTH + 1} characters; use at most {NAME_MAX_LENGTH}"),
        ("**bold** [x](http://e.x)", "holds '*', '['"),
        ("<script>alert(1)</script>", "holds '<', '>'"),
        ("two\nlines", "holds '\\n'"),
    ],
)
def test_a_bad_name_is_one_line_naming_what_is_wrong(given, words):
    with pytest.raises(InvalidInputError) as caught:
        check_suite_name(given)
    message = str(caught.value)
    assert words in message and "\n" not in message and message.startswith("suite name")


def test_labels_two_suites_share_get_the_time_then_the_id():
    labels = distinct_labels(
        ["aaaa1111bbbb", "cccc2222dddd", "eeee3333ffff", "9999"],
        ["random, N = 2", "random, N = 2", "random, N = 2", "keyword, N = 2"],
        ["2026-11-25T14:02:31+00:00", "2026-11-25T14:02:59+00:00", "2026-11-25T15:00:00+00:00", "2026-11-25T15:00:00+00:00"],
    )
    assert labels == {
        "aaaa1111bbbb": "random, N = 2 · built 2026-11-25 14:02 · aaaa1111",
        "cccc2222dddd": "random, N = 2 · built 2026-11-25 14:02 · cccc2222",
        "eeee3333ffff": "random, N = 2 · built 2026-11-25 15:00",
        "9999": "keyword, N = 2",
    }


def test_a_built_suite_keeps_its_name_and_building_it_again_renames_it(suite_workspace):
    suite = build_suite(suite_workspace, method="random", n=2, seed=0, realism_threshold=0.0, name="  Cups check ")
    assert suite.name == "Cups check" and load_suite(suite_workspace, suite.id).name == "Cups check"
    listed = list_suites(suite_workspace).set_index("id")
    assert listed.at[suite.id, "name"] == "Cups check"
    assert listed.at[suite.id, "label"] == "Cups check (random, N = 2, seed 0, 6 targets)" == suite_label(suite)
    unnamed = build_suite(suite_workspace, method="random", n=2, seed=0, realism_threshold=0.0)  # the same suite, no name: kept
    assert unnamed.id == suite.id and unnamed.name == "Cups check"
    renamed = build_suite(suite_workspace, method="random", n=2, seed=0, realism_threshold=0.0, name="Second look")
    assert renamed.id == suite.id and list_suites(suite_workspace).set_index("id").at[suite.id, "name"] == "Second look"
    assert name_suite(suite_workspace, suite.id, "").name == ""
    assert suite_labels(list_suites(suite_workspace))[suite.id] == "random, N = 2, seed 0, 6 targets"


def test_a_bad_name_is_refused_before_any_sampling(suite_workspace):
    before = len(list_suites(suite_workspace))
    with pytest.raises(InvalidInputError, match="suite name"):
        build_suite(suite_workspace, method="random", n=2, name="<b>")
    with pytest.raises(NotFoundError, match="no suite 'nope'"):
        name_suite(suite_workspace, "nope", "fine")
    assert len(list_suites(suite_workspace)) == before


def test_a_selection_of_classes_shows_in_the_label(suite_workspace):
    suite = build_suite(suite_workspace, method="random", n=2, seed=0, realism_threshold=0.0, classes=["square"])
    row = list_suites(suite_workspace).set_index("id").loc[suite.id]
    assert row["classes"] == ("square",) and row["label"] == "random, N = 2, seed 0, 3 targets of square" == suite_label(suite)


def test_the_migration_gives_old_suites_an_empty_name(tmp_path, monkeypatch):
    old = MIGRATIONS[:6]
    monkeypatch.setattr(workspace_module, "MIGRATIONS", old)
    monkeypatch.setattr(workspace_module, "SCHEMA_VERSION", len(old))
    workspace = Workspace(tmp_path / "ws")
    with workspace.transaction() as conn:
        conn.execute("INSERT INTO suites(id, method, n, seed, params, created) VALUES ('old', 'random', 4, 1, '{}', '2026-01-01T00:00:00+00:00')")
        with pytest.raises(sqlite3.OperationalError, match="name"):
            conn.execute("SELECT name FROM suites")
    monkeypatch.undo()
    upgraded = Workspace(tmp_path / "ws")
    assert upgraded.schema_version == len(MIGRATIONS)
    listed = list_suites(upgraded)
    assert listed["name"].tolist() == [""] and listed["label"].tolist() == ["random, N = 4, seed 1, 0 targets"]


def test_cli_suite_name_and_listing(suite_workspace, capsys):
    ws = str(suite_workspace.root)
    assert main(["suite", "--workspace", ws, "--method", "random", "--n", "2", "--realism-threshold", "0", "--name", "From the CLI", "--json"]) == 0
    built = json.loads(capsys.readouterr().out)
    assert built["name"] == "From the CLI" and built["label"] == "From the CLI (random, N = 2, seed 0, 6 targets)"
    assert main(["suites", "--workspace", ws]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (listed[0]["id"], listed[0]["label"]) == (built["suite"], built["label"])  # newest first
    assert all(s["label"] and s["id"] not in s["label"] for s in listed)
    assert main(["suite", "--workspace", ws, "--method", "random", "--n", "2", "--name", "a|b"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: suite name 'a|b' holds '|'") and err.count("\n") == 1


def test_a_suite_is_found_by_id_label_or_name(suite_workspace):
    named = build_suite(suite_workspace, method="random", n=2, seed=0, realism_threshold=0.0, name="Cups check")
    other = build_suite(suite_workspace, method="random", n=2, seed=1, realism_threshold=0.0)
    assert resolve_suite(suite_workspace, named.id) == named.id
    assert resolve_suite(suite_workspace, "Cups check (random, N = 2, seed 0, 6 targets)") == named.id
    assert resolve_suite(suite_workspace, " Cups check ") == named.id
    assert resolve_suite(suite_workspace, "random, N = 2, seed 1, 6 targets") == other.id
    assert resolve_suite(suite_workspace, "no such suite") == "no such suite"  # the caller reports it
    name_suite(suite_workspace, other.id, "Cups check")
    with pytest.raises(InvalidInputError, match=r"2 suites are named 'Cups check': .*give the id or the full label"):
        resolve_suite(suite_workspace, "Cups check")


def test_cli_suite_options_take_a_label_or_a_name(suite_workspace, capsys):
    suite = build_suite(suite_workspace, method="random", n=2, seed=0, realism_threshold=0.0, name="Cups check")
    ws = str(suite_workspace.root)
    assert main(["assign", "--workspace", ws, "--suite", "Cups check", "--everyone", "--k", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["suite"] == suite.id
    assert main(["runs", "--workspace", ws, "--suite", suite_label(suite), "--json"]) == 0
    capsys.readouterr()
    assert main(["assign", "--workspace", ws, "--suite", "Nothing like it", "--everyone", "--k", "2"]) == 2
    assert "Nothing like it" in capsys.readouterr().err
