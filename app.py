"""Backdrop dashboard: ``streamlit run app.py``.

The entry point sets the page config, the sidebar shared by every page (workspace folder, annotator
name; in team mode the signed-in account and sign-out instead), the sign-in gate of team mode
(:func:`ui.auth.require_sign_in`) and the navigation: Home (below) plus every
``pages/<N>_<Name>.py``, grouped in the sidebar's sections of :mod:`ui.navigation`. Each page file is
also a complete script on its own (``AppTest.from_file("pages/1_Data.py")``) that passes the same
gate first; a page that Streamlit runs without this entry point is sent back here first (see
:func:`ui.state.init_state`).

The shell paints first (issue 47.8: a start showed a blank page with only "app" in the sidebar for
12–18 s): this file imports nothing that loads torch, scikit-learn or the job kinds (``analytics.runs``,
``analytics.data``, ``ui.jobs``, the pages' libraries), so the navigation and the page's title show within
a few seconds of a start; those libraries load afterwards under a spinner that says so (Home: after its
title; any other page: before it runs). ``tests/app/test_home.py`` checks the first-paint imports in a
fresh interpreter.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from analytics.exceptions import BackdropError
from analytics.team import User, allowed
from analytics.workspace import Workspace, count_rows
from ui import auth, navigation, state, widgets
from ui.markdown import escape_markdown

if TYPE_CHECKING:
    import pandas as pd

ROOT = Path(__file__).resolve().parent
PAGE_FILE = re.compile(r"^(\d+)_(\w+)\.py$")
FETCH_COMMAND = "python -m analytics fetch-assets"
#: The spinner while the first page after a start loads the analysis libraries (torch and the rest).
LOADING = "Loading Backdrop's analysis libraries (only the first page after a start takes this long)…"
#: What the first page after a start imports, in the order it does, as (what the bar says, modules): every
#: step takes a few seconds on a busy 2-core machine, torch and what builds on it most.
LIBRARIES = (
    ("pandas, NumPy and OpenCV", ("pandas", "analytics.data")),
    ("PyTorch", ("torch",)),
    ("torchvision, scikit-learn and SciPy", ("torchvision", "sklearn.metrics", "scipy.stats")),
    ("Backdrop's analysis stages", ("analytics.runs",)),
    ("the background jobs", ("ui.jobs",)),
)
# Home's metric label -> table of analytics/workspace/_schema.py it counts.
COUNTED_TABLES = {
    "Targets": "targets",
    "Classes": "classes",
    "Backgrounds": "backgrounds",
    "Models": "models",
    "Suites": "suites",
    "Runs": "runs",
    "Judgments": "judgments",
}


@dataclass(frozen=True)
class Step:
    """One step of the guided workflow on Home."""

    title: str
    hint: str
    pages: tuple[str, ...]  # page names to link to, first existing one wins
    done: Callable[[dict[str, int]], bool]


STEPS = (
    Step(
        "Bring targets and backgrounds",
        f"Import a target set and a background pool on Data, or build the demo with `{state.DEMO_COMMAND}`.",
        ("Data",),
        lambda n: n["Targets"] > 0 and n["Backgrounds"] > 0,
    ),
    Step("Register a model", "Add a classifier; the EfficientNet-Lite zoo works offline.", ("Models",), lambda n: n["Models"] > 0),
    Step(
        "Sample background suites",
        "Pick N backgrounds per target: random, nearest, interval, keywords or the ontology.",
        ("Suites",),
        lambda n: n["Suites"] > 0,
    ),
    Step("Run a model over a suite", "Composite, classify, and draw the variance matrices.", ("Run", "Matrices"), lambda n: n["Runs"] > 0),
    Step("Judge the matrices", "Label each model invariant, borderline or variant.", ("Judge",), lambda n: n["Judgments"] > 0),
    Step(
        "Compare annotators and the assessor",
        "Inter-rater agreement, and a classifier that learns your judgments.",
        ("Agreement", "Assessor"),
        lambda n: False,  # open-ended: always worth revisiting once there are judgments
    ),
)


# -- navigation ------------------------------------------------------------------------------
def page_files() -> list[Path]:
    """``pages/<N>_<Name>.py`` files sorted by N."""
    found = [p for p in (ROOT / "pages").glob("*.py") if PAGE_FILE.match(p.name)]
    return sorted(found, key=lambda p: int(PAGE_FILE.match(p.name).group(1)))


def openable(names: list[str]) -> list[str]:
    """The pages among ``names`` the signed-in account's role may open (all of them in solo mode): the
    sidebar and Home's links offer only those; the others stay at their URL, where they refuse the role.
    The account is read once (a query in team mode), not once per page."""
    user = auth.signed_in_user()
    return [name for name in names if auth.may(user, navigation.page_permission(name))]


def page_path(*names: str) -> str | None:
    """The first existing page among ``names`` that the session may open, as a path relative to this file, or None."""
    files = {PAGE_FILE.match(p.name).group(2): p for p in page_files()}
    by_name = {name: files[name] for name in openable(list(files))}
    found = next((by_name[n] for n in names if n in by_name), None)
    return None if found is None else str(found.relative_to(ROOT))


def sidebar(user: User | None) -> None:
    with st.sidebar:
        if user is not None:  # team mode: the server's workspace, and judgments signed by the account
            auth.account_sidebar(user)
            return
        widgets.persistent_text_input(
            "Workspace",
            key=state.WORKSPACE_PATH,
            help="Folder with backdrop.sqlite; default from $BACKDROP_WORKSPACE. Build one with "
            f"`{state.DEMO_COMMAND} --workspace DIR`.",
        )
        widgets.persistent_text_input(
            "Your name",
            key=state.ANNOTATOR,
            placeholder="annotator name",
            help="Signs your judgments on the Judge page; asked once per browser session.",
        )


# -- Home ------------------------------------------------------------------------------------
def table_counts(workspace: Workspace) -> dict[str, int]:
    """Rows in each of :data:`COUNTED_TABLES`, by metric label."""
    counts = count_rows(workspace, list(COUNTED_TABLES.values()))
    return {label: counts[table] for label, table in COUNTED_TABLES.items()}


def asset_table() -> pd.DataFrame:
    """The demo catalogue's Debian packages, what each provides, and whether it is in the cache."""
    import pandas as pd

    from analytics.demo import is_fetched, load_catalogue  # heavy: see home()

    packages = load_catalogue().packages
    return pd.DataFrame(
        {
            "package": list(packages),
            "provides": [info.get("role", "") for info in packages.values()],
            "in cache": [is_fetched(package) for package in packages],
        }
    )


