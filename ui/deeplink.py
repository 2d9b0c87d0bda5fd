"""Page state in the address bar, so a view can be shared by copying the address (issue 16).

A page calls :func:`adopt` for each widget before drawing it: when the URL's query string names a
value for that widget that the session has not taken yet (a link just opened), the widget starts
on it. After drawing, :func:`publish` writes the widgets' current values back to the query string,
so the address always describes what is on screen. A value the URL names that is not among the
widget's options is ignored (a stale or hand-edited link) and :func:`adopt` returns it, so the page
can say so.

Query parameters in use: ``run``, ``signal``, ``preset``, ``keyword``, ``class``, ``model``,
``suite``, ``method``, ``target``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

_ADOPTED = "deeplink.adopted"  # session state: page -> param -> the URL value that page has already taken


def _adopted() -> dict[str, str]:
    """The running page's memory of taken values: per page, so a link to one page is not skipped
    because another page took (or published) the same value, e.g. Home's links to Matrices and Failures."""
    ctx = get_script_run_ctx()
    return st.session_state.setdefault(_ADOPTED, {}).setdefault(ctx.page_script_hash if ctx else "", {})


def adopt(param: str, key: str, options: Sequence[Any]) -> str | None:
    """Start the widget stored at session-state ``key`` on the URL's value of ``param``.

    Parameters
    ----------
    param : str
        Query-string name, e.g. ``"run"``.
    key : str
        The widget's session-state key.
    options : sequence
        The widget's options; the URL's text is matched against ``str(option)`` and the matching
        option itself (not the text) is stored.

    Returns
    -------
    str or None
        The URL's text when it names no option (the caller may warn), else None.
    """
    text = st.query_params.get(param)
    adopted = _adopted()
    if text is None or adopted.get(param) == text:
        return None
    adopted[param] = text
    for option in options:
        if str(option) == text:
            st.session_state[key] = option
            return None
    return text


def publish(**values: Any) -> None:
    """Write ``param=value`` pairs to the query string (None or '' removes the parameter).

    The session remembers them as adopted, so the next run does not take them back from the URL
    over a widget the user has changed since.
    """
    adopted = _adopted()
    for param, value in values.items():
        if value is None or value == "":
            if param in st.query_params:
                del st.query_params[param]
            adopted.pop(param, None)
            continue
        text = str(value)
        adopted[param] = text
        if st.query_params.get(param) != text:
            st.query_params[param] = text
