"""ui.markdown: user-supplied names inside Markdown are shown as written (issue 25.11)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

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


# -- every name in Markdown-rendering text is escaped (issue 42.3) ------------------------------------------------------
# Streamlit renders Markdown in these calls' text, labels and help (progress text and spinners too).
RENDERING_CALLS = {
    "progress", "spinner", "toast", "status", "caption", "markdown", "write", "info", "warning", "error", "success", "title", "header",
    "subheader", "tabs", "expander", "popover", "metric", "button", "download_button", "link_button", "page_link", "form_submit_button",
    "checkbox", "toggle", "radio", "selectbox", "multiselect", "select_slider", "slider", "text_input", "text_area", "number_input",
}  # fmt: skip
RENDERED_KEYWORDS = ("text", "label", "help", "body", "placeholder", "caption")
# Values that carry a name someone typed or uploaded: a model, annotator, target, suite, class, keyword, note ...
NAME_WORDS = {
    "name", "names", "model", "models", "annotator", "annotators", "target", "targets", "suite", "label", "user", "class_name", "keyword",
    "keywords", "note", "reason", "adjudicator", "candidate", "baseline", "others", "compare", "pairs", "classes", "alias",
}  # fmt: skip
# (file, expression) pairs the rule flags whose value is Backdrop's own text or a number, never typed by a user.
NOT_USER_TEXT = {
    ("app.py", "label"): "a workflow step's title from STEPS",
    ("pages/10_Assessor.py", "ASSESSORS[name].title"): "an assessor kind's title",
    ("pages/10_Assessor.py", "target"): "a judgment label (LABELS)",
    ("pages/10_Assessor.py", "explanation.base_value[model]"): "a number",
    ("pages/11_Methods.py", "int(targets)"): "a count",
    ("pages/11_Methods.py", "request['targets']"): "a count",
    ("pages/11_Methods.py", "name"): "a sampling method's name (SAMPLING_METHODS)",
    ("pages/16_Failures.py", "METHODS[method].name"): "an attribution method's name",
    ("pages/7_Saliency.py", "METHODS[settings.method].name"): "an attribution method's name",
    ("pages/7_Saliency.py", "METHODS[methods[0]].name"): "an attribution method's name",
    ("pages/4_Suites.py", "suite.id"): "a hex id",
    ("pages/4_Suites.py", "suite.method"): "a sampling method's name",
    ("pages/4_Suites.py", "' of the classes picked' if request.classes else ''"): "constant text",
    ("pages/6_Matrices.py", "pairs.attrs['n_points']"): "a count",
    ("pages/8_Judge.py", "last['label']"): "a judgment label (LABELS)",
    ("pages/8_Judge.py", "label"): "a judgment label (LABELS)",
    ("ui/adjudication.py", "LABEL_COLOURS[label]"): "a colour of a judgment label",
    ("ui/adjudication.py", "label"): "a judgment label (LABELS)",
    ("ui/auth.py", "_needs(user, permission)"): "role names",
    ("ui/auth.py", "user.role"): "a role (ROLES)",
    ("ui/data_import.py", "note"): "a sentence with a count, built above",
}


def _names_a_user_typed(expression: ast.expr) -> bool:
    calls = [node for node in ast.walk(expression) if isinstance(node, ast.Call)]
    if any(getattr(call.func, "id", getattr(call.func, "attr", "")) in ("escape_markdown", "len") for call in calls):
        return False
    for node in ast.walk(expression):
        word = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            word = node.slice.value
        if isinstance(word, str) and (word in NAME_WORDS or word.endswith("_name")):
            return True
    return False


def _f_strings(node: ast.expr):
    if isinstance(node, ast.JoinedStr):
        yield node
    elif isinstance(node, (ast.List, ast.Tuple)):
        for element in node.elts:
            yield from _f_strings(element)
    elif isinstance(node, ast.BinOp):
        yield from _f_strings(node.left)
        yield from _f_strings(node.right)


def test_every_name_in_markdown_rendering_text_is_escaped():
    """An ``ast`` walk of app.py, pages/ and ui/: a name-like value inside an f-string that a
    Markdown-rendering call shows (progress text, spinners, toasts, captions, tab / expander / metric /
    widget labels ...) goes through ``escape_markdown`` (a model named ``[m](javascript:alert(1))``
    arrived unescaped in the Backgrounds Challenge's progress text)."""
    root = Path(__file__).resolve().parents[2]
    unescaped, allowed_seen = [], set()
    for path in [root / "app.py", *sorted((root / "pages").glob("*.py")), *sorted((root / "ui").glob("*.py"))]:
        relative = path.relative_to(root).as_posix()
        for call in ast.walk(ast.parse(path.read_text())):
            if not isinstance(call, ast.Call) or getattr(call.func, "attr", None) not in RENDERING_CALLS:
                continue
            shown = [*call.args, *(keyword.value for keyword in call.keywords if keyword.arg in RENDERED_KEYWORDS)]
            for value in (v for arg in shown for f in _f_strings(arg) for v in f.values if isinstance(v, ast.FormattedValue)):
                if _names_a_user_typed(value.value):
                    key = (relative, ast.unparse(value.value))
                    if key in NOT_USER_TEXT:
                        allowed_seen.add(key)
                    else:
                        unescaped.append(f"{relative}:{call.lineno}: {key[1]}")
    assert unescaped == []
    assert set(NOT_USER_TEXT) - allowed_seen == set(), "an allowed expression is gone: drop it from NOT_USER_TEXT"
