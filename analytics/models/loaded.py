"""Running a registered model: :class:`LoadedModel` (preprocessing, batched inference, the layer
GradCAM reads), the frozen TorchScript copy it runs on the CPU, and the device and resizing helpers.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import platform
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.jit._state as jit_state
from torch import nn

from analytics._streams import upload
from analytics._validation import check_image_batch, check_positive_int
from analytics.exceptions import InvalidInputError

from .conv_map import ConvStatsNetwork
from .sources._base import get_source
from .spec import IMAGENET_MEAN, IMAGENET_STD, ModelSpec
from .transforms import resize_images

logger = logging.getLogger("analytics.models")  # the package's logger (freeze_for_cpu's warnings)
# Images per forward call on CPU. Small batches keep a layer's activations in cache and under the
# allocator's mmap threshold (see _keep_freed_memory): on the 2-core reference machine the frozen
# Lite0 ran 145 images/s at 4, 115 at 8 and 110 at 16 (and the eager module about 20 at 32).
CPU_MICRO_BATCH = 4
# glibc malloc: serve blocks up to this size from the heap, and keep up to _TRIM_BYTES of freed heap.
_MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's upper limit for this setting on 64-bit
_TRIM_BYTES = 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameter numbers from glibc's <malloc.h>


@dataclass(frozen=True)
class Prediction:
    """Outputs of a model on a batch.

    Attributes
    ----------
    probabilities : ndarray of shape (n, n_outputs), float32
        Softmax over the model's outputs.
    embeddings : ndarray of shape (n, d), float32
    """

    probabilities: np.ndarray = field(repr=False)
    embeddings: np.ndarray = field(repr=False)


class LoadedModel:
    """A registered model ready to run.

    Attributes
    ----------
    spec : ModelSpec
    network : torch.nn.Module
        In eval mode on ``device``; ``network(batch)`` returns ``(logits, embedding)``.
    device : torch.device
    """

    def __init__(self, spec: ModelSpec, network: nn.Module, device: torch.device) -> None:
        self.spec = spec
        self.network = network.eval().to(device).to(memory_format=torch.channels_last)
        self.device = device
        self._frozen: dict[tuple[tuple[int, ...], bool], nn.Module] = {}

    def __repr__(self) -> str:
        return f"LoadedModel({self.spec.name!r}, device={str(self.device)!r})"

    def preprocess(self, images: np.ndarray) -> torch.Tensor:
        """Resize (area interpolation, antialiased) and normalise a batch; a model with its own
        transform (``spec.transform``: timm, transformers, ONNX) resizes, centre-crops and
        normalises as its library does (:class:`analytics.models.ImageTransform`).

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8

        Returns
        -------
        batch : Tensor of shape (n, 3, input_size, input_size), float32, on ``device``
        """
        transform = self.spec.transform
        if transform is not None:
            pixels = transform.resize_and_crop(check_image_batch(images), self.spec.input_size)
            x = transform.normalise(upload(pixels, self.device).permute(0, 3, 1, 2))
            return x.contiguous(memory_format=torch.channels_last)
        images = resize_images(check_image_batch(images), self.spec.input_size)
        x = upload(images, self.device).permute(0, 3, 1, 2).float()  # on CUDA beside the forward passes queued
        if self.spec.preprocessing == "efficientnet-lite":
            x = (x - 127.0) / 128.0
        else:
            mean, std = self._imagenet_statistics
            x = (x / 255.0 - mean) / std
        return x.contiguous(memory_format=torch.channels_last)

    def preprocess_each(self, images: Sequence[np.ndarray]) -> torch.Tensor:
        """:meth:`preprocess` of images that may differ in size, one by one: (n, 3, s, s), float32.

        For a model with its own ``transform`` (``spec.composite_size`` None), whose resize must run
        once on each image as it is; one batch when the images (at least one) share a size."""
        if len({image.shape for image in images}) == 1:
            return self.preprocess(np.stack(images))
        return torch.cat([self.preprocess(np.asarray(image)[None]) for image in images])

    @property
    def crop_box(self) -> tuple[float, float]:
        """The part of each side of an image the network sees, as fractions ``(start, end)``:
        ``(0, 1)`` unless the model's transform centre-crops (timm's ``crop_pct``, say)."""
        transform = self.spec.transform
        return (0.0, 1.0) if transform is None else transform.crop_box(self.spec.input_size)

    @functools.cached_property
    def _imagenet_statistics(self) -> tuple[torch.Tensor, torch.Tensor]:
        # Made once, not sent to the device with every batch.
        return (
            torch.tensor(IMAGENET_MEAN, device=self.device).view(1, 3, 1, 1),
            torch.tensor(IMAGENET_STD, device=self.device).view(1, 3, 1, 1),
        )

    def forward(self, batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Forward pass with gradients allowed (saliency).

        Parameters
        ----------
        batch : Tensor of shape (n, 3, input_size, input_size), float32, on ``device``
            As :meth:`preprocess` returns it.

        Returns
        -------
        logits : Tensor of shape (n, n_outputs), float32
        embeddings : Tensor of shape (n, d), float32
        """
        return self.network(batch)

    def predict(self, images: np.ndarray, *, batch_size: int = 32) -> Prediction:
        """Softmax probabilities and embeddings of a batch (under ``torch.inference_mode``).

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8
        batch_size : int, default=32

        Returns
        -------
        prediction : Prediction
            Probabilities of shape (n, n_outputs) and embeddings of shape (n, d), float32.
        """
        images = check_image_batch(images)
        check_positive_int(batch_size, "batch_size")
        probabilities, embeddings = [], []
        for start in range(0, len(images), batch_size):
            logits, embedding = self.run_batch(self.preprocess(images[start : start + batch_size]))
            probabilities.append(torch.softmax(logits.float(), dim=1).cpu().numpy())
            embeddings.append(embedding.float().cpu().numpy())
        n_out, dim = self.spec.n_outputs, (embeddings[0].shape[1] if embeddings else 0)
        return Prediction(
            np.concatenate(probabilities) if probabilities else np.zeros((0, n_out), np.float32),
            np.concatenate(embeddings) if embeddings else np.zeros((0, dim), np.float32),
        )

    def top_outputs(self, image: np.ndarray, *, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` most probable outputs on one image, most probable first: (output name, probability).

        Parameters
        ----------
        image : ndarray of shape (height, width, 3), uint8
        k : int, default=5
            At most the number of outputs.
        """
        k = check_positive_int(k, "k")
        probabilities = self.predict(np.asarray(image)[None]).probabilities[0]
        order = np.argsort(-probabilities, kind="stable")[:k]
        return [(self.spec.label_space.names[i], float(probabilities[i])) for i in order]

    def run_batch(self, batch: torch.Tensor, *, conv_stats: bool = False) -> tuple[torch.Tensor, ...]:
        """Forward pass for inference, no gradients.

        CUDA: autocast (float16), channels-last. CPU: a frozen TorchScript copy of the network
        (see :func:`freeze_for_cpu`) run in micro-batches of :data:`CPU_MICRO_BATCH` images.

        Parameters
        ----------
        batch : Tensor of shape (n, 3, input_size, input_size), float32, on ``device``
            As :meth:`preprocess` returns it.
        conv_stats : bool, default=False
            Also return the authors' statistics of the last convolutional map (:attr:`conv_network`).

        Returns
        -------
        logits : Tensor of shape (n, n_outputs)
            float32 on the CPU; under CUDA autocast float16 (float32 where autocast keeps it).
        embeddings : Tensor of shape (n, d)
            Same dtype rule as ``logits``.
        conv_stats : Tensor of shape (n, 2), float32
            Only with ``conv_stats=True``: :func:`analytics.models.conv_map_statistics` of each image's map.
        """
        network = self.conv_network if conv_stats else self.network
        if self.device.type == "cuda":
            with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16):
                return network(batch)
        _keep_freed_memory()
        network = self._cpu_network(network, batch, conv_stats)
        with torch.inference_mode():
            parts = [network(chunk.contiguous(memory_format=torch.channels_last)) for chunk in batch.split(CPU_MICRO_BATCH)]
        return tuple(torch.cat(outputs) for outputs in zip(*parts))

    @functools.cached_property
    def conv_network(self) -> nn.Module:
        """The network returning ``(logits, embedding, conv statistics)`` (:class:`analytics.models.ConvStatsNetwork`).

        Raises
        ------
        InvalidInputError
            The model has no last convolutional map (TorchScript, a transformer); the message says why.
        """
        try:
            layer = self.feature_layer
        except InvalidInputError as err:
            raise InvalidInputError(f"model {self.spec.name!r} has no last-conv-map signals: {err}") from err
        return ConvStatsNetwork(self.network, layer).eval()

    def _cpu_network(self, network: nn.Module, batch: torch.Tensor, conv_stats: bool) -> nn.Module:
        if not getattr(network, "freezable", True):  # an ONNX Runtime session: nothing to trace
            return network
        key = (tuple(batch.shape[1:]), conv_stats)
        if key not in self._frozen:
            self._frozen[key] = freeze_for_cpu(network, batch)
        return self._frozen[key]

    @property
    def gradient_problem(self) -> str | None:
        """Why gradients cannot flow through the model (saliency then offers the perturbation
        methods only), or None: its source's ``gradient_problem`` (ONNX models, and heads on them,
        run in ONNX Runtime, which computes none)."""
        problem = get_source(self.spec.source).gradient_problem(self.network, self.spec)
        return None if problem is None else f"model {self.spec.name!r} {problem}"

    @functools.cached_property
    def feature_layer(self) -> nn.Module:
        """The module whose output is the model's last convolutional map, the map it pools into its
        embedding: its source's ``feature_layer``, the one definition that GradCAM
        (:attr:`gradcam_layer`) and the conv-map statistics (:attr:`conv_network`) both read.

        Raises
        ------
        InvalidInputError
            The model has none (TorchScript, ONNX, a transformer); the message says why.
        """
        return get_source(self.spec.source).feature_layer(self.network, self.spec)

    @property
    def gradcam_layer(self) -> nn.Module:
        """The layer GradCAM reads: :attr:`feature_layer`, the last convolutional map.

        Raises
        ------
        InvalidInputError
            TorchScript and ONNX models (no forward hooks) or networks without a convolution.
        """
        try:
            return self.feature_layer
        except InvalidInputError as err:
            raise InvalidInputError(f"model {self.spec.name!r} has no layer for GradCAM: {err}") from err


_TRACING = threading.Lock()


@contextlib.contextmanager
def _own_compilation_unit() -> Iterator[torch.jit.CompilationUnit]:
    """A fresh TorchScript compilation unit that tracing and freezing register their types in.

    The tracer registers every traced module's type and methods in one process-wide unit
    (``torch.jit._state._python_cu``, read by the C++ side at each registration) that is never
    emptied, and a frozen graph holds the weights as constants: every freeze kept the model's weights
    for the life of the process (30 MB per EfficientNet-Lite0, a checkpoint's size per model of a
    repository run). In a unit of their own the types go with the frozen module that refers to them.
    There is no public way to choose the unit of submodules, hence swapping the global, under a lock.
    """
    unit = torch.jit.CompilationUnit()
    with _TRACING:
        shared = jit_state._python_cu
        jit_state._python_cu = unit
        try:
            yield unit
        finally:
            jit_state._python_cu = shared


@functools.cache
def _keep_freed_memory() -> None:
    """Stop glibc from handing each freed activation back to the kernel (Linux only, once per process).

    By default glibc maps every block above a (dynamic) threshold with ``mmap`` and unmaps it on
    free, and trims the heap top past 128 KiB; a forward pass allocates and frees tens of MB per
    layer, so every layer then page-faults fresh zeroed pages. On the 2-core reference machine
    that was half of a CPU forward pass's time (sys time ~ user time, 1.5 M minor faults per 256
    Lite0 images); raising both limits with ``mallopt`` removed the faults and doubled the rate.
    PyTorch has no caching allocator on CPU and no pip-installable allocator (jemalloc, tcmalloc)
    can be preloaded into a running interpreter, hence this call. The price: up to
    ``_TRIM_BYTES`` of freed memory stays with the process.
    """
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
        libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES)
    except (OSError, AttributeError):  # not glibc after all: keep its defaults
        return


def freeze_for_cpu(network: nn.Module, example: torch.Tensor) -> nn.Module:
    """A frozen TorchScript copy of ``network`` for CPU inference, or ``network`` itself.

    Freezing folds batch norms into convolutions and lets oneDNN fuse activations; with
    channels-last inputs and small micro-batches this runs EfficientNet-Lite0 several times faster
    on CPU than the eager module on a batch of 32 (``benchmarks/inference.py``). The copy is traced
    on two images and checked on three against the eager network; any tracing error or a
    difference beyond float32 noise keeps the eager network (e.g. models whose control flow
    depends on the input) and logs the reason as a warning (logger ``analytics.models``).

    Parameters
    ----------
    network : nn.Module
        In eval mode; ``network(x)`` returns ``(logits, embedding)``.
    example : Tensor of shape (n, 3, size, size), float32
        A preprocessed batch (n >= 1) on the CPU.

    Returns
    -------
    network : nn.Module
        The frozen ``torch.jit.ScriptModule``, or ``network`` itself when freezing failed.
    """
    example = example.detach()
    trace_input = example[:1].expand(2, -1, -1, -1).contiguous(memory_format=torch.channels_last)
    check_input = torch.cat([example, example.flip(-1), example.flip(-2)])[:3].contiguous(memory_format=torch.channels_last)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer hints and TorchScript's deprecation notice
            with _own_compilation_unit() as unit:
                frozen = torch.jit.freeze(torch.jit.trace(network, trace_input, check_trace=False, _compilation_unit=unit))
            expected, got = network(check_input), frozen(check_input)
    except Exception as err:  # noqa: BLE001 - any failure to trace means: run eager
        reason = (str(err).strip().splitlines() or [""])[0][:200]
        logger.warning("TorchScript freeze of %s failed (%s: %s); running the eager network on the CPU", type(network).__name__, type(err).__name__, reason)
        return network
    same = all(a.shape == b.shape and torch.allclose(a.float(), b.float(), rtol=1e-3, atol=1e-4) for a, b in zip(expected, got))
    if not same:
        logger.warning(
            "the frozen TorchScript copy of %s differs from the eager network on a probe batch (outputs of shapes %s vs %s, "
            "or values beyond float32 noise); running the eager network on the CPU",
            type(network).__name__, [tuple(a.shape) for a in expected], [tuple(b.shape) for b in got],
        )  # fmt: skip
    return frozen if same else network


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``None`` -> CUDA when available else CPU; a requested CUDA device must exist."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise InvalidInputError(f"device must be 'cpu', 'cuda' or 'cuda:N'; got {device!r}") from err
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise InvalidInputError(f"device {device!r} requested but CUDA is not available here; use device='cpu'")
    return resolved
