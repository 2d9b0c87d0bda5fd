"""Composites made batch by batch, never stored: :func:`iter_composites`.

A suite's images are generated from a bounded LRU of prepared targets and decoded backgrounds, so
memory does not grow with the suite: for a GPU model on a worker thread ahead of the model (a
bounded prefetch queue), for a CPU model over every core between the model's batches (see
:func:`prefetch_for`). The composites are made at the model's ``composite_size``
(:attr:`~analytics.models.ModelSpec.composite_size`), so its preprocessing runs once on each:

* Backdrop's own preprocessing (no library transform): the input size. Targets, masks and
  backgrounds are resized to it once, when decoded, and the composites pasted at that size; that
  early area resize *is* the model's own resize (the same up to the seam's pixels), only cheaper.
* A model with its own library's transform (timm, transformers, ONNX): None, the workspace's
  stored size. The composite is made whole and the transform's resize and centre crop run exactly
  once on it, in ``preprocess``, as the library's own pipeline would.

For a model on an accelerator the composites are pasted there (the threads only stack the
backgrounds). When many models run over one suite, a
:class:`~analytics.inference.CompositeCache` keeps the composites on disk so each is made once.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import cv2
import numpy as np
import torch

from analytics._streams import own_stream
from analytics._threads import cv2_single_threaded, prefetched
from analytics._validation import check_positive_int
from analytics.data import Cutout, foreground_only
from analytics.exceptions import InvalidInputError
from analytics.models import resize_images
from analytics.workspace import Workspace

from .composite_cache import CompositeCache
from .device import cpu_count, empty_batch, model_threads
from .device_blend import DeviceCutout, paste_on_device
from .suite_images import SuiteImage, image_hashes

PREFETCH_BATCHES = 2
CACHE_ITEMS = 64


class _ImageCache:
    """Decoded target images/masks and backgrounds, least recently used evicted beyond ``capacity``.

    With a ``size``, each target (image and mask) and background is resized once, when it is
    decoded, so composites are made directly at the model's input size: cheaper than compositing
    at the workspace size and resizing every composite, and the same up to the seam's pixels. Only
    for Backdrop's own preprocessing (``ModelSpec.composite_size``); a library transform gets None.

    The hashes are looked up on the caller's thread (SQLite connections must not cross threads);
    the worker then only reads array files.
    """

    def __init__(self, workspace: Workspace, jobs: Sequence[SuiteImage], capacity: int, size: int | None = None) -> None:
        self.workspace, self.capacity, self.size = workspace, capacity, size
        self.target_hashes = image_hashes(workspace, "targets", "image_hash, mask_hash", {j.target_id for j in jobs})
        self.background_hashes = image_hashes(workspace, "backgrounds", "image_hash", {j.background_id for j in jobs if j.background_id})
        self._items: OrderedDict[tuple[str, str], Future] = OrderedDict()
        self._lock = threading.Lock()  # compositing threads share the cache

    def target(self, target_id: str) -> Cutout:
        """The target prepared for pasting (its ``image`` and ``mask`` attributes are the arrays)."""
        return self._get(("t", target_id), lambda: (self._cutout(*self.target_hashes[target_id]),))[0]

    def device_target(self, target_id: str, device: torch.device) -> DeviceCutout:
        """The target prepared for pasting on ``device`` (:mod:`~analytics.inference.device_blend`)."""
        return self._get(("d", target_id), lambda: (DeviceCutout.of(self.target(target_id), device),))[0]

    def background(self, background_id: str) -> np.ndarray:
        """The background at the cache's size: (size, size, 3) uint8."""
        (image_hash,) = self.background_hashes[background_id]
        return self._get(("b", background_id), lambda: (self._sized(self.workspace.get_array(image_hash)),))[0]

    def _cutout(self, image_hash: str, mask_hash: str) -> Cutout:
        image, mask = self.workspace.get_array(image_hash), self.workspace.get_array(mask_hash)
        if self.size is None or image.shape[:2] == (self.size, self.size):
            return Cutout(image, mask)
        soft = cv2.resize(mask.astype(np.float32), (self.size, self.size), interpolation=_interpolation(mask.shape, self.size))
        binary = mask.dtype == bool or bool(((mask == 0) | (mask == 1)).all())
        return Cutout(self._sized(image), soft > 0.5 if binary else np.clip(soft, 0.0, 1.0))  # a hard mask stays hard

    def _sized(self, image: np.ndarray) -> np.ndarray:
        return image if self.size is None else resize_images(image[None], self.size)[0]

    def _get(self, key: tuple[str, str], load: Callable[[], tuple]) -> tuple:
        # The cache holds futures: one thread loads an item (outside the lock, so the others go on
        # compositing meanwhile) and any other thread that wants it waits for that one load.
        with self._lock:
            future = self._items.get(key)
            mine = future is None
            if mine:
                future = self._items[key] = Future()
                if len(self._items) > self.capacity:
                    self._items.popitem(last=False)
            else:
                self._items.move_to_end(key)
        if mine:
            try:
                future.set_result(load())
            except BaseException as err:  # noqa: BLE001 - handed to every thread waiting for the item, and raised
                future.set_exception(err)
                with self._lock:
                    if self._items.get(key) is future:
                        del self._items[key]  # a later call tries again
        return future.result()


