"""Galleries of a run: the backgrounds that fool a model most, and the composites that flip its prediction.

For one run (any status: the composites stored so far count), every composite (position >= 1) is a
:class:`GalleryItem`: its target and background, the model's prediction and true-class probability
on it and on the target's original (position 0), and its background's scene keywords
(:func:`analytics.findings.failures.composite_table`: the suite's background keyword table plus the keyword
the sampler drew the background for).

* :func:`fooling_backgrounds`: per class, one composite per target, the one that lowers its true-class
  probability most (drop = original's probability - composite's, > 0 only), biggest drop first; the
  targets the model already misclassifies on their original apart (issue 47.4: the gallery used to
  fill all its places with one target's composites, and with a target the background cannot be blamed for);
* :func:`flips`: composites whose predicted output differs from the original's; those whose original
  was classified correctly first (a background broke a right answer), then biggest drop first.

Ties go to target id, then position, so the same run always gives the same gallery.
:func:`item_images` rebuilds an item's original and composite as the run saw them
(:func:`analytics.runs.compose_images`); :func:`item_saliency` explains both with
:mod:`analytics.saliency` (Grad-CAM by default) and returns None when the model cannot run the method
(TorchScript models accept no hooks, so no CAM method).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analytics._validation import check_choice, check_positive_int
from analytics.data import load_targets
from analytics.exceptions import InvalidInputError
from analytics.runs import compose_images, image_table
from analytics.workspace import Workspace

from .failures import composite_table

if TYPE_CHECKING:  # torch only when saliency is asked for
    from analytics.models import LoadedModel

_ORDER = ["target_id", "position"]  # tie-breakers after the ranking keys


@dataclass(frozen=True)
class GalleryItem:
    """One composite of a run, next to its original.

    Attributes
    ----------
    run_id, target_id, class_name : str
    position : int
        The composite's position in the suite (>= 1; the original is 0).
    background_id : str
    predicted : str
        Output name the model predicted on the composite.
    true_prob : float
        True-class probability on the composite.
    original_predicted : str
        Output name predicted on the original.
    original_true_prob : float
        True-class probability on the original.
    keywords : tuple of str
        The background's scene keywords (and the keyword the suite drew it for).
    original_correct : bool
        Whether the model classifies the target right on its original.
    """

    run_id: str
    target_id: str
    class_name: str
    position: int
    background_id: str
    predicted: str
    true_prob: float
    original_predicted: str
    original_true_prob: float
    keywords: tuple[str, ...]
    original_correct: bool

    @property
    def drop(self) -> float:
        """Drop of the true-class probability from original to composite (positive = the background hurt)."""
        return self.original_true_prob - self.true_prob


@dataclass(frozen=True)
class ClassGallery:
    """One class's gallery of :func:`fooling_backgrounds`: one composite per target, each the target's
    composite with the biggest drop of the true-class probability, biggest drop first.

    Attributes
    ----------
    hurt : tuple of GalleryItem
        Targets the model classifies right on their original: what the background took away.
    already_wrong : tuple of GalleryItem
        Targets it misclassifies on their original already (the background is not what broke them),
        shown apart.
    """

    hurt: tuple[GalleryItem, ...]
    already_wrong: tuple[GalleryItem, ...]

    def __len__(self) -> int:
        """Items in both parts."""
        return len(self.hurt) + len(self.already_wrong)


def fooling_backgrounds(
    workspace: Workspace, run_id: str, *, per_class: int = 4, classes: Sequence[str] | None = None, keyword: str | None = None
) -> dict[str, ClassGallery]:
    """Per class, the targets whose true-class probability a background lowers most, each with that composite.

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    per_class : int, default=4
        Targets per class at most, in each part of the gallery (:class:`ClassGallery`).
    classes : sequence of str, optional
        Classes of the run's targets to list; default all of them.
    keyword : str, optional
        Only composites whose background carries this keyword.

    Returns
    -------
    dict of str to ClassGallery
        Class (in ``classes`` order, else sorted by name) -> its gallery: per target its composite with
        the biggest positive drop, biggest drop first (ties: target id, position), the targets right on
        their original (``hurt``) apart from those already wrong there (``already_wrong``); both empty
        when no background lowered the class's probability.

    Raises
    ------
    NotFoundError
        No such run.
    InvalidInputError
        ``per_class`` is not a positive integer, or ``classes`` names a class without targets in the run.
    """
    per_class = check_positive_int(per_class, "per_class")
    frame = _items_frame(workspace, run_id)
    chosen = _check_classes(frame, run_id, classes)
    frame = _with_keyword(frame, keyword)
    hurt = frame[frame["drop"] > 0].sort_values(["drop", *_ORDER], ascending=[False, True, True], kind="stable")
    hurt = hurt.drop_duplicates("target_id", keep="first")  # one composite per target: its biggest drop
    galleries = {}
    for name in chosen:
        of_class = hurt[hurt["class_name"] == name]
        right = of_class["original_correct"].to_numpy(dtype=bool)
        galleries[name] = ClassGallery(
            tuple(_items(of_class[right].head(per_class), run_id)), tuple(_items(of_class[~right].head(per_class), run_id))
        )
    return galleries


def flips(
    workspace: Workspace, run_id: str, *, limit: int = 8, class_name: str | None = None, keyword: str | None = None
) -> list[GalleryItem]:
    """Composites on which the model predicts another output than on their original.

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    limit : int, default=8
        Items at most.
    class_name : str, optional
        Only targets of this class.
    keyword : str, optional
        Only composites whose background carries this keyword.

    Returns
    -------
    list of GalleryItem
        Those whose original was classified correctly first, then biggest drop first.

    Raises
    ------
    NotFoundError
        No such run.
    InvalidInputError
        ``limit`` is not a positive integer, or ``class_name`` has no targets in the run.
    """
    limit = check_positive_int(limit, "limit")
    frame = _items_frame(workspace, run_id)
    if class_name is not None:
        frame = frame[frame["class_name"].isin(_check_classes(frame, run_id, [class_name]))]
    frame = _with_keyword(frame, keyword)
    flipped = frame[frame["predicted"] != frame["original_predicted"]]
    ranked = flipped.sort_values(["original_correct", "drop", *_ORDER], ascending=[False, False, True, True], kind="stable")
    return _items(ranked.head(limit), run_id)


def item_images(workspace: Workspace, item: GalleryItem) -> tuple[np.ndarray, np.ndarray]:
    """An item's original and composite as the run saw them.

    Parameters
    ----------
    workspace : Workspace
    item : GalleryItem

    Returns
    -------
    original, composite : ndarray of shape (size, size, 3), uint8
    """
    images = compose_images(workspace, item.target_id, ["", item.background_id])
    return images[0], images[1]


def item_saliency(workspace: Workspace, model: LoadedModel | str, item: GalleryItem, *, method: str = "gradcam") -> tuple[np.ndarray, np.ndarray] | None:
    """Attribution maps of the true class on an item's original and composite.

    Parameters
    ----------
    workspace : Workspace
    model : LoadedModel or str
        A loaded model, or the name of a registered one (loaded on the default device).
    item : GalleryItem
    method : str, default='gradcam'
        A key of :data:`analytics.saliency.METHODS`.

    Returns
    -------
    (original, composite) : tuple of ndarray of shape (size, size), float32, or None
        Each map min-max scaled to [0, 1]; None when the model cannot run ``method``
        (:func:`analytics.saliency.available_methods`: TorchScript accepts no hooks, so no CAM method
        and no guided backprop).

    Raises
    ------
    InvalidInputError
        ``method`` is unknown, or the item's class has no output in the model's label space.
    """
    # imported here: they pull in torch, which the galleries themselves do not need
    from analytics.data import list_class_mappings
    from analytics.models import load_model
    from analytics.saliency import METHODS, available_methods, explain

    check_choice(method, "method", METHODS)
    loaded = load_model(workspace, model) if isinstance(model, str) else model
    if method not in available_methods(loaded):
        return None
    mapping = list_class_mappings(workspace)
    if item.class_name not in mapping:
        raise InvalidInputError(f"class {item.class_name!r} of target {item.target_id!r} is not a workspace class; add it on the Data page")
    outputs = loaded.spec.label_space.class_outputs({item.class_name: mapping[item.class_name]})[item.class_name]
    original, composite = item_images(workspace, item)
    _, masks = load_targets(workspace, [item.target_id])
    explanation = explain(
        loaded, np.stack([original, composite]), np.repeat(masks, 2, axis=0), [outputs, outputs], method=method, faithfulness_steps=None
    )
    return explanation.maps[0], explanation.maps[1]


def _items_frame(workspace: Workspace, run_id: str) -> pd.DataFrame:
    """The run's composites with their original's prediction and correctness (columns of
    :func:`analytics.findings.failures.composite_table` plus original_predicted, original_correct)."""
    composites = composite_table(workspace, run_id)  # raises NotFoundError for an unknown run
    images = image_table(workspace, run_id)
    originals = images[images["position"] == 0].set_index("target_id")
    composites["original_predicted"] = composites["target_id"].map(originals["predicted"])
    composites["original_correct"] = composites["target_id"].map(originals["correct"]).astype(bool)
    return composites


def _with_keyword(frame: pd.DataFrame, keyword: str | None) -> pd.DataFrame:
    return frame if keyword is None else frame[frame["keywords"].map(lambda found: keyword in found).astype(bool)]


def _check_classes(frame: pd.DataFrame, run_id: str, classes: Sequence[str] | None) -> list[str]:
    known = sorted(set(frame["class_name"].dropna()))
    if classes is None:
        return known
    if isinstance(classes, str):
        raise InvalidInputError(f"classes must be a list of class names, not the string {classes!r}; pass [{classes!r}]")
    unknown = [name for name in classes if name not in known]
    if unknown:
        raise InvalidInputError(f"run {run_id!r} has no composites of class {', '.join(map(repr, unknown))}; its classes are {', '.join(known) or 'none'}")
    return list(dict.fromkeys(classes))


def _items(frame: pd.DataFrame, run_id: str) -> list[GalleryItem]:
    return [
        GalleryItem(
            run_id=run_id, target_id=str(row.target_id), class_name=str(row.class_name), position=int(row.position),
            background_id=str(row.background_id), predicted=str(row.predicted), true_prob=float(row.true_prob),
            original_predicted=str(row.original_predicted), original_true_prob=float(row.original_prob),
            keywords=tuple(row.keywords), original_correct=bool(row.original_correct),
        )  # fmt: skip
        for row in frame.itertuples(index=False)
    ]
