"""The interface every scene-keyword backend implements, and the keyword table they produce.

A backend maps an image batch to a keyword-score matrix over its named vocabulary
(:meth:`KeywordBackend.scores`) and owns the rule that turns scores into keyword presence
(:meth:`KeywordBackend.present`). A subclass that sets ``name`` registers itself in
:data:`BACKENDS` (re-exported as ``analytics.keywords.BACKENDS``) when its module is imported.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from analytics._validation import check_finite
from analytics.exceptions import InvalidInputError

BACKENDS: dict[str, type[KeywordBackend]] = {}


class KeywordBackend(ABC):
    """A scene-understanding model seen as a keyword scorer.

    Attributes
    ----------
    name : str
        Registry key (``'precomputed'``, ``'classifier-patch'``, ``'ade20k-places365'`` ...).
    vocabulary : list of str, length n_keywords
        The keyword names, unique; column ``j`` of every score matrix belongs to ``vocabulary[j]``.
    """

    name: ClassVar[str]
    vocabulary: list[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name is None:  # an intermediate base class
            return
        if name in BACKENDS and BACKENDS[name] is not cls:
            raise TypeError(f"keyword backend name {name!r} is taken by {BACKENDS[name].__qualname__}")
        BACKENDS[name] = cls

    @abstractmethod
    def scores(self, images: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        """Keyword scores of an image batch.

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8
        masks : ndarray of shape (n, height, width), bool, default=None
            Object pixels to ignore (True = object): a target's keywords describe its background
            part only. None scores the whole image.

        Returns
        -------
        scores : ndarray of shape (n, n_keywords), float32
        """

    @abstractmethod
    def present(self, scores: np.ndarray) -> np.ndarray:
        """The presence rule.

        Parameters
        ----------
        scores : ndarray of shape (n, n_keywords), float32

        Returns
        -------
        present : ndarray of shape (n, n_keywords), bool
        """

    def get_params(self) -> dict[str, Any]:
        """JSON-serialisable settings that, with ``name``, reproduce this backend's output
        (recorded as :attr:`KeywordTable.params`; include the presence rule's settings)."""
        return {}

    def table(
        self,
        images: np.ndarray,
        ids: Sequence[str],
        *,
        masks: np.ndarray | None = None,
        labels: Sequence[str] | None = None,
    ) -> KeywordTable:
        """Score ``images`` and apply the presence rule: one :class:`KeywordTable` row per image.

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8
        ids : sequence of str, length n
        masks : ndarray of shape (n, height, width), bool, default=None
            Object pixels to ignore (True = object); None scores the whole image.
        labels : sequence of str, length n, default=None

        Returns
        -------
        KeywordTable
            ``scores`` of shape (n, n_keywords), float32; ``present`` of that shape, bool.
        """
        scores = np.asarray(self.scores(images, masks), dtype=np.float32)
        return KeywordTable(
            ids=list(ids),
            vocabulary=list(self.vocabulary),
            scores=scores,
            present=self.present(scores),
            labels=None if labels is None else list(labels),
            backend=self.name,
            params=self.get_params(),
        )


@dataclass(frozen=True)
class KeywordTable:
    """Keyword scores and presence for a set of items (target or background images).

    Attributes
    ----------
    ids : list of str, length n
        Item ids, unique (workspace target/background ids, or row numbers of an imported file).
    vocabulary : list of str, length n_keywords
        Keyword names, unique and non-empty.
    scores : ndarray of shape (n, n_keywords), float32
        The backend's raw scores (for the reference format: ADE20K pixel shares, Places365 logits).
    present : ndarray of shape (n, n_keywords), bool
        The backend's presence rule applied to ``scores``: the keyword transactions.
    labels : list of str or None, length n
        Class label per item when known (used for the no-keyword fallback of the expansion).
    backend : str
        Name of the backend that produced the scores.
    params : dict
        JSON-serialisable settings of that backend, including its presence rule.
    """

    ids: list[str]
    vocabulary: list[str]
    scores: np.ndarray = field(repr=False)
    present: np.ndarray = field(repr=False)
    labels: list[str] | None = field(default=None, repr=False)
    backend: str = "precomputed"
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_table(self)

    @property
    def n_items(self) -> int:
        return len(self.ids)

    def keywords_of(self, row: int) -> list[str]:
        """The keywords present in item ``row``, in vocabulary order."""
        return [self.vocabulary[j] for j in np.flatnonzero(self.present[row])]

    def digest(self) -> str:
        """SHA-256 of the transactions (vocabulary and presence): what an ontology depends on."""
        return transactions_digest(self.present, self.vocabulary)


def transactions_digest(present: np.ndarray, vocabulary: Sequence[str]) -> str:
    """SHA-256 hex digest of a presence matrix with its column names.

    Parameters
    ----------
    present : ndarray of shape (n, n_keywords), bool (other dtypes are read as bool)
    vocabulary : sequence of str, length n_keywords

    Returns
    -------
    digest : str
        64 hex characters.
    """
    digest = hashlib.sha256(json.dumps(list(vocabulary)).encode())
    digest.update(str(present.shape).encode())
    digest.update(np.packbits(np.ascontiguousarray(present, dtype=bool)).tobytes())
    return digest.hexdigest()


def check_table(table: KeywordTable, source: str = "keyword table") -> None:
    """Check that a :class:`KeywordTable`'s parts agree; ``source`` names the file in messages."""
    n, n_keywords = len(table.ids), len(table.vocabulary)
    if n_keywords == 0:
        raise InvalidInputError(f"{source}: the keyword vocabulary is empty; give at least one keyword column")
    check_unique(table.vocabulary, f"{source}: keyword names")
    check_unique(table.ids, f"{source}: item ids")
    for name, array, dtype in (("scores", table.scores, np.float32), ("present", table.present, np.bool_)):
        if not isinstance(array, np.ndarray) or array.dtype != dtype:
            got = getattr(array, "dtype", type(array).__name__)
            raise InvalidInputError(f"{source}: {name} must be a {np.dtype(dtype).name} ndarray; got {got}")
        if array.shape != (n, n_keywords):
            raise InvalidInputError(
                f"{source}: {name} must have shape (n_items, n_keywords) = ({n}, {n_keywords}); got {array.shape}"
            )
    check_finite(table.scores, f"{source}: scores")
    if table.labels is not None and len(table.labels) != n:
        raise InvalidInputError(f"{source}: {len(table.labels)} labels for {n} items; give one label per item")


def check_unique(names: Sequence[str], what: str) -> None:
    """Raise if ``names`` holds duplicates (the message lists a few)."""
    seen: set[str] = set()
    duplicates = sorted({name for name in names if name in seen or seen.add(name)})
    if duplicates:
        raise InvalidInputError(f"{what} must be unique; duplicated: {', '.join(map(repr, duplicates[:5]))}")
