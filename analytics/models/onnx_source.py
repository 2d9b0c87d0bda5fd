"""The ``onnx`` source: an ONNX file run by ONNX Runtime (``CPUExecutionProvider``;
``CUDAExecutionProvider`` for CUDA batches when the installed runtime has it).

Read from the graph: the one image input's name, layout (NCHW or NHWC, the axis of size 3) and
side (a dynamic side needs ``input_size``), a fixed batch size if any, and the outputs: the
first is the logits, a second 2-D output the embedding (else the logits serve as embedding, as for
TorchScript). An ONNX graph says nothing of its preprocessing: ``mean`` and ``std`` are
required; without ``crop_pct`` or ``interpolation`` the image is resized as Backdrop resizes
for torchvision models (area averaging), with them as torchvision's ``Resize`` + ``CenterCrop``
on a PIL image (Pillow, bilinear unless told).

Safety: ONNX is treated as code (admins only in team mode, as TorchScript). Custom operator
libraries are never registered, and a graph whose operators come from a domain other than ONNX's
own or ONNX Runtime's contrib ops (``com.microsoft``) is refused, as is one whose weights lie in
external files. A graph with a tensor over :data:`MAX_ONNX_TENSOR_BYTES` (2 GiB; raise it with
``$BACKDROP_MAX_ONNX_TENSOR_BYTES``) is refused when read, before any session runs: an initializer,
or an intermediate tensor whose shape ONNX's shape inference fixes on the batch Backdrop feeds (a
``ConstantOfShape`` of 8 * 2**30 floats would make ONNX Runtime allocate 32 GiB; on a server with
that much memory and no limit it would). A tensor whose size only the run fixes (a shape computed
from the pixels) is bounded as it runs: every session Backdrop makes, the registration's check run
included, takes its CPU memory from one ONNX Runtime arena shared by the whole process, capped at
:func:`max_onnx_memory_bytes` (half the machine's memory, at most 8 GiB; ``$BACKDROP_MAX_ONNX_MEMORY_BYTES``),
so an allocation past it fails inside ONNX Runtime, before any memory is taken, as one line naming
the model and the limit; CUDA sessions get the same cap on their GPU arena (``gpu_mem_limit``).
Text is the one kind of tensor ONNX Runtime keeps outside that arena, so a graph that makes string
tensors is refused when read (:func:`_text_source`).
ONNX Runtime computes no gradients: saliency offers the perturbation methods only
(occlusion, RISE), and there are no hooks, so no GradCAM and no conv-map signals.
"""

from __future__ import annotations

import math
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from analytics._optional import import_optional
from analytics._validation import positive_limit
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace

from .checkpoints import _checkpoint_path
from .spec import ModelSpec
from .transforms import ImageTransform

#: Operator domains ONNX Runtime runs without a custom operator library.
_BUILT_IN_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "com.microsoft", "ai.onnx.preview.training")
#: Why an ONNX model has no gradient methods, no hooks and no conv map (saliency and the conv signals say it).
NO_GRADIENTS = "it runs in ONNX Runtime, which computes no gradients and exposes no layers to hook"
_FLOAT = 1  # onnx.TensorProto.FLOAT
#: The largest tensor an ONNX graph may hold or compute, in bytes, where its size is known before it
#: runs (:func:`read_onnx_graph`): initializers, and intermediate tensors whose shapes ONNX's shape
#: inference (with data propagation) fixes on the batch Backdrop feeds. Raise it with
#: ``$BACKDROP_MAX_ONNX_TENSOR_BYTES`` (a whole number of bytes), read at every check.
MAX_ONNX_TENSOR_BYTES = 2 << 30
MAX_ONNX_TENSOR_BYTES_ENV_VAR = "BACKDROP_MAX_ONNX_TENSOR_BYTES"
#: The most CPU memory ONNX Runtime may hold for all of the process's sessions together, in bytes,
#: where half the machine's memory is more (:func:`max_onnx_memory_bytes`): what a graph allocates
#: as it runs, including tensors whose size no check before the run can know. Raise it with
#: ``$BACKDROP_MAX_ONNX_MEMORY_BYTES`` (a whole number of bytes), read when a session is made.
MAX_ONNX_MEMORY_BYTES = 8 << 30
MAX_ONNX_MEMORY_BYTES_ENV_VAR = "BACKDROP_MAX_ONNX_MEMORY_BYTES"
_ARENA_LOCK = threading.Lock()
#: The cap of the arena registered with ONNX Runtime's environment (the one its sessions share), None before the first session.
_arena_bytes: int | None = None
_ARENA_FULL = re.compile(r"Available memory of (\d+) is smaller than requested bytes of (\d+)")


