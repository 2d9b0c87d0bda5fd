"""ui.markdown: user-supplied names inside Markdown are shown as written (issue 25.11)."""

from __future__ import annotations

import re

from ui.markdown import escape_markdown

SPECIAL = "\\`*_{}[]()#+-.!|<>~$"


def test_every_markdown_character_is_backslash_escaped_and_nothing_else():
    name = "**bold** [x](http://e.x) $a$ _i_ `c` # h > q ~~s~~ | t | <b> 1. - + ! {} back\\slash"
    escaped = escape_markdown(name)
    assert escaped.startswith(r"\*\*bold\*\* \[x\]\(http://e\.x\) \$a\$ \_i\_ \`c\`")
    # CommonMark: a backslash before ASCII punctuation shows that character literally
    assert re.sub(r"\\(.)", r"\1", escaped) == name
    assert all(escaped.count("\\" + char) == name.count(char) for char in SPECIAL if char != "\\")
    assert escape_markdown("plain name 3") == "plain name 3" and escape_markdown(42) == "42"
