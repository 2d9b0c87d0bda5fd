"""A ``torch.nn.Module`` held in Python (``analytics.api.add_model(ws, name, module=net, …)``),
stored reproducibly: compiled to TorchScript (``torch.jit.script``, else ``torch.jit.trace`` on a
batch of its input size), saved into the workspace's content-addressed checkpoint store with the
preprocessing given, and from then on loaded as a TorchScript file is, in any process.

The module follows the TorchScript contract (:func:`analytics.models.register_torchscript`): its
``forward`` takes a float batch (n, 3, input_size, input_size) and returns logits (n, classes), or
``(logits, embedding)`` with a 2-D embedding. Its preprocessing is given, as for ONNX:
``input_size``, ``mean`` and ``std`` (of [0, 1] pixels; required), optionally ``crop_pct`` and
``interpolation`` (torchvision's ``Resize`` + ``CenterCrop`` on a PIL image, bilinear unless told;
without them Backdrop's area resize to the input side).

Before anything is stored, the saved TorchScript is loaded back and its outputs compared with the
module's own on a batch of another size (|Δ| <= 1e-4): a module that can be neither scripted nor
traced, or whose trace follows one path of an input-dependent ``if``, is refused, saying why and
what to do. Registered specs have ``source='module'``, ``arch`` the module's class name, and behave
as TorchScript models (no hooks: no last convolutional map, no GradCAM; the gradient methods work).
"""

from __future__ import annotations

import copy
import itertools
import math
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analytics.exceptions import InvalidInputError

from ._base import CROP_PCT, INTERPOLATION, LABELS, MEAN, STD, ModelSource, Option, get_source, register_source
from .torchscript import NO_HOOKS

if TYPE_CHECKING:
    import torch
    from torch import nn

    from analytics.data import LabelSpace
    from analytics.models.spec import ModelSpec
    from analytics.models.transforms import ImageTransform
    from analytics.workspace import Workspace

#: The largest difference allowed between the module's outputs and its stored TorchScript's.
TOLERANCE = 1e-4
_FIX = (
    "make its forward scriptable (torch.jit.script) or traceable (tensor operations only, no branch on the input's "
    "values or batch size, no dict or None outputs), or export it yourself and register the file with source='torchscript'"
)


