"""Saliency over many images: how much attribution falls on the object, per model × method, on
targets' originals and on their composites — the long saliency work, run as the background job
kind ``saliency`` (:mod:`analytics.jobs`).

The unit of work is one (model, method, target): the target's original and its first composites
of a suite are explained and the share of positive attribution inside the object's mask is kept
per image (it does not depend on the binarisation threshold), cached in the workspace
(``workspace.cache_put``) under a key naming the model's spec, the method and its settings, the
target and the backgrounds. A cancelled or
interrupted job therefore resumes where it stopped, and the same survey asked again is read back.
Pairs a model cannot run (:func:`analytics.saliency.available_methods`) are skipped and listed.

Composites are made from the ``suite_items`` rows with :func:`analytics.data.compose.composite`, as a
run makes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from analytics._progress import Progress
from analytics._validation import check_positive_int
from analytics.data import composite, list_class_mappings, load_backgrounds, load_targets
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.models import load_model
from analytics.workspace import Workspace, content_id

from ._model import Explanation, available_methods, explain
from .registry import METHODS

#: The CAM methods' layer, in their cache keys: since issue 46.1 the model source's one last
#: convolutional map (EfficientNet-Lite: its head convolution, no longer its last block), so shares
#: cached with the earlier layer are computed again.
CAM_LAYER = "feature_layer"


def suite_backgrounds(workspace: Workspace, suite_id: str | None, target_id: str, limit: int) -> list[str]:
    """Background ids of a target's first ``limit`` composites in a suite (by position); [] without a suite."""
    if suite_id is None or limit <= 0:
        return []
    rows = workspace.query(
        "SELECT background_id FROM suite_items WHERE suite_id = ? AND target_id = ? ORDER BY position LIMIT ?",
        (suite_id, target_id, limit),
    )
    return [row["background_id"] for row in rows]


