"""The targets' keywords as the keyword samplers rank them, and the check that an ontology fits.

``keyword`` suites sample from each target's detected keywords (:func:`detected_keywords`, level 0,
ranked by score); ``ontology`` suites from its expansion through an ontology
(:func:`expanded_keywords`, ranked by level then aggregated weight; level 0 by detection score).
A target without detected keywords starts from the :data:`FALLBACK_TOP` most frequent keywords of
its class, and a note says so.

The ontology must fit the keyword tables: one that expands fewer than :data:`MIN_EXPANDED_SHARE`
of the targets to keywords the pool carries is refused (:func:`check_expansion`), since an
ontology of another vocabulary would silently turn the suite into a keyword suite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from analytics.exceptions import InvalidInputError
from analytics.keywords import KeywordTable
from analytics.ontology import DEFAULT_MAXITS, Expansion, Ontology, class_keywords, expand_table

from .sampling import RankedKeyword

FALLBACK_TOP = 3  # class keywords a target without keywords starts from
MIN_EXPANDED_SHARE = 0.5  # targets the ontology must expand to pool keywords (check_expansion)


def detected_keywords(table: KeywordTable, notes: list[str] | None = None) -> list[list[RankedKeyword]]:
    """Each item's detected keywords (level 0), ranked by score (descending, then name).

    An item without keywords gets the :data:`FALLBACK_TOP` most frequent keywords of its class
    (needs labels) and a note in ``notes``.

    Returns
    -------
    list (one per row of ``table``) of list of RankedKeyword
    """
    fallback = class_keywords(table, top=FALLBACK_TOP) if table.labels is not None else {}
    column = {word: j for j, word in enumerate(table.vocabulary)}
    ranked = []
    for row in range(table.n_items):
        words = table.keywords_of(row)
        if not words:
            label = table.labels[row] if table.labels is not None else None
            words = fallback.get(label, [])
            _note(notes, f"target {table.ids[row]!r}: no keywords detected; using the {len(words)} most frequent keywords of class {label!r}")
        entries = [RankedKeyword(word, 0, float(table.scores[row, column[word]])) for word in words]
        ranked.append(sorted(entries, key=lambda k: (-k.weight, k.keyword)))
    return ranked


def expanded_keywords(ontology: Ontology, table: KeywordTable, *, maxits: int = DEFAULT_MAXITS, notes: list[str] | None = None) -> list[list[RankedKeyword]]:
    """Each item's ontology expansion OL_x as ranked keywords.

    Ranked by level; level 0 (detected) by detection score, deeper levels by the aggregated
    (product) weight of their path, as :func:`analytics.ontology.expand_table` orders them.
    Fallback expansions (no detected keyword) are noted in ``notes``.
    """
    expansions = expand_table(ontology, table, maxits=maxits, fallback_top=FALLBACK_TOP)
    column = {word: j for j, word in enumerate(table.vocabulary)}
    return [_ranked_expansion(expansion, table, row, column, notes) for row, expansion in enumerate(expansions)]


def _ranked_expansion(expansion: Expansion, table: KeywordTable, row: int, column: dict[str, int], notes) -> list[RankedKeyword]:
    if expansion.note:
        _note(notes, f"target {table.ids[row]!r}: {expansion.note}")
    seeds = [e for e in expansion.keywords if e.level == 0]
    rest = [RankedKeyword(e.keyword, e.level, e.product) for e in expansion.keywords if e.level > 0]
    detected = expansion.fallback is False
    level0 = [RankedKeyword(e.keyword, 0, float(table.scores[row, column[e.keyword]]) if detected else 1.0) for e in seeds]
    return sorted(level0, key=lambda k: (-k.weight, k.keyword)) + rest


def _note(notes: list[str] | None, text: str) -> None:
    if notes is not None:
        notes.append(text)


def check_expansion(target_keywords: Sequence[Sequence[RankedKeyword]], carriers: Mapping[str, np.ndarray], record: dict[str, Any]) -> None:
    """Refuse an ontology that does not fit the keyword tables of a suite.

    An ontology mined from other keywords (another backend, another vocabulary) shares few keywords
    with the tables: the targets' keywords expand to nothing, or to keywords no pool background
    carries, and an "ontology" suite silently becomes a keyword suite (or a random one).

    Parameters
    ----------
    target_keywords : sequence (one per target) of sequence of RankedKeyword
        The targets' ranked expansions (level 0 = detected).
    carriers : mapping keyword -> ndarray of shape (n_carriers,), int64
        Pool indices of the backgrounds carrying each keyword.
    record : dict
        The suite's provenance (``ontology`` and ``keyword_tables`` entries), for the message.

    Raises
    ------
    InvalidInputError
        Fewer than :data:`MIN_EXPANDED_SHARE` of the targets have an expanded keyword (level >= 1)
        that some pool background carries.
    """
    reached = sum(any(k.level > 0 and len(carriers.get(k.keyword, ())) for k in ranked) for ranked in target_keywords)
    if not target_keywords or reached >= MIN_EXPANDED_SHARE * len(target_keywords):
        return
    ontology, tables = record["ontology"], record["keyword_tables"]
    used = ", ".join(f"{kind} {t['name']!r} ({t['backend'] or 'unknown backend'})" for kind, t in tables.items())
    if set(ontology["tables"]) == {t["name"] for t in tables.values()}:  # mined from these very tables: mining them again changes nothing
        change = (
            "Its rules rarely lead from the targets' keywords to keywords of the pool. Mine a denser one from these tables "
            f"on the Ontology page (lower Min confidence than {ontology['min_confidence']} or Min support than "
            f"{ontology['min_support']}; the same settings of `python -m analytics ontology`, or `min_confidence` and `min_support` "
            "of the suite built in Python or on the command line), choose other keyword tables under Target / "
            "Background keywords, or use Method 'keyword' (the detected keywords, no expansion)"
        )
    else:
        change = (
            "It was mined from other keywords. Set Ontology to 'newest of these keyword tables' on the Suites page (mine "
            "one with the button there or on the Ontology page; in Python or on the command line, leave the ontology unset), or choose the keyword "
            "tables it was mined from under Target / Background keywords"
        )
    raise InvalidInputError(
        f"ontology {ontology['id']} (mined from {', '.join(ontology['tables']) or 'keywords outside this workspace'}) expands "
        f"only {reached} of {len(target_keywords)} targets to keywords the pool carries, with the keyword tables {used}: "
        f"an 'ontology' suite would be a keyword suite. {change}"
    )