def _interpolation(shape: tuple[int, ...], size: int) -> int:
    """Area averaging when shrinking (antialiased), bilinear when enlarging, as :func:`resize_images`."""
    return cv2.INTER_AREA if shape[0] > size or shape[1] > size else cv2.INTER_LINEAR


def _compose_batch(cache: _ImageCache, jobs: Sequence[SuiteImage], blend: bool, out: np.ndarray, *, paste: bool = True) -> np.ndarray:
    """The images of ``jobs`` at the cache's size, written into ``out``: (len(jobs), height, width, 3) uint8.

    ``paste`` False leaves each new background as it is, for :func:`_paste_on_device` to paste on."""
    for start, stop in _runs_of_targets(jobs):
        cutout = cache.target(jobs[start].target_id)
        swap = _swaps(jobs, start, stop)
        if swap and paste:
            out[swap] = cutout.paste(np.stack([cache.background(jobs[i].background_id) for i in swap]), blend=blend)
        elif swap:  # pasted by _paste_on_device
            for i in swap:
                out[i] = cache.background(jobs[i].background_id)
        for i in range(start, stop):
            if jobs[i].background_id is None and not jobs[i].foreground:
                out[i] = cutout.image
        alone = [i for i in range(start, stop) if jobs[i].foreground]
        if alone:
            out[alone] = foreground_only(cutout.image[None], cutout.mask[None])
    return out


def _swaps(jobs: Sequence[SuiteImage], start: int, stop: int) -> list[int]:
    """Indices of the jobs in ``start:stop`` (one target's) that put the target on a new background."""
    return [i for i in range(start, stop) if jobs[i].background_id is not None and not jobs[i].foreground]


def _paste_on_device(cache: _ImageCache, jobs: Sequence[SuiteImage], blend: bool, out: np.ndarray, device: torch.device) -> np.ndarray:
    """Paste each target on the backgrounds :func:`_compose_batch` left in ``out`` (``paste`` False),
    on ``device``, and write the composites back into ``out``.

    The work, the targets' first upload included, goes on this thread's own CUDA stream
    (:func:`~analytics._streams.own_stream`): on the model's stream each waited for every forward
    pass queued before it. Out of device memory (a model that backs off its batch size fills it),
    the batch is composited on the CPU instead: the same images, only slower.
    """
    with torch.cuda.stream(own_stream(device)):  # a no-op off CUDA
        try:
            rows, cutouts, which = [], [], []
            for start, stop in _runs_of_targets(jobs):
                swap = _swaps(jobs, start, stop)
                if swap:
                    rows += swap
                    which += [len(cutouts)] * len(swap)
                    cutouts.append(cache.device_target(jobs[start].target_id, device))
            if rows:
                batch = torch.from_numpy(out).to(device, non_blocking=True)  # asynchronous from page-locked memory
                index = torch.tensor(rows).to(device, non_blocking=True)
                batch[index] = paste_on_device(cutouts, which, batch[index], blend=blend)
                torch.from_numpy(out).copy_(batch)  # waits for this stream's work only
        except torch.cuda.OutOfMemoryError:
            batch = cutouts = None  # their device memory goes back before the CPU does the work
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            _compose_batch(cache, jobs, blend, out)
    return out