@dataclass(frozen=True)
class OnnxGraph:
    """What Backdrop reads from an ONNX graph.

    Attributes
    ----------
    input_name : str
    layout : {'nchw', 'nhwc'}
    size : int or None
        The square input's side, None when dynamic.
    batch : int or None
        A fixed batch size, None when dynamic.
    n_outputs : int or None
        Classes of the first output when the graph fixes them.
    embedding : bool
        Whether a second, 2-D output exists (read as the embedding).
    n_params : int
        Elements of the graph's initializers (its weights).
    """

    input_name: str
    layout: str
    size: int | None
    batch: int | None
    n_outputs: int | None
    embedding: bool
    n_params: int


def read_onnx_graph(path: Path, input_size: int | None = None, *, check_tensors: bool = True) -> OnnxGraph:
    """Read and check an ONNX file's graph (no session is made, nothing runs).

    ``input_size``: the side fed to a graph whose side is dynamic, for the tensor size check
    (:func:`_check_tensor_sizes`; without it, tensors whose shapes depend on the side go unchecked).
    ``check_tensors=False`` skips that check (it runs shape inference, seconds on a large graph):
    for a registered model's copy in the workspace, which registration checked and which is stored
    under its content's hash.

    Raises
    ------
    InvalidInputError
        Not an ONNX file, external weights, operators of another domain, string tensors, not one
        float image input of shape (n, 3, s, s) or (n, s, s, 3), a first output that is not
        (n, classes), or a tensor over :func:`max_onnx_tensor_bytes`.
    """
    onnx = import_optional("onnx", extra="onnx")  # imported only when an ONNX model is read

    if not path.is_file():
        raise InvalidInputError(f"{path}: ONNX file not found")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as err:  # noqa: BLE001 - protobuf raises its own DecodeError, among others
        raise InvalidInputError(f"{path}: not a readable ONNX file ({type(err).__name__}: {str(err)[:150]}); export it with torch.onnx.export") from err
    graph = model.graph
    external = [t.name for t in graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    if external:
        raise InvalidInputError(f"{path}: its weights lie in external files ({external[0]}, …); save one self-contained file (onnx.save(model, path))")
    domains = sorted({node.domain for node in _nodes(graph)} - set(_BUILT_IN_DOMAINS))
    if domains:
        raise InvalidInputError(
            f"{path}: uses operators of the domain {domains[0]!r}, which need a custom operator library; Backdrop never loads one: export with standard ONNX operators"
        )
    text = _text_source(onnx, graph)
    if text:
        raise InvalidInputError(
            f"{path}: {text} makes text (string) tensors, whose characters ONNX Runtime allocates outside the memory limit of its runs; "
            "an image classifier needs none: export the graph without them"
        )
    weights = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in weights]
    if len(inputs) != 1:
        raise InvalidInputError(f"{path}: the graph has {len(inputs)} inputs ({', '.join(i.name for i in inputs)}); Backdrop feeds one image batch")
    image = inputs[0]
    dims = [d.dim_value if d.HasField("dim_value") else None for d in image.type.tensor_type.shape.dim]
    if image.type.tensor_type.elem_type != _FLOAT or len(dims) != 4 or 3 not in (dims[1], dims[3]):
        shape = "x".join("?" if d is None else str(d) for d in dims)
        raise InvalidInputError(f"{path}: input {image.name!r} ({shape}) is not a float image batch of shape (n, 3, s, s) or (n, s, s, 3)")
    layout = "nchw" if dims[1] == 3 else "nhwc"
    height, width = (dims[2], dims[3]) if layout == "nchw" else (dims[1], dims[2])
    if height != width:
        raise InvalidInputError(f"{path}: input {image.name!r} is {height}x{width}, not square; Backdrop feeds square images")
    outputs = [[d.dim_value if d.HasField("dim_value") else None for d in o.type.tensor_type.shape.dim] for o in graph.output]
    if not outputs or len(outputs[0]) != 2:
        raise InvalidInputError(f"{path}: the first output is not (batch, classes) logits; export the classifier's logits first")
    if check_tensors:
        _check_tensor_sizes(onnx, model, path, image, [dims[0] or 1, *([3, height or input_size, width or input_size] if layout == "nchw" else [height or input_size, width or input_size, 3])])
    return OnnxGraph(
        input_name=image.name, layout=layout, size=height, batch=dims[0] or None, n_outputs=outputs[0][1],
        embedding=len(outputs) > 1 and len(outputs[1]) == 2, n_params=int(sum(math.prod(t.dims) for t in graph.initializer)),
    )  # fmt: skip


