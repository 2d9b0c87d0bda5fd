"""The sidebar's sections: the pages grouped by what a person is doing, in the order of the work.

Grouping changes only the sidebar: each page keeps the URL path Streamlit derives from its file
(``pages/6_Matrices.py`` → ``/Matrices``), so deep links and bookmarks still open it.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Section title -> page names (``pages/<N>_<Name>.py``), in sidebar order.
SECTIONS: dict[str, tuple[str, ...]] = {
    "Prepare data and models": ("Data", "Models", "Ontology"),
    "Build suites and run": ("Suites", "Run", "Methods"),
    "Inspect": ("Matrices", "Saliency", "Failures"),
    "Judge and assess": ("Judge", "Agreement", "Adjudication", "Assessor", "Gate"),
    "Neighbouring benchmarks": ("Backgrounds_Challenge", "Scenarios", "Factors"),
    "Repository and team": ("Repository",),
}
#: Section of a page that :data:`SECTIONS` does not list yet: a new page is shown, never lost.
OTHER = "More"
#: The permission (``analytics.team.roles.ACTIONS``) a page asks :func:`ui.auth.require_page` for,
#: where it is not ``browse``. A page a signed-in account may not open is left out of its sidebar
#: (an annotator sees Home and Judge); tests/app/test_navigation.py reads every page's call.
PAGE_PERMISSIONS: dict[str, str] = {"Judge": "judge", "Adjudication": "adjudicate"}
DEFAULT_PERMISSION = "browse"


def page_permission(name: str) -> str:
    """What :func:`ui.auth.require_page` asks of the page ``name``."""
    return PAGE_PERMISSIONS.get(name, DEFAULT_PERMISSION)


def group_pages(names: Sequence[str]) -> dict[str, list[str]]:
    """The page names by section, sections and pages in :data:`SECTIONS` order; sections without an
    installed page are left out; names no section lists go to :data:`OTHER`, in the given order."""
    installed = set(names)
    grouped = {title: [n for n in listed if n in installed] for title, listed in SECTIONS.items()}
    listed = {n for pages in SECTIONS.values() for n in pages}
    grouped[OTHER] = [n for n in names if n not in listed]
    return {title: pages for title, pages in grouped.items() if pages}
