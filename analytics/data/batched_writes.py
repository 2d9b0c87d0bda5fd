"""Imports streamed into the workspace in batches: ``store_targets`` (all or nothing) and ``store_backgrounds``
(a commit per batch), both through one writer, :func:`write_in_batches`.

Each record's arrays go to the array store as the records are read
(:meth:`~analytics.workspace.Workspace.staged_arrays`), so memory holds the few records being written
and the rows of the records before them (a few hundred bytes each), never the decoded images of a
whole import: 40,000 COCO instances (0.25 MB each at 256 px) held at once exhausted a 4 GB server.

Two ways to commit. Per batch (backgrounds): each batch's rows commit on their own, a failed batch
removes the arrays it created and the batches before it stay. All or nothing (targets): every
batch's arrays stay staged until one transaction writes every row at the end, so a failure anywhere
(a file that does not decode, a full disk) removes every array the import created and commits no
row: no half import. The write lock is held only for that last transaction, never while files decode.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from typing import TypeVar

import numpy as np

from analytics.exceptions import InvalidInputError
from analytics.team import require_permission
from analytics.workspace import Workspace, now

from .datasets import Background, Target, add_classes, image_size, list_classes
from .label_spaces import ClassMapping

#: Background rows per transaction of :func:`store_backgrounds` (~40 commits for a 20,000 pool).
BACKGROUND_BATCH = 500
#: Targets per group of staged arrays of :func:`store_targets` (their rows commit once, at the end).
TARGET_BATCH = 500
Record = TypeVar("Record")


def write_in_batches(
    workspace: Workspace,
    records: Iterable[Record],
    *,
    batch_size: int,
    prepare: Callable[[Record], tuple[tuple[np.ndarray, ...], tuple]],
    write: Callable[[sqlite3.Connection, list[tuple]], int],
    all_or_nothing: bool,
) -> int:
    """Store ``records`` ``batch_size`` at a time; returns the sum of what ``write`` returned.

    Parameters
    ----------
    workspace : Workspace
    records : iterable
        Read one at a time (give an iterator that decodes lazily to keep memory flat).
    batch_size : int
        Records per batch: per transaction, or (``all_or_nothing``) per group of staged arrays. Also
        the most records alive at once: a batch's arrays are all written before the next is read.
    prepare : callable
        ``prepare(record) -> (arrays, values)``: checks the record (raising stops the import) and
        gives its arrays to store and its row's other values. It must not keep the record.
    write : callable
        ``write(conn, rows) -> int``, inside the transaction: each row is ``(*digests, *values)``,
        the arrays' content hashes in the order ``prepare`` gave them, then its values.
    all_or_nothing : bool
        One transaction for every row, at the end (targets); else one per batch (backgrounds).

    Raises
    ------
    WorkspaceError
        The workspace cannot be written; nothing of the failing batch (``all_or_nothing``: of the
        import) is kept.
    """
    stream, added, waiting = iter(records), 0, []
    with ExitStack() as until_commit:  # all_or_nothing: the staged arrays of every batch, removed on a failure
        while True:
            prepared: list[tuple[int, tuple]] = []  # (number of arrays, row values) of each record of the batch

            def arrays(prepared: list[tuple[int, tuple]] = prepared) -> Iterator[np.ndarray]:
                for record in itertools.islice(stream, batch_size):
                    record_arrays, values = prepare(record)
                    prepared.append((len(record_arrays), values))
                    yield from record_arrays

            with ExitStack() as batch:
                digests = iter(batch.enter_context(workspace.staged_arrays(arrays())))
                rows = [(*itertools.islice(digests, count), *values) for count, values in prepared]
                if not rows:
                    break
                if all_or_nothing:
                    waiting += rows
                    until_commit.enter_context(batch.pop_all())  # kept staged until the one commit below
                    continue
                with workspace.transaction() as conn:
                    added += write(conn, rows)
        if waiting:
            with workspace.transaction() as conn:
                added += write(conn, waiting)
    return added


def store_targets(
    workspace: Workspace,
    targets: Iterable[Target],
    *,
    classes: Mapping[str, ClassMapping | Sequence[int]] | Callable[[str], ClassMapping | Sequence[int]] | None = None,
    batch_size: int | None = None,
) -> int:
    """Store targets (and any new classes with their mappings, see
    :func:`~analytics.data.datasets.add_classes`), all or nothing.

    Arrays are stored as the iterable yields each target, rows commit in one transaction at the end
    (:func:`write_in_batches`): memory holds a few targets, whatever the import's size (stream the
    files: :func:`~analytics.data.datasets.stream_targets`, :func:`~analytics.data.coco.stream_coco`,
    :func:`~analytics.data.voc.stream_voc`). On any failure no row commits and every array this call
    created is removed.

    Parameters
    ----------
    workspace : Workspace
    targets : iterable of Target
        Each with an image of shape (size, size, 3), uint8 and a mask of shape (size, size), bool,
        size = :func:`~analytics.data.datasets.image_size` of the workspace.
    classes : dict of str to ClassMapping or sequence of int, or callable, optional
        A dict: these classes are registered (replacing their mappings). A callable: called with
        each class of the targets the workspace lacks, its answer registered (classes met while
        streaming, e.g. :func:`analytics.data.classes.resolve_class`).
    batch_size : int or None, default=None
        Targets per group of staged arrays; None = :data:`TARGET_BATCH`.

    Returns
    -------
    int
        How many targets were new.

    Raises
    ------
    InvalidInputError
        An image is not the workspace's size, or a class is unknown and not given in ``classes``.
    WorkspaceError
        The workspace cannot be written (disk full, no permission); nothing of this call is kept.
    """
    require_permission(workspace, "import_data")
    size = image_size(workspace)
    given = dict(classes) if isinstance(classes, Mapping) else {}
    resolve = classes if callable(classes) else None
    known, new_classes = set(list_classes(workspace)) | set(given), dict(given)

    def prepare(target: Target) -> tuple[tuple[np.ndarray, ...], tuple]:
        if target.image.shape != (size, size, 3) or target.mask.shape != (size, size):
            raise InvalidInputError(f"{target.origin}: image is {target.image.shape}, the workspace stores {size}x{size}x3")
        if target.class_name not in known:
            if resolve is None:
                raise InvalidInputError(f"{target.origin}: unknown class {target.class_name!r}; register it first")
            new_classes[target.class_name] = resolve(target.class_name)
            known.add(target.class_name)
        return (target.image, target.mask), (target.id, target.class_name, size, size, target.origin, target.package, target.licence, now())

    def write(conn: sqlite3.Connection, rows: list[tuple]) -> int:
        if new_classes:
            add_classes(workspace, new_classes, conn=conn)
        before = conn.execute("SELECT COUNT(*) FROM targets").fetchone()[0]
        conn.executemany(
            "INSERT OR IGNORE INTO targets(image_hash, mask_hash, id, class_name, height, width, origin, package, licence, added) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        return conn.execute("SELECT COUNT(*) FROM targets").fetchone()[0] - before

    return write_in_batches(workspace, targets, batch_size=batch_size or TARGET_BATCH, prepare=prepare, write=write, all_or_nothing=True)


def store_backgrounds(workspace: Workspace, backgrounds: Iterable[Background], *, batch_size: int | None = None) -> int:
    """Store backgrounds, committing their rows every ``batch_size``; returns how many were new.

    Arrays are stored as the iterable yields each image, rows commit per batch
    (:func:`write_in_batches`): memory holds a few images and a batch of rows, whatever the pool's
    size (stream the files: :func:`~analytics.data.datasets.stream_backgrounds`). A failed batch
    commits no row and its new arrays are removed; the batches before it stay, and ids already
    stored are left as they are, so running the same import again adds the rest.

    Parameters
    ----------
    workspace : Workspace
    backgrounds : iterable of Background
        Each with an image of shape (size, size, 3), uint8, size = :func:`~analytics.data.datasets.image_size`
        of the workspace.
    batch_size : int or None, default=None
        Rows per transaction; None = :data:`BACKGROUND_BATCH`.

    Raises
    ------
    InvalidInputError
        An image is not the workspace's size (its batch is not stored).
    WorkspaceError
        The workspace cannot be written (disk full, no permission); the failing batch is not kept.
    """
    require_permission(workspace, "import_data")
    size = image_size(workspace)

    def prepare(bg: Background) -> tuple[tuple[np.ndarray, ...], tuple]:
        if bg.image.shape != (size, size, 3):
            raise InvalidInputError(f"{bg.origin}: image is {bg.image.shape}, the workspace stores {size}x{size}x3")
        return (bg.image,), (bg.id, size, size, bg.origin, json.dumps(bg.crop) if bg.crop else "", bg.package, bg.licence, now())

    def write(conn: sqlite3.Connection, rows: list[tuple]) -> int:
        before = conn.execute("SELECT COUNT(*) FROM backgrounds").fetchone()[0]
        conn.executemany(
            "INSERT OR IGNORE INTO backgrounds(image_hash, id, height, width, origin, crop, package, licence, added) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        return conn.execute("SELECT COUNT(*) FROM backgrounds").fetchone()[0] - before

    return write_in_batches(workspace, backgrounds, batch_size=batch_size or BACKGROUND_BATCH, prepare=prepare, write=write, all_or_nothing=False)