def max_onnx_tensor_bytes() -> int:
    """The tensor size limit of :func:`read_onnx_graph`: ``$BACKDROP_MAX_ONNX_TENSOR_BYTES``, else :data:`MAX_ONNX_TENSOR_BYTES`.

    Raises
    ------
    InvalidInputError
        The environment variable is not a positive whole number.
    """
    return positive_limit(MAX_ONNX_TENSOR_BYTES_ENV_VAR, MAX_ONNX_TENSOR_BYTES, "bytes")


def max_onnx_memory_bytes() -> int:
    """The cap of ONNX Runtime's shared CPU arena: ``$BACKDROP_MAX_ONNX_MEMORY_BYTES``, else half the
    machine's physical memory or :data:`MAX_ONNX_MEMORY_BYTES`, whichever is smaller (the physical
    memory the system reports: a container's own memory limit is not read, set the variable there).

    Raises
    ------
    InvalidInputError
        The environment variable is not a positive whole number.
    """
    try:
        half = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (AttributeError, ValueError, OSError):  # a system without these names (Windows): the fixed default
        half = MAX_ONNX_MEMORY_BYTES
    return positive_limit(MAX_ONNX_MEMORY_BYTES_ENV_VAR, min(MAX_ONNX_MEMORY_BYTES, half) if half > 0 else MAX_ONNX_MEMORY_BYTES, "bytes")


def _bounded_session_options(ort) -> tuple[object, int]:
    """Session options whose CPU allocations come from the arena of ONNX Runtime's environment,
    capped at :func:`max_onnx_memory_bytes`, and that cap.

    ONNX Runtime's own per-session arena has no cap; an arena registered with the environment has
    one (``OrtArenaCfg``'s ``max_mem``) and serves every session made with
    ``session.use_env_allocators``. Past the cap an allocation fails in ONNX Runtime as an error
    (``Available memory of … is smaller than requested bytes of …``) before any memory is taken.
    It grows by what is asked (``arena_extend_strategy`` 1) rather than in doublings, so it holds
    little more than the largest run needed, and keeps that for the next runs. A changed limit
    registers a new arena for sessions made from then on (ONNX Runtime replaces the registered one;
    sessions already made keep theirs).
    """
    global _arena_bytes
    limit = max_onnx_memory_bytes()
    with _ARENA_LOCK:
        if _arena_bytes != limit:
            memory = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
            ort.create_and_register_allocator(memory, ort.OrtArenaCfg({"max_mem": limit, "arena_extend_strategy": 1}))
            _arena_bytes = limit
    options = ort.SessionOptions()
    options.log_severity_level = 4  # fatal only: a failure reaches the user as one line (_run), not as runtime log lines on stderr
    options.add_session_config_entry("session.use_env_allocators", "1")
    return options, limit


