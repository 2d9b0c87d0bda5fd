"""Names and other user-supplied text inside Markdown.

Streamlit renders Markdown in ``st.markdown`` / ``st.caption`` / ``st.info`` ..., in widget labels,
tab and expander labels, help tooltips and image captions, and it has no escape of its own: a model
named ``**bold**`` would show bold, ``[x](http://e.x)`` as a link, ``$a$`` as LaTeX. HTML is already
shown as text (no ``unsafe_allow_html`` on user text).
"""

from __future__ import annotations

import re

# CommonMark lets a backslash escape any ASCII punctuation; these are the ones Streamlit's Markdown
# (with GitHub extensions and LaTeX) gives a meaning to.
_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")


def escape_markdown(text: object) -> str:
    """``text`` as a string that Markdown shows literally (each special character backslash-escaped).

    Not for inside a code span (between backticks), where backslashes show as they are.
    """
    return _SPECIAL.sub(r"\\\1", str(text))
