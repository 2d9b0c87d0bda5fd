"""The sidebar's sections (app.py with :mod:`ui.navigation`): every page in one section by what a person
is doing, each at the URL path it had before (deep links and the browser tests use them)."""

from __future__ import annotations

import re

import streamlit as st

from analytics.workspace import PROJECT_ROOT
from ui.navigation import OTHER, SECTIONS, group_pages

# Every page's URL path: the file name without its number (the paths deep links and tests/e2e use).
PAGE_PATHS = sorted(re.sub(r"^\d+_", "", path.stem) for path in (PROJECT_ROOT / "pages").glob("*.py"))


def test_the_app_groups_every_page_in_a_sidebar_section_at_its_old_url(tiny_workspace, app_runner, monkeypatch):
    given = []
    real = st.navigation

    def spy(pages, **options):
        given.append((pages, options))
        return real(pages, **options)

    monkeypatch.setattr(st, "navigation", spy)
    app = app_runner("app.py", tiny_workspace)
    assert not app.exception and len(given) == 1
    sections, options = given[0]
    assert options["expanded"] is True  # no page folded behind "View more"
    assert isinstance(sections, dict) and list(sections) == ["", *SECTIONS]  # Home on top, then the sections in order
    assert [page.title for page in sections[""]] == ["Home"]
    paths = {title: [page.url_path for page in pages] for title, pages in sections.items() if title}
    assert paths == {title: list(names) for title, names in SECTIONS.items()}
    assert sorted(p for pages in paths.values() for p in pages) == PAGE_PATHS  # all 18, each once, same URLs as before
    assert len(PAGE_PATHS) == 18


def test_a_page_no_section_lists_is_shown_under_more():
    assert group_pages(["Judge", "Data", "Brand_New"]) == {"Prepare data and models": ["Data"], "Judge and assess": ["Judge"], OTHER: ["Brand_New"]}


def test_each_pages_permission_is_the_one_its_gate_asks_for():
    """:data:`ui.navigation.PAGE_PERMISSIONS` against every page's ``require_page(...)`` call, read with ``ast``."""
    import ast

    from ui.navigation import page_permission

    for path in (PROJECT_ROOT / "pages").glob("*.py"):
        calls = [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "require_page"]
        (call,) = calls
        asked = call.args[0].value if call.args else "browse"
        assert page_permission(re.sub(r"^\d+_", "", path.stem)) == asked, path.name


def test_an_annotator_sees_only_the_pages_the_role_may_open(team_workspace, monkeypatch):
    """Issue 42.11: annotators saw every page in the sidebar and were refused on them (the README said hidden)."""
    from streamlit.testing.v1 import AppTest

    from tests.fixtures.app import APP_TIMEOUT_S
    from tests.fixtures.team import TEAM_PASSWORD
    from ui import auth

    monkeypatch.setenv("BACKDROP_TEAM", "1")
    monkeypatch.setenv("BACKDROP_WORKSPACE", str(team_workspace.root))
    given = []
    real = st.navigation
    monkeypatch.setattr(st, "navigation", lambda pages, **options: given.append(pages) or real(pages, **options))
    seen = {}
    for name in ("ann", "ada"):  # the annotator, then the admin
        app = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=APP_TIMEOUT_S).run()
        app.text_input(key=f"{auth.FORM}.name").input(name)
        app.text_input(key=f"{auth.FORM}.password").input(TEAM_PASSWORD)
        app = app.button[0].click().run()
        assert not app.exception
        pages = [page for section in given[-1].values() for page in section if page.url_path]  # Home's url_path is ''
        seen[name] = sorted(page.url_path for page in pages if page.visibility == "visible")
        assert sorted(page.url_path for page in pages) == PAGE_PATHS  # every URL still answers (with the refusal)
    assert seen["ann"] == ["Judge"]
    assert seen["ada"] == PAGE_PATHS