def _check_tensor_sizes(onnx, model, path: Path, image, feed: list) -> None:
    """Refuse a graph with a tensor over :func:`max_onnx_tensor_bytes`: an initializer (dense or
    sparse, as declared), or a tensor whose shape shape inference fixes once the image input has the
    shape ``feed`` (the batch Backdrop feeds; a None side stays symbolic). ``model`` is changed
    (its input's shape, the inferred shapes): read everything else from it first.

    A graph that shape inference cannot read is left to ONNX Runtime (which refuses it, or fails on
    a batch as one line, :meth:`_OnnxClassifier._run`); so is a tensor whose shape depends on data.
    """
    limit = max_onnx_tensor_bytes()
    for dim, value in zip(image.type.tensor_type.shape.dim, feed, strict=True):
        if value is not None:
            dim.Clear()
            dim.dim_value = int(value)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # noqa: BLE001 - onnx raises its own errors (InferenceError, ValidationError…): ONNX Runtime judges such a graph
        inferred = model
    shown = "x".join("?" if v is None else str(v) for v in feed)

    def element_bytes(elem_type: int) -> int:
        try:
            return max(int(onnx.helper.tensor_dtype_to_np_dtype(elem_type).itemsize), 1)
        except Exception:  # noqa: BLE001 - an undefined or newer type: count it as 8 bytes
            return 8

    def check(name: str, dims: list[int], elem_type: int, what: str) -> None:
        size = math.prod(max(d, 0) for d in dims) * element_bytes(elem_type)
        if size > limit:
            raise InvalidInputError(
                f"{path}: {what} {name!r} of shape {'x'.join(map(str, dims))} takes {size / 2**20:.1f} MiB ({size} bytes) on a batch of shape {shown}, "
                f"past the limit of {limit / 2**20:.1f} MiB a tensor (analytics.models.onnx_source.MAX_ONNX_TENSOR_BYTES) that ONNX Runtime would allocate; "
                f"export a graph with smaller tensors, or raise {MAX_ONNX_TENSOR_BYTES_ENV_VAR}"
            )

    for graph in _graphs(inferred.graph):
        for tensor in graph.initializer:
            check(tensor.name, list(tensor.dims), tensor.data_type, "initializer")
        for sparse in graph.sparse_initializer:
            check(sparse.values.name, list(sparse.dims), sparse.values.data_type, "sparse initializer")
        for value in [*graph.value_info, *graph.output]:
            kind = value.type.WhichOneof("value")
            tensor_type = value.type.tensor_type if kind == "tensor_type" else value.type.sparse_tensor_type if kind == "sparse_tensor_type" else None
            if tensor_type is None or not tensor_type.HasField("shape"):
                continue
            dims = [int(d.dim_value) for d in tensor_type.shape.dim if d.HasField("dim_value")]
            if dims and len(dims) == len(tensor_type.shape.dim):  # every dimension fixed
                check(value.name, dims, tensor_type.elem_type, "tensor")


def _text_source(onnx, graph) -> str | None:
    """What first brings a string tensor into ``graph`` or its subgraphs, None if nothing does.

    A string's characters live on the heap, not in ONNX Runtime's capped arena (a chain of
    ``StringConcat`` doubling 48 strings took 715 MB under a 256 MiB cap), so no text may enter:
    the one input is a float batch, so text can only come from a string initializer or constant, a
    ``Cast`` to string, or an ``ai.onnx.ml`` operator mapping numbers to the strings of a
    ``*_strings`` attribute (``LabelEncoder``, ``CategoryMapper``, a classifier's string labels).
    Operators that read strings (``StringConcat``, ``RegexFullMatch`` …) need one of these first.
    """
    string = onnx.TensorProto.STRING
    for sub in _graphs(graph):
        for tensor in [*sub.initializer, *(s.values for s in sub.sparse_initializer)]:
            if tensor.data_type == string:
                return f"initializer {tensor.name!r}"
    for node in _nodes(graph):
        named = node.name or next((o for o in node.output if o), "")  # a node's name is optional: its first output then
        what = f"{node.op_type} node {named!r}" if named else f"a {node.op_type} node"
        for attribute in node.attribute:
            tensors = [attribute.t] if attribute.HasField("t") else list(attribute.tensors)
            if any(t.data_type == string for t in tensors) or attribute.name in ("value_string", "value_strings"):
                return f"{what} (its attribute {attribute.name!r})"
            if node.op_type in ("Cast", "CastLike") and attribute.name == "to" and attribute.i == string:
                return what
            if node.domain == "ai.onnx.ml" and attribute.name.endswith("_strings") and attribute.strings:
                return f"{what} (its attribute {attribute.name!r})"
    return None


