"""The workspace: one folder with a SQLite database and a content-addressed array store.

Layout::

    <root>/backdrop.sqlite      metadata, runs, judgments (WAL mode, schema version in user_version)
    <root>/arrays/ab/abcd….npy  arrays addressed by the SHA-256 of their .npy bytes

Writes are transactional: arrays are written first (atomically, by rename; writing one twice is a
no-op), then the rows that point to them in one ``BEGIN IMMEDIATE`` transaction. A failed write
never leaves a row pointing at nothing, nor a temporary file; :meth:`Workspace.staged_arrays` also
removes the arrays a failed import created. A full disk or a missing permission is a
:class:`WorkspaceError` of one line naming the file and the fix.

Connections are short-lived (one per operation): Streamlit runs scripts on worker threads and
sqlite3 connections must not cross threads. The one exception is the engine's writer of a run's
per-image rows (``Workspace.connect(bulk=True)``): one connection for the whole run, a commit every
~1,000 images, at ``synchronous = NORMAL``.
"""

from __future__ import annotations

import copy
import errno
import hashlib
import io
import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from analytics._install import default_workspace_path
from analytics._threads import load_npy
from analytics.exceptions import InvalidInputError, NotFoundError, WorkspaceError

from ._schema import MIGRATIONS, SCHEMA_VERSION

DB_NAME = "backdrop.sqlite"
#: Threads that write the arrays of one :meth:`Workspace.staged_arrays` call.
ARRAY_WRITERS = 8


