"""The library's shape, read from its source with ``ast`` (nothing is imported): stage packages in
pipeline order, no import circles, no file past 600 lines; and the app (``app.py``, ``pages/``, ``ui/``)
opens a workspace in one place only.

:data:`LAYERS` is the pipeline order, written once (``docs/ARCHITECTURE.md`` explains it): a module
may import its own package and anything in a lower layer, never a higher one. Every import counts,
also one inside a function or under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "analytics"
MAX_LINES = 600

#: Shared modules every layer may use.
SHARED = ("exceptions", "_validation", "_threads", "_streams", "_install", "_progress", "_optional", "_choices")
#: Stage packages, lowest first; then the CLI on top.
LAYERS = (
    "workspace", "team", "data", "models", "inference", "keywords", "ontology", "suites", "variance", "runs",
    "saliency", "judging", "assessor", "comparison", "zoo", "robustness", "figures", "findings", "repository", "gate", "demo", "api",
    "jobs", "commands", "cli", "__main__",
)  # fmt: skip


def _modules() -> dict[str, Path]:
    found = {}
    for path in LIBRARY.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the analytics modules it imports (``a.b.c`` resolved to the longest known module)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in map(resolve, targets):
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _layer(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def test_no_import_circles():
    assert circles(import_graph()) == []


def test_circles_are_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_lower_stage_never_imports_a_higher_one():
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        if _layer(target) not in SHARED and _layer(module) in rank and rank[_layer(target)] > rank[_layer(module)]
    )
    assert upward == []


def test_the_top_level_holds_only_stage_packages_and_shared_modules():
    top = {path.stem for path in LIBRARY.glob("*.py") if path.stem != "__init__"}
    top |= {path.name for path in LIBRARY.iterdir() if (path / "__init__.py").exists()}
    assert top <= set(LAYERS) | set(SHARED), sorted(top - set(LAYERS) - set(SHARED))
    assert set(LAYERS) <= top, "a layer with no package: update LAYERS and docs/ARCHITECTURE.md"


def test_no_file_is_past_600_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for folder in ("analytics", "ui", "pages")
        for path in (ROOT / folder).rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


#: The one function of the app that constructs a :class:`~analytics.workspace.Workspace`: it acts as
#: the signed-in account (team mode), so every library write the app makes checks a role.
WORKSPACE_OPENER = ("ui/state.py", "open_workspace")


def workspace_constructions(paths: list[Path], base: Path = ROOT) -> list[tuple[str, str]]:
    """(file relative to ``base``, enclosing function or '<module>') of each ``Workspace(...)`` call in ``paths``."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(), filename=str(path))
        for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
            name = getattr(scope, "name", "<module>")
            inner = {id(n) for f in ast.walk(scope) if f is not scope and isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)}
            for node in ast.walk(scope):
                called = node.func if isinstance(node, ast.Call) else None
                if id(node) not in inner and getattr(called, "id", getattr(called, "attr", None)) == "Workspace":
                    found.append((path.relative_to(base).as_posix(), name))
    return found


def test_the_app_opens_workspaces_only_through_one_helper():
    app = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]
    assert set(workspace_constructions(app)) == {WORKSPACE_OPENER}


def test_workspace_constructions_are_found(tmp_path):
    page = tmp_path / "page.py"
    page.write_text("import analytics.workspace as w\nw.Workspace('x')\ndef f():\n    def g():\n        return Workspace('y', create=False)\n    return g\n")
    assert sorted(workspace_constructions([page], tmp_path)) == [("page.py", "<module>"), ("page.py", "g")]


#: Calls that run SQL on a connection, and SQL in a string literal (upper-case keywords, as the library writes them).
SQL_CALLS = ("execute", "executemany", "executescript")
SQL_TEXT = re.compile(r"\bSELECT\b[\s\S]*\bFROM\b|\bINSERT\s+(OR\s+\w+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b|\b(CREATE|DROP|ALTER)\s+(TABLE|INDEX|VIEW)\b|\bPRAGMA\s+\w+")
#: Calls that train a model (scikit-learn's estimators and their kin).
FIT_CALLS = ("fit", "fit_transform", "fit_predict", "partial_fit")


