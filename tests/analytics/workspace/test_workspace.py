"""The workspace store: migrations, WAL, transactions, content-addressed arrays, result cache."""

from __future__ import annotations

import errno
import gc
import os
import re
import sqlite3
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import analytics.workspace.store as workspace_module
from analytics._threads import _plain_header, load_npy
from analytics.exceptions import NotFoundError, WorkspaceError
from analytics.workspace import ENV_VAR, Workspace, content_id, default_workspace_path
from analytics.workspace._schema import MIGRATIONS, SCHEMA_VERSION


def test_new_workspace_records_schema_version_and_uses_wal(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    assert workspace.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
    assert workspace.get_meta("schema_version") == str(SCHEMA_VERSION)
    conn = workspace.connect()
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    finally:
        conn.close()
    assert (tmp_path / "ws" / "arrays").is_dir()


def test_reopening_keeps_data(tmp_path):
    Workspace(tmp_path / "ws").set_meta("image_size", "64")
    assert Workspace(tmp_path / "ws", create=False).get_meta("image_size") == "64"


def test_missing_workspace_without_create_says_how_to_build_one(tmp_path):
    with pytest.raises(WorkspaceError, match=r"no workspace at .*missing backdrop.sqlite.*analytics demo"):
        Workspace(tmp_path / "absent", create=False)
    assert not (tmp_path / "absent").exists()


def test_a_file_is_not_a_workspace(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(WorkspaceError, match="is a file"):
        Workspace(path)


def test_a_corrupt_database_is_a_workspace_error(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "backdrop.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(WorkspaceError, match="cannot open workspace database"):
        Workspace(tmp_path / "ws")


def test_a_newer_schema_is_refused(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    conn = sqlite3.connect(workspace.db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(WorkspaceError, match="newer than this Backdrop"):
        Workspace(tmp_path / "ws")


def test_an_appended_migration_upgrades_an_old_workspace(tmp_path, monkeypatch):
    Workspace(tmp_path / "ws")
    upgraded = [*MIGRATIONS, "CREATE TABLE extra (id INTEGER PRIMARY KEY); INSERT INTO extra(id) VALUES (7);"]
    monkeypatch.setattr(workspace_module, "MIGRATIONS", upgraded)
    monkeypatch.setattr(workspace_module, "SCHEMA_VERSION", len(upgraded))
    workspace = Workspace(tmp_path / "ws")
    assert workspace.schema_version == len(upgraded)
    assert workspace.get_meta("schema_version") == str(len(upgraded))
    assert [row["id"] for row in workspace.query("SELECT id FROM extra")] == [7]
    Workspace(tmp_path / "ws")  # a second open migrates nothing (the INSERT would fail on a re-run)
    assert len(workspace.query("SELECT id FROM extra")) == 1


def test_a_failing_migration_leaves_the_previous_version(tmp_path, monkeypatch):
    Workspace(tmp_path / "ws")
    broken = [*MIGRATIONS, "CREATE TABLE half (id INTEGER); THIS IS NOT SQL;"]
    monkeypatch.setattr(workspace_module, "MIGRATIONS", broken)
    monkeypatch.setattr(workspace_module, "SCHEMA_VERSION", len(broken))
    with pytest.raises(WorkspaceError):
        Workspace(tmp_path / "ws")
    monkeypatch.undo()
    workspace = Workspace(tmp_path / "ws")
    assert workspace.schema_version == SCHEMA_VERSION
    assert not workspace.query("SELECT name FROM sqlite_master WHERE name = 'half'")


def test_transaction_commits_or_rolls_back_everything(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    with workspace.transaction() as conn:
        conn.execute("INSERT INTO classes(name) VALUES ('kept')")
    with pytest.raises(RuntimeError, match="boom"):
        with workspace.transaction() as conn:
            conn.execute("INSERT INTO classes(name) VALUES ('lost')")
            conn.execute("INSERT INTO meta(key, value) VALUES ('lost', 'x')")
            raise RuntimeError("boom")
    assert [row["name"] for row in workspace.query("SELECT name FROM classes")] == ["kept"]
    assert workspace.get_meta("lost") is None


def test_arrays_are_content_addressed_and_idempotent(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    array = np.arange(12, dtype=np.int16).reshape(3, 4)
    first = workspace.put_array(array)
    second = workspace.put_array(array.copy())
    assert first == second and len(first) == 64
    assert len(list(workspace.arrays_dir.rglob("*.npy"))) == 1
    assert workspace.put_array(array.astype(np.int32)) != first  # dtype is part of the content
    assert workspace.put_array(np.asfortranarray(array)) == first  # memory layout is not
    np.testing.assert_array_equal(workspace.get_array(first), array)
    np.testing.assert_array_equal(workspace.get_array(first, mmap=True), array)
    assert not list(workspace.arrays_dir.rglob("*.tmp"))


class _Finalised:
    def __del__(self):  # the collector runs this Python code wherever it strikes, inside the parser too
        sum(range(50))


def test_arrays_load_from_many_threads_at_once(tmp_path):
    # numpy parses .npy headers with ast, whose 3.11 state is shared by threads: a thread switch
    # inside the parser (a finaliser run by the collector) broke the other thread's parse
    # ("SystemError: AST constructor recursion depth mismatch"); compositing threads load together.
    workspace = Workspace(tmp_path / "ws")
    arrays = [np.full((3 + k, 4), k, np.uint8) for k in range(8)] + [np.asfortranarray(np.arange(6.0).reshape(2, 3)), np.zeros((0, 3))]
    digests = [workspace.put_array(array) for array in arrays]

    def load(k: int) -> np.ndarray:
        garbage = _Finalised()
        garbage.cycle = garbage
        del garbage
        return workspace.get_array(digests[k % len(digests)])

    switch, threshold = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(5)
    try:
        with ThreadPoolExecutor(8) as pool:
            loaded = list(pool.map(load, range(4000)))
    finally:
        sys.setswitchinterval(switch)
        gc.set_threshold(*threshold)
    for k, array in enumerate(loaded):
        expected = arrays[k % len(arrays)]
        assert array.dtype == expected.dtype and array.shape == expected.shape and np.array_equal(array, expected)


@pytest.mark.parametrize(
    "array",
    [
        np.zeros((5, 4, 3), np.uint8),
        np.array("a JSON value, é"),  # put_json's 0-d unicode array
        np.array(3.5),
        np.ones((2, 3), bool),
        np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)),
        np.arange(6, dtype=">f8").reshape(2, 3),
        np.zeros((0, 3)),
        np.array(["ab", "c"]),
        np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8")]),  # a header numpy's own reader parses
    ],
    ids=["image", "json", "scalar", "bool", "fortran", "big-endian", "empty", "strings", "structured"],
)
@pytest.mark.parametrize("version", [(1, 0), (2, 0)])
def test_npy_files_load_as_numpy_saved_them(tmp_path, array, version):
    path = tmp_path / "a.npy"
    with open(path, "wb") as file:
        np.lib.format.write_array(file, array, version=version)
    loaded = load_npy(path)
    assert loaded.dtype == array.dtype and loaded.shape == array.shape and np.array_equal(loaded, array)
    assert loaded.flags.c_contiguous == array.flags.c_contiguous
    with open(path, "rb") as file:  # read without numpy's parser (and its lock) unless the dtype is structured
        header = _plain_header(file)
    fortran = array.flags.f_contiguous and not array.flags.c_contiguous
    assert header == (None if array.dtype.names else (array.shape, fortran, array.dtype))


def test_npy_files_with_objects_or_missing_data_are_refused(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="Python objects"):
        load_npy(path)
    np.save(path, np.arange(10.0))
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ValueError, match="truncated: 9 of 10"):
        load_npy(path)
    path.write_bytes(b"not a numpy file at all")
    with pytest.raises(ValueError):
        load_npy(path)


def test_object_arrays_and_missing_hashes_are_refused(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    with pytest.raises(WorkspaceError, match="object arrays"):
        workspace.put_array(np.array([{"a": 1}], dtype=object))
    with pytest.raises(NotFoundError, match="missing"):
        workspace.get_array("0" * 64)


def test_json_values_round_trip(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    value = {"b": [1, 2.5, "x"], "a": None}
    assert workspace.get_json(workspace.put_json(value)) == value
    assert workspace.put_json({"a": None, "b": [1, 2.5, "x"]}) == workspace.put_json(value)
    assert workspace.get_array(workspace.put_json(value)).shape == ()
    legacy = workspace.put_array(np.array(['{"a": 1}']))  # shape (1,), as put_json wrote before
    assert workspace.get_json(legacy) == {"a": 1}


class FullDisk:
    """A file handle whose writes fail as on a full disk (``os.fdopen`` of the store, patched)."""

    def __init__(self, fd: int, mode: str) -> None:
        self.handle = open(fd, mode)  # closed by __exit__

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.handle.close()

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("failing", ["write", "rename"])
def test_a_full_disk_is_one_line_naming_the_file_and_leaves_no_temporary_file(tmp_path, monkeypatch, failing):
    workspace = Workspace(tmp_path / "ws")
    kept = workspace.put_array(np.ones(3))
    if failing == "write":
        monkeypatch.setattr(workspace_module.os, "fdopen", FullDisk)
    else:
        monkeypatch.setattr(workspace_module.os, "replace", no_space)
    with pytest.raises(WorkspaceError) as refused:
        workspace.put_array(np.arange(5))
    monkeypatch.undo()
    message = str(refused.value)
    assert "\n" not in message
    assert re.fullmatch(
        rf"cannot write {re.escape(str(workspace.arrays_dir))}/\w\w/\w{{64}}\.npy: "
        "no space left on device; free space on that disk or move the workspace",
        message,
    )
    assert not list(workspace.arrays_dir.rglob("*.tmp"))
    assert [p.stem for p in workspace.arrays_dir.rglob("*.npy")] == [kept]


def test_staged_arrays_remove_what_they_created_when_the_block_fails(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    shared = workspace.put_array(np.ones(3))
    with pytest.raises(RuntimeError, match="rows failed"):
        with workspace.staged_arrays([np.ones(3), np.zeros(4), np.zeros(4)]) as digests:
            assert digests[0] == shared and digests[1] == digests[2]
            raise RuntimeError("rows failed")
    assert [p.stem for p in workspace.arrays_dir.rglob("*.npy")] == [shared]  # the one stored before stays
    with workspace.staged_arrays([np.zeros(4)]) as digests:
        pass
    np.testing.assert_array_equal(workspace.get_array(digests[0]), np.zeros(4))


def test_staged_arrays_written_on_threads_remove_the_others_when_one_fails(tmp_path, monkeypatch):
    workspace = Workspace(tmp_path / "ws")
    put = Workspace._put_array

    def failing(self, array):
        if array.size == 5:
            raise WorkspaceError("cannot write: disk full")
        return put(self, array)

    monkeypatch.setattr(Workspace, "_put_array", failing)
    arrays = [np.full(3, k) for k in range(20)]
    with pytest.raises(WorkspaceError, match="disk full"):
        with workspace.staged_arrays([*arrays[:10], np.zeros(5), *arrays[10:]]):
            pytest.fail("the block ran although an array was not stored")
    assert not list(workspace.arrays_dir.rglob("*.npy"))  # the other 20, written meanwhile, are gone
    with workspace.staged_arrays(arrays) as digests:
        pass
    assert [workspace.get_array(d)[0] for d in digests] == list(range(20))  # in order


def test_staged_arrays_hold_a_bounded_number_of_a_stream_at_once(tmp_path, monkeypatch):
    workspace = Workspace(tmp_path / "ws")
    written, held = [], []
    put = Workspace._put_array
    monkeypatch.setattr(Workspace, "_put_array", lambda self, array: written.append(1) or put(self, array))

    def stream():  # decoded images arriving one by one
        for k in range(100):
            held.append(k + 1 - len(written))
            yield np.full(8, k)

    with workspace.staged_arrays(stream()) as digests:
        assert len(digests) == 100
    assert max(held) <= 2 * workspace_module.ARRAY_WRITERS + 1


def test_a_full_database_is_a_workspace_error(tmp_path, monkeypatch):
    workspace = Workspace(tmp_path / "ws")
    connect = Workspace.connect

    def capped(self):  # the database may not grow: SQLite reports a full disk (SQLITE_FULL)
        conn = connect(self)
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
        return conn

    monkeypatch.setattr(Workspace, "connect", capped)
    with pytest.raises(WorkspaceError, match=r"cannot write .*backdrop.sqlite: database or disk is full; free space"):
        with workspace.transaction() as conn:
            conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", [(str(i), "x" * 500) for i in range(2000)])
    monkeypatch.undo()
    assert workspace.get_meta("0") is None
    with pytest.raises(sqlite3.OperationalError, match="no such table"):  # other SQL errors stay as they are
        with workspace.transaction() as conn:
            conn.execute("SELECT * FROM absent")


def test_result_cache(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    assert workspace.cache_get("k") is None
    digest = workspace.cache_put("k", np.ones(3))
    np.testing.assert_array_equal(workspace.cache_get("k"), np.ones(3))
    workspace.cache_put("k", np.zeros(2))  # a key is overwritten
    np.testing.assert_array_equal(workspace.cache_get("k"), np.zeros(2))
    workspace._array_path(workspace.put_array(np.zeros(2))).unlink()
    assert workspace.cache_get("k") is None  # a lost array is a cache miss, not an error
    assert digest != workspace.put_array(np.zeros(2))


def test_default_path_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "elsewhere"))
    assert default_workspace_path() == tmp_path / "elsewhere"
    monkeypatch.delenv(ENV_VAR)
    assert default_workspace_path().name == "workspace"


def test_content_id_is_short_stable_and_order_sensitive():
    assert content_id("a", 1) == content_id("a", 1)
    assert len(content_id("a", 1)) == 12
    assert content_id("a", 1) != content_id(1, "a")


def test_count_rows_counts_the_tables_asked_for_and_refuses_other_names(tiny_workspace):
    from analytics.exceptions import InvalidInputError
    from analytics.workspace import count_rows

    assert count_rows(tiny_workspace, ["targets", "classes", "backgrounds", "runs"]) == {"targets": 6, "classes": 2, "backgrounds": 12, "runs": 0}
    with pytest.raises(InvalidInputError, match="'targets; DROP TABLE runs' not in the workspace; its tables are .*backgrounds"):
        count_rows(tiny_workspace, ["targets; DROP TABLE runs"])
