"""Neuron coverage of a suite on a model: how diverse are its images (docs/method.md, 'Neuron coverage')?

Neuron coverage (Pei et al., "DeepXplore", SOSP 2017): for each input, a layer's output is min-max
scaled to [0, 1] *within that layer for that input*; a neuron is covered when its scaled activation
exceeds the threshold t for at least one input of the suite; coverage = covered neurons / neurons.

Conventions (DeepXplore's own code):

* a convolutional output of shape (n, channels, *spatial) has one neuron per channel; the whole map
  of an input is min-max scaled first, then averaged over the spatial positions of each channel;
* a dense output of shape (n, features) has one neuron per feature;
* a constant layer output (max = min) scales to 0: it covers nothing;
* "exceeds" is strict: scaled > t.

Layers: ``'embedding'`` is the model's embedding (the pooled features before the classifier head);
``'all'`` is the output of every activation module (:data:`ACTIVATION_TYPES`) in the network. A
module called several times in one forward pass (torchvision's ResNet blocks reuse one ReLU;
EfficientNet-Lite reuses its ReLU6) is a different layer at each call: ``name``, ``name#1`` …

Coverage is streamed: per layer only the running per-neuron maximum of the scaled activation is
kept, so memory does not grow with the suite, and a new threshold needs no new forward pass
(:meth:`CoverageResult.at`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from analytics._validation import check_choice, check_positive_int
from analytics.exceptions import InvalidInputError
from analytics.workspace import Workspace

LAYER_CHOICES = ("embedding", "all")
DEFAULT_COVERAGE_THRESHOLD = 0.5

ACTIVATION_TYPES: tuple[type[nn.Module], ...] = (
    nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.PReLU, nn.RReLU, nn.ELU, nn.SELU, nn.CELU, nn.GELU, nn.SiLU,
    nn.Mish, nn.Hardswish, nn.Hardtanh, nn.Softplus, nn.Sigmoid, nn.Tanh,
)  # fmt: skip
"""Modules whose outputs count as neurons with ``layers='all'``."""


@dataclass(frozen=True, eq=False)
class CoverageResult:
    """Neuron coverage per layer and in total.

    Attributes
    ----------
    threshold : float
    per_layer : DataFrame
        Columns ``layer`` (str), ``covered``, ``neurons`` (int64), ``coverage`` (float64); one row
        per layer in forward order.
    maxima : dict of str to ndarray of shape (n_neurons,), float32
        Per neuron, the largest scaled activation over the inputs: what coverage at any threshold
        is computed from.
    """

    threshold: float
    per_layer: pd.DataFrame = field(repr=False)
    maxima: dict[str, np.ndarray] = field(repr=False)

    @property
    def covered(self) -> int:
        return int(self.per_layer["covered"].sum())

    @property
    def neurons(self) -> int:
        return int(self.per_layer["neurons"].sum())

    @property
    def coverage(self) -> float:
        """Covered neurons / all neurons, over every layer."""
        return self.covered / self.neurons

    def at(self, threshold: float) -> CoverageResult:
        """The same inputs' coverage at another threshold (no new forward pass)."""
        return coverage_from_maxima(self.maxima, threshold=threshold)

    def to_dict(self) -> dict[str, Any]:
        return {
            "coverage": self.coverage,
            "covered": self.covered,
            "neurons": self.neurons,
            "threshold": self.threshold,
            "per_layer": dict(zip(self.per_layer["layer"], self.per_layer["coverage"].astype(float))),
        }


def neuron_coverage(activations: Mapping[str, np.ndarray], *, threshold: float = DEFAULT_COVERAGE_THRESHOLD) -> CoverageResult:
    """Neuron coverage of a set of inputs from their raw layer outputs.

    Parameters
    ----------
    activations : mapping of str to ndarray of shape (n_inputs, n_neurons) or (n_inputs, n_channels, *spatial), float
        Per layer, its output for every input of the suite.
    threshold : float in [0, 1), default=0.5
        A neuron is covered when its scaled activation exceeds this for some input.

    Returns
    -------
    CoverageResult

    Examples
    --------
    >>> neuron_coverage({"dense": np.array([[0.0, 1.0, 0.2], [1.0, 0.0, 0.4]])}).coverage
    0.6666666666666666
    """
    threshold = _check_threshold(threshold)
    if not activations:
        raise InvalidInputError("activations must name at least one layer; got none")
    maxima = {}
    for name, values in activations.items():
        values = np.asarray(values)
        if values.ndim < 2 or values.shape[0] == 0 or values.shape[1] == 0 or values.dtype.kind not in "fiu":
            raise InvalidInputError(
                f"activations[{name!r}] must be numeric of shape (n_inputs, n_neurons[, *spatial]) with n_inputs, "
                f"n_neurons >= 1; got shape {values.shape}, dtype {values.dtype}"
            )
        maxima[name] = _scaled(torch.from_numpy(values.astype(np.float32))).amax(dim=0).numpy()
    return coverage_from_maxima(maxima, threshold=threshold)


