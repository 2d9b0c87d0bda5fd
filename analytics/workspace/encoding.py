"""Results as strict JSON: what job results store and what the CLI prints with ``--json``; and tables
as CSV that a spreadsheet cannot run (:func:`to_csv`, every CSV export goes through it).
"""

from __future__ import annotations

import json
import math
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:  # pandas is not needed to run this module: the frame brings its own methods
    from os import PathLike

    import pandas as pd

#: First characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection").
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def to_json(result: object, *, indent: int | None = None) -> str:
    """``result`` as strict JSON: numpy scalars and arrays become plain values, NaN and ±inf ``null``."""
    return json.dumps(_plain(result), indent=indent, allow_nan=False)


def to_csv(frame: pd.DataFrame, path_or_buffer: str | PathLike | IO[str] | None = None, *, index: bool = False) -> str | None:
    """``frame`` as CSV with formulas neutralised: the one way the library and the app write CSV.

    Every text cell (and text column label) that starts with one of :data:`FORMULA_PREFIXES`
    (``=``, ``+``, ``-``, ``@``, tab, carriage return) gets a single quote ``'`` in front, so a
    spreadsheet shows it as text instead of running it (OWASP's CSV injection rule): a note
    ``=HYPERLINK(...)`` is written as ``'=HYPERLINK(...)``. Only ``str`` values are touched;
    numeric, boolean and datetime columns, numbers inside object columns and missing values are
    written as :meth:`pandas.DataFrame.to_csv` writes them (``-0.5`` as a float stays ``-0.5``).

    A text cell holding a line break is quoted, so every reader gets it back whole: ``\\n`` always, and
    a carriage return too, which Python's CSV writer quotes only when the line terminator holds it
    (a lone ``\\r`` left unquoted split its row). So a table with a ``\\r`` in any text cell or label
    is written with ``\\r\\n`` line ends (RFC 4180's), every other table as before (``\\n`` on Linux).
    Read the file with ``newline=""`` (the :mod:`csv` module's rule) to keep ``\\r\\n`` inside a cell.

    Parameters
    ----------
    frame : DataFrame of shape (n_rows, n_columns)
        Not modified.
    path_or_buffer : str, path or text file object, optional
        Where to write; None: return the text.
    index : bool, keyword-only
        Write the index as the first column (default False).

    Returns
    -------
    str or None
        The CSV text when ``path_or_buffer`` is None, else None.
    """
    out = _neutralised(frame, index=index)
    return out.to_csv(path_or_buffer, index=index, lineterminator="\r\n" if _holds_carriage_return(out, index=index) else None)


def neutralise_formula(value: object) -> object:
    """``value`` with ``'`` in front when it is a ``str`` a spreadsheet could read as a formula, or
    one that :func:`restore_formula` would change; anything else unchanged.

    The second case makes the pair exact inverses: a note ``'=x`` (a quote the user typed) is
    written as ``''=x`` and read back as ``'=x``, so exporting and importing a workspace's own
    judgments adds nothing (before, it came back as ``=x``, a new row).
    """
    return "'" + value if isinstance(value, str) and _needs_quote(value) else value


def restore_formula(value: str) -> str:
    """``value`` without the ``'`` that :func:`neutralise_formula` put in front (what an import reads back)."""
    return value[1:] if value.startswith("'") and _needs_quote(value[1:]) else value


def _needs_quote(value: str) -> bool:
    """Whether ``value`` starts with a formula prefix, after any number of ``'``."""
    return value.lstrip("'").startswith(FORMULA_PREFIXES)


def _neutralised(frame: pd.DataFrame, *, index: bool) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column labels (and index labels, if ``index``) are neutralised."""
    out = frame.copy()
    for position in range(out.shape[1]):
        column = out.iloc[:, position]
        if column.dtype.kind == "O":  # object, str, string and category columns; numbers, bools and dates are not text
            out.isetitem(position, column.astype(object).map(neutralise_formula))
    out.columns = out.columns.map(neutralise_formula)
    if index and out.index.dtype.kind == "O":
        out.index = out.index.map(neutralise_formula)
    return out


def _holds_carriage_return(frame: pd.DataFrame, *, index: bool) -> bool:
    """Whether a text cell or label that :func:`to_csv` writes holds ``\\r``."""
    labels = [frame.columns, frame.index] if index else [frame.columns]
    cells = (frame.iloc[:, position] for position in range(frame.shape[1]) if frame.iloc[:, position].dtype.kind == "O")
    return any(isinstance(value, str) and "\r" in value for values in (*labels, *cells) for value in values)


def _plain(value):
    """A copy of ``value`` made of JSON types only (dict keys as strings, non-finite floats as None)."""
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        value = value.tolist()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (str, int)):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