def app_logic(paths: list[Path], base: Path = ROOT) -> list[tuple[str, int, str]]:
    """(file relative to ``base``, line, what) of each SQL call, SQL string or model fit in ``paths``."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            where = (path.relative_to(base).as_posix(), getattr(node, "lineno", 0))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in SQL_CALLS:
                    found.append((*where, f"SQL call .{node.func.attr}()"))
                elif node.func.attr in FIT_CALLS:
                    found.append((*where, f"model fit .{node.func.attr}()"))
            text = None
            if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts together
                text = "".join(part.value for part in node.values if isinstance(part, ast.Constant) and isinstance(part.value, str))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            if text and SQL_TEXT.search(text):
                found.append((*where, f"SQL text {SQL_TEXT.search(text).group(0)!r}"))
    return sorted(set(found))


def test_no_page_or_ui_module_runs_sql_or_trains_a_model():
    """Pages and ui/ lay out widgets and call the library: SQL lives in analytics/workspace and the stage
    packages, training in analytics/ (issue 39.3), so a notebook gets the same numbers as the page."""
    app = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]
    assert app_logic(app) == []


def test_sql_and_fits_in_the_app_are_found(tmp_path):
    page = tmp_path / "page.py"
    page.write_text(
        "def f(workspace, conn, model, table):\n"
        "    workspace.query('SELECT id FROM targets ORDER BY id')\n"
        "    conn.execute('UPDATE runs SET status = ?', ('x',))\n"
        "    workspace.query_one(f'SELECT COUNT(*) FROM {table}')\n"
        "    model.fit([[0]], [1])\n"
        "    st.selectbox('Select a suite from the list', [])\n"  # words, not SQL
    )
    assert [(line, what.split()[0]) for _, line, what in app_logic([page], tmp_path)] == [(2, "SQL"), (3, "SQL"), (3, "SQL"), (4, "SQL"), (5, "model")]


def names_reference_data(path: Path) -> list[int]:
    """Lines of ``path`` whose code (not a docstring) names ``shared/reference``: a string holding it, or a
    path built with ``/`` from the parts ``"shared"`` and ``"reference"``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = {
        id(node.body[0].value) for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
        and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }  # fmt: skip
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if re.search(r"shared[/\\]+reference", node.value):
                found.append(node.lineno)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            parts = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant)}
            if {"shared", "reference"} <= parts:
                found.append(node.lineno)
    return sorted(set(found))


def test_the_product_never_offers_the_test_reference_data():
    """Issue 42.13: only tests and benchmarks read ``../shared/reference``; the product offers the
    workspace's own data and the files a user names."""
    product = [ROOT / "app.py", *(p for folder in ("analytics", "ui", "pages") for p in sorted((ROOT / folder).rglob("*.py")))]
    named = {path.relative_to(ROOT).as_posix(): lines for path in product if (lines := names_reference_data(path))}
    assert named == {}


def test_reference_data_paths_are_found(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        '"""Docs may cite ../shared/reference/bgtest."""\n'
        "A = ROOT.parent / 'shared' / 'reference' / 'bgtest'\n"
        "B = '../shared/reference/x.h5'\n"
        "C = ROOT / 'shared' / 'other'\n"
    )
    assert names_reference_data(module) == [2, 3]


#: The public face: every name in every ``__all__`` of the library, which only a package's ``__init__``
#: declares (issue 46.6: 1,383 names before, 1,035 of them in package ``__init__`` files; see
#: ``docs/ARCHITECTURE.md``). It may only shrink: a name a user calls is added here deliberately.
PUBLIC_NAMES_CEILING = 580

