"""Every file, folder and module the docs name in backticks exists (issue #39, item 5).

Read: ``README.md`` and ``docs/*.md``; inline code spans only (fenced code blocks hold commands and
file contents, not references).

A span is a **path** when it contains a ``/`` or ends in one of :data:`SUFFIXES`. It must exist
relative to the repository root, to ``analytics/`` (the docs name library modules by their package,
``suites/sampling.py``), to ``docs/`` for a file there (``../README.md``), or, for Streamlit's own
source that the README cites (``runtime/app_session.py``), to the installed ``streamlit`` package.

A span is a **module** when it is a dotted name (``analytics.team.accounts``,
``ui.auth.IDLE_MINUTES``, ``runs.colour_scale.pooled_percentile``) whose first part is a folder of
Python files at the root or a package or module of ``analytics/``. Its longest prefix that is a
module file or package must exist, and the name after it, if any, must occur in that module's
source: found by reading files, never by importing them.

Not checked: spans with a space, starting with ``-``, holding ``:`` (a URL, ``ade:sky``), a
placeholder or pattern (``<``, ``*``, ``$``, ``{``), a query or an elision (``?``, ``&``, ``=``,
``…``), or alternatives (``|``); absolute and home paths (``/usr/bin/chromium``, ``~/.cache/…``),
which are outside the checkout by definition. What the docs name on purpose outside the repository
is listed, with its reason, in :data:`NOT_IN_THE_REPOSITORY` and :data:`ELSEWHERE`.

The project is self-contained: no text file of the checkout cites design notes that live outside it
(a ``DESIGN`` file or its numbered sections) or a path beside the checkout other than the optional
reference data (:data:`OUTSIDE`); what the method needs is written in ``docs/method.md``.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "analytics"
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: A span ending in one of these is a file name even without a ``/``.
SUFFIXES = (".py", ".md", ".toml", ".json", ".txt", ".sh", ".ipynb", ".csv", ".yml")

#: Places outside the repository, or made only at run time, that the docs name on purpose; a path
#: passes when it is one of them or lies inside one (``./`` and a trailing ``/`` ignored).
NOT_IN_THE_REPOSITORY = {
    "../shared/reference",  # real reference data beside the checkout: tests and benchmarks read it, or skip
    "workspace",  # the default workspace, made by the first run (gitignored)
    "arrays",  # a workspace's array store, `<workspace>/arrays/`
    "backdrop-check",  # what `check` writes by default (`--out`)
    ".venv",  # the virtual environment backdrop.sh makes
    ".cache",  # the demo asset cache, `.cache/assets/`, made by `fetch-assets`
    ".streamlit/secrets.toml",  # the operator's single sign-on secrets, never committed
}

#: Files of other projects, or a user's own, that the docs name by their bare name.
ELSEWHERE = {
    "Color_image.py", "generated_background.py", "train.py",  # the XIMAGENET-12 authors' code
    "save_testdata.py",  # Zukang-Liao/bgtest
    "measurement.py", "datamat.py", "ML4MLassessor.py",  # Zukang-Liao/ML4ML-invariance-testing
    "challenge_eval.py", "in_to_in9.json",  # MadryLab/backgrounds_challenge
    "labels.txt", "policy.toml", "summary.md", "sso-roles.toml",  # a user's files in README's examples
    "zebra/zebra-field",  # a workspace image id (README's keyword CSV), not a path
}  # fmt: skip

_SKIP = re.compile(r"\s|^-|[:<*${?&=…|]")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


def code_spans(text: str) -> list[tuple[int, str]]:
    """(line number, content) of every inline code span outside fenced blocks; a span never
    crosses a blank line, so one stray backtick cannot pair up the rest of the file."""
    spans: list[tuple[int, str]] = []
    paragraph: list[tuple[int, str]] = []
    fenced = False

    def flush() -> None:
        if paragraph:
            start, block = paragraph[0][0], "\n".join(line for _, line in paragraph)
            for match in _SPAN.finditer(block):
                spans.append((start + block.count("\n", 0, match.start()), match.group(2).strip()))
            paragraph.clear()

    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            flush()
            fenced = not fenced
        elif fenced:
            continue
        elif not line.strip():
            flush()
        else:
            paragraph.append((number, line))
    flush()
    return spans


@functools.cache
def _streamlit_dirs() -> tuple[Path, ...]:
    spec = importlib.util.find_spec("streamlit")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return ()
    package = Path(next(iter(spec.submodule_search_locations)))
    return (package, package.parent)


@functools.cache
def _package_roots() -> tuple[frozenset[str], frozenset[str]]:
    """Folders of Python files at the root; packages and modules of analytics/."""
    top = {d.name for d in ROOT.iterdir() if d.is_dir() and not d.name.startswith(".") and any(d.glob("*.py"))}
    library = {p.stem for p in LIBRARY.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}
    return frozenset(top), frozenset(library - {"__init__"})


def kind(span: str) -> str | None:
    """'path', 'module' or None (not checked) for a code span's content."""
    if not span or _SKIP.search(span) or span.startswith(("/", "~")):
        return None
    if "/" in span or span.endswith(SUFFIXES):
        return "path"
    if _DOTTED.fullmatch(span):
        top, library = _package_roots()
        if span.split(".")[0] in top | library:
            return "module"
    return None