@register_source
class InMemorySource(ModelSource):
    """Stored as a TorchScript file, so built, hooked (not at all) and counted as the ``torchscript`` source's models are."""

    name = "module"
    label = "torch.nn.Module in memory"
    description = "a torch.nn.Module held in Python (analytics.api.add_model(..., module=net)), stored as TorchScript"
    python_only = True
    copies_checkpoint = True
    options = (
        Option(
            "module", "", "object", "the torch.nn.Module: forward(x) returns logits or (logits, embedding)", "Module", "models.module",
            required=True, in_form=False,
        ),
        LABELS,
        Option("input_size", "--input-size", "int", "network input side in pixels", "Input size (px)", "models.input_size", required=True),
        replace(MEAN, required=True),
        replace(STD, required=True),
        CROP_PCT,
        INTERPOLATION,
    )  # fmt: skip

    def register(self, workspace: Workspace, name: str | None, **options: Any) -> ModelSpec:
        return register_module(workspace, str(name), **options)

    def build(self, spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
        return get_source("torchscript").build(spec, workspace)

    def feature_layer(self, network: nn.Module, spec: ModelSpec) -> nn.Module:
        return get_source("torchscript").feature_layer(network, spec)

    def conv_map_problem(self, workspace: Workspace, spec: ModelSpec) -> str | None:
        return NO_HOOKS


def register_module(
    workspace: Workspace,
    name: str,
    *,
    module: nn.Module,
    input_size: int,
    mean: tuple[float, float, float],
    std: tuple[float, float, float],
    crop_pct: float | None = None,
    interpolation: str | None = None,
    label_space: LabelSpace | None = None,
    replace: bool = False,
) -> ModelSpec:
    """Register an ``nn.Module`` held in memory: compiled to TorchScript, checked against the module,
    copied into the workspace's checkpoint store (see the module docstring). ``label_space``: one
    name per logit (default ImageNet-1k).

    Raises
    ------
    InvalidInputError
        Not an ``nn.Module``, a bad input size or preprocessing, a forward that fails or breaks the
        contract, a module that can be neither scripted nor traced (or whose TorchScript gives other
        outputs), a label space of the wrong size, a name taken. Nothing is stored.
    """
    from torch import nn

    from analytics._validation import check_positive_int
    from analytics.data import imagenet_label_space
    from analytics.models.networks import torchscript_network
    from analytics.models.registry import _check_spec, _register_copied
    from analytics.models.spec import ModelSpec, _find_spec
    from analytics.team import require_permission

    require_permission(workspace, "register_models")
    if not isinstance(module, nn.Module):
        raise InvalidInputError(f"module must be a torch.nn.Module; got {type(module).__name__}")
    size = check_positive_int(input_size, "input_size", minimum=16)
    label_space = imagenet_label_space() if label_space is None else label_space
    transform = _transform(size, mean, std, crop_pct, interpolation)
    existing = _find_spec(workspace, name)
    if existing is not None and not replace:
        raise InvalidInputError(f"a model named {name!r} is already registered ({existing.source} {existing.arch}); pick another name or pass replace=True")
    kind = type(module).__name__
    original, training = module, module.training
    if any(tensor.device.type != "cpu" for tensor in itertools.chain(module.parameters(), module.buffers())):
        module = copy.deepcopy(module).cpu()  # compiled and stored on the CPU; the caller's module stays where it is
    module.eval()
    try:
        with tempfile.TemporaryDirectory(prefix="backdrop-module-") as folder:
            path = Path(folder) / "module.pt"
            how, embedding = _save_torchscript(module, kind, size, path)
            spec = ModelSpec(
                name=name, source="module", arch=kind, checkpoint=str(path), label_space=label_space, input_size=size, preprocessing="transform",
                embedding_layer=f"second output of forward ({embedding}-d)" if embedding else "logits (the module's forward returns no embedding)",
                n_params=0, origin=f"{type(module).__module__}.{type(module).__qualname__} in memory, {how} to TorchScript", transform=transform,
            )  # fmt: skip
            _check_spec(spec)
            return _register_copied(workspace, spec, torchscript_network(spec, workspace).eval(), path, replace)
    finally:
        original.train(training)


def _transform(size: int, mean: Any, std: Any, crop_pct: float | None, interpolation: str | None) -> ImageTransform:
    """As an ONNX model's: Backdrop's area resize, or with ``crop_pct`` / ``interpolation`` torchvision's
    ``Resize(floor(size / crop_pct))`` + ``CenterCrop(size)`` on a PIL image."""
    from analytics.models.transforms import ImageTransform

    if crop_pct is None and interpolation is None:
        return ImageTransform(mean, std, size, 0, "area", "opencv", "mean/std given in Python, Backdrop's resize")
    crop = 1.0 if crop_pct is None else float(crop_pct)
    if not 0 < crop <= 1:
        raise InvalidInputError(f"crop_pct must be in (0, 1] (1: no crop); got {crop_pct!r}")
    resize = math.floor(size / crop)
    origin = "mean/std, crop_pct/interpolation given in Python (torchvision on PIL)"
    return ImageTransform(mean, std, resize, int(round((resize - size) / 2.0)), interpolation or "bilinear", "pil", origin)


def _save_torchscript(module: nn.Module, kind: str, size: int, path: Path) -> tuple[str, int | None]:
    """Script (else trace) ``module``, save it to ``path`` and check the saved file against the module.

    Returns how it was compiled (``'scripted'`` or ``'traced'``) and the embedding's width (None: logits only).
    """
    import warnings

    import torch

    generator = torch.Generator().manual_seed(0)
    example = torch.randn(2, 3, size, size, generator=generator)
    probe = torch.randn(3, 3, size, size, generator=generator)  # another batch size: a trace that fixed it is caught
    expected = _outputs(module, probe, f"module {kind}", size)
    reasons = []
    for how in ("scripted", "traced"):
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")  # TracerWarnings, and torch 2.14's deprecation of TorchScript
                compiled = torch.jit.script(module) if how == "scripted" else torch.jit.trace(module, example, check_trace=False)
                torch.jit.save(compiled, str(path))
                reloaded = torch.jit.load(str(path), map_location="cpu").eval()
            got = _outputs(reloaded, probe, f"the {how} TorchScript of module {kind}", size)
        except Exception as err:  # noqa: BLE001 - the compilers raise many types (NotSupportedError, RuntimeError, TypeError, …)
            reasons.append(f"{'script' if how == 'scripted' else 'trace'}: {_first_line(err)}")
            continue
        if [a.shape for a in got] != [a.shape for a in expected]:
            reasons.append(f"the {how} TorchScript returns other shapes than the module on a batch of 3")
            continue
        difference = max((float((a - b).abs().max()) if a.numel() else 0.0 for a, b in zip(expected, got, strict=True)), default=0.0)
        if difference <= TOLERANCE:
            return how, expected[1].shape[1] if len(expected) == 2 else None
        reasons.append(f"the {how} TorchScript gives other outputs than the module on a batch of 3 (max |Δ| {difference:.3g})")
    raise InvalidInputError(f"module {kind} cannot be stored reproducibly as TorchScript ({'; '.join(reasons)}); {_FIX}. Nothing was stored")


def _outputs(network: Any, batch: torch.Tensor, what: str, size: int) -> list[torch.Tensor]:
    """``[logits]`` or ``[logits, embedding]`` of ``network`` on ``batch``, checked against the contract."""
    import torch

    try:
        with torch.no_grad():
            out = network(batch)
    except Exception as err:  # noqa: BLE001 - a module's forward raises anything
        raise InvalidInputError(
            f"{what}: its forward fails on a batch of shape (3, 3, {size}, {size}) ({_first_line(err)}); check input_size and that it takes one image batch"
        ) from err
    parts = list(out) if isinstance(out, (tuple, list)) else [out]
    tensors = [p for p in parts if isinstance(p, torch.Tensor) and p.ndim >= 2 and p.shape[0] == len(batch)]
    if not 1 <= len(parts) <= 2 or len(tensors) != len(parts) or tensors[0].ndim != 2:
        shapes = ", ".join(str(tuple(p.shape)) if isinstance(p, torch.Tensor) else type(p).__name__ for p in parts)
        raise InvalidInputError(
            f"{what}: its forward returns {shapes or 'nothing'}; it must return logits of shape (batch, classes), or (logits, embedding) "
            "with an embedding of shape (batch, …)"
        )
    return [p.detach().float().flatten(1) for p in tensors]  # the embedding flattened, as a TorchScript model's is


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    return (lines[0].rstrip(":") if lines else type(err).__name__)[:200]