#: Imports of a module inside another package (a package's internals), each with its reason; every
#: other import from another package names what its ``__all__`` lists. Keep it short.
INTERNAL_IMPORTS = {
    ("ui/saliency.py", "analytics.saliency.survey"): "the Saliency page's comparison runs the survey's steps one target at a time",
    ("benchmarks/_stand_in.py", "analytics.inference.device"): "the stand-in model makes its batches as the real stream does",
    ("benchmarks/_stand_in.py", "analytics.inference.engine"): "a benchmark patches the engine's model loading with the stand-in",
    ("benchmarks/_stand_in.py", "analytics.inference.stream"): "a benchmark patches the stream's model loading with the stand-in",
    ("benchmarks/_stand_in.py", "analytics.keywords.classifier_patch"): "a benchmark patches the keyword patcher's model loading",
    ("benchmarks/gpu.py", "analytics.inference.backoff"): "the GPU benchmark times the engine's stages apart",
    ("benchmarks/gpu.py", "analytics.inference.device_blend"): "the GPU benchmark times the device paste alone",
    ("benchmarks/gpu.py", "analytics.inference.engine"): "the GPU benchmark times the engine's stages apart",
    ("benchmarks/keywords.py", "analytics.keywords.view_cache"): "the keyword benchmark times the view cache's overlap",
    ("benchmarks/dashboard_waits.py", "analytics.team.launch"): "a started server is waited for as the smoke check does (no user call)",
    ("tools/screenshots.py", "analytics.team.launch"): "a started server is waited for as the smoke check does (no user call)",
    ("tools/smoke.py", "analytics.team.launch"): "the smoke check waits for the server `backdrop.sh serve` started (no user call)",
}


def public_names(library: Path = LIBRARY) -> dict[str, list[str]]:
    """Module -> its ``__all__``, for every module of ``library`` that has one."""
    found = {}
    for path in sorted(library.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
                found[path.relative_to(library.parent).as_posix()] = [element.value for element in node.value.elts]
    return found


def test_only_package_inits_declare_a_public_face_and_it_stays_small():
    """A module of a package is internal to it: only the package's ``__init__`` says what others may
    use. The count of public names may only shrink."""
    names = public_names()
    assert sorted(path for path in names if not path.endswith("/__init__.py")) == []
    total = sum(map(len, names.values()))
    assert total <= PUBLIC_NAMES_CEILING, f"{total} public names, more than {PUBLIC_NAMES_CEILING}: is each new one called by a user?"


def reaching_imports(paths: list[Path], library: Path = LIBRARY, allowed: dict = INTERNAL_IMPORTS) -> list[str]:
    """Imports in ``paths`` of another package's internals: a module inside it, or a name its ``__init__``
    does not list in ``__all__`` (also ``package.name`` on a package imported whole)."""
    root = library.parent
    found = []
    for path in paths:
        relative = path.relative_to(root)
        parts = relative.with_suffix("").parts
        own = parts[1] if parts[0] == library.name and len(parts) > 2 else None  # analytics.<package>.<module>: its package
        aliases: dict[str, str] = {}
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases.update({alias.asname: alias.name for alias in node.names if alias.asname and alias.name.startswith(f"{library.name}.")})
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == library.name):
                continue
            if node.module == library.name:
                aliases.update({alias.asname or alias.name: f"{library.name}.{alias.name}" for alias in node.names})
                continue
            package, *inside = node.module.split(".")[1:]
            if package == own:
                continue
            init = library / package / "__init__.py"
            exported = _all_names(init) if init.exists() else set()
            if (relative.as_posix(), node.module) in allowed:
                continue
            if inside and not (len(inside) == 1 and inside[0] in exported):
                found.append(f"{relative}:{node.lineno}: from {node.module} import ...")
            elif init.exists() and not inside:
                for alias in node.names:
                    module = library.joinpath(package, alias.name)
                    internal = module.with_suffix(".py").exists() or (module / "__init__.py").exists()  # a module of the package
                    if alias.name not in exported and not (internal and (relative.as_posix(), f"{node.module}.{alias.name}") in allowed):
                        found.append(f"{relative}:{node.lineno}: {alias.name} is not in {node.module}.__all__")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                module = aliases[node.value.id].split(".")
                init = library.joinpath(*module[1:], "__init__.py")
                if len(module) == 2 and module[1] != own and init.exists() and not node.attr.startswith("__") and node.attr not in _all_names(init):
                    found.append(f"{relative}:{node.lineno}: {node.value.id}.{node.attr} is not in {'.'.join(module)}.__all__")
    return sorted(set(found))


