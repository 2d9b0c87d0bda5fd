"""The importer core of instance masks, shared by COCO (:mod:`analytics.data.coco`) and Pascal VOC
(:mod:`analytics.data.voc`): one :class:`Instance` type, one choice of instances, one set of skip
reasons, one per-import limit and one way to turn the chosen instances into stored targets.

A layout reads its files into instances (each with its class, its share of the image and whatever
the layout needs to make its mask), every one checked before any photo is decoded. :func:`choose`
then leaves out, counted in ``ImportResult.skipped`` by reason, those below ``min_area`` and, unless
``all_instances``, every instance but the largest of its image (the lowest number on a tie), and
refuses an import of more than :func:`instance_limit` targets in one line, before anything is
decoded. :func:`instance_targets` decodes the chosen instances' photos one at a time (once for the
instances of one photo that follow each other) and fits each as a ``folder`` import does
(:func:`~analytics.data.images.fit_target`), so an import streamed into
:func:`~analytics.data.batched_writes.store_targets` holds a few targets in memory, whatever its count.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analytics._choices import MAX_INSTANCES, MAX_INSTANCES_ENV_VAR
from analytics._validation import ParameterNames, positive_limit
from analytics.exceptions import InvalidInputError

from .datasets import Target
from .images import LOWER_FLOOR_FIX, MIN_MASK_SHARE, fit_target
from .results import ImportResult

CROWD = "crowd region (iscrowd=1)"
NO_MASK = "no mask (a box only)"
OTHER_CATEGORY = "category not chosen"
TOO_SMALL = "smaller than the minimum area"
NOT_LARGEST = "not the largest instance of its image (import with all instances to keep it)"
#: Why an instance import leaves an entry out, in the order they are decided (``ImportResult.skipped``'s keys).
SKIP_REASONS = (CROWD, OTHER_CATEGORY, NO_MASK, TOO_SMALL, NOT_LARGEST)
#: ``(order, reason, entry)``: an entry left out, at its place in the layout's listing.
Skip = tuple[int, str, str]


@dataclass(frozen=True, slots=True)
class Instance:
    """One instance that may become a target, its mask not made yet.

    ``image`` is its image's key (a COCO image id, a VOC image id); ``number`` its number within the
    layout (a COCO annotation id, a VOC instance index: the lower wins a tie for the largest);
    ``name`` how it is named (``annotation 7``, ``instance 2``) and ``place`` where it is
    (``image 3, street.jpg``, ``2007_000032``); ``stem`` the target id's image part; ``area`` its
    share of the image, 0..1; ``order`` its place in the layout's listing; ``mask`` what the layout
    makes its mask from (COCO: a pycocotools RLE; VOC: nothing, the index is ``number``).
    """

    image: Any  # an int (COCO) or a str (VOC): the key of its layout's image
    number: int
    name: str
    place: str
    stem: str
    category: str
    area: float
    order: int
    mask: Any = None

    @property
    def entry(self) -> str:
        """How a skipped instance is listed: ``annotation 7 (image 3, street.jpg)``, ``instance 2 (2007_000032)``."""
        return f"{self.name} ({self.place})"

    @property
    def target_id(self) -> str:
        """``<class>/<stem>-<number>``: the id of the target it becomes."""
        return f"{self.category}/{self.stem}-{self.number}"


# -- choice ------------------------------------------------------------------------------------
def chosen_classes(source: object, classes: Iterable[str] | None, known: Iterable[str], *, noun: str = "category") -> set[str] | None:
    """The class names ``classes`` chooses among ``known`` (None: every class).

    Raises
    ------
    InvalidInputError
        A name ``known`` lacks: one line naming it and the layout's classes.
    """
    if classes is None:
        return None
    chosen, names = {name.strip() for name in classes if name.strip()}, set(known)
    unknown = sorted(chosen - names)
    if unknown:
        plural = "categories" if noun == "category" else f"{noun}es"
        raise InvalidInputError(f"{source}: no {noun} named {', '.join(map(repr, unknown))}; its {plural} are {', '.join(sorted(names))}")
    return chosen


def skip_reason(category: str, chosen: set[str] | None, *, crowd: bool = False, mask: bool = True) -> str | None:
    """Why an entry is left out before its mask is measured (:data:`CROWD`, :data:`OTHER_CATEGORY`,
    :data:`NO_MASK`, the first that applies), None when it is a candidate."""
    if crowd:
        return CROWD
    if chosen is not None and category not in chosen:
        return OTHER_CATEGORY
    return None if mask else NO_MASK


def choose(
    source: str | os.PathLike, instances: list[Instance], skips: Iterable[Skip], result: ImportResult, *, min_area: float, all_instances: bool, limit: int,
    names: ParameterNames | None = None,
) -> list[Instance]:  # fmt: skip
    """The instances to import: those below ``min_area`` left out and, unless ``all_instances``, all
    but the largest of each image; ``skips`` (left out before) and these go to ``result.skipped``
    by reason, in the layout's order. Nothing is decoded.

    Raises
    ------
    InvalidInputError
        More instances to import than ``limit`` (:func:`check_instance_count`).
    """
    kept, left_out = [], list(skips)
    for instance in instances:
        if instance.area < min_area:
            left_out.append((instance.order, TOO_SMALL, instance.entry))
        else:
            kept.append(instance)
    for _, reason, entry in sorted(left_out, key=lambda skip: skip[0]):
        result.skipped.setdefault(reason, []).append(entry)
    picked = kept if all_instances else _largest(kept, result)
    check_instance_count(source, len(picked), len({instance.image for instance in kept}), limit=limit, all_instances=all_instances, names=names)
    return picked


def _largest(instances: list[Instance], result: ImportResult) -> list[Instance]:
    """The largest instance of each image (the lowest number on a tie); the others skipped."""
    best: dict[Hashable, Instance] = {}
    for instance in instances:
        current = best.get(instance.image)
        if current is None or (instance.area, -instance.number) > (current.area, -current.number):
            best[instance.image] = instance
    for instance in instances:
        if best[instance.image] is not instance:
            result.skipped.setdefault(NOT_LARGEST, []).append(instance.entry)
    return [instance for instance in instances if best[instance.image] is instance]


# -- the limit ---------------------------------------------------------------------------------
def instance_limit(max_instances: int | None = None, *, names: ParameterNames | None = None) -> int:
    """The most targets one instance import may make: ``max_instances``, else ``$BACKDROP_MAX_INSTANCES``,
    else :data:`MAX_INSTANCES`. Messages name ``max_instances`` as ``names`` says (default: the keyword).

    Raises
    ------
    InvalidInputError
        ``max_instances`` or the environment variable is not a positive whole number.
    """
    if max_instances is not None:
        if isinstance(max_instances, bool) or not isinstance(max_instances, int) or max_instances <= 0:
            raise InvalidInputError(f"{(names or ParameterNames())('max_instances')} must be a positive whole number of targets; got {max_instances!r}")
        return max_instances
    return positive_limit(MAX_INSTANCES_ENV_VAR, MAX_INSTANCES, "targets")


def check_instance_count(source: str | os.PathLike, count: int, images: int, *, limit: int, all_instances: bool, names: ParameterNames | None = None) -> None:
    """Refuse an instance import of ``count`` targets (from ``images`` images) past ``limit``, before
    anything is decoded: each target is 0.25 MB of disk at 256 px, and seconds of work on a server.
    The message names ``max_instances`` as ``names`` says (default: the keyword, ``max_instances=N``).

    Raises
    ------
    InvalidInputError
        One line naming the source, the count, the limit and the ways out: the largest instance of
        each image (when that fits), fewer categories or a higher minimum area, or a higher limit.
    """
    if count <= limit:
        return
    largest = f"import the largest instance of each image instead of every instance ({images} targets), " if all_instances and images <= limit else ""
    raise InvalidInputError(
        f"{source}: {count} instances to import, past the limit of {limit} targets per import; {largest}choose fewer categories "
        f"or a higher minimum area, or raise the limit: {(names or ParameterNames()).setting('max_instances', count)} "
        f"(the Data page: {MAX_INSTANCES_ENV_VAR}={count} where the server starts)"
    )


# -- storage -----------------------------------------------------------------------------------
#: ``open_image(instance) -> (photo, mask_of, shown)``: the decoded photo of ``instance``'s image
#: (height, width, 3), uint8; a function giving each of its instances' (height, width) bool mask;
#: and the photo's path as messages and origins show it.
OpenImage = Callable[[Instance], tuple[np.ndarray, Callable[[Instance], np.ndarray], Path]]


def instance_targets(picked: Iterable[Instance], open_image: OpenImage, result: ImportResult, *, size: int, min_area: float) -> Iterator[Target]:
    """The picked instances as targets, in order, one at a time: an image is opened once for the
    instances of it that follow each other (and freed before the next is opened); each mask is
    fitted with its photo as in a ``folder`` import, below a floor of ``min_area`` where that is
    less than :data:`~analytics.data.images.MIN_MASK_SHARE`; a refused fit is added to ``result``."""
    floor = min(min_area, MIN_MASK_SHARE)
    opened: tuple[Hashable, tuple[np.ndarray, Callable[[Instance], np.ndarray], Path]] | None = None
    for instance in picked:
        if opened is None or opened[0] != instance.image:
            opened = None  # the previous photo is freed before the next is decoded
            opened = (instance.image, open_image(instance))
        photo, mask_of, shown = opened[1]
        try:  # refused as in a folder import, below a floor min_area may lower
            image, mask = fit_target(photo, mask_of(instance), size, origin=f"{shown} {instance.name}", min_share=floor, fix=LOWER_FLOOR_FIX)
        except InvalidInputError as err:
            result.reject(shown, str(err))
            continue
        yield Target(instance.target_id, instance.category, image, mask, origin=str(shown))