def show_overview(workspace: Workspace, counts: dict[str, int]) -> None:
    from analytics.data import class_target_counts, image_size  # heavy: see home()

    st.subheader("In this workspace")
    for column, (label, value) in zip(st.columns(len(counts)), counts.items()):
        column.metric(label, value, border=True)
    st.caption(
        f"Workspace `{workspace.root}` · schema version {workspace.schema_version} · "
        f"images {image_size(workspace)} × {image_size(workspace)} px"
    )
    per_class = class_target_counts(workspace)
    if not per_class:
        st.caption("No classes yet.")
    else:
        st.markdown("**Classes:** " + ", ".join(f"{escape_markdown(name)} ({n})" for name, n in per_class.items()))


@dataclass(frozen=True)
class Finding:
    """Home's headline: the main suite, the run of the model the backgrounds hit hardest (or, where no model
    is set apart, of the lowest composite accuracy), and a sentence."""

    suite_id: str
    run_id: str
    sentence: str


def finding(workspace_path: str, runs: pd.DataFrame) -> Finding | None:
    """On the main suite (:func:`analytics.findings.headline`: the one most registered real models ran over), a
    sentence on its real models by composite accuracy, naming the one the backgrounds hit hardest and least only
    where McNemar's test on the paired composites sets them apart (zoo heads only where no real model ran;
    :func:`ui.story.headline_sentence`).

    Parameters
    ----------
    workspace_path : str
    runs : DataFrame
        :func:`analytics.runs.list_runs`.

    Returns
    -------
    Finding or None
        None while no suite has a finished current run.
    """
    from analytics.findings import headline  # heavy: see home()
    from ui import story

    found = headline(runs, story.outcomes(workspace_path, runs))
    if found is None:
        return None
    return Finding(found.suite_id, str(found.lowest["id"]), story.headline_sentence(found))


