"""Threads that feed a model: the cores this process may use, work made ahead of its consumer,
OpenCV kept on one thread while our own threads split the work, and ``.npy`` files read safely
from many threads at once.

Shared by the stages that prepare images for a model (composites in :mod:`analytics.inference`,
keyword views in :mod:`analytics.keywords`).
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np


def cpu_count() -> int:
    """CPU cores this process may run on."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


_CV2_LOCK = threading.Lock()
_cv2_users = 0
_cv2_threads_before = 0


@contextlib.contextmanager
def cv2_single_threaded(active: bool = True) -> Iterator[None]:
    """OpenCV on one thread for the block (restored when the last such block ends); a no-op unless ``active``.

    For a block whose own threads each process their own images: OpenCV splitting every small
    step over all cores as well made the threads wait on each other (composites, 2 cores: 1,490 ->
    1,620 images/s with OpenCV on one thread; on a 16-core GPU box OpenCV's default threads fed one
    compositing thread at 712 images/s). The setting is process-wide, so concurrent blocks count
    their users and the last one restores it.
    """
    global _cv2_users, _cv2_threads_before
    if not active:
        yield
        return
    with _CV2_LOCK:
        if _cv2_users == 0:
            _cv2_threads_before = cv2.getNumThreads()
            cv2.setNumThreads(1)
        _cv2_users += 1
    try:
        yield
    finally:
        with _CV2_LOCK:
            _cv2_users -= 1
            if _cv2_users == 0:
                cv2.setNumThreads(_cv2_threads_before)


_DONE = object()


def prefetched(items: Iterator, depth: int, name: str = "backdrop-composites") -> Iterator:
    """Run ``items`` on a worker thread (called ``name``), ``depth`` ahead of the consumer.

    Worker errors are raised in the consumer; closing the consumer's iterator stops the worker.
    """
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                slots.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(_DONE)
        except BaseException as err:  # noqa: BLE001 - handed to the consumer, which re-raises it
            put(err)
        finally:
            if hasattr(items, "close"):  # a generator's own cleanup (its thread pool, OpenCV's threads) runs now, not at collection
                items.close()

    worker = threading.Thread(target=produce, name=name, daemon=True)

    def consume() -> Iterator:
        worker.start()
        try:
            while True:
                item = slots.get()
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            worker.join(timeout=5)

    return consume()


# CPython 3.11's AST construction keeps its recursion depth in state shared by threads: a thread
# switch inside a parse (e.g. a finaliser run by the garbage collector) breaks the other thread's
# parse ("SystemError: AST constructor recursion depth mismatch"), and numpy parses each .npy header
# with ast.literal_eval; so numpy's header reader runs one thread at a time.
_HEADER_LOCK = threading.Lock()
# The header numpy writes for a plain array (np.save, format 1.0 / 2.0), e.g.
# "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }": read by this pattern, without the
# lock or ast (numpy's reader took ~60 µs a file, most of a small background's load, and the lock
# made compositing threads queue); any other header goes to numpy's reader.
_PLAIN_HEADER = re.compile(r"\{'descr': '([<>|=]?[a-zA-Z]\d*)', 'fortran_order': (True|False), 'shape': \(((?:\d+, ?)*\d*)\), \}")
_MAGIC = b"\x93NUMPY"


def load_npy(path: str | os.PathLike, *, mmap: bool = False) -> np.ndarray:
    """``np.load(path, allow_pickle=False)`` that any number of threads may call at once.

    Returns
    -------
    array : ndarray
        Shape and dtype as stored; a read-only memory map when ``mmap``.

    Raises
    ------
    ValueError
        The file is no .npy file, or holds Python objects (which would need pickle).
    """
    if mmap:
        with _HEADER_LOCK:  # reads the header and maps the data, which is read later, on access
            return np.load(path, allow_pickle=False, mmap_mode="r")
    with open(path, "rb") as file:
        header = _plain_header(file)
        if header is None:
            file.seek(0)
            with _HEADER_LOCK:
                version = np.lib.format.read_magic(file)
                if version == (1, 0):
                    header = np.lib.format.read_array_header_1_0(file)
                elif version == (2, 0):
                    header = np.lib.format.read_array_header_2_0(file)
                else:  # format 3.0 (utf-8 field names) has no public header reader
                    return np.load(Path(path), allow_pickle=False)
        shape, fortran_order, dtype = header
        if dtype.hasobject:
            raise ValueError(f"{path} holds Python objects, which are not loaded (allow_pickle=False)")
        data = np.fromfile(file, dtype=dtype, count=math.prod(shape))
    if data.size != math.prod(shape):
        raise ValueError(f"{path} is truncated: {data.size} of {math.prod(shape)} values")
    return data.reshape(shape[::-1]).transpose() if fortran_order else data.reshape(shape)


def _plain_header(file) -> tuple[tuple[int, ...], bool, np.dtype] | None:
    """(shape, fortran_order, dtype) of a format 1.0 / 2.0 header matching :data:`_PLAIN_HEADER`,
    the file then at its data; None for anything else (the file's position is then undefined)."""
    start = file.read(10)
    if len(start) < 10 or start[:6] != _MAGIC or start[6] not in (1, 2) or start[7] != 0:
        return None
    length = int.from_bytes(start[8:10] if start[6] == 1 else start[8:10] + file.read(2), "little")
    match = _PLAIN_HEADER.fullmatch(file.read(length).decode("latin1").rstrip(" \n"))
    if match is None:
        return None
    descr, fortran_order, dims = match.groups()
    shape = tuple(int(dim) for dim in dims.replace(" ", "").split(",") if dim)
    return shape, fortran_order == "True", np.dtype(descr)