def coverage_from_maxima(maxima: Mapping[str, np.ndarray], *, threshold: float = DEFAULT_COVERAGE_THRESHOLD) -> CoverageResult:
    """Coverage from per-neuron maxima of scaled activations (see :func:`collect_activations`).

    Parameters
    ----------
    maxima : mapping of str to ndarray of shape (n_neurons,), float
    threshold : float in [0, 1), default=0.5

    Returns
    -------
    CoverageResult
    """
    threshold = _check_threshold(threshold)
    rows = []
    for name, values in maxima.items():
        covered = int((np.asarray(values) > threshold).sum())
        rows.append((name, covered, int(np.size(values)), covered / max(np.size(values), 1)))
    if not rows or sum(row[2] for row in rows) == 0:
        raise InvalidInputError("maxima must hold at least one neuron; got none")
    table = pd.DataFrame(rows, columns=["layer", "covered", "neurons", "coverage"])
    return CoverageResult(threshold, table, {name: np.asarray(values, np.float32) for name, values in maxima.items()})


def collect_activations(
    network: nn.Module,
    batches: Iterable[torch.Tensor],
    *,
    layers: str = "embedding",
    embedding_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
    activation_types: tuple[type[nn.Module], ...] = ACTIVATION_TYPES,
) -> dict[str, np.ndarray]:
    """Stream batches through ``network`` and keep, per neuron, the largest scaled activation.

    Parameters
    ----------
    network : torch.nn.Module
        In eval mode, on the device of the batches.
    batches : iterable of Tensor of shape (b, ...), float
        Preprocessed network inputs.
    layers : {'embedding', 'all'}, default='embedding'
        ``'embedding'``: the embedding only; ``'all'``: every module of ``activation_types``
        (forward hooks; one layer per call).
    embedding_fn : callable, default=None
        ``embedding_fn(batch)`` -> Tensor of shape (b, d), the embedding. ``None``: the input of the
        network's last ``nn.Linear`` module (the classifier head), read by a forward pre-hook.
    activation_types : tuple of nn.Module subclasses, default=ACTIVATION_TYPES
        What counts as an activation layer with ``layers='all'``.

    Returns
    -------
    dict of str to ndarray of shape (n_neurons,), float32
        Per layer (in forward order), the per-neuron maximum over all inputs of the scaled
        activation; pass to :func:`coverage_from_maxima`.

    Raises
    ------
    InvalidInputError
        No batch, or no layer to read (no activation module; no ``nn.Linear`` and no
        ``embedding_fn``).
    """
    check_choice(layers, "layers", LAYER_CHOICES)
    recorder = _Recorder()
    if layers == "all":
        targets = [(name, module) for name, module in network.named_modules() if isinstance(module, activation_types)]
        if not targets:
            kinds = ", ".join(t.__name__ for t in activation_types)
            raise InvalidInputError(f"the network has no activation module ({kinds}); use layers='embedding'")
        handles = [module.register_forward_hook(recorder.output_hook(name)) for name, module in targets]
        run = network
    elif embedding_fn is None:
        linears = [module for module in network.modules() if isinstance(module, nn.Linear)]
        if not linears:
            raise InvalidInputError("the network has no nn.Linear head to read the embedding from; pass embedding_fn")
        handles = [linears[-1].register_forward_pre_hook(recorder.input_hook("embedding"))]
        run = network
    else:
        handles = []

        def run(batch: torch.Tensor) -> None:
            recorder.record("embedding", embedding_fn(batch))

    try:
        with torch.inference_mode():
            n_batches = 0
            for batch in batches:
                recorder.start_batch()
                run(batch)
                n_batches += 1
    finally:
        for handle in handles:
            handle.remove()
    if n_batches == 0:
        raise InvalidInputError("batches is empty; coverage needs at least one input")
    return recorder.maxima()