def show_start_here(workspace: Workspace) -> None:
    """On a workspace with finished runs (a built demo): the finding, a link to the Matrices page's
    comparison of the suite's models (the headline's model first), the zoo's known reliance against what
    Backdrop measured (where zoo heads ran) and the story view (:mod:`ui.story`: what breaks each model).
    Not for annotators of team mode: they judge blind, so they see no model's results by name."""
    from analytics.runs import list_runs  # heavy: see home()
    from ui import story

    if workspace.actor is not None and not allowed(workspace.actor.role, "browse"):
        return
    runs = list_runs(workspace)
    found = finding(str(workspace.root), runs)
    path = page_path("Matrices")
    if found is None or path is None:
        return
    with st.container(border=True):
        st.subheader("Start here", anchor=False)
        st.markdown(found.sentence)
        st.page_link(
            path, label="See the variance matrices, models side by side", icon=":material/arrow_forward:",
            query_params={"run": found.run_id, "tab": "compare"},
        )  # fmt: skip
        story.show_reliance(workspace)
        story.show_story(workspace, runs, matrices_page=path, failures_page=page_path("Failures"))


def show_next_steps(counts: dict[str, int]) -> None:
    st.subheader("What to do next")
    next_index = next(i for i, step in enumerate(STEPS) if not step.done(counts))
    for index, step in enumerate(STEPS):
        icon = (
            ":material/check_circle:"
            if index < next_index or step.done(counts)
            else ":material/arrow_forward:" if index == next_index else ":material/radio_button_unchecked:"
        )
        label = f"**{step.title}**" if index == next_index else step.title
        path = page_path(*step.pages)
        if path is None:
            st.caption(f"{icon} {label} — {' / '.join(step.pages)} page not installed")
        else:
            st.page_link(path, label=label, icon=icon)
        if index == next_index:
            st.caption(step.hint)


def show_assets(workspace: Workspace) -> None:
    import pandas as pd

    from analytics.data import image_sources  # heavy: see home()
    from analytics.demo import CACHE_ENV_VAR, default_cache_dir

    st.subheader("Assets and licences")
    try:
        assets = asset_table()
    except BackdropError as err:  # a damaged catalogue must not hide the rest of Home
        st.warning(f"Cannot read the demo catalogue: {escape_markdown(err)}")
        assets = pd.DataFrame(columns=["package", "provides", "in cache"])
    n_cached = int(assets["in cache"].sum())
    st.markdown(
        f"Demo assets: **{n_cached} of {len(assets)}** Debian packages are in the cache `{default_cache_dir()}` "
        f"(set `${CACHE_ENV_VAR}` to keep them elsewhere)."
    )
    if n_cached < len(assets):
        st.caption(
            f"Fetch the missing ones with `{FETCH_COMMAND}` (or `{state.DEMO_COMMAND}`, which fetches what it needs), "
            "or import your own folders on the Data page."
        )
    with st.expander("Demo packages"):
        st.dataframe(assets, hide_index=True, width="stretch")
    sources = image_sources(workspace)
    if sources.empty:
        st.caption("No images yet, so no sources or licences to list.")
    else:
        st.caption("Where the workspace's images come from:")
        licence = st.column_config.TextColumn("licence", width=110, help="Hover a cell for the whole licence and its authors.")
        st.dataframe(sources, hide_index=True, width="stretch", column_config={"licence": licence})  # every column in the half-width column (#47.9)


