"""Composites of a suite made once and read by every model that runs over it.

A suite's images are never stored (see :mod:`analytics.inference`); compositing them again for
each of many models is about a third of the CPU engine's time. A :class:`CompositeCache` keeps
them, for as long as a batch of runs lasts, as one ``.npy`` array file per (suite, composite size,
blend) under ``<workspace>/cache/composites/``: the first model that needs an image composites it
and writes it there; later models read it. The file is named by the content of the suite (target,
mask and background hashes), so a kept file is never stale.

A file is filled under a temporary name and renamed into place (after an fsync) once every image
is in, so another process (a Ray worker on the same machine, see :mod:`analytics.repository.ray_backend`)
either finds a complete array or fills its own. Rows are read and written with ``pread`` /
``pwrite`` rather than a memory map, so the cache adds nothing to the process's resident memory.

Size: ``images x size² x 3`` bytes per file, e.g. 5,000 images at 224 px = 0.75 GB; 56,500 (a
1,712-target suite at N = 32) at 224 px = 8.5 GB. A caller running models of several input sizes
checks the disk for the largest first (:meth:`CompositeCache.check_space`), runs them size by size
and frees each size after its last model (:meth:`CompositeCache.release`), so at most one size is
on disk at a time.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from analytics._threads import load_npy
from analytics.exceptions import InvalidInputError, WorkspaceError
from analytics.workspace import Workspace, content_id

from .device import empty_batch
from .suite_images import SuiteImage, image_hashes, stored_suite_images, with_foreground

FOLDER = Path("cache") / "composites"
#: Bytes read by one thread: a batch larger than this is read by up to READ_THREADS threads at once.
READ_PIECE = 4 << 20
READ_THREADS = 8
#: Changes when the way composites are made changes (old kept files then no longer match).
VERSION = 1


@dataclass
class _Entry:
    """One array file: rows in suite order (each target's foreground-only image, then its images)."""

    path: Path
    index: dict[SuiteImage, int]
    filled: np.ndarray  # (n,) bool
    tmp: Path | None = None  # while filling: the file written to
    fd: int | None = None
    offset: int = 0  # header bytes
    row_bytes: int = 0
    shape: tuple[int, ...] = ()  # one image
    lock: threading.Lock = field(default_factory=threading.Lock)


class CompositeCache:
    """Suite composites kept on disk while many models run over the suite.

    Parameters
    ----------
    workspace : Workspace
    keep : bool, default=False
        Keep the array files when the cache is closed (a later cache over the same workspace then
        reads them); by default they are deleted.

    Examples
    --------
    >>> with CompositeCache(workspace) as composites:  # doctest: +SKIP
    ...     run_models(workspace, ["model-a", "model-b"], suite_id, composites=composites)

    Notes
    -----
    Pickling gives a cache with ``keep=True`` and nothing open, so a worker process shares the
    finished files but never deletes them; the cache that made them does when it closes.
    """

    def __init__(self, workspace: Workspace, *, keep: bool = False) -> None:
        self.workspace, self.keep = workspace, keep
        self.folder = workspace.root / FOLDER
        self._entries: dict[tuple[str, int | None, bool], _Entry] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> CompositeCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __getstate__(self) -> dict:
        return {"workspace": self.workspace, "keep": True}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["workspace"], keep=state["keep"])

    @property
    def paths(self) -> list[Path]:
        """The finished array files this cache has used."""
        return [entry.path for entry in self._entries.values() if entry.path.exists()]

    def images(
        self,
        suite_id: str,
        jobs: Sequence[SuiteImage],
        *,
        size: int | None,
        blend: bool,
        make: Callable[[list[SuiteImage]], np.ndarray],
        empty: Callable[[tuple[int, ...]], np.ndarray] = empty_batch,
    ) -> np.ndarray:
        """The images of ``jobs``: read from the file, the missing ones made and stored first.

        Parameters
        ----------
        suite_id : str
        jobs : sequence of SuiteImage
            Jobs of that suite (foreground-only jobs included).
        size : int or None
            The images' side (a model's ``spec.composite_size``); None: the workspace size.
        blend : bool
        make : callable
            Composites a list of jobs: (len(jobs), size, size, 3) uint8.
        empty : callable, default=:func:`~analytics.inference.device.empty_batch`
            Allocates the returned array from its shape (page-locked memory for a GPU).

        Returns
        -------
        images : ndarray of shape (len(jobs), size, size, 3), uint8
        """
        entry = self._entry(suite_id, size, blend)
        try:
            rows = np.array([entry.index[job] for job in jobs], dtype=np.int64)
        except KeyError as err:
            raise InvalidInputError(f"{err.args[0]} is not an image of suite {suite_id!r}; pass that suite's images (stored_suite_images)") from err
        missing = [i for i, row in enumerate(rows) if not entry.filled[row]]
        if missing:
            self._store(entry, rows[missing], make([jobs[i] for i in missing]))
        return self._read(entry, rows, empty((len(rows), *entry.shape)))

    def check_space(self, suite_id: str, sizes: Sequence[int]) -> None:
        """Refuse, before any work, when the disk cannot hold the suite's composites at the largest
        of ``sizes`` (sides in pixels: models' composite sizes, the workspace size for None), one size at a time (see :meth:`release`).

        Raises
        ------
        WorkspaceError
            Too little free space, naming the folder, the space needed and the space free.
        """
        if sizes:
            jobs = with_foreground(stored_suite_images(self.workspace, suite_id)[0])
            self._check_free(len(jobs) * max(sizes) ** 2 * 3)

    def release(self, *, size: int | None) -> None:
        """Close and (unless ``keep``) delete the files of one image size: its last model has run."""
        with self._lock:
            entries = [entry for key, entry in self._entries.items() if key[1] == size]
            self._entries = {key: entry for key, entry in self._entries.items() if key[1] != size}
        self._drop(entries)

    def close(self) -> None:
        """Close the files; delete them unless ``keep`` (unfinished files are always deleted)."""
        with self._lock:
            entries, self._entries = list(self._entries.values()), {}
        self._drop(entries)

    def _drop(self, entries: list[_Entry]) -> None:
        for entry in entries:
            if entry.fd is not None:
                os.close(entry.fd)
            for path in (entry.tmp, None if self.keep else entry.path):
                if path is not None:
                    path.unlink(missing_ok=True)
        for folder in (self.folder, self.folder.parent):  # cache/composites, then cache/
            if not self.keep and folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()

    # -- files ---------------------------------------------------------------------------------
    def _entry(self, suite_id: str, size: int | None, blend: bool) -> _Entry:
        key = (suite_id, size, blend)
        with self._lock:
            if key not in self._entries:
                self._entries[key] = self._open(suite_id, size, blend)
            return self._entries[key]

    def _open(self, suite_id: str, size: int | None, blend: bool) -> _Entry:
        jobs = with_foreground(stored_suite_images(self.workspace, suite_id)[0])
        targets = image_hashes(self.workspace, "targets", "image_hash, mask_hash", {job.target_id for job in jobs})
        backgrounds = image_hashes(self.workspace, "backgrounds", "image_hash", {job.background_id for job in jobs if job.background_id})
        name = content_id("composites", VERSION, suite_id, size, blend, [(j.target_id, j.position, j.background_id) for j in jobs], targets, backgrounds)
        entry = _Entry(self.folder / f"{name}.npy", {job: i for i, job in enumerate(jobs)}, np.zeros(len(jobs), bool))
        if entry.path.exists():  # finished by an earlier cache or another process
            try:
                array = load_npy(entry.path, mmap=True)
            except ValueError as err:
                raise WorkspaceError(f"cached composites file {entry.path} is truncated or corrupt ({err}); delete it and run again") from err
            entry.fd, entry.offset, entry.shape = os.open(entry.path, os.O_RDONLY), array.offset, array.shape[1:]
            entry.row_bytes = int(np.prod(entry.shape))
            entry.filled[:] = True
        return entry

    def _create(self, entry: _Entry, shape: tuple[int, ...]) -> None:
        """Start the entry's temporary file for images of ``shape`` (checks the free disk first:
        writing past a full disk would fail half-way)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        row_bytes = int(np.prod(shape))
        self._check_free(len(entry.filled) * row_bytes)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=entry.path.stem + "-", suffix=".npy.tmp")
        os.close(fd)
        array = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(len(entry.filled), *shape))
        entry.offset = array.offset  # only the header and the file's length are written through the map
        del array
        entry.tmp, entry.shape, entry.row_bytes = Path(tmp), shape, row_bytes
        entry.fd = os.open(tmp, os.O_RDWR)

    def _check_free(self, needed: int) -> None:
        """Raise unless ``needed`` bytes and 1 GiB to spare are free where the files go."""
        folder = next(path for path in (self.folder, *self.folder.parents) if path.exists())
        free = shutil.disk_usage(folder).free
        if free < needed + (1 << 30):
            raise WorkspaceError(
                f"caching the suite's composites needs {needed / 2**30:.1f} GiB in {self.folder} but only {free / 2**30:.1f} GiB "
                "is free; free disk space or run without a CompositeCache"
            )

    def _store(self, entry: _Entry, rows: np.ndarray, images: np.ndarray) -> None:
        with entry.lock:
            if entry.fd is None:
                self._create(entry, tuple(images.shape[1:]))
            if tuple(images.shape[1:]) != entry.shape:
                raise InvalidInputError(f"images of shape {images.shape[1:]} do not fit the cached array of {entry.shape}")
            images = np.ascontiguousarray(images, dtype=np.uint8)
            for row, image in zip(rows, images):
                os.pwrite(entry.fd, image.data, entry.offset + int(row) * entry.row_bytes)
            entry.filled[rows] = True
            if entry.tmp is not None and entry.filled.all():
                os.fsync(entry.fd)  # the data is on disk before the name says it is complete
                os.replace(entry.tmp, entry.path)
                entry.tmp = None

    def _read(self, entry: _Entry, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
        flat = out.reshape(len(rows), -1)
        pieces, start = [], 0  # (first row of out, rows, first row of the file): runs of consecutive rows, cut to READ_PIECE
        for stop in range(1, len(rows) + 1):
            if stop == len(rows) or rows[stop] != rows[stop - 1] + 1:
                step = max(1, READ_PIECE // entry.row_bytes)
                pieces += [(a, min(step, stop - a), int(rows[a])) for a in range(start, stop, step)]
                start = stop

        def read(piece: tuple[int, int, int]) -> None:
            first, count, row = piece
            # straight into the batch: one copy from the page cache, not two
            done = os.preadv(entry.fd, [memoryview(flat[first : first + count]).cast("B")], entry.offset + row * entry.row_bytes)
            if done != count * entry.row_bytes:
                raise WorkspaceError(f"cached composites file {entry.path} is truncated; delete it and run again")

        if len(pieces) == 1:
            read(pieces[0])
        else:  # a batch of a GPU model is tens of MB: one thread copied it at half the GPU's rate
            with ThreadPoolExecutor(min(len(pieces), READ_THREADS), thread_name_prefix="backdrop-cache-read") as pool:
                list(pool.map(read, pieces))
        return out
