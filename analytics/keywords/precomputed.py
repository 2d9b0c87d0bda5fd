"""Precomputed keywords: a backend that serves a keyword table computed elsewhere, and presence rules.

A precomputed table (read from a file by :mod:`analytics.keywords.readers`, stored in the workspace
by :func:`analytics.keywords.import_keyword_table`) holds raw scores and records in
``params['rules']`` how presence follows from them: :class:`PresenceRule` blocks of columns, each
either a threshold (present when score > value) or a top-k (present when among the k largest
scores of the block in that row). :class:`PrecomputedBackend` serves such a table's rows, looked up
by the content hash of each image.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from analytics._validation import check_choice, check_image_batch
from analytics.exceptions import InvalidInputError, NotFoundError

from ._base import KeywordBackend, KeywordTable
from .store import load_keyword_table, table_item_kind

RULE_KINDS = ("threshold", "top-k")


@dataclass(frozen=True)
class PresenceRule:
    """Presence rule for the vocabulary columns ``start:stop``.

    ``kind='threshold'``: present when score > ``value``; ``kind='top-k'``: present when among the
    ``value`` largest scores of the block in that row (ties broken by column order).
    """

    start: int
    stop: int
    kind: Literal["threshold", "top-k"]
    value: float

    def apply(self, scores: np.ndarray) -> np.ndarray:
        """Presence of the block. scores : (n, n_keywords) float32 -> (n, stop - start) bool."""
        block = scores[:, self.start : self.stop]
        if self.kind == "threshold":
            return block > self.value
        k = min(int(self.value), block.shape[1])
        top = np.argsort(-block, axis=1, kind="stable")[:, :k]
        present = np.zeros(block.shape, dtype=bool)
        np.put_along_axis(present, top, True, axis=1)
        return present


def apply_rules(scores: np.ndarray, rules: Sequence[PresenceRule]) -> np.ndarray:
    """Apply block rules that together cover every column.

    Parameters
    ----------
    scores : ndarray of shape (n, n_keywords), float32
    rules : sequence of PresenceRule

    Returns
    -------
    present : ndarray of shape (n, n_keywords), bool
    """
    present = np.zeros(scores.shape, dtype=bool)
    for rule in rules:
        present[:, rule.start : rule.stop] = rule.apply(scores)
    return present


def rules_from_params(params: dict[str, Any], n_keywords: int, source: str) -> list[PresenceRule]:
    """The presence rules recorded in a table's ``params`` (checked to cover ``n_keywords`` columns)."""
    try:
        rules = [PresenceRule(**rule) for rule in params["rules"]]
    except (KeyError, TypeError) as err:
        raise InvalidInputError(f"{source}: params hold no valid presence 'rules' ({err}); re-import the file") from err
    covered = np.zeros(n_keywords, dtype=int)
    for rule in rules:
        check_choice(rule.kind, f"{source}: rule kind", RULE_KINDS)
        covered[rule.start : rule.stop] += 1
    if not (covered == 1).all():
        raise InvalidInputError(f"{source}: presence rules must cover each of the {n_keywords} keywords exactly once")
    return rules


class PrecomputedBackend(KeywordBackend):
    """Serves a :class:`KeywordTable` computed elsewhere, looked up by image content.

    Parameters
    ----------
    table : KeywordTable
        Scores with their presence rules in ``table.params['rules']``.
    digests : sequence of str, length table.n_items
        Content hash of each item's image, as the workspace stores it (SHA-256 of the ``.npy``
        bytes, see :func:`image_digest`). An image passed to :meth:`scores` is matched by it.
    """

    name: ClassVar[str] = "precomputed"

    def __init__(self, table: KeywordTable, digests: Sequence[str]) -> None:
        if len(digests) != table.n_items:
            raise InvalidInputError(f"digests: {len(digests)} image hashes for {table.n_items} table rows")
        self.vocabulary = list(table.vocabulary)
        self._table = table
        self._rules = rules_from_params(table.params, len(table.vocabulary), "precomputed table")
        self._rows = {digest: row for row, digest in enumerate(digests)}

    @classmethod
    def from_workspace(cls, workspace, name: str) -> PrecomputedBackend:
        """The keyword table ``name`` of ``workspace``, its ids resolved to the stored images."""
        table = load_keyword_table(workspace, name)
        kind = table_item_kind(workspace, name)
        rows = {
            row["id"]: row["image_hash"]
            for row in workspace.query(f"SELECT id, image_hash FROM {kind}s")  # kind is 'target' or 'background'
        }
        missing = [item for item in table.ids if item not in rows]
        if missing:
            raise NotFoundError(
                f"keyword table {name!r}: {len(missing)} ids are not {kind}s of {workspace.root} "
                f"(first: {missing[0]!r}); import a table keyed by workspace ids"
            )
        return cls(table, [rows[item] for item in table.ids])

    def get_params(self) -> dict[str, Any]:
        return dict(self._table.params)

    def scores(self, images: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        """The stored rows of ``images``; ``masks`` are ignored (they were applied when the scores
        were computed).

        Parameters
        ----------
        images : ndarray of shape (n, height, width, 3), uint8
            Matched to the table's rows by :func:`image_digest`.
        masks : ndarray of shape (n, height, width), bool, default=None
            Ignored.

        Returns
        -------
        scores : ndarray of shape (n, n_keywords), float32

        Raises
        ------
        NotFoundError
            An image matches no row of the table.
        """
        images = check_image_batch(images)
        rows = []
        for index, image in enumerate(images):
            row = self._rows.get(image_digest(image))
            if row is None:
                raise NotFoundError(
                    f"image {index} of the batch has no precomputed keywords (its content matches no row); "
                    "compute its keywords with another backend or import them"
                )
            rows.append(row)
        return self._table.scores[rows]

    def present(self, scores: np.ndarray) -> np.ndarray:
        """The table's presence rules. scores : (n, n_keywords) float32 -> (n, n_keywords) bool."""
        return apply_rules(np.asarray(scores, dtype=np.float32), self._rules)


def image_digest(image: np.ndarray) -> str:
    """The workspace's content hash of an array: SHA-256 of its ``.npy`` bytes (what
    :meth:`analytics.workspace.Workspace.put_array` returns).

    Parameters
    ----------
    image : ndarray of any shape and dtype
        An image is (height, width, 3), uint8, as the workspace stores it.

    Returns
    -------
    digest : str
        64 hex characters.
    """
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(image), allow_pickle=False)
    return hashlib.sha256(buffer.getvalue()).hexdigest()
