"""The code in README.md and docs/*.md is what users copy, so it must fit the code it names.

* Every command line of a shell block that calls Backdrop (``python -m analytics …``, ``backdrop …``,
  ``bash backdrop.sh serve|check …``) parses with the command line's own parser: no stale
  subcommand, flag or choice. Placeholders such as ``SUITE`` are values, as a user would type them.
* Every Python block compiles, and each call it makes into ``analytics.api`` (``bd.name(...)``,
  ``bd.figures.name(...)``) names a function that exists and binds to its signature (the positional
  arguments and keyword names it passes).

* Every Python block runs, in the order of the documents, against a copy of the demo workspace that
  ``bash backdrop.sh serve`` builds (CI's smoke builds it first and names it in
  ``$BACKDROP_DEMO_WORKSPACE``; the blocks are written for it, and open ``"workspace"`` from the folder
  they run in). Without that variable the test skips, saying so; CI fails on the skip. A block that
  cannot run says why in a ``# not run: <reason>`` line: it is checked against the API as it is
  (every call's name and keywords), not run.
* Every ``pycon`` block (``>>>`` lines: ``docs/python.md``'s public API, one example per call) runs as
  a doctest, the blocks of a document one after the other, on a fresh copy of the demo workspace; the
  output each line shows is checked.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import inspect
import io
import os
import re
import shlex
import shutil
import textwrap
from pathlib import Path

import pytest

from analytics import api
from analytics.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^[ \t]*```(\w*)\n(.*?)^[ \t]*```", re.S | re.M)  # also fences indented in a list item
SHELLS = {"bash", "sh", "shell", "console"}
#: The ways a block calls the command line, and the arguments that follow them.
PROGRAMS = (
    re.compile(r"^(?:\S*/)?python3? -m analytics(?:\s+(?P<args>.*))?$"),
    re.compile(r"^backdrop(?:\s+(?P<args>.*))?$"),
    re.compile(r"^bash backdrop\.sh (?P<args>(?:serve|check)\b.*)$"),
)
#: ``bash backdrop.sh serve``'s own switches, which it does not pass to ``python -m analytics serve``.
SCRIPT_ONLY = {"--smoke"}


def blocks(document: Path) -> list[tuple[int, str, str]]:
    """(line, language, text) of every fenced block of ``document``."""
    text = document.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group(1), textwrap.dedent(m.group(2))) for m in FENCE.finditer(text)]


def command_lines(text: str) -> list[tuple[int, list[str]]]:
    """(line offset, arguments) of each Backdrop command line in a shell block; ``$VAR`` of an
    assignment earlier in the block is replaced by its value, a comment dropped."""
    variables: dict[str, str] = {}
    found = []
    for offset, raw in enumerate(text.splitlines()):
        words = shlex.split(raw, comments=True)
        if not words:
            continue
        if len(words) == 1 and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
            name, _, value = words[0].partition("=")
            variables[name] = value
            continue
        line = " ".join(words)
        for name, value in variables.items():
            line = line.replace(f"${name}", value)
        for program in PROGRAMS:
            match = program.match(line)
            if match:
                found.append((offset, [word for word in shlex.split(match.group("args") or "") if word not in SCRIPT_ONLY]))
                break
    return found


def parse_problem(arguments: list[str]) -> str | None:
    """None when the parser takes ``arguments`` (``--help`` included), else what it said."""
    errors = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(errors):
            build_parser().parse_args(arguments or ["--help"])
    except SystemExit as stop:
        if stop.code not in (0, None):
            return errors.getvalue().strip() or f"exit status {stop.code}"
    return None


def _cases(languages: set[str]) -> list[tuple[Path, int, str]]:
    return [(doc, line, text) for doc in DOCUMENTS for line, language, text in blocks(doc) if language in languages]


def _id(case: tuple[Path, int, str]) -> str:
    return f"{case[0].relative_to(ROOT)}:{case[1]}"


SHELL_BLOCKS = _cases(SHELLS)
PYTHON_BLOCKS = _cases({"python"})


@pytest.mark.parametrize("case", SHELL_BLOCKS, ids=[_id(c) for c in SHELL_BLOCKS])
def test_every_command_line_in_the_docs_parses(case):
    document, line, text = case
    problems = [
        f"{document.name}:{line + 1 + offset}: {' '.join(arguments)}: {problem}"
        for offset, arguments in command_lines(text)
        if (problem := parse_problem(arguments)) is not None
    ]
    assert not problems, "\n".join(problems)


def api_calls(tree: ast.AST, alias: str) -> list[tuple[int, list[str], ast.Call]]:
    """(line, attribute path after ``alias``, call) of every ``alias.a.b(...)`` call."""
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            path, target = [], node.func
            while isinstance(target, ast.Attribute):
                path.insert(0, target.attr)
                target = target.value
            if isinstance(target, ast.Name) and target.id == alias and path:
                calls.append((node.lineno, path, node))
    return calls


def call_problem(path: list[str], call: ast.Call) -> str | None:
    """Why ``api.<path>(...)`` as written cannot be called, or None."""
    target: object = api
    for name in path:
        if not hasattr(target, name):
            return f"analytics.api has no {'.'.join(path)}"
        target = getattr(target, name)
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
        return None  # *args / **kwargs: the names are not in the text
    try:
        inspect.signature(target).bind(*call.args, **{k.arg: k.value for k in call.keywords if k.arg})  # type: ignore[arg-type]
    except TypeError as err:
        return f"{'.'.join(path)}(...): {err}"
    return None


@pytest.mark.parametrize("case", PYTHON_BLOCKS, ids=[_id(c) for c in PYTHON_BLOCKS])
def test_every_python_block_in_the_docs_calls_the_api_as_it_is(case):
    document, line, text = case
    tree = ast.parse(text, f"{document.name}:{line}")
    aliases = [a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module == "analytics" for a in node.names if a.name == "api"]
    assert aliases, f"{document.name}:{line}: the block does not import analytics.api (from analytics import api as bd)"
    problems = [f"{document.name}:{line + n}: {problem}" for n, path, call in api_calls(tree, aliases[0]) if (problem := call_problem(path, call))]
    assert not problems, "\n".join(problems)


def test_a_stale_flag_or_api_call_is_reported():
    assert command_lines("W=ws\npython -m analytics info --workspace $W  # x\npip install x\n") == [(1, ["info", "--workspace", "ws"])]
    assert command_lines("bash backdrop.sh serve --smoke --team\n") == [(0, ["serve", "--team"])]
    assert parse_problem(["info", "--no-such-flag"]) is not None
    assert parse_problem(["no-such-command"]) is not None
    assert parse_problem(["info", "--workspace", "ws"]) is None and parse_problem([]) is None
    tree = ast.parse("from analytics import api as bd\nbd.accuracies(1, 2)\nbd.nope()\nbd.check(1, model='m', policy='p', baseine='b')\n")
    found = {tuple(path): call_problem(path, call) for _, path, call in api_calls(tree, "bd")}
    assert found[("accuracies",)] is None
    assert "has no nope" in found[("nope",)]
    assert "baseine" in found[("check",)]


#: Names a folder holding a built demo workspace (``bash backdrop.sh serve``'s ``workspace/``).
DEMO_ENV = "BACKDROP_DEMO_WORKSPACE"
NOT_RUN = re.compile(r"^\s*# not run: (?P<reason>.+)$", re.M)


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory) -> Path:
    """A folder whose ``workspace/`` is a copy of the demo workspace named by :data:`DEMO_ENV` (the
    blocks write: the gate's runs and files, cached predictions)."""
    source = os.environ.get(DEMO_ENV)
    if not source:
        pytest.skip(f"{DEMO_ENV} is not set: build the demo (bash backdrop.sh serve) and set it to its workspace folder")
    if not (Path(source) / "backdrop.sqlite").is_file():
        pytest.fail(f"{DEMO_ENV}={source} holds no workspace (no backdrop.sqlite)")
    folder = tmp_path_factory.mktemp("readme-blocks")
    shutil.copytree(source, folder / "workspace")
    return folder


#: The blocks that run; a ``# not run: <reason>`` block is only checked against the API as it is
#: (above): CI turns a skip into a failure, and such a block needs files the demo lacks by design.
RUN_BLOCKS = [case for case in PYTHON_BLOCKS if not NOT_RUN.search(case[2])]


@pytest.mark.parametrize("case", RUN_BLOCKS, ids=[_id(c) for c in RUN_BLOCKS])
def test_every_python_block_in_the_docs_runs_on_the_demo_workspace(case, demo_folder, monkeypatch):
    document, line, text = case
    import plotly.basedatatypes

    shown = []
    monkeypatch.setattr(plotly.basedatatypes.BaseFigure, "show", lambda figure, *a, **k: shown.append(figure))  # no browser to open
    monkeypatch.chdir(demo_folder)
    namespace: dict = {"__name__": "__readme__"}
    exec(compile(text, f"{document.relative_to(ROOT)}:{line}", "exec"), namespace)  # noqa: S102 - the docs' own code
    if "result" in namespace:  # the gate's files, where the block said
        out = demo_folder / "backdrop-check"
        assert {"junit.xml", "summary.md"} <= {p.name for p in out.iterdir()}, f"{document.name}:{line}: no gate files in {out}"
    assert all(figure.data for figure in shown), f"{document.name}:{line}: an empty figure was shown"


#: ``>>>`` examples (``pycon`` blocks), run as doctests: document -> its blocks in order.
DOCTEST_DOCUMENTS = sorted({case[0] for case in _cases({"pycon"})})


@pytest.mark.parametrize("document", DOCTEST_DOCUMENTS, ids=[str(d.relative_to(ROOT)) for d in DOCTEST_DOCUMENTS])
def test_every_doctest_in_the_docs_runs_on_the_demo_workspace(document, tmp_path, monkeypatch):
    source = os.environ.get(DEMO_ENV)
    if not source:
        pytest.skip(f"{DEMO_ENV} is not set: build the demo (bash backdrop.sh serve) and set it to its workspace folder")
    shutil.copytree(source, tmp_path / "workspace")  # a fresh copy: the examples write
    monkeypatch.chdir(tmp_path)
    parser, globs = doctest.DocTestParser(), {"__name__": "__doctest__"}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    for _, line, text in (case for case in _cases({"pycon"}) if case[0] == document):
        test = parser.get_doctest(text, globs, f"{document.name}:{line}", str(document), line)
        runner.run(test, out=report.write, clear_globs=False)
        globs = test.globs  # the next block sees this one's names (a DocTest runs on a copy)
    assert runner.failures == 0, report.getvalue()
    assert runner.tries >= 20
