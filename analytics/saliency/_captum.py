"""captum, imported when a method first attributes, not when :mod:`analytics.saliency` is imported.

``import captum.attr`` costs about a second (it imports matplotlib.pyplot for its visualisation
module) and, in a notebook without ipywidgets, prints tqdm's "IProgress not found" warning: captum's
progress module imports ``tqdm.auto``, which warns and falls back to the text bar. Backdrop never
shows captum's progress bars (``show_progress`` stays False), so that warning tells the user nothing
and is silenced here; every other warning passes.
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

#: What tqdm's ``tqdm.autonotebook`` says when a notebook has no ipywidgets (``tqdm.notebook.WARN_NOIPYW``).
NO_IPYWIDGETS_WARNING = "IProgress not found"


def captum_module(name: str = "captum.attr") -> ModuleType:
    """``importlib.import_module(name)`` for a captum module, without tqdm's ipywidgets warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=NO_IPYWIDGETS_WARNING)
        return importlib.import_module(name)
