"""What a person reads for a suite: a name the user gives, or its method, N, seed and targets.

A suite's id is a content hash (:func:`analytics.suites.build_suite`): the stable key, still
accepted everywhere, but no name. Pages, the report and the CLI call a suite by
:func:`suite_label` (one suite) or :func:`suite_labels` (a listing, made unique); a user's name is
checked by :func:`check_suite_name` before it is stored. Labels are plain text: pages escape them
(``ui.markdown.escape_markdown``), the report HTML-escapes them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from analytics.exceptions import InvalidInputError

NAME_MAX_LENGTH = 60
#: Letters and digits of any script, spaces and the punctuation of ordinary titles.
_NAME_CHARACTERS = re.compile(r"[\w .,:;()'+&#/-]+")
_CLASSES_SHOWN = 3  # more selected classes than this are counted, not listed


def check_suite_name(name: str | None) -> str:
    """``name`` with outer blanks removed ('' for None or blank: no name).

    Raises
    ------
    InvalidInputError
        A name longer than :data:`NAME_MAX_LENGTH` characters, or with a character other than
        letters, digits, spaces and ``. , : ; ( ) ' + & # / - _`` (the message names it).
    """
    if name is None:
        return ""
    if not isinstance(name, str):
        raise InvalidInputError(f"suite name must be text; got {type(name).__name__}")
    text = unicodedata.normalize("NFC", name).strip()
    if len(text) > NAME_MAX_LENGTH:
        raise InvalidInputError(f"suite name {text[:20]!r}… has {len(text)} characters; use at most {NAME_MAX_LENGTH}")
    bad = sorted({c for c in text if not _NAME_CHARACTERS.fullmatch(c)})
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        raise InvalidInputError(
            f"suite name {text!r} holds {shown}; use letters, digits, spaces and . , : ; ( ) ' + & # / - _"
        )
    return text


def suite_label(suite: Any) -> str:
    """How a person reads one suite.

    ``ontology, N = 8, seed 0, 12 targets``; with a selection of classes ``…, 6 targets of
    my_ball`` (up to three classes named, more counted); with a user's name ``Cups check
    (ontology, N = 8, seed 0, 12 targets)``.

    Parameters
    ----------
    suite : Suite or mapping
        A :class:`analytics.suites.Suite`, or a row of :func:`analytics.suites.list_suites`
        (``method``, ``n``, ``seed``, ``targets``, ``name``, ``classes``).

    Returns
    -------
    str
        Plain text (not escaped).
    """
    if isinstance(suite, Mapping):
        method, n, seed, targets = suite["method"], suite["n"], suite["seed"], suite["targets"]
        name, classes = suite.get("name") or "", suite.get("classes") or ()
    else:
        method, n, seed, targets, name = suite.method, suite.n, suite.seed, len(suite.target_ids), suite.name
        classes = (suite.params.get("selection") or {}).get("classes") or ()
    scope = f"{int(targets)} target{'' if int(targets) == 1 else 's'}"
    if classes:
        scope += " of " + (", ".join(classes) if len(classes) <= _CLASSES_SHOWN else f"{len(classes)} classes")
    described = f"{method}, N = {int(n)}, seed {int(seed)}, {scope}"
    return f"{name} ({described})" if name else described


def suite_labels(suites: pd.DataFrame) -> dict[str, str]:
    """Suite id -> label for a listing of :func:`analytics.suites.list_suites`, unique within it
    (:func:`distinct_labels`): what every picker, table and message shows."""
    return distinct_labels(
        list(suites["id"]), [suite_label(row) for row in suites.to_dict("records")], list(suites["created"])
    )


def distinct_labels(ids: Sequence[str], labels: Sequence[str], created: Sequence[str], *, verb: str = "built") -> dict[str, str]:
    """Id -> label, where labels two items share get their creation time (``· built 2026-11-25
    14:02``) and, if that is shared too, the first 8 characters of the id: a picker never offers
    two choices that read alike.

    Parameters
    ----------
    ids, labels, created : sequences of str of the same length
        ``created`` as ISO time (as the workspace stores it).
    verb : str, default='built'
        The word before the time (``started`` for runs).
    """
    counts = pd.Series(labels, dtype=object).value_counts()
    timed = [f"{label} · {verb} {_minute(when)}" if counts[label] > 1 else label for label, when in zip(labels, created)]
    again = pd.Series(timed, dtype=object).value_counts()
    return {i: f"{label} · {i[:8]}" if again[label] > 1 else label for i, label in zip(ids, timed)}


def _minute(created: str) -> str:
    """``2026-11-25T14:02:31.123+00:00`` -> ``2026-11-25 14:02``."""
    return str(created).replace("T", " ")[:16]