def _runs_of_targets(jobs: Sequence[SuiteImage]) -> Iterator[tuple[int, int]]:
    """(start, stop) of each run of consecutive jobs with the same target."""
    start = 0
    for i in range(1, len(jobs) + 1):
        if i == len(jobs) or jobs[i].target_id != jobs[start].target_id:
            yield start, i
            start = i


def iter_composites(
    workspace: Workspace,
    jobs: Sequence[SuiteImage],
    *,
    batch_size: int = 32,
    blend: bool = True,
    size: int | None = None,
    prefetch: int = PREFETCH_BATCHES,
    cache_items: int = CACHE_ITEMS,
    composites: CompositeCache | None = None,
    suite_id: str | None = None,
    threads: int | None = None,
    page_locked: bool = False,
    blend_on: torch.device | None = None,
) -> Iterator[tuple[list[SuiteImage], np.ndarray]]:
    """Generate the images of ``jobs`` batch by batch (ahead on a worker thread, or on demand).

    Parameters
    ----------
    workspace : Workspace
    jobs : sequence of SuiteImage
        Order is kept; group jobs by target for the best cache use.
    batch_size : int, default=32
    blend : bool, default=True
        Laplacian-pyramid blending on the seam (see :func:`analytics.data.composite`).
    size : int or None, default=None
        Make the images at ``size`` x ``size`` (pass a model's ``spec.composite_size``): each
        target, mask and background is resized once when decoded and the composites are pasted at
        that size, so the caller's thread only runs the model. None keeps the workspace size (a
        model with its own library transform, which then resizes each composite once).
    prefetch : int, default=2
        Batches generated ahead of the caller on a worker thread. 0: each batch is generated when
        the caller asks for it, split over every CPU core; use it when the caller's work needs the
        CPU too (see :func:`prefetch_for`).
    cache_items : int, default=64
        Decoded targets + backgrounds kept in memory.
    composites : CompositeCache or None, default=None
        Read the images from this cache, compositing (and storing) only those it lacks.
    suite_id : str or None, default=None
        The suite the jobs come from; needed with ``composites``.
    threads : int or None, default=None
        Threads that composite each batch (:func:`compositing_threads`; None: as it says for
        CUDA when this machine has it, else for the CPU).
    page_locked : bool, default=False
        Make each batch in page-locked memory (:func:`~analytics.inference.device.empty_batch`),
        for a CUDA model: its upload is then asynchronous, so keep a batch until that copy is done.
    blend_on : torch.device or None, default=None
        Paste and blend on this device (a model's accelerator; :mod:`~analytics.inference.device_blend`):
        the threads only decode the backgrounds and stack them into the batch. None: on the threads.

    Yields
    ------
    jobs : list of SuiteImage
    images : ndarray of shape (len(jobs), size, size, 3), uint8

    Examples
    --------
    >>> for batch_jobs, images in iter_composites(ws, jobs, batch_size=16):  # doctest: +SKIP
    ...     prediction = model.predict(images)
    """
    check_positive_int(batch_size, "batch_size")
    check_positive_int(prefetch, "prefetch", minimum=0)
    check_positive_int(cache_items, "cache_items", minimum=2)
    if composites is not None and suite_id is None:
        raise InvalidInputError("iter_composites needs the suite_id of the jobs to read them from a CompositeCache")
    jobs = list(jobs)
    cache = _ImageCache(workspace, jobs, cache_items, size)
    chunks = (jobs[start : start + batch_size] for start in range(0, len(jobs), batch_size))
    source = _Source(cache, blend, composites, suite_id, functools.partial(empty_batch, page_locked=page_locked), blend_on)
    if threads is None:
        threads = compositing_threads(torch.device("cuda" if torch.cuda.is_available() else "cpu"), prefetch)
    check_positive_int(threads, "threads")
    stream = _composed_on_threads(source, chunks, threads)
    return stream if prefetch == 0 else prefetched(stream, prefetch)