def now() -> str:
    """The current UTC time as ISO-8601 text (what every ``created``/``added`` column holds)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class Workspace:
    """A Backdrop workspace folder.

    Parameters
    ----------
    root : path-like, default=None
        The folder; ``None`` means :func:`default_workspace_path`. Created (with the database) when
        missing unless ``create=False``.
    create : bool, default=True
        Create a missing workspace; with False a missing one raises :class:`WorkspaceError`.
    """

    def __init__(self, root: str | os.PathLike | None = None, *, create: bool = True) -> None:
        self.root = Path(root) if root is not None else default_workspace_path()
        if "\0" in str(self.root):  # a path typed in the sidebar: the OS would refuse it with a ValueError
            raise WorkspaceError(f"workspace path {str(self.root)!r} holds a NUL byte (\\0); type the folder's path without it")
        #: The signed-in account acting through this object (team mode; see :meth:`acting_as`), or
        #: None: nobody signs in (solo mode, the CLI) and every action is allowed.
        self.actor: Any = None
        self.db_path = self.root / DB_NAME
        self.arrays_dir = self.root / "arrays"
        if not self.db_path.exists():
            file = next((path for path in (self.root, *self.root.parents) if path.exists() and not path.is_dir()), None)
            if file is not None:
                where = "is a file" if file == self.root else f"lies inside {file}, which is a file"
                raise WorkspaceError(f"workspace path {self.root} {where}, not a folder; give the path of a workspace folder instead")
            if not create:
                raise WorkspaceError(
                    f"no workspace at {self.root} (missing {DB_NAME}); build the demo workspace in that folder with "
                    "`python -m analytics demo`, or one of your own data with `analytics.api.add_targets` (or `python -m analytics add-targets`)"
                )
            self.arrays_dir.mkdir(parents=True, exist_ok=True)
        self._migrate()

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def acting_as(self, user: Any) -> Workspace:
        """The same workspace with ``user`` (an :class:`analytics.team.accounts.User`) as its actor.

        Library calls that change the workspace check the actor's role first
        (:func:`analytics.team.roles.require_permission`); None restores solo behaviour.
        """
        other = copy.copy(self)
        other.actor = user
        return other

    # -- database -------------------------------------------------------------------------
    def connect(self, *, bulk: bool = False) -> sqlite3.Connection:
        """Open a new connection (rows as :class:`sqlite3.Row`, foreign keys on, WAL).

        Parameters
        ----------
        bulk : bool, default=False
            For bulk rows that can be computed again (a run's per-image rows), on a connection kept
            for the whole work: ``PRAGMA synchronous = NORMAL`` under WAL, so a commit is not
            fsynced; a power loss may roll back the last commits but never corrupts the database
            (SQLite's WAL guarantee), and the work resumes from what is stored. Everything else
            (judgments, consensus, accounts) commits at full durability on a connection of its own.
        """
        conn = sqlite3.connect(self.db_path, timeout=30, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 30000")
        if bulk:
            conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    @contextmanager
    def transaction(self, *, conn: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
        """A write transaction: committed when the block ends, rolled back if it raises.

        Parameters
        ----------
        conn : sqlite3.Connection, optional
            Run it on this open connection (``connect(bulk=True)``), left open afterwards; by
            default on a new connection, closed afterwards.

        Raises
        ------
        WorkspaceError
            The database cannot be written (disk full, read-only, I/O error); nothing was committed.
        """
        own = conn is None
        conn = self.connect() if conn is None else conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:  # SQLite may already have rolled back after a full disk
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.OperationalError as err:
            code = getattr(err, "sqlite_errorcode", 0) & 0xFF  # the primary result code of an extended one
            if code not in _UNWRITABLE:
                raise
            raise WorkspaceError(f"cannot write {self.db_path}: {err}; {_FIXES.get(_UNWRITABLE[code], _FIX)}") from err
        finally:
            if own:
                conn.close()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a read query and return all rows."""
        conn = self.connect()
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """Run a read query and return its first row (or None)."""
        rows = self.query(sql, params)
        return rows[0] if rows else None

    @property
    def schema_version(self) -> int:
        conn = self.connect()
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()

    def _migrate(self) -> None:
        conn = self.connect()
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise WorkspaceError(
                    f"workspace {self.root} has schema version {version}, newer than this Backdrop "
                    f"({SCHEMA_VERSION}); update Backdrop"
                )
            for number in range(version + 1, SCHEMA_VERSION + 1):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    # re-check under the write lock: another process may have migrated meanwhile
                    if int(conn.execute("PRAGMA user_version").fetchone()[0]) >= number:
                        conn.execute("ROLLBACK")
                        continue
                    for statement in _split_sql(MIGRATIONS[number - 1]):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {number}")
                    conn.execute(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(number),)
                    )
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
        except sqlite3.DatabaseError as err:
            raise WorkspaceError(f"cannot open workspace database {self.db_path}: {err}") from err
        finally:
            conn.close()

    # -- settings -------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.query_one("SELECT value FROM meta WHERE key = ?", (key,))
        return row["value"] if row else default

    def set_meta(self, key: str, value: str, *, conn: sqlite3.Connection | None = None) -> None:
        sql, params = "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value)
        if conn is not None:
            conn.execute(sql, params)
            return
        with self.transaction() as own:
            own.execute(sql, params)

    # -- array store ----------------------------------------------------------------------
    def put_array(self, array: np.ndarray) -> str:
        """Store ``array`` and return its content hash.

        Parameters
        ----------
        array : ndarray of any shape and any non-object dtype (numeric, bool or str)

        Returns
        -------
        digest : str
            SHA-256 hex digest of the array's ``.npy`` bytes.

        Raises
        ------
        WorkspaceError
            The file cannot be written (no space, no permission); the temporary file is removed.
        """
        return self._put_array(array)[0]

    @contextmanager
    def staged_arrays(self, arrays: Iterable[np.ndarray]) -> Iterator[list[str]]:
        """Store ``arrays`` for rows written inside the block; if storing or the block fails, the
        arrays this call created are removed again.

        An array that was already stored is kept (rows may name it). One this call created was
        absent when the call began, and rows are written only after their arrays, so no committed
        row names it; the rows of the block never commit. (Another process storing the very same
        array in that moment, for rows of its own, would find it gone: arrays carry no lock.)

        Parameters
        ----------
        arrays : iterable of ndarray of any shape and any non-object dtype

        Yields
        ------
        digests : list of str
            The content hash of each array, in order.
        """
        # Written on several threads: each file's fsync waits on the disk, and the waits overlap
        # (keyword views of a GPU-sized batch are hundreds of small arrays). At most 2 x
        # ARRAY_WRITERS arrays are held at once, so a stream of decoded images stays a stream.
        futures: list[Future] = []
        created: list[str] = []  # once every write is done: the digests of the files this call wrote
        try:
            with ThreadPoolExecutor(ARRAY_WRITERS, thread_name_prefix="backdrop-arrays") as pool:
                for array in arrays:
                    if len(futures) >= 2 * ARRAY_WRITERS:
                        wait([futures[-2 * ARRAY_WRITERS]])
                    futures.append(pool.submit(self._put_array, array))
            for future in futures:
                if future.exception() is not None:
                    raise future.exception()
            digests = [future.result()[0] for future in futures]
            created = [digest for future, digest in zip(futures, digests) if future.result()[1]]
            # plain digests from here on, not futures (1.6 KB each): an import keeps the blocks of
            # all its batches open until its one commit (analytics.data.batched_writes)
            futures = []
            yield digests
        except BaseException:
            for future in futures:  # all done: the pool waited for them
                if future.exception() is None and future.result()[1]:
                    self._array_path(future.result()[0]).unlink(missing_ok=True)
            for digest in created:
                self._array_path(digest).unlink(missing_ok=True)
            raise

    def _put_array(self, array: np.ndarray) -> tuple[str, bool]:
        """``(digest, created)``: the array's content hash, and whether this call wrote its file."""
        array = np.asarray(array, order="C")  # not np.ascontiguousarray: it turns a 0-d array into shape (1,)
        if array.dtype.hasobject:
            raise WorkspaceError("object arrays cannot be stored; convert to a numeric or string dtype")
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        data = buffer.getvalue()
        digest = hashlib.sha256(data).hexdigest()
        path = self._array_path(digest)
        if path.exists():
            return digest, False
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())  # the bytes are on disk before a row can name them
            os.replace(tmp, path)
        except OSError as err:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            cause = os.strerror(err.errno).lower() if err.errno else str(err)
            raise WorkspaceError(f"cannot write {path}: {cause}; {_FIXES.get(err.errno, _FIX)}") from err
        return digest, True

    def get_array(self, digest: str, *, mmap: bool = False) -> np.ndarray:
        """Load the array stored under ``digest``.

        Returns
        -------
        array : ndarray
            Shape and dtype as stored by :meth:`put_array`; read-only memory map when ``mmap``.
        """
        try:  # no separate exists() check: one system call fewer on every read
            return load_npy(self._array_path(digest), mmap=mmap)
        except FileNotFoundError:
            raise NotFoundError(f"array {digest[:12]}… is missing from {self.arrays_dir}") from None

    def put_json(self, value: Any) -> str:
        """Store a JSON-serialisable value in the array store (as a 0-d unicode array)."""
        return self.put_array(np.array(json.dumps(value, sort_keys=True)))

    def get_json(self, digest: str) -> Any:
        # .item() reads the 0-d array put_json writes and the shape-(1,) ones older versions wrote
        return json.loads(self.get_array(digest).item())

    def _array_path(self, digest: str) -> Path:
        return self.arrays_dir / digest[:2] / f"{digest}.npy"

    # -- result cache ---------------------------------------------------------------------
    def cache_get(self, key: str) -> np.ndarray | None:
        """The array cached under ``key``, or None.

        Returns
        -------
        array : ndarray or None
            Shape and dtype as given to :meth:`cache_put`.
        """
        row = self.query_one("SELECT hash FROM cache WHERE key = ?", (key,))
        if row is None:
            return None
        try:
            return self.get_array(row["hash"])
        except NotFoundError:  # its array was removed: a miss
            return None

    def cache_put(self, key: str, array: np.ndarray) -> str:
        """Cache ``array`` under ``key`` (replacing any entry) and return its content hash.

        Parameters
        ----------
        array : ndarray of any shape and any non-object dtype
        """
        digest = self.put_array(array)
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO cache(key, hash, created) VALUES (?, ?, ?)", (key, digest, now()))
        return digest

    def cached(self, key: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """The array cached under ``key``; on a miss, ``compute()``, cached, then returned.

        The one get / compute / put of every result cache: the array is stored (fsynced, renamed)
        before the row that names it commits, so an interrupted computation leaves no entry.

        Parameters
        ----------
        key : str
        compute : callable returning an ndarray of any shape and any non-object dtype

        Returns
        -------
        array : ndarray
            Shape and dtype of what ``compute`` returns.
        """
        found = self.cache_get(key)
        if found is not None:
            return found
        array = np.asarray(compute())
        self.cache_put(key, array)
        return array


_FIX = "check the disk and the permissions of the workspace folder, or move the workspace"
_FIXES = {  # errno -> the fix
    errno.ENOSPC: "free space on that disk or move the workspace",
    errno.EDQUOT: "free space within your quota or move the workspace",
    errno.EACCES: "give this user write access to the workspace folder, or use another workspace",
    errno.EPERM: "give this user write access to the workspace folder, or use another workspace",
    errno.EROFS: "the disk is read-only: move the workspace to a writable disk",
}
# SQLite's primary result codes for a database that cannot be written, with the errno whose fix applies
_UNWRITABLE = {
    sqlite3.SQLITE_FULL: errno.ENOSPC,
    sqlite3.SQLITE_READONLY: errno.EACCES,
    sqlite3.SQLITE_PERM: errno.EACCES,
    sqlite3.SQLITE_IOERR: None,
    sqlite3.SQLITE_CANTOPEN: None,
}


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements (none of ours contain ';' inside literals)."""
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def content_id(*parts: Any) -> str:
    """A short stable id for a record made from ``parts`` (12 hex chars of SHA-256 of their JSON)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def count_rows(workspace: Workspace, tables: Sequence[str]) -> dict[str, int]:
    """Rows in each of ``tables`` (what Home's metrics and the demo's report show).

    Parameters
    ----------
    workspace : Workspace
    tables : sequence of str
        Tables of the workspace's schema (``targets``, ``classes``, ``runs``, ...).

    Returns
    -------
    dict of str to int
        Table -> number of rows, in the order given.

    Raises
    ------
    InvalidInputError
        A name that is not a table of the workspace (the message lists them).
    """
    known = {row["name"] for row in workspace.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
    unknown = [table for table in tables if table not in known]
    if unknown:
        raise InvalidInputError(f"tables: {', '.join(map(repr, unknown))} not in the workspace; its tables are {', '.join(sorted(known))}")
    return {table: int(workspace.query_one(f"SELECT COUNT(*) FROM {table}")[0]) for table in tables}  # names checked above