def suite_coverage(
    workspace: Workspace,
    model_name: str,
    suite_id: str,
    *,
    layers: str = "embedding",
    threshold: float = DEFAULT_COVERAGE_THRESHOLD,
    device: str | torch.device | None = None,
    batch_size: int = 32,
) -> CoverageResult:
    """Neuron coverage of a suite's composites on a registered model.

    Only the composites (positions 1..n) count: the original target images are the same for every
    suite, so they would only blur the comparison between sampling methods.

    Parameters
    ----------
    workspace : Workspace
    model_name : str
    suite_id : str
    layers : {'embedding', 'all'}, default='embedding'
    threshold : float in [0, 1), default=0.5
    device : str or torch.device, default=None
        None: CUDA when available, else CPU.
    batch_size : int, default=32

    Returns
    -------
    CoverageResult

    Raises
    ------
    NotFoundError
        Unknown model or suite.
    InvalidInputError
        The suite has no composites, or bad options.
    """
    from analytics.inference import iter_composites, prefetch_for, stored_suite_images  # imported here: inference pulls in the model stack
    from analytics.models import load_model

    check_choice(layers, "layers", LAYER_CHOICES)
    threshold = _check_threshold(threshold)
    check_positive_int(batch_size, "batch_size")
    jobs = [job for job in stored_suite_images(workspace, suite_id)[0] if job.position > 0]
    if not jobs:
        raise InvalidInputError(f"suite {suite_id!r} has no composites; build it with at least one background per target")
    model = load_model(workspace, model_name, device=device)
    images = iter_composites(workspace, jobs, batch_size=batch_size, size=model.spec.composite_size, prefetch=prefetch_for(model.device))
    batches = (model.preprocess(batch) for _, batch in images)
    maxima = collect_activations(
        model.network,
        batches,
        layers=layers,
        embedding_fn=lambda batch: model.forward(batch)[1],  # every Backdrop network returns (logits, embedding)
    )
    return coverage_from_maxima(maxima, threshold=threshold)


class _Recorder:
    """Running per-neuron maxima of scaled activations, keyed by layer (and call number)."""

    def __init__(self) -> None:
        self._maxima: dict[str, torch.Tensor] = {}
        self._calls: dict[str, int] = {}

    def start_batch(self) -> None:
        self._calls.clear()

    def record(self, name: str, output: torch.Tensor) -> None:
        if not isinstance(output, torch.Tensor) or output.ndim < 2:
            shape = tuple(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
            raise InvalidInputError(f"layer {name!r} must output a tensor of shape (batch, neurons[, *spatial]); got {shape}")
        calls = self._calls.get(name, 0)
        self._calls[name] = calls + 1
        key = name if calls == 0 else f"{name}#{calls}"
        batch_max = _scaled(output.detach().float()).amax(dim=0)
        previous = self._maxima.get(key)
        self._maxima[key] = batch_max if previous is None else torch.maximum(previous, batch_max)

    def output_hook(self, name: str):
        return lambda module, inputs, output: self.record(name, output)

    def input_hook(self, name: str):
        return lambda module, inputs: self.record(name, inputs[0])

    def maxima(self) -> dict[str, np.ndarray]:
        return {name: values.cpu().numpy() for name, values in self._maxima.items()}


def _scaled(output: torch.Tensor) -> torch.Tensor:
    """Per input, min-max scale the whole layer output, then average each channel over space.

    output : Tensor of shape (n, neurons) or (n, channels, *spatial). Returns (n, neurons), float.
    """
    flat = output.reshape(output.shape[0], output.shape[1], -1)
    low = flat.amin(dim=(1, 2), keepdim=True)
    span = flat.amax(dim=(1, 2), keepdim=True) - low
    # a constant output (span 0) scales to 0 everywhere: such an input covers nothing in this layer
    scaled = torch.where(span > 0, (flat - low) / torch.where(span > 0, span, torch.ones_like(span)), torch.zeros_like(flat))
    return scaled.mean(dim=2)


def _check_threshold(threshold: float) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, Real) or not 0 <= threshold < 1:
        raise InvalidInputError(
            f"threshold must be a number in [0, 1) (scaled activations lie in [0, 1] and must exceed it); got {threshold!r}"
        )
    return float(threshold)
