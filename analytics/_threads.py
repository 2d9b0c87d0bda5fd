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
# with ast.literal_eval; so headers are read one thread at a time, the data in parallel.
_HEADER_LOCK = threading.Lock()


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
        with _HEADER_LOCK:
            version = np.lib.format.read_magic(file)
            if version == (1, 0):
                shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(file)
            elif version == (2, 0):
                shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(file)
            else:  # format 3.0 (utf-8 field names) has no public header reader
                return np.load(Path(path), allow_pickle=False)
        if dtype.hasobject:
            raise ValueError(f"{path} holds Python objects, which are not loaded (allow_pickle=False)")
        data = np.fromfile(file, dtype=dtype, count=math.prod(shape))
    if data.size != math.prod(shape):
        raise ValueError(f"{path} is truncated: {data.size} of {math.prod(shape)} values")
    return data.reshape(shape[::-1]).transpose() if fortran_order else data.reshape(shape)
