"""Streamlit-only helpers shared by ``app.py`` and the pages: session state, caches, widgets.

Nothing here computes results; the library (:mod:`analytics`) does. This package only keeps pages
short: one place for session-state keys, one for caching, one for reusable widgets.
"""