@dataclass(frozen=True)
class _Source:
    """Where a stream's images come from: composited from the image cache, or read from (and
    first written to) a :class:`~analytics.inference.CompositeCache`."""

    cache: _ImageCache
    blend: bool
    composites: CompositeCache | None
    suite_id: str | None
    empty: Callable[[tuple[int, ...]], np.ndarray]  # allocates a batch from its shape
    blend_on: torch.device | None = None  # paste on this device, not on the threads

    def images(self, jobs: list[SuiteImage], pool: ThreadPoolExecutor | None, threads: int) -> np.ndarray:
        """(len(jobs), size, size, 3) uint8; ``pool`` (None: this thread) splits the compositing over its ``threads`` threads."""
        if self.composites is None:
            return self._compose(jobs, pool, threads, self.empty)
        return self.composites.images(
            self.suite_id, jobs, size=self.cache.size, blend=self.blend, empty=self.empty,
            make=lambda todo: self._compose(todo, pool, threads, empty_batch),  # stored, then read into a batch of ``empty``
        )  # fmt: skip

    def _compose(self, jobs: list[SuiteImage], pool: ThreadPoolExecutor | None, threads: int, empty: Callable) -> np.ndarray:
        height, width = self.cache.target(jobs[0].target_id).image.shape[:2]
        out = empty((len(jobs), height, width, 3))
        paste = self.blend_on is None
        if pool is None:
            _compose_batch(self.cache, jobs, self.blend, out, paste=paste)
        else:
            bounds = np.linspace(0, len(jobs), min(threads, len(jobs)) + 1).astype(int)
            list(pool.map(lambda a, b: _compose_batch(self.cache, jobs[a:b], self.blend, out[a:b], paste=paste), bounds[:-1], bounds[1:]))
        return out if paste else _paste_on_device(self.cache, jobs, self.blend, out, self.blend_on)


def prefetch_for(device: torch.device) -> int:
    """How far ahead :func:`iter_composites` should work for a model on ``device``.

    On an accelerator, :data:`PREFETCH_BATCHES` (compositing on the CPU overlaps the model). On a
    CPU whose every core runs the model's threads, 0: a compositing thread running beside it
    stalls the model's threads at each of its synchronisation points. On the 2-core reference
    machine, compositing each batch over both cores and then running the model gave 5-10 % more
    images per second than overlapping the two (``benchmarks/inference.py``). When the model runs
    on fewer threads than there are cores (``OMP_NUM_THREADS``, :func:`model_threads`), a free
    core composites the next batches meanwhile, as for an accelerator.
    """
    return 0 if device.type == "cpu" and model_threads() >= cpu_count() else PREFETCH_BATCHES


def compositing_threads(device: torch.device, prefetch: int) -> int:
    """Threads that composite a stream's batches for a model on ``device`` (``prefetch`` as :func:`prefetch_for`).

    Every core between a CPU model's batches (``prefetch`` 0) and ahead of an accelerator (one
    thread fed Lite0 on an H100 at 4 % of its forward rate); ahead of a CPU model, the cores its
    threads leave free.
    """
    if prefetch == 0 or device.type != "cpu":
        return cpu_count()
    return max(1, cpu_count() - model_threads())


def _composed_on_threads(source: _Source, chunks: Iterator[list[SuiteImage]], threads: int) -> Iterator:
    if threads == 1:
        for chunk in chunks:
            yield chunk, source.images(chunk, None, 1)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="backdrop-composites") as pool, cv2_single_threaded():
        for chunk in chunks:
            yield chunk, source.images(chunk, pool, threads)
