"""The zoo's training: the cached pool of backbone embeddings and the heads fitted on it.

See the package notes (:mod:`analytics.zoo`) for the training set of one head and the pool.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from analytics._progress import Progress
from analytics.data import list_targets, load_backgrounds
from analytics.inference import SuiteImage, iter_composites, prefetch_for
from analytics.models import HeadLayers, LoadedModel, ModelSpec, load_model
from analytics.workspace import Workspace, content_id

from .layout import ZooLayout, ZooRecipe

_TRAIN_STEPS = 200  # full-batch Adam steps per head (~5 s for 1280 -> 128 on 1260 rows, one core)
_LEARNING_RATE = 1e-2
_CHUNK = 128  # images per cached embedding chunk: an interrupted build loses at most one chunk


# -- embeddings --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _Pool:
    """Cached backbone embeddings of every image a head may train on.

    originals : dict target id -> row of ``original_embeddings``; composites : (target, 'home' or
    'random') -> rows of ``composite_embeddings``; background_rows : background id -> row of
    ``background_embeddings``; ``classes`` : target id -> class.
    """

    original_embeddings: np.ndarray
    composite_embeddings: np.ndarray
    background_embeddings: np.ndarray
    originals: dict[str, int]
    composites: dict[tuple[str, str], np.ndarray]
    background_rows: dict[str, int]
    classes: dict[str, str]

    def accuracies(self, head: _HeadArrays, layout: ZooLayout) -> tuple[float, float]:
        """Accuracy of a head on all original targets and on the held-out ones (NaN if none)."""
        ids = sorted(self.originals)
        predicted = head.logits(self.original_embeddings[[self.originals[t] for t in ids]]).argmax(1)
        correct = pd.Series([layout.classes[p] == self.classes[t] for t, p in zip(ids, predicted)], index=ids)
        held = correct.reindex(list(layout.heldout_targets)).dropna()
        return float(correct.mean()), float(held.mean()) if len(held) else float("nan")


def _embedding_pool(workspace, backbone: ModelSpec, layout: ZooLayout, per_target: int, batch_size: int, device, progress) -> _Pool:
    rng = np.random.default_rng([layout.seed, per_target])
    train_bg = np.array(layout.train_backgrounds)
    targets = list_targets(workspace)
    originals = [SuiteImage(t, 0, None) for t in targets["id"]]
    composite_images, composites = [], {}
    for c in layout.classes:
        home = np.array(layout.home_train(c))
        for t in layout.train_targets[c]:
            for kind, chosen in (
                ("home", rng.choice(home, min(per_target, len(home)), replace=False)),
                ("random", rng.choice(train_bg, min(per_target, len(train_bg)), replace=False)),
            ):
                start = len(composite_images)
                composite_images += [SuiteImage(t, start + i + 1, str(b)) for i, b in enumerate(chosen)]
                composites[(t, kind)] = np.arange(start, len(composite_images))
    backgrounds = list(layout.train_backgrounds)
    model = functools.cache(lambda: load_model(workspace, backbone.name, device=device))  # loaded only on a cache miss
    counter = _Counter(len(originals) + len(composite_images) + len(backgrounds), progress)
    key = backbone.content_key()
    return _Pool(
        original_embeddings=_cached(workspace, key, originals, lambda images: _embed_composites(workspace, model(), images, batch_size), counter),
        composite_embeddings=_cached(workspace, key, composite_images, lambda images: _embed_composites(workspace, model(), images, batch_size), counter),
        background_embeddings=_cached(workspace, key, backgrounds, lambda ids: _embed_backgrounds(workspace, model(), ids, batch_size), counter),
        originals={image.target_id: i for i, image in enumerate(originals)},
        composites=composites,
        background_rows={b: i for i, b in enumerate(backgrounds)},
        classes=dict(zip(targets["id"], targets["class_name"])),
    )


class _Counter:
    """Adds finished images and reports them to ``progress(done, total, 'embeddings')``."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total, self.done, self.progress = total, 0, progress

    def add(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(self.done, self.total, "embeddings")


def _cached(workspace: Workspace, backbone_key: str, items: list, embed: Callable[[list], np.ndarray], counter: _Counter) -> np.ndarray:
    """Embeddings of ``items`` (composites as SuiteImages, or background ids), chunk by chunk from the workspace cache.

    Returns ndarray of shape (len(items), d), float32.
    """
    chunks = []
    for start in range(0, len(items), _CHUNK):
        chunk = items[start : start + _CHUNK]
        key = "zoo/embeddings/" + content_id(backbone_key, [asdict(i) if isinstance(i, SuiteImage) else i for i in chunk])
        chunks.append(workspace.cached(key, lambda: embed(chunk)).astype(np.float32))
        counter.add(len(chunk))
    return np.concatenate(chunks) if chunks else np.zeros((0, 0), np.float32)


def _embed_composites(workspace: Workspace, model: LoadedModel, composites: list[SuiteImage], batch_size: int) -> np.ndarray:
    out = []
    for _, images in iter_composites(workspace, composites, batch_size=batch_size, size=model.spec.composite_size, prefetch=prefetch_for(model.device)):
        _, embedding = model.run_batch(model.preprocess(images))
        out.append(embedding.float().cpu().numpy())
    return np.concatenate(out)


def _embed_backgrounds(workspace: Workspace, model: LoadedModel, ids: list[str], batch_size: int) -> np.ndarray:
    return model.predict(load_backgrounds(workspace, ids), batch_size=batch_size).embeddings


# -- training ----------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _HeadArrays:
    """A head as arrays: weight (n_classes, d_in), bias (n_classes,), and optionally a hidden layer
    (weight (d_in, d), bias (d_in,)) on the raw backbone embedding; all float32."""

    weight: np.ndarray
    bias: np.ndarray
    hidden: tuple[np.ndarray, np.ndarray] | None

    def logits(self, embeddings: np.ndarray) -> np.ndarray:
        """Logits of shape (n, n_classes) for backbone embeddings of shape (n, d)."""
        if self.hidden is not None:
            embeddings = np.maximum(embeddings @ self.hidden[0].T + self.hidden[1], 0)
        return embeddings @ self.weight.T + self.bias

    def tempered(self, temperature: float) -> _HeadArrays:
        """The same head with its output layer multiplied by ``temperature`` (same argmax everywhere)."""
        return _HeadArrays(self.weight * np.float32(temperature), self.bias * np.float32(temperature), self.hidden)

    @classmethod
    def from_layers(cls, layers: HeadLayers) -> _HeadArrays:
        hidden = None if layers.hidden is None else (layers.hidden.weight.numpy(), layers.hidden.bias.numpy())
        return cls(layers.weight.numpy(), layers.bias.numpy(), hidden)


def _train_head(pool: _Pool, layout: ZooLayout, recipe: ZooRecipe, strength: float, augment: bool, seed: int) -> _HeadArrays:
    """Fit one head on standardised embeddings; the standardisation is folded into its first layer."""
    x, y = _training_set(pool, layout, recipe, strength, augment, seed)
    mean, scale = x.mean(0), x.std(0)
    scale[scale == 0] = 1.0  # a constant feature stays constant (as scikit-learn's StandardScaler)
    layers = _fit((x - mean) / scale, y, len(layout.classes), recipe.hidden, recipe.regularisation, seed)
    # w·(e - mu)/sd + b = (w/sd)·e + (b - (w/sd)·mu)
    first = layers[0] / scale
    layers[:2] = [first, layers[1] - first @ mean]
    arrays = [a.astype(np.float32) for a in layers]
    return _HeadArrays(arrays[-2], arrays[-1], (arrays[0], arrays[1]) if len(arrays) == 4 else None)


def _fit(x: np.ndarray, y: np.ndarray, n_classes: int, hidden: int, regularisation: float, seed: int) -> list[np.ndarray]:
    """Full-batch Adam on softmax cross-entropy + ||W||^2 / (2 C n) for ``_TRAIN_STEPS`` steps.

    Only the output weight W is penalised (for a linear head this is L2 logistic regression with
    inverse strength C). With the same penalty on the hidden layer as well the product of the two
    is penalised like an L1 norm, and at the zoo's C = 0.05 the smaller training sets collapsed
    to a constant prediction.

    Returns [hidden weight, hidden bias,] weight, bias as float64 arrays (seeded: same input, same
    arrays).
    """
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(seed)
    sizes = [x.shape[1], *([hidden] if hidden else []), n_classes]
    params = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        bound = 1 / np.sqrt(fan_in)  # PyTorch's default Linear initialisation, seeded
        params += [((torch.rand(fan_out, fan_in, generator=generator) * 2 - 1) * bound).requires_grad_(), torch.zeros(fan_out, requires_grad=True)]
    inputs, targets = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.int64))
    penalty = 1 / (2 * regularisation * len(x))
    optimiser = torch.optim.Adam(params, lr=_LEARNING_RATE)
    with torch.enable_grad():
        for _ in range(_TRAIN_STEPS):
            optimiser.zero_grad()
            out = inputs
            for i in range(0, len(params), 2):
                out = F.linear(out if i == 0 else F.relu(out), params[i], params[i + 1])
            loss = F.cross_entropy(out, targets) + penalty * (params[-2] ** 2).sum()
            loss.backward()
            optimiser.step()
    return [p.detach().double().numpy() for p in params]


