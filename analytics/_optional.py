"""The optional libraries: imported only through :func:`import_optional`, which turns a missing one into one line.

The wheel's core leaves out what only one feature needs; pyproject.toml's extras add it: ``[timm]``,
``[transformers]`` and ``[onnx]`` (onnx and onnxruntime) for those model sources, ``[ray]`` for the
Ray backend. A missing library raises :class:`~analytics.exceptions.MissingDependencyError` naming
the library, the feature and the install command, so the command line answers with one line on
stderr and exit status 2, and a page with one message, not a traceback. ``backdrop.sh`` installs
them all (requirements.txt).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from analytics.exceptions import MissingDependencyError

DISTRIBUTION = "backdrop-invariance"

#: Extra -> the feature that uses it (as the message names it).
EXTRAS = {
    "timm": "timm models (source 'timm')",
    "transformers": "transformers models (source 'transformers')",
    "onnx": "ONNX models (source 'onnx')",
    "ray": "the Ray backend",
}


def import_optional(module: str, *, extra: str) -> ModuleType:
    """``importlib.import_module(module)`` (``"timm"``, ``"timm.data"``, ``"onnxruntime"`` …) of a
    library the extra ``extra`` installs.

    Raises
    ------
    MissingDependencyError
        The library is not installed, e.g. ``the `timm` package, which timm models (source 'timm')
        use, is not installed: pip install 'backdrop-invariance[timm]' (in a checkout: .venv/bin/pip
        install -r requirements.txt)``. A library that is installed but fails to import raises its
        own error (a broken install is not fixed by installing the extra).
    """
    feature = EXTRAS[extra]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        library = module.partition(".")[0]
        if err.name is not None and err.name.partition(".")[0] != library:
            raise
        raise MissingDependencyError(
            f"the `{library}` package, which {feature} use, is not installed: pip install '{DISTRIBUTION}[{extra}]' "
            "(in a checkout: .venv/bin/pip install -r requirements.txt)"
        ) from None
