"""Running a model on the Backgrounds Challenge: generated variants of workspace targets, or a
downloaded IN-9 release (``<variant>/val/<class>/*.JPEG``, masks ``fg_mask/val/<class>/*.npy``).

Model outputs count as classes through :meth:`analytics.data.LabelSpace.class_outputs` with the
workspace's class mappings; a release's ``00_dog``-style folders are the IN-9 classes, which an
ImageNet model reads through the challenge's own ``in_to_in9.json`` (built in, the default) or, with
``in9_mapping``, the built-in ``'wordnet'`` map or a file in that format
(``{"<ImageNet index>": <IN-9 index>}``). Predictions
are cached in the workspace per chunk of :data:`CHUNK` images (``workspace.cache_put`` keyed by the
model's content key, the data and the settings), so an interrupted evaluation resumes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from analytics._progress import Progress
from analytics._validation import check_positive_int
from analytics.data import (
    IN9_CLASSES,
    ClassMapping,
    in9_label_space,
    is_image_file,
    list_class_mappings,
    list_targets,
    load_targets,
    read_image,
    resolve_class,
)
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.inference import cpu_threads
from analytics.models import LoadedModel, ModelSpec, get_model_spec, load_model, resize_images
from analytics.team import require_permission
from analytics.workspace import Workspace, content_id, model_keys

from .metrics import CHALLENGE_PREDICTION_COLUMNS
from .variants import VARIANTS, ChallengeData, challenge_data, plan_variant, render

CHUNK = 64  # images per cached chunk: the unit an interrupted evaluation resumes from


@dataclass(frozen=True)
class Release:
    """A downloaded IN-9 release: per variant, its image files and their classes.

    files : dict of str to list of Path; classes : dict of str to list of str (IN-9 names), same order.
    """

    root: Path
    files: dict[str, list[Path]]
    classes: dict[str, list[str]]


# -- class outputs -------------------------------------------------------------------------------
def model_class_outputs(
    model: LoadedModel | ModelSpec, mappings: dict[str, ClassMapping], *, in9_mapping: str | os.PathLike | None = None,
) -> dict[str, list[int]]:
    """Model outputs that count as each class (``in9_mapping`` replaces the default ImageNet→IN-9 map).

    Parameters
    ----------
    model : LoadedModel or ModelSpec
        Only its label space is read: a spec does without loading the network.
    mappings : dict of str to ClassMapping
    in9_mapping : {'official', 'wordnet'} or path-like, optional
        For ImageNet models and classes mapped only to IN-9: a built-in map
        (:data:`analytics.data.IN9_MAPS`; default the challenge's ``in_to_in9.json``) or a JSON file
        ``{"<ImageNet index>": <IN-9 index>}``.

    Returns
    -------
    outputs : dict of str to list of int
    """
    space = (model if isinstance(model, ModelSpec) else model.spec).label_space
    if in9_mapping is not None and space.kind == "imagenet":
        table = in9_label_space(in9_mapping).in9_table()
        by_in9 = {name: [i for i, t in enumerate(table) if t == k] for k, name in enumerate(IN9_CLASSES)}
        return {name: by_in9[m.in9] if m.in9 and not m.imagenet else space.class_outputs({name: m})[name] for name, m in mappings.items()}
    return space.class_outputs(mappings)


def _output_classes(outputs: dict[str, list[int]], n_outputs: int) -> np.ndarray:
    """(n_outputs,) object array: the class each output counts as ('' for none)."""
    result = np.full(n_outputs, "", dtype=object)
    for name, indices in reversed(list(outputs.items())):
        result[indices] = name
    return result


# -- prediction ----------------------------------------------------------------------------------
def predict_chunked(
    workspace: Workspace, model: LoadedModel | None, key: str, n: int, images_of: Callable[[slice], np.ndarray | list[np.ndarray]], *, batch_size: int,
    progress: Progress | None = None, cached_only: bool = False,
) -> np.ndarray | None:
    """Top output of ``n`` images rendered chunk by chunk, each chunk cached under ``key``.

    Parameters
    ----------
    workspace : Workspace
    model : LoadedModel or None
        None only with ``cached_only`` (nothing runs).
    key : str
        Cache key prefix (covers the model, the data and the settings).
    n : int
    images_of : callable
        ``images_of(slice)`` -> ndarray of shape (k, h, w, 3), uint8, or a list of k (h, w, 3)
        uint8 arrays that may differ in size.
    batch_size : int
    progress : callable, optional
        ``progress(done, n)`` after each chunk.
    cached_only : bool, default=False
        Compute nothing: None as soon as a chunk is not cached.

    Returns
    -------
    predicted : ndarray of shape (n,), int64, or None
        None only with ``cached_only`` and a chunk missing.
    """
    parts = []
    with nullcontext() if model is None else cpu_threads(model.device):
        for start in range(0, n, CHUNK):
            rows = slice(start, min(n, start + CHUNK))
            cached = workspace.cache_get(f"{key}/{start}")
            if cached is None and cached_only:
                return None
            if cached is None:
                cached = np.concatenate([_top(model, images) for images in _batches(images_of(rows), batch_size)])
                workspace.cache_put(f"{key}/{start}", cached)
            parts.append(cached)
            if progress is not None:
                progress(rows.stop, n)
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _batches(images: np.ndarray | list[np.ndarray], batch_size: int) -> list:
    return [images[i : i + batch_size] for i in range(0, len(images), batch_size)]


def _top(model: LoadedModel, images: np.ndarray | list[np.ndarray]) -> np.ndarray:
    """Top outputs of a batch (a list: images that may differ in size), preprocessed once by the model itself."""
    logits, _ = model.run_batch(model.preprocess_each(images) if isinstance(images, list) else model.preprocess(images))
    return logits.float().argmax(dim=1).cpu().numpy().astype(np.int64)


def _table(variant: str, ids: Sequence[str], classes: Sequence[str], bg_ids: Sequence[str], bg_classes: Sequence[str], predicted: np.ndarray, outputs: dict, owner: np.ndarray) -> pd.DataFrame:
    predicted_class = owner[predicted] if len(predicted) else np.zeros(0, object)
    correct = [int(p) in outputs[c] for p, c in zip(predicted, classes)]
    to_background = [b != c and b in outputs and int(p) in outputs[b] for p, c, b in zip(predicted, classes, bg_classes)]
    return pd.DataFrame(
        dict(zip(CHALLENGE_PREDICTION_COLUMNS, [variant, list(ids), list(bg_ids), list(classes), list(bg_classes), predicted, predicted_class, correct, to_background]))
    )


# -- generated variants ----------------------------------------------------------------------------
def workspace_data(workspace: Workspace, *, class_order: Sequence[str] | None = None) -> ChallengeData:
    """The workspace's targets as :class:`ChallengeData` (Raises InvalidInputError when it has none).

    Returns
    -------
    ChallengeData
        ``images`` of shape (n, size, size, 3), uint8 and ``masks`` of shape (n, size, size), bool,
        targets sorted by id.
    """
    targets = list_targets(workspace)
    if targets.empty:
        raise InvalidInputError(f"workspace {workspace.root} has no targets; add targets with masks on the Data page first")
    images, masks = load_targets(workspace, list(targets["id"]))
    return challenge_data(list(targets["id"]), list(targets["class_name"]), images, masks, class_order=class_order)


def data_key(data: ChallengeData) -> str:
    """A content key of the targets (ids, classes, order, pixels, masks): 16 hex digits."""
    digest = hashlib.sha256(repr((data.ids, data.classes, data.class_order)).encode())
    digest.update(np.ascontiguousarray(data.images).data)
    digest.update(np.packbits(data.masks).data)
    return digest.hexdigest()[:16]


def evaluate_variants(
    workspace: Workspace,
    model_name: str,
    data: ChallengeData,
    *,
    variants: Sequence[str] = VARIANTS,
    seed: int = 0,
    blend: bool = False,
    in9_mapping: str | os.PathLike | None = None,
    batch_size: int = 32,
    device: str | torch.device | None = None,
    progress: Progress | None = None,
    cached_only: bool = False,
) -> pd.DataFrame | None:
    """Predictions of a registered model on the generated variants of ``data``.

    Parameters
    ----------
    workspace : Workspace
        Holds the model and the cache.
    model_name : str
    data : ChallengeData
        Targets (:func:`workspace_data`, or any others).
    variants : sequence of str, default all eight
    seed : int, default=0
        Seeds the Mixed-* pairings.
    blend : bool, default=False
        Mixed-*: Backdrop's blended compositing instead of the paper's hard paste.
    in9_mapping : {'official', 'wordnet'} or path-like, optional
        See :func:`model_class_outputs`.
    batch_size : int, default=32
    device : str or torch.device, optional
    progress : callable, optional
        ``progress(done, total)`` over all images of all variants.
    cached_only : bool, default=False
        Read earlier results only (e.g. for a report): None when any image is not cached yet.

    Returns
    -------
    predictions : DataFrame or None
        :data:`analytics.robustness.bgchallenge.metrics.CHALLENGE_PREDICTION_COLUMNS`, one row per image; None only with
        ``cached_only``. ``predicted`` (int64: the top output), ``correct`` and ``to_background`` (bool), the others str.

    Raises
    ------
    PermissionDeniedError
        The workspace's actor may not run models (unless ``cached_only``: reading is allowed).
    InvalidInputError
        Unknown variant, or a class without an output in the model's label space.
    """
    if not cached_only:
        require_permission(workspace, "run_models")  # runs the model and writes cache rows
    check_positive_int(batch_size, "batch_size")
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise InvalidInputError(f"unknown variants {bad}; choose from {', '.join(VARIANTS)}")
    spec = get_model_spec(workspace, model_name)
    # reading stored predictions needs only the spec (the cache key): a page showing them on load
    # loads no network
    model = None if cached_only else load_model(workspace, model_name, device=device)
    known = list_class_mappings(workspace)
    outputs = model_class_outputs(spec, {c: known.get(c) or resolve_class(c) for c in sorted(set(data.classes))}, in9_mapping=in9_mapping)
    owner = _output_classes(outputs, spec.n_outputs)
    plans = [plan_variant(data, v, seed=seed) for v in variants]
    total, done, tables = sum(len(p.sources) for p in plans), 0, []
    base = content_id(model_keys(workspace).keys[model_name], data_key(data), outputs, seed, blend)
    for plan in plans:
        report = None if progress is None else (lambda k, _n, d=done: progress(d + k, total))
        predicted = predict_chunked(
            workspace, model, f"bgchallenge/{base}/{plan.variant}", len(plan.sources),
            lambda rows, p=plan: render(data, p, rows, blend=blend), batch_size=batch_size, progress=report, cached_only=cached_only,
        )  # fmt: skip
        if predicted is None:
            return None
        done += len(plan.sources)
        ids, classes = np.asarray(data.ids, object), np.asarray(data.classes, object)
        tables.append(_table(plan.variant, ids[plan.sources], classes[plan.sources], ids[plan.backgrounds], classes[plan.backgrounds], predicted, outputs, owner))
    return pd.concat(tables, ignore_index=True)


# -- published IN-9 release ----------------------------------------------------------------------
def in9_class(folder: str) -> str:
    """The class a release folder stands for: ``00_dog`` -> ``dog`` (other names unchanged)."""
    head, _, tail = folder.partition("_")
    return tail if head.isdigit() and tail else folder


def read_release(root: str | os.PathLike, *, split: str = "val") -> Release:
    """Index a downloaded IN-9 release without reading its images.

    Parameters
    ----------
    root : path-like
        The folder holding ``<variant>/<split>/<class>/*.JPEG`` (e.g. ``bg_challenge``).
    split : str, default='val'

    Returns
    -------
    Release
        Only the variants found; files sorted by class folder and name.

    Raises
    ------
    NotFoundError
        No variant folder with images.
    """
    root = Path(root)
    files, classes = {}, {}
    for variant in VARIANTS:
        folder = root / variant / split
        if not folder.is_dir():
            continue
        found = sorted((c.name, f) for c in folder.iterdir() if c.is_dir() for f in c.iterdir() if is_image_file(f))
        if found:
            files[variant] = [f for _, f in found]
            classes[variant] = [in9_class(c) for c, _ in found]
    if not files:
        raise NotFoundError(
            f"{root}: no IN-9 release found; expected <variant>/{split}/<class>/*.JPEG with variants {', '.join(VARIANTS)}"
        )
    return Release(root, files, classes)


def release_data(release: Release, *, size: int, split: str = "val") -> ChallengeData:
    """The release's Original images with their ``fg_mask/<split>/<class>/<name>.npy`` masks, to generate variants from.

    Images are resized to ``size`` x ``size`` (masks by nearest neighbour). Raises NotFoundError
    when the release has no Original images or a mask is missing.

    Returns
    -------
    ChallengeData
        ``images`` of shape (n, size, size, 3), uint8 and ``masks`` of shape (n, size, size), bool.
    """
    import cv2

    if "original" not in release.files:
        raise NotFoundError(f"{release.root}: no original/{split} folder to generate variants from")
    images, masks = [], []
    for path in release.files["original"]:
        mask_path = release.root / "fg_mask" / split / path.parent.name / f"{path.stem}.npy"
        if not mask_path.is_file():
            raise NotFoundError(f"{mask_path}: mask of {path} missing; download fg_mask with the release")
        images.append(resize_images(read_image(path)[None], size)[0])
        mask = np.load(mask_path, allow_pickle=False).astype(np.uint8)
        masks.append(cv2.resize(mask, (size, size), interpolation=cv2.INTER_NEAREST) > 0)
    ids = [f"{p.parent.name}/{p.stem}" for p in release.files["original"]]
    return challenge_data(ids, release.classes["original"], np.stack(images), np.stack(masks))


def evaluate_release(
    workspace: Workspace,
    model_name: str,
    release: Release,
    *,
    in9_mapping: str | os.PathLike | None = None,
    batch_size: int = 32,
    device: str | torch.device | None = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Predictions of a registered model on the published images of a release (nothing generated).

    Sources are ``<class folder>/<file stem>`` (so the per-image categories match images across
    variants by name); the background id is unknown (``''``) and the background class is the
    object's own (no flip to a background class is counted).

    Returns
    -------
    predictions : DataFrame
        :data:`analytics.robustness.bgchallenge.metrics.CHALLENGE_PREDICTION_COLUMNS`, one row per image:
        ``predicted`` (int64: the top output), ``correct`` and ``to_background`` (bool), the others str.

    Raises
    ------
    PermissionDeniedError
        The workspace's actor may not run models.
    """
    require_permission(workspace, "run_models")  # runs the model and writes cache rows
    check_positive_int(batch_size, "batch_size")
    model = load_model(workspace, model_name, device=device)
    names = sorted({c for classes in release.classes.values() for c in classes})
    outputs = model_class_outputs(model, {c: ClassMapping(in9=c) if c in IN9_CLASSES else resolve_class(c) for c in names}, in9_mapping=in9_mapping)
    owner = _output_classes(outputs, model.spec.n_outputs)
    size = model.spec.composite_size  # None: each image as it is, through the model's own transform
    total, done, tables = sum(len(f) for f in release.files.values()), 0, []
    stamp = [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for files in release.files.values() for f in files]
    base = content_id(model_keys(workspace).keys[model_name], stamp, outputs)
    for variant, files in release.files.items():
        report = None if progress is None else (lambda k, _n, d=done: progress(d + k, total))
        predicted = predict_chunked(
            workspace, model, f"bgchallenge-release/{base}/{variant}", len(files),
            lambda rows, fs=files: _read_images(fs[rows], size), batch_size=batch_size, progress=report,
        )  # fmt: skip
        done += len(files)
        ids = [f"{f.parent.name}/{f.stem}" for f in files]
        classes = release.classes[variant]
        tables.append(_table(variant, ids, classes, [""] * len(ids), classes, predicted, outputs, owner))
    return pd.concat(tables, ignore_index=True)


def _read_images(files: Sequence[Path], size: int | None) -> np.ndarray | list[np.ndarray]:
    """The images at ``size`` x ``size`` (a model's ``composite_size``), or as they are (a list) for None."""
    if size is None:
        return [read_image(f) for f in files]
    return np.stack([resize_images(read_image(f)[None], size)[0] for f in files])