def _training_set(pool: _Pool, layout: ZooLayout, recipe: ZooRecipe, strength: float, augment: bool, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the pool a head trains on and their class indices (see the package notes).

    Returns x : ndarray of shape (n_rows, d), float32 and y : ndarray of shape (n_rows,), int64.
    """
    n = recipe.n_train_per_class
    n_background = round(strength * recipe.background_only * n)
    rows, labels = [], []  # composite rows, then background rows, each with its class
    background_rows, background_labels = [], []
    for index, c in enumerate(layout.classes):
        rng = np.random.default_rng([seed, index])  # the same draws for every strength
        targets = layout.train_targets[c]
        kinds = np.where(rng.random(n) < strength, "home", "random")
        picks = [(targets[t], kind) for t, kind in zip(rng.integers(len(targets), size=n), kinds)]
        if augment:
            picks += [(targets[t], "random") for t in rng.integers(len(targets), size=recipe.n_augment_per_class)]
        for key in picks:
            rows.append(rng.choice(pool.composites[key]))
        labels += [index] * len(picks)
        home = layout.home_train(c)
        background_rows += [pool.background_rows[home[i]] for i in rng.integers(len(home), size=n_background)]
        background_labels += [index] * n_background
    x = np.concatenate([pool.composite_embeddings[rows], pool.background_embeddings[background_rows]])
    return x, np.asarray(labels + background_labels)
