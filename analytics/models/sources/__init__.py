"""Model sources as one registry of objects: :data:`SOURCES` maps each ``ModelSpec.source`` to the
:class:`ModelSource` that registers, builds and describes such models (after timm's
``@register_model`` and FiftyOne's ``Model`` classes).

One module per source, lowest first: :mod:`._base` (the interface, :class:`Option`, the registry),
:mod:`.efficientnet_lite`, :mod:`.torchvision_models`, :mod:`.torchscript`, :mod:`.head`,
:mod:`.timm_models`, :mod:`.transformers_models`, :mod:`.onnx_models`, :mod:`.in_memory` (an ``nn.Module``
held in Python: :func:`analytics.api.add_model` only). ``add-model``'s options, the
Models page's form and :func:`add_model` are generated from, or dispatch through, this registry; a
new source is one module whose class carries :func:`register_source`.

Importing this package imports no torch (the command line builds its parser from it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import SOURCES, ModelSource, Option, get_source, register_source, registrable_sources, source_for_arch

# Each module registers its source; this order is the order add-model and the form offer them.
# isort: off
from . import efficientnet_lite, torchvision_models, torchscript, head, timm_models, transformers_models, onnx_models, in_memory  # noqa: F401
# isort: on

if TYPE_CHECKING:
    from analytics.models.spec import ModelSpec
    from analytics.workspace import Workspace


def add_model(workspace: Workspace, source: str, name: str | None = None, *, replace: bool = False, **options: Any) -> ModelSpec:
    """Register a model of any registered source.

    Parameters
    ----------
    workspace : Workspace
    source : str
        A key of :data:`SOURCES` whose source is ``registrable``.
    name : str or None, default=None
        The registry name (None only for sources named after their architecture: EfficientNet-Lite).
    replace : bool, default=False
        Overwrite a model of the same name (sources that allow it).
    **options
        The source's :attr:`ModelSource.options` by ``name`` (``checkpoint``, ``label_space``, ``arch``, …).

    Returns
    -------
    ModelSpec
        As stored.

    Raises
    ------
    InvalidInputError
        An unknown source or option, a missing required option, or whatever the source refuses.
    """
    from analytics.exceptions import InvalidInputError

    chosen = get_source(source)
    known = {option.name for option in chosen.options}
    unknown = sorted(set(options) - known)
    if unknown or not chosen.registrable:
        accepted = ", ".join(sorted(known)) or "none (it is not registered by options)"
        raise InvalidInputError(f"{source} models take the options {accepted}; got {', '.join(unknown) or 'none'}")
    missing = [option.name for option in chosen.options if option.required and options.get(option.name) in (None, "")]
    if chosen.needs_name and not name:
        missing.insert(0, "name")
    if missing:
        raise InvalidInputError(f"{source} models need {', '.join(missing)}")
    if replace:
        options["replace"] = True
    return chosen.register(workspace, name, **options)


__all__ = ["SOURCES", "ModelSource", "Option", "add_model", "get_source", "register_source", "registrable_sources", "source_for_arch"]