def load_libraries() -> None:
    """Import :data:`LIBRARIES` under :data:`LOADING`'s spinner and a bar naming each step (nothing on
    screen when they are loaded: every page after the first).

    Every run draws the same one placeholder here, loading or not: a run that drew the spinner and the
    bar as elements of their own, and the next one that did not, put the page's elements at other
    positions, and the browser then rebuilt them (an open tab fell back to the first one, seen in the
    e2e walks that open the Data page first on a fresh server)."""
    slot = st.empty()
    if all(module in sys.modules for _, modules in LIBRARIES for module in modules):
        return
    with slot.container(), st.spinner(LOADING, show_time=True):
        bar = st.progress(0.0)
        for step, (what, modules) in enumerate(LIBRARIES):
            bar.progress(step / len(LIBRARIES), text=f"Loading {what} ({step + 1} of {len(LIBRARIES)})…")
            for module in modules:
                importlib.import_module(module)
    slot.empty()


def home() -> None:
    st.title("Backdrop")
    st.markdown(
        "Background invariance testing of image classifiers: does a model still recognise the object "
        "when the scene behind it changes, and in which scenes does it break?"
    )
    workspace = state.current_workspace()
    # torch, the keyword stack and every job kind load here, under a spinner, not before the page shows
    # (issues 27.12 and 47.8: the first Home after a start took 53 s, later 12-18 s, with nothing on
    # screen); later imports are free
    load_libraries()
    from analytics.runs import runs_snapshot
    from ui.jobs import active_jobs

    with runs_snapshot():  # the runs are listed once per rerun, however many parts ask
        show_home(workspace, active_jobs)


def show_home(workspace: Workspace, active_jobs: Callable[..., None]) -> None:
    """Home below its title, once the libraries are loaded (``active_jobs``: :func:`ui.jobs.active_jobs`)."""
    # long work running in the background: progress, and Cancel for its owner or a lead; blind accounts
    # (annotators) see no job messages, which can name models
    active_jobs(workspace, key="home.jobs.")
    counts = table_counts(workspace)
    if counts["Runs"]:
        with st.spinner("Reading the finding on the main suite: accuracies, the zoo's curve, worst scenes, a matrix and flips…", show_time=True):
            show_start_here(workspace)
    show_overview(workspace, counts)
    left, right = st.columns(2, gap="large")
    with left:
        show_next_steps(counts)
    with right:
        show_assets(workspace)


def main() -> None:
    st.set_page_config(page_title="Backdrop", page_icon=":material/layers:", layout="wide")
    files = {PAGE_FILE.match(path.name).group(2): path for path in page_files()}
    # a signed-in account's sidebar lists only the pages its role may open (an annotator: Home and
    # Judge); the others stay in the navigation, hidden, so their URLs still answer with the refusal
    shown = openable(list(files))
    hidden = [st.Page(str(files[name].relative_to(ROOT)), visibility="hidden") for name in files if name not in shown]
    home_page = st.Page(home, title="Home", icon=":material/home:", default=True)
    sections = {"": [home_page, *hidden]}
    for title, names in navigation.group_pages(shown).items():
        sections[title] = [st.Page(str(files[name].relative_to(ROOT))) for name in names]
    pages = [page for section in sections.values() for page in section]
    # before init_state: from here on Streamlit uses this navigation (hidden until a team member signs in)
    # expanded: every section whole (the default folds a long menu after ten pages behind "View more")
    menu = st.navigation(sections, position="hidden" if auth.sign_in_pending() else "sidebar", expanded=True)
    state.init_state()
    resume = st.session_state.pop(state.RESUME_PAGE, None)
    if resume:
        st.switch_page(next((page for page in pages if page.url_path == resume), pages[0]), query_params=st.query_params.to_dict())
    sidebar(auth.require_sign_in())  # team mode: the sign-in form only, until signed in
    if menu is home_page:  # Home draws its title first, then loads the libraries
        menu.run()
        return
    # another page imports them before it draws anything: the navigation is up, and this says why the wait
    load_libraries()
    from analytics.runs import runs_snapshot

    with runs_snapshot():  # the runs are listed once per rerun, however many parts ask
        menu.run()


main()