def test_imports_from_another_package_go_through_its_init():
    """``from analytics.runs import X`` with ``X`` in ``analytics.runs.__all__``, never ``from
    analytics.runs.read import X`` from outside ``analytics/runs/``: a package's ``__all__`` is what other
    packages and users may use, so a module can move inside its package without breaking them. A
    subpackage a package's ``__all__`` lists (``analytics.robustness.bgchallenge``) is part of that
    surface. The app (``app.py``, ``pages/``, ``ui/``), the benchmarks and the tools import the library
    the same way; :data:`INTERNAL_IMPORTS` names the few exceptions. Tests may reach inside."""
    users = [ROOT / "app.py", *(path for folder in ("pages", "ui", "benchmarks", "tools") for path in (ROOT / folder).rglob("*.py"))]
    assert reaching_imports([*sorted(LIBRARY.rglob("*.py")), *sorted(users)]) == []
    assert len(INTERNAL_IMPORTS) <= 15


def test_imports_of_internals_are_found(tmp_path):
    files = {
        "lib/__init__.py": "",
        "lib/a/__init__.py": "from .m import shown, hidden\n__all__ = ['shown']\n",
        "lib/a/m.py": "shown = hidden = 1\n",
        "lib/b/__init__.py": "from lib.a import shown, hidden\nfrom lib.a.m import shown\nfrom lib import a\nimport lib.a as aa\nx = a.shown + a.hidden + aa.hidden\n",
        "app.py": "from lib.a.m import hidden\nfrom lib.a import m\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    paths = [tmp_path / name for name in files]
    assert reaching_imports(paths, tmp_path / "lib", {}) == [
        "app.py:1: from lib.a.m import ...",
        "app.py:2: m is not in lib.a.__all__",
        "lib/b/__init__.py:1: hidden is not in lib.a.__all__",
        "lib/b/__init__.py:2: from lib.a.m import ...",
        "lib/b/__init__.py:5: a.hidden is not in lib.a.__all__",
        "lib/b/__init__.py:5: aa.hidden is not in lib.a.__all__",
    ]
    assert reaching_imports(paths, tmp_path / "lib", {("app.py", "lib.a.m"): "why"}) == reaching_imports(paths, tmp_path / "lib", {})[2:]


def _all_names(init: Path) -> set[str]:
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return {element.value for element in node.value.elts}
    return set()


def _package_imports(path: Path, package: str) -> dict[str, tuple[str, str]]:
    """Bound name -> (absolute module, imported name) of the ``from ... import`` statements in ``path``."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                found[alias.asname or alias.name] = (base, alias.name)
    return found


def shared_export_names(library: Path = LIBRARY) -> dict[str, list[str]]:
    """Names two packages export (``__all__``) with different meanings: name -> the packages that define them.

    A package re-exporting another's name (``from analytics.variance import DEFAULT_SETTINGS``) does not
    give it a second meaning, nor does one wrapping it (a module of the package imports that name from
    the other package, as ``analytics.api``'s ``check`` calls :func:`analytics.gate.check`)."""
    root = library.parent
    packages = {".".join(init.parent.relative_to(root).parts): init for init in sorted(library.rglob("__init__.py"))}
    imports = {package: _package_imports(init, package) for package, init in packages.items()}

    def owner(module: str) -> str | None:
        while module and module not in packages:
            module = module.rpartition(".")[0]
        return module or None

    def origin(package: str, name: str) -> str:
        source = imports[package].get(name)
        if source is None or owner(source[0]) in (None, package):
            return package
        return origin(owner(source[0]), source[1])

    wraps = {  # (package, name, the package that name comes from): a module of the package imports it
        (package, name, origin(owner(module), name))
        for package in packages
        for path in (root / package.replace(".", "/")).glob("*.py")
        for module, name in _package_imports(path, package).values()
        if owner(module) not in (None, package)
    }
    meanings: dict[str, set[str]] = {}
    for package, init in packages.items():
        for name in _all_names(init):
            meanings.setdefault(name, set()).add(origin(package, name))
    clashes = {}
    for name, defined_in in meanings.items():
        kept = {p for p in defined_in if not any((p, name, other) in wraps for other in defined_in - {p})}
        if len(kept) > 1:
            clashes[name] = sorted(kept)
    return clashes


def test_a_name_has_one_meaning_across_packages():
    """Issue 39 ("one concept, several names"): two packages never export one name for two things
    (``DEFAULT_GRID`` was 3 in suites and 128 in variance); a package may re-export another's name."""
    assert shared_export_names() == {}


def test_names_exported_with_two_meanings_are_found(tmp_path):
    files = {
        "lib/__init__.py": "",
        "lib/a/__init__.py": "from .m import GRID, shared\n__all__ = ['GRID', 'shared']\n",
        "lib/b/__init__.py": "from lib.a import shared\nfrom .m import GRID\n__all__ = ['GRID', 'shared']\n",  # shared: re-exported
        "lib/c/__init__.py": "from .m import shared\n__all__ = ['shared']\n",
        "lib/c/m.py": "from lib.a import shared as a_shared\n\ndef shared():\n    return a_shared()\n",  # wraps a's
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert shared_export_names(tmp_path / "lib") == {"GRID": ["lib.a", "lib.b"]}


#: Library files whose messages may hold a whole command line with its flags, and why: the release gate's
#: verdicts and policy template are read in CI logs, where the command to add is the fix; the team server
#: and Ray are started at a shell, with no notebook counterpart.
FLAGGED_COMMAND_FILES = {
    "analytics/gate/policy.py": "the policy template's header comment",
    "analytics/gate/rules.py": "gate verdicts read in CI logs",
    "analytics/team/paths.py": "the team server is started at a shell",
    "analytics/team/server.py": "the team server is started at a shell",
    "analytics/repository/ray_backend.py": "`ray start --head`, Ray's own command",
}
FLAG = re.compile(r"(?<![\w-])--[a-z]")
#: Calls whose string arguments are command-line help or arguments, not messages.
_HELP_CALLS = {"Option", "add_argument", "add_parser", "add_argument_group"}


def flagged_messages(paths: list[Path], base: Path = ROOT) -> list[str]:
    """``file:line: text`` of each string in ``paths`` that names a ``--flag``, outside docstrings, comments,
    command-line help (``Option(...)``, ``add_argument(...)``, a source's ``description``) and argv items
    (a string that is a flag alone)."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(), filename=str(path))
        skipped: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):  # docstrings
                skipped.add(id(node.value))
            called = node.func if isinstance(node, ast.Call) else None
            help_call = getattr(called, "id", getattr(called, "attr", None)) in _HELP_CALLS
            described = isinstance(node, ast.Assign | ast.AnnAssign) and any(
                getattr(target, "id", getattr(target, "attr", None)) == "description" for target in getattr(node, "targets", [getattr(node, "target", None)])
            )
            if help_call or described:
                skipped |= {id(inner) for inner in ast.walk(node)}
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
            if text is None or id(node) in skipped or re.fullmatch(r"--[\w.-]+", text.strip()):
                continue
            if FLAG.search(text):
                found.append(f"{path.relative_to(base).as_posix()}:{node.lineno}: {text.strip()[:120]}")
    return found


def test_no_library_message_names_a_command_line_flag():
    """Issue 46: the library's messages reach a notebook, a page and the command line alike, so they name
    Python parameters (in backticks, which a command translates into its flags with
    :meth:`analytics._validation.ParameterNames.translate`) and commands by name, never a ``--flag``."""
    cli = {LIBRARY / "cli.py", *(LIBRARY / "commands").rglob("*.py")}
    paths = sorted(path for path in LIBRARY.rglob("*.py") if path not in cli and path.relative_to(ROOT).as_posix() not in FLAGGED_COMMAND_FILES)
    assert flagged_messages(paths) == []


def test_flagged_messages_are_found(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        '"""Docs may say --flag."""\n'
        'def f(x):\n'
        '    """So may --this."""\n'
        '    argv = ["--workspace", str(x)]  # an argument, not a message\n'
        '    description = "help for --arch"\n'
        '    parser.add_argument("--n", help="as --n says")\n'
        '    raise ValueError(f"lower --min-confidence below {x}")\n'
    )  # fmt: skip
    assert flagged_messages([module], tmp_path) == ["module.py:7: lower --min-confidence below"]
