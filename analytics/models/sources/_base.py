"""The interface of a model source and the one registry of them (after timm's ``@register_model``
and FiftyOne's ``Model`` classes).

A :class:`ModelSource` owns everything that differs between the places a classifier comes from: its
registration options (:class:`Option`, read by ``add-model`` and the Models page's form), how the
network is built from a spec (a module returning ``(logits, embedding)``, the embedding tap
included), the preprocessing its registration records, the one layer that is its last
convolutional map (GradCAM's layer and the authors' conv-map statistics), whether gradients flow
and how its parameters are counted. :data:`SOURCES` maps each name to its instance;
:func:`register_source` adds one (a new source is one module plus that decorator).

Standard library only at import: the command line builds ``add-model``'s options from this registry
without importing torch. A source imports its libraries inside its methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from analytics._choices import RESIZE_FILTERS
from analytics.exceptions import InvalidInputError

if TYPE_CHECKING:
    from torch import nn

    from analytics.models.spec import ModelSpec
    from analytics.workspace import Workspace


@dataclass(frozen=True)
class Option:
    """One registration option: a keyword argument of :meth:`ModelSource.register`, a flag of
    ``add-model`` and a field of the Models page's form.

    Attributes
    ----------
    name : str
        The keyword argument (``crop_pct``).
    flag : str
        The command line's flag (``--crop-pct``); sources that share a flag share its type.
    kind : {'text', 'int', 'fraction', 'triple', 'choice', 'path', 'labels', 'object'}
        What the value is: ``triple`` three numbers R,G,B; ``fraction`` a float in (0, 1] (0 in the
        form: the model's own); ``path`` a file or folder (an upload or a server path in the form);
        ``labels`` a label space (``imagenet``, ``in9`` or a class-list file); ``object`` a Python
        object (an ``nn.Module`` in memory: sources that are :attr:`ModelSource.python_only`).
    help : str
        The flag's help.
    label : str
        The form field's label.
    key : str
        The form widget's key.
    default : object, default=None
        The form's initial value (the command line leaves an option out when its flag is not given).
    choices : tuple of str, default=()
        For ``choice``; :meth:`ModelSource.choices` may compute them instead.
    required : bool, default=False
        The registration needs it (``add-model`` and the form say so before anything loads).
    in_form : bool, default=True
        Shown by the Models page's form (some flags are the command line's only).
    file_types : tuple of str, default=()
        For ``path``: the upload's file extensions.
    metavar : str or None, default=None
    """

    name: str
    flag: str
    kind: str
    help: str
    label: str
    key: str
    default: Any = None
    choices: tuple[str, ...] = ()
    required: bool = False
    in_form: bool = True
    file_types: tuple[str, ...] = ()
    metavar: str | None = None


class ModelSource:
    """A place classifiers come from (subclass it; :func:`register_source` adds an instance to
    :data:`SOURCES`).

    Class attributes
    ----------------
    fallback : bool        claims any ``--arch`` no other source claims
    copies_checkpoint : bool   the workspace keeps a copy of its checkpoint file or folder
    arch_word : str or None    the ``--arch`` word that names it (no ``arch`` option)
    name : str             the ``source`` of the specs it registers (``ModelSpec.source``)
    label : str            the Models page's choice
    description : str      one line for ``add-model --help``
    options : tuple of Option   what :meth:`register` takes besides the workspace and the name
    registrable : bool     registered by options (heads are registered by the zoo)
    python_only : bool     registered from Python only (an object in memory): not offered by ``add-model`` and the form
    needs_name : bool      :meth:`register` takes a name (EfficientNet-Lite is named after its variant)
    form_caption : str     a note under the form's choice
    """

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str]
    options: ClassVar[tuple[Option, ...]] = ()
    registrable: ClassVar[bool] = True
    #: Registered from Python only (its options hold objects in memory, as an ``nn.Module``):
    #: :func:`analytics.api.add_model` takes it; ``add-model`` and the Models page's form do not offer it.
    python_only: ClassVar[bool] = False
    needs_name: ClassVar[bool] = True
    form_caption: ClassVar[str] = ""
    #: Claims every ``--arch`` that no other source claims (torchvision's builder names).
    fallback: ClassVar[bool] = False
    #: Its checkpoint is a file or folder the workspace keeps a content-addressed copy of.
    copies_checkpoint: ClassVar[bool] = False
    #: The ``--arch`` word that names it (``onnx``), for a source without an ``arch`` option.
    arch_word: ClassVar[str | None] = None

    def __repr__(self) -> str:
        return f"<model source {self.name!r}>"

    # -- registration ------------------------------------------------------------------------------
    def claims_arch(self, arch: str) -> str | None:
        """``add-model --arch ARCH`` without ``--source``: the value of this source's ``arch``
        option ('' when it has none) if ``arch`` names this source, else None (default: '' for
        :attr:`arch_word`)."""
        return "" if arch == self.arch_word else None

    def choices(self, option: Option) -> Sequence[str]:
        """The choices of a ``choice`` option (default: ``option.choices``)."""
        return option.choices

    def register(self, workspace: Workspace, name: str | None, **options: Any) -> ModelSpec:
        """Register a model of this source; ``options`` are the keyword arguments :attr:`options` names."""
        raise InvalidInputError(f"{self.name} models are not registered by name and options")

    # -- the network ---------------------------------------------------------------------------------
    def build(self, spec: ModelSpec, workspace: Workspace | None) -> nn.Module:
        """The network of a registered spec: ``network(x)`` returns ``(logits, embedding)``."""
        raise NotImplementedError

    def feature_layer(self, network: nn.Module, spec: ModelSpec) -> nn.Module:
        """The last convolutional map: the module whose output is the map the network pools into its
        embedding. GradCAM reads it and the authors' ``max`` / ``max_mean`` statistics are taken of it.

        Raises
        ------
        InvalidInputError
            The network has none; the message says why (a clause after "model 'x' has no …: ").
        """
        raise InvalidInputError(f"{self.name} models expose no layers")

    def conv_map_problem(self, workspace: Workspace, spec: ModelSpec) -> str | None:
        """Why a registered model has no last convolutional map, or None, from its spec (a planner
        asks before loading the model)."""
        return None

    def gradient_problem(self, network: nn.Module, spec: ModelSpec) -> str | None:
        """Why gradients cannot flow through the network (saliency then offers the perturbation
        methods only), or None."""
        return None

    def backbone_problem(self, workspace: Workspace, spec: ModelSpec) -> str | None:
        """Why a registered model of this source cannot carry heads (a zoo), or None; one sentence
        naming the backbone, why, and what to do."""
        return None

    def count_params(self, network: nn.Module) -> int:
        """The number of parameters :class:`~analytics.models.ModelSpec` records."""
        return int(sum(p.numel() for p in network.parameters()))


#: Every model source by name, in registration order: the one lookup.
SOURCES: dict[str, ModelSource] = {}

_Source = TypeVar("_Source", bound=type[ModelSource])


def register_source(cls: _Source) -> _Source:
    """Class decorator: add an instance of a :class:`ModelSource` subclass to :data:`SOURCES`."""
    if not isinstance(getattr(cls, "name", None), str) or not cls.name:
        raise InvalidInputError(f"model source {cls.__name__} needs a name")
    SOURCES[cls.name] = cls()
    return cls


def get_source(name: str) -> ModelSource:
    """The source called ``name``; :class:`InvalidInputError` listing them if there is none."""
    source = SOURCES.get(name)
    if source is None:
        raise InvalidInputError(f"source must be one of {', '.join(map(repr, SOURCES))}; got {name!r}")
    return source


def registrable_sources() -> list[ModelSource]:
    """The sources ``add-model`` and the Models page offer, in registration order."""
    return [source for source in SOURCES.values() if source.registrable and not source.python_only]


def source_for_arch(arch: str) -> tuple[ModelSource, str]:
    """The source ``add-model --arch ARCH`` means (without ``--source``), and its ``arch`` value.

    Sources are asked in registration order; a ``fallback`` source (torchvision, which claims any
    other name) only when no other claims it.
    """
    claims = [(source, source.claims_arch(arch)) for source in registrable_sources()]
    found = [(source, value) for source, value in claims if value is not None]
    if not found:
        raise InvalidInputError(f"`arch` {arch!r} names none of the model sources; give `source` ({', '.join(s.name for s in registrable_sources())})")
    return sorted(found, key=lambda pair: pair[0].fallback)[0]


# -- the options sources share -----------------------------------------------------------------------
CHECKPOINT = Option(
    "checkpoint", "--checkpoint", "path", "state dict (.pt/.pth/.safetensors), TorchScript or ONNX file, or a transformers save_pretrained folder",
    "Checkpoint", "models.checkpoint", required=True, metavar="PATH",
)  # fmt: skip
LABELS = Option(
    "label_space", "--labels", "labels",
    "label space: imagenet, in9, or a text file of class names (default imagenet; transformers: its config.json's id2label)",
    "Label space", "models.labels", default="imagenet", metavar="imagenet|in9|FILE",
)  # fmt: skip
INPUT_SIZE = Option(
    "input_size", "--input-size", "int", "network input side in pixels (default 224; 299 for inception_v3; timm, transformers, ONNX: the model's own)",
    "Input size (px)", "models.input_size", default=224,
)  # fmt: skip
OWN_INPUT_SIZE = Option(
    "input_size",
    "--input-size",
    "int",
    INPUT_SIZE.help,
    "Input size (px; 0: the model's own)",
    "models.own_input_size",
    default=0,
)
MEAN = Option(
    "mean", "--mean", "triple", "timm, transformers, ONNX (required): normalisation mean of [0, 1] pixels (default: the model's own)",
    "Mean (R,G,B of [0, 1] pixels)", "models.mean", in_form=False, metavar="R,G,B",
)  # fmt: skip
STD = Option("std", "--std", "triple", "timm, transformers, ONNX (required): normalisation std (default: the model's own)", "Std (R,G,B)", "models.std", in_form=False, metavar="R,G,B")
CROP_PCT = Option(
    "crop_pct", "--crop-pct", "fraction", "timm, ONNX: centre-crop fraction, 1 for none (default: the model's own; ONNX: none)",
    "Centre-crop fraction (0: the model's own)", "models.crop_pct", default=0.0,
)  # fmt: skip
INTERPOLATION = Option(
    "interpolation", "--interpolation", "choice", "timm, ONNX: resize interpolation (default: the model's own; ONNX: Backdrop's area resize)",
    "Resize interpolation", "models.interpolation", choices=RESIZE_FILTERS,
)  # fmt: skip
ARCH = Option(
    "arch", "--arch", "text",
    "efficientnet-lite0/1/2, a torchvision architecture (resnet18, vit_b_16, …), timm:NAME (a timm architecture), 'transformers', 'onnx' "
    "or 'torchscript'; with --source, the architecture alone",
    "Architecture", "models.arch", required=True,
)  # fmt: skip