def _graphs(graph):
    """A graph and its subgraphs (If / Loop bodies), depth first."""
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            for sub in [attribute.g, *attribute.graphs] if attribute.HasField("g") else attribute.graphs:
                yield from _graphs(sub)


def _nodes(graph):
    """Every node of a graph and its subgraphs (If / Loop bodies)."""
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            for sub in [attribute.g, *attribute.graphs] if attribute.HasField("g") else attribute.graphs:
                yield from _nodes(sub)


class _OnnxClassifier(nn.Module):
    """An ONNX Runtime session as a Backdrop network: ``(logits, embedding)`` tensors on the input's device.

    Not traced or frozen (:attr:`freezable`), no gradients, no hooks (:data:`NO_GRADIENTS`).
    """

    freezable = False

    def __init__(self, path: Path, graph: OnnxGraph, shown: str | None = None) -> None:
        super().__init__()
        self.path, self.graph = path, graph
        self.shown = shown or str(path)  # what a message of a failed run names
        self.n_params = graph.n_params
        self._sessions: dict[str, object] = {}
        self.memory_limit = 0  # the cap of the arena its sessions take memory from, set as the first is made

    def _session(self, device: torch.device):
        ort = import_optional("onnxruntime", extra="onnx")  # imported only when an ONNX model runs

        provider = "CUDAExecutionProvider" if device.type == "cuda" and "CUDAExecutionProvider" in ort.get_available_providers() else "CPUExecutionProvider"
        if provider not in self._sessions:
            options, self.memory_limit = _bounded_session_options(ort)
            # the GPU arena is each CUDA session's own: the same cap, as ONNX Runtime's CUDA provider option
            providers = [(provider, {"gpu_mem_limit": str(self.memory_limit)}), "CPUExecutionProvider"] if provider != "CPUExecutionProvider" else [provider]
            try:
                self._sessions[provider] = ort.InferenceSession(str(self.path), options, providers=providers)
            except Exception as err:  # noqa: BLE001 - onnxruntime raises its own exception types
                raise InvalidInputError(f"{self.shown}: ONNX Runtime cannot load it ({type(err).__name__}: {_runtime_reason(err)})") from err
        return self._sessions[provider]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        session = self._session(x.device)
        batch = x.detach().float()
        if self.graph.layout == "nhwc":
            batch = batch.permute(0, 2, 3, 1)
        array = np.ascontiguousarray(batch.cpu().numpy())
        step = self.graph.batch or max(len(array), 1)
        parts = []
        for start in range(0, len(array), step):
            chunk = array[start : start + step]
            padded = np.concatenate([chunk, np.zeros((step - len(chunk), *chunk.shape[1:]), np.float32)]) if len(chunk) < step else chunk
            outputs = self._run(session, padded)
            parts.append([np.asarray(o)[: len(chunk)] for o in outputs[: 2 if self.graph.embedding else 1]])
        logits = torch.from_numpy(np.concatenate([p[0] for p in parts])).float().to(x.device)
        embedding = torch.from_numpy(np.concatenate([p[1] for p in parts])).float().to(x.device) if self.graph.embedding else logits
        return logits, embedding.flatten(1)

    def _run(self, session, batch: np.ndarray) -> list:
        """``session.run`` on one batch; ONNX Runtime's own errors (a shape that does not fit, an
        allocation that fails: ``Fail``, ``RuntimeException``, ``InvalidArgument``…) as one line naming the model."""
        try:
            return session.run(None, {self.graph.input_name: batch})
        except Exception as err:  # noqa: BLE001 - onnxruntime's pybind exceptions share no base class but Exception
            if not type(err).__module__.startswith("onnxruntime"):
                raise
            shape = "x".join(map(str, batch.shape))
            full = _ARENA_FULL.search(str(err))
            if full:  # the shared arena's cap (_bounded_session_options) refused the allocation: name the cap and how to raise it
                free, asked = (int(v) / 2**20 for v in full.groups())
                node = re.search(r"running (\w+) node", str(err))
                raise InvalidInputError(
                    f"{self.shown}: on a batch of shape {shape}, ONNX Runtime asked for {asked:.1f} MiB{f' in a {node.group(1)} node' if node else ''}, "
                    f"more than the {free:.1f} MiB left of the {self.memory_limit / 2**20:.1f} MiB all ONNX models of this process may use "
                    f"(analytics.models.onnx_source.max_onnx_memory_bytes); export a graph that allocates less on such a batch, "
                    f"or raise {MAX_ONNX_MEMORY_BYTES_ENV_VAR} (a whole number of bytes) where Backdrop starts"
                ) from err
            raise InvalidInputError(
                f"{self.shown}: ONNX Runtime failed running it on a batch of shape {shape} ({type(err).__name__}: {_runtime_reason(err)}); "
                "check the graph runs in onnxruntime on such a batch, then export it again"
            ) from err