def target_images(workspace: Workspace, target_id: str, backgrounds: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The original image of a target followed by its composites on ``backgrounds``.

    Returns
    -------
    images : ndarray of shape (1 + len(backgrounds), size, size, 3), uint8
    masks : ndarray of shape (1 + len(backgrounds), size, size), bool (the object's mask, repeated)
    """

    image, mask = load_targets(workspace, [target_id])
    k = len(backgrounds)
    images, masks = np.repeat(image, 1 + k, 0), np.repeat(mask, 1 + k, 0)
    if k:
        images[1:] = composite(images[1:], masks[1:], load_backgrounds(workspace, list(backgrounds)))
    return images, masks


def explain_target(
    workspace: Workspace,
    model: Any,
    target_id: str,
    *,
    method: str,
    backgrounds: Sequence[str] = (),
    settings: Mapping[str, Any] | None = None,
    threshold: float = 0.2,
    faithfulness_steps: int | None = None,
    baseline: str = "blank",
) -> tuple[np.ndarray, np.ndarray, Explanation]:
    """One method's maps and scores of the target's true class on its original and composites.

    Parameters
    ----------
    workspace : Workspace
    model : LoadedModel
    target_id : str
    method : str
        A key of :data:`analytics.saliency.METHODS`.
    backgrounds : sequence of str
        Background ids of the composites explained after the original.
    settings, threshold, faithfulness_steps, baseline
        As :func:`analytics.saliency.explain`.

    Returns
    -------
    images : ndarray of shape (1 + k, size, size, 3), uint8
    masks : ndarray of shape (1 + k, size, size), bool
    explanation : Explanation
    """

    row = workspace.query_one("SELECT class_name FROM targets WHERE id = ?", (target_id,))
    if row is None:
        raise NotFoundError(f"no target {target_id!r} in {workspace.root}; list them with `python -m analytics targets`")
    class_name = row["class_name"]
    outputs = model.spec.label_space.class_outputs({class_name: list_class_mappings(workspace)[class_name]})[class_name]
    images, masks = target_images(workspace, target_id, backgrounds)
    result = explain(
        model, images, masks, [outputs] * len(images), method=method, settings=dict(settings or {}), threshold=threshold,
        faithfulness_steps=faithfulness_steps, baseline=baseline,
    )  # fmt: skip
    return images, masks, result


def target_inside_share(
    workspace: Workspace,
    model: Any,
    target_id: str,
    *,
    method: str,
    suite_id: str | None = None,
    n_composites: int = 0,
    settings: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """Share of positive attribution inside the object on a target's original and first composites (cached).

    Returns
    -------
    ndarray of shape (1 + k,), float64
        Position 0: the original; then the k <= ``n_composites`` composites of ``suite_id`` by
        position. NaN where a map has no positive attribution.
    """
    backgrounds = suite_backgrounds(workspace, suite_id, target_id, n_composites)
    key = "saliency/inside_share/" + content_id(
        model.spec.content_key(), method, sorted(dict(settings or {}).items()), target_id, backgrounds,
        *([CAM_LAYER] if method in METHODS and METHODS[method].needs_layer else []),
    )  # fmt: skip

    def compute() -> np.ndarray:
        _, _, result = explain_target(workspace, model, target_id, method=method, backgrounds=backgrounds, settings=settings)
        return np.asarray(result.alignment.inside_share, dtype=np.float64)

    return workspace.cached(key, compute)


def object_share_row(
    workspace: Workspace,
    model: Any,
    target_ids: Sequence[str],
    *,
    method: str,
    suite_id: str | None = None,
    n_composites: int = 0,
    settings: Mapping[str, Any] | None = None,
    on_target: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Mean inside share of one loaded model × method on the originals and composites of ``target_ids``.

    Parameters
    ----------
    on_target : callable or None
        Called with each target id before it is explained (progress; it may raise to stop).

    Returns
    -------
    dict
        ``model``, ``method``, ``inside_share_originals``, ``inside_share_composites`` (means, NaNs
        left out; NaN when none), ``originals`` and ``composites`` (image counts).
    """
    originals, composites = [], []
    for target_id in target_ids:
        if on_target is not None:
            on_target(target_id)
        share = target_inside_share(
            workspace, model, target_id, method=method, suite_id=suite_id, n_composites=n_composites, settings=settings
        )
        originals.append(share[:1])
        composites.append(share[1:])
    originals_all, composites_all = np.concatenate(originals), np.concatenate(composites)
    return {
        "model": model.spec.name,
        "method": method,
        "inside_share_originals": _nanmean(originals_all),
        "inside_share_composites": _nanmean(composites_all),
        "originals": int(len(originals_all)),
        "composites": int(len(composites_all)),
    }


def object_share(
    workspace: Workspace,
    *,
    models: Sequence[str],
    methods: Sequence[str],
    target_ids: Sequence[str],
    suite_id: str | None = None,
    n_composites: int = 5,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    device: str | None = None,
    progress: Progress | None = None,
) -> dict[str, list]:
    """:func:`object_share_row` for every model × method the model can run; one step per target.

    Parameters
    ----------
    workspace : Workspace
    models : sequence of str
        Registered model names.
    methods : sequence of str
        Keys of :data:`analytics.saliency.METHODS`.
    target_ids : sequence of str
        Targets whose originals (and composites) are explained, at least one.
    suite_id : str or None
        Suite of the composites; None explains originals only.
    n_composites : int, default=5
        First composites per target (by position in the suite).
    settings : mapping of method -> mapping, or None
        Constructor keywords per method (``reduce``, ``normalize``, numeric settings); a method
        without an entry runs with its defaults.
    device : str or None
        Where the models run (None: CUDA when available).
    progress : callable or None
        ``progress(done, total, message)`` before each step and once at the end.

    Returns
    -------
    dict
        ``rows``: one :func:`object_share_row` dict per runnable pair, in the order asked;
        ``skipped``: ``[model, method]`` pairs the model cannot run.

    Raises
    ------
    InvalidInputError
        No models, methods or targets, an unknown method, or a negative ``n_composites``.
    NotFoundError
        A model or target that does not exist.
    """

    if not models or not methods or not target_ids:
        raise InvalidInputError(
            f"a saliency survey needs at least one model, method and target; got {len(models)}, {len(methods)}, {len(target_ids)}"
        )
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise InvalidInputError(f"unknown saliency method(s) {', '.join(unknown)}; use {', '.join(METHODS)}")
    check_positive_int(n_composites, "n_composites", minimum=0)
    report = progress or (lambda done, total, message: None)
    loaded = {name: load_model(workspace, name, device=device) for name in dict.fromkeys(models)}
    runnable = {name: set(available_methods(model)) for name, model in loaded.items()}
    pairs = [(name, method) for name in loaded for method in methods if method in runnable[name]]
    total, done, rows = len(pairs) * len(target_ids), 0, []
    for name, method in pairs:

        def step(target_id: str, name: str = name, method: str = method) -> None:
            nonlocal done
            report(done, total, f"{name} · {METHODS[method].name} · {target_id}")
            done += 1

        rows.append(
            object_share_row(
                workspace, loaded[name], target_ids, method=method, suite_id=suite_id, n_composites=n_composites,
                settings=(settings or {}).get(method), on_target=step,
            )
        )  # fmt: skip
    report(total, total, "finished")
    skipped = [[name, method] for name in loaded for method in methods if method not in runnable[name]]
    return {"rows": rows, "skipped": skipped}


def _nanmean(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(values.mean()) if len(values) else float("nan")