def path_problem(span: str, document: Path) -> str | None:
    name = span.removeprefix("./").rstrip("/")
    if name in ELSEWHERE or any(name == p or name.startswith(p + "/") for p in NOT_IN_THE_REPOSITORY):
        return None
    bases = [ROOT, LIBRARY, *([document.parent] if document.parent != ROOT else []), *_streamlit_dirs()]
    if any((base / name).exists() for base in bases):
        return None
    return "names no file or folder (looked in the repository root, analytics/, the document's folder, streamlit/)"


def module_problem(span: str) -> str | None:
    parts = span.split(".")
    top, _ = _package_roots()
    base = ROOT if parts[0] in top else LIBRARY
    for i in range(len(parts), 0, -1):
        stem = base.joinpath(*parts[:i])
        source = stem / "__init__.py" if (stem / "__init__.py").is_file() else stem.with_suffix(".py")
        if source.is_file():
            if i == len(parts) or re.search(rf"\b{re.escape(parts[i])}\b", source.read_text(encoding="utf-8")):
                return None
            return f"{parts[i]!r} does not occur in {source.relative_to(ROOT)}"
        if stem.is_dir() and i == len(parts):  # a folder of modules without __init__.py (benchmarks)
            return None
    return f"names no module (looked under {'analytics/' if base == LIBRARY else 'the repository root'})"


def problems(document: Path) -> list[str]:
    """One line per stale path or module in ``document``: where, the span, what is wrong."""
    label = document.relative_to(ROOT) if document.is_relative_to(ROOT) else document.name
    found = []
    for line, span in code_spans(document.read_text(encoding="utf-8")):
        what = kind(span)
        problem = path_problem(span, document) if what == "path" else module_problem(span) if what == "module" else None
        if problem:
            found.append(f"{label}:{line}: `{span}` {problem}")
    return found


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_and_module_the_docs_name_exists(document):
    assert problems(document) == []


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        ("analytics/workspace/store.py", "path"),
        ("suites/sampling.py", "path"),
        ("pyproject.toml", "path"),
        ("analytics.team.accounts", "module"),
        ("ui.auth.IDLE_MINUTES", "module"),
        ("runs.colour_scale.pooled_percentile", "module"),
        ("st.login", None),  # not one of ours
        ("python -m analytics", None),
        ("--out", None),
        ("https://example.org/a.py", None),
        ("tests/e2e/test_browser_role_writes*.py", None),
        ("pages/<N>_<Name>.py", None),
        ("/usr/bin/chromium", None),
        ("~/.cache/backdrop/assets", None),
        ("ade:sky", None),
    ],
)
def test_what_counts_as_a_path_or_a_module(span, expected):
    assert kind(span) == expected


def test_a_stale_path_or_module_is_reported(tmp_path):
    document = tmp_path / "stale.md"
    document.write_text(
        "See `analytics/jobs.py` and `analytics.team.assignments.blind_name`; `analytics/jobs/` is fine.\n"
        "```\nanalytics/in_a_fence.py\n```\n`analytics.judging.assignments.blind_name` too; `benchmarks.gpu`, not `benchmarks.nope`.\n"
    )
    found = problems(document)
    assert found == [
        "stale.md:1: `analytics/jobs.py` names no file or folder (looked in the repository root, analytics/, the document's folder, streamlit/)",
        "stale.md:1: `analytics.team.assignments.blind_name` 'assignments' does not occur in analytics/team/__init__.py",
        "stale.md:5: `benchmarks.nope` names no module (looked under the repository root)",
    ]


#: Text files the self-containment check reads (tracked, or new and not ignored).
TEXT_SUFFIXES = (".py", ".md", ".toml", ".sh", ".ipynb", ".txt", ".cfg", ".ini", ".json")

#: What points outside the repository: the design notes' name (``DESIGN`` then ``.md``), a section of
#: them (``DESIGN`` and a section sign, in either order), or a path into the folder beside the checkout
#: other than its reference data (``NOT_IN_THE_REPOSITORY``).
OUTSIDE = re.compile(r"\bDESIGN(?:\.md\b|\s*§)|§\s*[\d.]+\s+of\s+DESIGN\b|\.\./shared\b(?![/\\]reference\b)")


def outside_references(path: Path) -> list[str]:
    """``line: text`` of each line of ``path`` that points at notes or folders outside the repository."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [f"{number}: {line.strip()}" for number, line in enumerate(lines, start=1) if OUTSIDE.search(line)]


def project_text_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, capture_output=True, check=True, text=True,
        ).stdout.split("\0")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the project's files cannot be listed")
    return [ROOT / name for name in listed if name.endswith(TEXT_SUFFIXES) and (ROOT / name).is_file()]  # a deleted file is still listed


def test_no_file_points_outside_the_repository():
    files = project_text_files()
    assert len(files) > 100  # the listing found the project
    found = {path.relative_to(ROOT).as_posix(): lines for path in files if (lines := outside_references(path))}
    assert found == {}


def test_references_outside_the_repository_are_found(tmp_path):
    design, beside = "DESIGN", "../" + "shared"  # built from parts, so this file names none of them
    module = tmp_path / "m.py"
    module.write_text(
        f'"""Signals ({design} §1.6)."""\n'
        f"# see {design}.md\n"
        f"# ({design}  §4)\n"
        f"# (§1.6 of {design})\n"
        f"# {beside}/{design}.md\n"
        f"# {beside}\n"
        f"REFERENCE = ROOT / '{beside}/reference/bgtest'  # the reference data: allowed\n"
        f"# {design}S.md, DESIGNER §2, docs/method.md, 'Signals', {beside}_cache: not references\n"
        f"# {beside}/references\n"
    )
    assert [int(line.split(":")[0]) for line in outside_references(module)] == [1, 2, 3, 4, 5, 6, 9]