def _runtime_reason(err: Exception) -> str:
    """ONNX Runtime's message on one line, without its ``[ONNXRuntimeError] : 1 : FAIL :`` prefix or its source file and function."""
    text = " ".join(str(err).split())
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text)
    text = re.sub(r"\s*/\S+\.(?:h|cc|cpp|hpp):\d+ [^()]*\([^()]*\)", "", text)  # "/onnxruntime_src/…/reshape_helper.h:91 onnxruntime::…(…)"
    return text[:300] or type(err).__name__


def onnx_network(spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
    """The registered ONNX model as a ``(logits, embedding)`` module."""
    path = _checkpoint_path(workspace, spec)
    graph = read_onnx_graph(path, spec.input_size, check_tensors=False)  # registration checked this copy's tensors
    return _OnnxClassifier(path, graph, f"model {spec.name!r} ({path.name})")


def onnx_transform(
    graph: OnnxGraph, path: Path, *, input_size: int | None, mean, std, crop_pct: float | None, interpolation: str | None
) -> tuple[int, ImageTransform]:
    """The preprocessing of an ONNX model from its parameters (the graph gives only its input side)."""
    size = graph.size or input_size
    missing = [name for name, value in (("input_size", size), ("mean", mean), ("std", std)) if value is None]
    if missing:
        what = ["its input side (dynamic in the graph)"] if "input_size" in missing else []
        what += ["its normalisation"] if {"mean", "std"} & set(missing) else []
        raise InvalidInputError(
            f"{path}: an ONNX graph does not record {' or '.join(what)}; give {', '.join(f'`{name}`' for name in missing)} "
            "(for ImageNet training: `mean` 0.485,0.456,0.406 and `std` 0.229,0.224,0.225)"
        )
    if graph.size and input_size and input_size != graph.size:
        raise InvalidInputError(f"{path}: `input_size` {input_size} differs from the graph's fixed input side {graph.size}; leave it out")
    if crop_pct is None and interpolation is None:
        return size, ImageTransform(mean, std, size, 0, "area", "opencv", "mean/std given, Backdrop's resize")
    crop = 1.0 if crop_pct is None else float(crop_pct)
    if not 0 < crop <= 1:
        raise InvalidInputError(f"`crop_pct` must be in (0, 1]; got {crop}")
    resize = math.floor(size / crop)  # torchvision Resize(floor(size / crop)) + CenterCrop(size), as timm's eval transform
    transform = ImageTransform(
        mean, std, resize, int(round((resize - size) / 2.0)), interpolation or "bilinear", "pil", "mean/std, crop_pct/interpolation given (torchvision on PIL)"
    )
    return size, transform
