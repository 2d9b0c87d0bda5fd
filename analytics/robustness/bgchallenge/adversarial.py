"""Adversarial backgrounds (Xiao et al., §3 and Appendix G): for each foreground, is there a
background in the pool that flips the model's prediction?

The pool is every target's Only-BG-T image, the foreground's own included, as the challenge's
``challenge_eval.py`` searches all of ``only_bg_t`` (the own background is of the object's class, so
it can only count for *any error*); ``include_own=False`` leaves it out, asking only whether another
image's scene fools the model (Backdrop's former default). Each foreground is hard-pasted
on all P backgrounds at the model's composite size (``ModelSpec.composite_size``: its input size
for Backdrop's own preprocessing, the pool resized once so a composite costs a masked copy; the
data's own size for a model whose library transform then resizes each composite once) and the P composites go through the model in batches: P forward passes per
foreground. Two readings, as the paper allows: *to the background's class* (the prediction becomes
the class of a background from another class) and *any error* (the prediction is wrong). Per
background, the attack success rate (ASR) is the share of foregrounds of other classes it turns
into its own class; the most-fooling backgrounds per class are listed by ASR.

Each foreground's row of predictions is cached in the workspace (keyed by the model's content key,
the targets and the class outputs), so an interrupted search resumes at the next foreground.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import cv2
import numpy as np
import pandas as pd
import torch

from analytics._progress import Progress
from analytics._validation import check_positive_int
from analytics.data import list_class_mappings, resolve_class
from analytics.inference import cpu_threads
from analytics.models import LoadedModel, load_model, resize_images
from analytics.team import require_permission
from analytics.workspace import Workspace, content_id, model_keys

from .evaluation import data_key, model_class_outputs
from .variants import ChallengeData, only_bg_t


@dataclass(frozen=True)
class AdversarialResult:
    """Outcome of the search.

    Attributes
    ----------
    predictions : ndarray of shape (n, n), int64
        Top output of foreground i on background j's Only-BG-T; -1 where not tried (the diagonal
        when the search left out each target's own background).
    fooled_to_background : ndarray of shape (n,), bool
        Some background of another class makes the model predict that class.
    fooled_any : ndarray of shape (n,), bool
        Some background makes the prediction wrong.
    asr : ndarray of shape (n,), float64
        Per background: share of foregrounds of other classes predicted as its class (NaN if none).
    data : ChallengeData
    """

    predictions: np.ndarray
    fooled_to_background: np.ndarray
    fooled_any: np.ndarray
    asr: np.ndarray
    data: ChallengeData

    def summary(self) -> dict:
        """JSON-ready: foregrounds, share fooled both ways, and share fooled per class."""
        classes = np.asarray(self.data.classes)
        return {
            "n_foregrounds": int(len(classes)),
            "pool_size": int((self.predictions >= 0).sum(axis=1).max(initial=0)),
            "fooled_to_background_share": float(self.fooled_to_background.mean()) if len(classes) else None,
            "fooled_any_share": float(self.fooled_any.mean()) if len(classes) else None,
            "per_class": {
                name: {
                    "fooled_to_background_share": float(self.fooled_to_background[classes == name].mean()),
                    "fooled_any_share": float(self.fooled_any[classes == name].mean()),
                }
                for name in self.data.class_order
                if (classes == name).any()
            },
        }

    def most_fooling(self, *, per_class: int = 5) -> pd.DataFrame:
        """The backgrounds with the highest ASR per class.

        Returns
        -------
        DataFrame
            Columns ``class_name``, ``background_id`` (str), ``asr`` (float64), ``rank`` (int64,
            1 = highest ASR of its class); backgrounds without an ASR left out.
        """
        table = pd.DataFrame({"class_name": self.data.classes, "background_id": self.data.ids, "asr": self.asr}).dropna()
        table = table.sort_values(["class_name", "asr", "background_id"], ascending=[True, False, True])
        table["rank"] = table.groupby("class_name").cumcount() + 1
        return table[table["rank"] <= per_class].reset_index(drop=True)


def search_backgrounds(
    workspace: Workspace,
    model_name: str,
    data: ChallengeData,
    *,
    in9_mapping: str | os.PathLike | None = None,
    include_own: bool = True,
    batch_size: int = 32,
    device: str | torch.device | None = None,
    progress: Progress | None = None,
) -> AdversarialResult:
    """Search every target's Only-BG-T background for one that fools the model on each foreground.

    Parameters
    ----------
    workspace : Workspace
        Holds the model and the cache.
    model_name : str
    data : ChallengeData
        The targets: foregrounds and (as Only-BG-T) the pool.
    in9_mapping : {'official', 'wordnet'} or path-like, optional
        See :func:`analytics.robustness.bgchallenge.model_class_outputs`.
    include_own : bool, default=True
        Search each foreground's own Only-BG-T background too, as the official evaluation does;
        False searches only the other targets' backgrounds.
    batch_size : int, default=32
    device : str or torch.device, optional
    progress : callable, optional
        ``progress(done, n)`` after each foreground.

    Returns
    -------
    AdversarialResult

    Raises
    ------
    PermissionDeniedError
        The workspace's actor may not run models.
    """
    require_permission(workspace, "run_models")  # runs the model and writes cache rows
    check_positive_int(batch_size, "batch_size")
    model = load_model(workspace, model_name, device=device)
    known = list_class_mappings(workspace)
    outputs = model_class_outputs(model, {c: known.get(c) or resolve_class(c) for c in sorted(set(data.classes))}, in9_mapping=in9_mapping)
    key = "bgchallenge-adv/" + content_id(model_keys(workspace).keys[model_name], data_key(data), outputs, "own" if include_own else "others")
    predictions = prediction_matrix(model, data, include_own=include_own, batch_size=batch_size, progress=progress, cache=(workspace, key))
    return score_search(predictions, data, outputs)


def prediction_matrix(
    model: LoadedModel,
    data: ChallengeData,
    *,
    include_own: bool = True,
    batch_size: int = 32,
    progress: Progress | None = None,
    cache: tuple[Workspace, str] | None = None,
) -> np.ndarray:
    """Top output of every foreground on every target's Only-BG-T background (or every other's).

    Parameters
    ----------
    model : LoadedModel
    data : ChallengeData
    include_own : bool, default=True
        False leaves out each foreground's own background (the diagonal stays -1).
    batch_size : int, default=32
    progress : callable, optional
        ``progress(done, n)`` after each foreground.
    cache : (Workspace, str), optional
        Where to keep each foreground's row (key prefix), so a search resumes.

    Returns
    -------
    predictions : ndarray of shape (n, n), int64
        -1 where not tried (the diagonal with ``include_own=False``).
    """
    n = len(data.ids)
    size = model.spec.composite_size or (data.images.shape[1] if n else model.spec.input_size)  # None: the data's own (square) size
    pool = resize_images(only_bg_t(data.images, data.masks), size)
    objects = resize_images(data.images, size)
    masks = np.stack([cv2.resize(m.astype(np.uint8), (size, size), interpolation=cv2.INTER_NEAREST) > 0 for m in data.masks]) if n else np.zeros((0, size, size), bool)
    result = np.full((n, n), -1, np.int64)
    with cpu_threads(model.device):
        for i in range(n):
            row = None if cache is None else cache[0].cache_get(f"{cache[1]}/{i}")
            if row is None:
                tried = np.arange(n) if include_own else np.flatnonzero(np.arange(n) != i)
                row = np.full(n, -1, np.int64)
                row[tried] = _foreground_row(model, objects[i], masks[i], pool, tried, batch_size)
                if cache is not None:
                    cache[0].cache_put(f"{cache[1]}/{i}", row)
            result[i] = row
            if progress is not None:
                progress(i + 1, n)
    return result


def _foreground_row(model: LoadedModel, image: np.ndarray, mask: np.ndarray, pool: np.ndarray, tried: np.ndarray, batch_size: int) -> np.ndarray:
    """Top outputs of one object (h, w, 3) uint8 with mask (h, w) bool pasted on ``pool[tried]``."""
    top = []
    for start in range(0, len(tried), batch_size):
        composites = np.where(mask[None, ..., None], image[None], pool[tried[start : start + batch_size]])
        logits, _ = model.run_batch(model.preprocess(composites))
        top.append(logits.float().argmax(dim=1).cpu().numpy())
    return np.concatenate(top) if top else np.zeros(0, np.int64)


def score_search(predictions: np.ndarray, data: ChallengeData, outputs: dict[str, list[int]]) -> AdversarialResult:
    """Both readings of fooling and the ASR per background from a prediction matrix.

    Parameters
    ----------
    predictions : ndarray of shape (n, n), int64
        Top output of foreground i on background j (-1 = not tried).
    data : ChallengeData
    outputs : dict of str to list of int
        Model outputs per class.

    Returns
    -------
    AdversarialResult
    """
    classes = np.asarray(data.classes)
    n_out = int(max(predictions.max(initial=0), max((max(v) for v in outputs.values() if v), default=0))) + 1
    counts_as = np.zeros((len(data.class_order), n_out + 1), bool)  # column n_out: 'not tried' (-1)
    for k, name in enumerate(data.class_order):
        counts_as[k, outputs.get(name, [])] = True
    class_index = np.array([data.class_order.index(c) for c in classes], np.int64)
    tried = predictions >= 0
    cols = np.where(tried, predictions, n_out)
    as_own = counts_as[class_index[:, None], cols]  # (n, n): predicted the foreground's class
    as_background = counts_as[class_index[None, :], cols]  # predicted background j's class
    other_class = class_index[:, None] != class_index[None, :]
    flips = tried & other_class & as_background
    fooled_any = (tried & ~as_own).any(axis=1)
    with np.errstate(invalid="ignore"):
        asr = flips.sum(axis=0) / (tried & other_class).sum(axis=0)
    return AdversarialResult(predictions, flips.any(axis=1), fooled_any, asr.astype(np.float64), data)
