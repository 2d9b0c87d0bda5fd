"""Label spaces: what a model's outputs mean (ImageNet-1k, the 9 IN-9 super-classes, or custom names),
and class mappings: which of those outputs a workspace class stands for.

Two ImageNet-1k -> IN-9 maps are built in (:data:`IN9_MAPS`): ``official``, the Backgrounds
Challenge's ``in_to_in9.json`` (the default, so numbers match the challenge's own evaluation), and
``wordnet``, every ImageNet class under one of the 9 synsets in WordNet (16 classes more). A JSON
file in the challenge's format may be passed instead.

A label space records the map's name (``in9_map``: ``official``, ``wordnet`` or ``file:<sha256 prefix>``).
Specs stored before the name was recorded have none; they were registered when the built-in map was the
WordNet reading, and their runs were scored with it, so they keep it (:data:`LEGACY_IN9_MAP`): their
saved results and any new run of the model agree. Re-register such a model to move it to the official map
(its runs then turn stale, as with any changed spec).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from analytics._choices import IN9_CLASSES
from analytics._validation import parse_json, read_at_most
from analytics.exceptions import InvalidInputError

# IN-9 (Xiao et al., "Noise or Signal", 2020): the WordNet synsets that define the 9 super-classes
# (analytics._choices.IN9_CLASSES), in the order of their output index.
IN9_SYNSETS = ("n02084071", "n01503061", "n04576211", "n01661091", "n02075296", "n02159955", "n03800933", "n02469914", "n02512053")

# ImageNet-1k index ranges (inclusive) of each IN-9 class in the Backgrounds Challenge's published
# in_to_in9.json (MadryLab/backgrounds_challenge; every other index maps to -1, no IN-9 class):
# the file's 370 entries rewritten as ranges. tests/analytics/data/test_label_spaces.py compares
# them with the file entry by entry.
_OFFICIAL_IN9_RANGES: dict[str, tuple[tuple[int, int], ...]] = {
    "dog": ((151, 170), (173, 268)),
    "bird": ((7, 24), (87, 100), (127, 146)),
    "vehicle": ((407, 408), (428, 428), (436, 436), (444, 444), (468, 468), (511, 511), (547, 547), (555, 555), (561, 561), (565, 565), (569, 569),
                (573, 573), (586, 586), (603, 603), (609, 609), (612, 612), (627, 627), (656, 656), (661, 661), (665, 665), (670, 671), (675, 675),
                (690, 690), (705, 705), (717, 717), (734, 734), (751, 751), (757, 757), (791, 791), (802, 803), (817, 817), (820, 820), (829, 829),
                (847, 847), (864, 864), (866, 867), (870, 870), (880, 880)),
    "reptile": ((33, 68),),
    "carnivore": ((269, 280), (286, 299), (356, 362), (387, 388)),
    "insect": ((300, 326),),
    "instrument": ((401, 402), (420, 420), (432, 432), (486, 486), (494, 494), (513, 513), (541, 541), (546, 546), (558, 558), (566, 566), (577, 577),
                   (579, 579), (593, 594), (641, 642), (683, 684), (687, 687), (699, 699), (776, 776), (822, 822), (875, 875), (881, 881), (889, 889)),
    "primate": ((365, 384),),
    "fish": ((0, 6), (389, 397)),
}
# What the WordNet reading adds (derived offline from WordNet 3.0, Debian wordnet-base, data.noun: an
# ImageNet class belongs to the first IN-9 synset in its hypernym closure, dog before carnivore):
# grouse, peacock, quail and partridges, Italian greyhound and whippet, the domestic cats, golfcart
# and mobile home, which the official file leaves out.
_WORDNET_EXTRA_RANGES: dict[str, tuple[tuple[int, int], ...]] = {
    "dog": ((171, 172),),
    "bird": ((80, 86),),
    "vehicle": ((575, 575), (660, 660)),
    "carnivore": ((281, 285),),
}
#: Built-in ImageNet-1k -> IN-9 maps by name; :data:`DEFAULT_IN9_MAP` is the challenge's own.
IN9_MAPS = ("official", "wordnet")
DEFAULT_IN9_MAP = "official"
#: The map of a label space stored without a map name: the built-in map before ``official`` became the default.
LEGACY_IN9_MAP = "wordnet"
_IN9_MAP_ORIGINS = {
    "official": "the Backgrounds Challenge's in_to_in9.json (built in)",
    "wordnet": "WordNet 3.0 hyponyms of the IN-9 synsets (built in)",
}


# -- class mappings ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClassMapping:
    """The model outputs one workspace class stands for.

    Attributes
    ----------
    imagenet : tuple of int
        ImageNet-1k indices (0..999); empty when not mapped to ImageNet.
    in9 : str
        An IN-9 class (:data:`IN9_CLASSES`), or ``''``.
    label : str
        The name of an output in a custom label space, or ``''``.
    """

    imagenet: tuple[int, ...] = ()
    in9: str = ""
    label: str = ""

    @property
    def mapped(self) -> bool:
        """True when any of the three mappings is set."""
        return bool(self.imagenet or self.in9 or self.label)

    def describe(self) -> str:
        """One line for messages, e.g. ``ImageNet [852]; IN-9 'dog'`` or ``unmapped``."""
        parts = [f"ImageNet {list(self.imagenet)}"] if self.imagenet else []
        parts += [f"IN-9 {self.in9!r}"] if self.in9 else []
        parts += [f"label {self.label!r}"] if self.label else []
        return "; ".join(parts) or "unmapped"

    def to_dict(self) -> dict:
        """JSON form: ``{"imagenet": [...], "in9": str or None, "label": str or None}``."""
        return {"imagenet": list(self.imagenet), "in9": self.in9 or None, "label": self.label or None}


def as_mapping(value: ClassMapping | Sequence[int]) -> ClassMapping:
    """A :class:`ClassMapping` as is, or a sequence of ImageNet indices as one (the older form)."""
    return value if isinstance(value, ClassMapping) else ClassMapping(tuple(int(i) for i in value))


# -- label spaces ------------------------------------------------------------------------------
@dataclass(frozen=True)
class LabelSpace:
    """What a model's outputs mean.

    Attributes
    ----------
    kind : {'imagenet', 'in9', 'custom'}
    names : tuple of str
        One name per model output (``len(names)`` = number of outputs).
    in9_mapping : tuple of int or None
        ImageNet-1k index -> IN-9 output (-1 = none), 1000 entries; None means the built-in map ``in9_map``
        names.
    origin : str
        Where the names (or the IN-9 mapping) came from, for display.
    in9_map : str
        Name of the ImageNet-1k -> IN-9 map: ``official``, ``wordnet`` or ``file:<sha256 prefix>``;
        '' for a space stored before names were recorded, which means :data:`LEGACY_IN9_MAP` (module notes).
    """

    kind: str
    names: tuple[str, ...]
    in9_mapping: tuple[int, ...] | None = None
    origin: str = ""
    in9_map: str = ""

    def class_outputs(self, classes: Mapping[str, ClassMapping | Sequence[int]]) -> dict[str, list[int]]:
        """Model outputs that count as each workspace class.

        Parameters
        ----------
        classes : mapping of str to ClassMapping or list of int
            Workspace class name -> its mapping (``analytics.data.classes.list_class_mappings``), or just
            its ImageNet-1k indices (``analytics.data.datasets.list_classes``).

        Returns
        -------
        outputs : dict of str to list of int
            ``imagenet``: the class's ImageNet indices, else those of its IN-9 class; ``in9``: its
            IN-9 class, else the IN-9 outputs its ImageNet indices map to; ``custom``: the output
            named like its label. Without a mapping for the kind, a class falls back to the output
            named like its label or, without one, like the class itself (any kind).

        Raises
        ------
        InvalidInputError
            A class has no output in this label space.
        """
        result = {}
        for class_name, value in classes.items():
            mapping = as_mapping(value)
            outputs = self._outputs_of(class_name, mapping)
            if not outputs:
                fix = ", or register the model with a label file naming the class" if self.kind == "custom" else ""
                raise InvalidInputError(
                    f"workspace class {class_name!r} ({mapping.describe()}) has no output in the model's {self.kind} label "
                    f"space ({len(self.names)} outputs: {', '.join(self.names[:5])}…); map the class in the class editor on "
                    f"the Data page, with `analytics.data.set_class_mapping(workspace, {class_name!r}, imagenet=[...])` (or `in9`, "
                    f"`label`) or with `python -m analytics set-class`{fix}"
                )
            result[class_name] = outputs
        return result

    def outputs_key(self, classes: Mapping[str, ClassMapping | Sequence[int]], names: Iterable[str]) -> str:
        """A short content key of what this label space scores ``names`` as: each class's outputs
        (:meth:`class_outputs`; ``None`` for a class with none), from its mapping in ``classes`` (an
        absent class counts as unmapped). A mapping this label space does not read (an ImageNet index
        for a custom-label model) leaves the key as it was: what a run records so that only a mapping
        that changes its scoring makes it stale (issue 47.7).

        Returns
        -------
        key : str
            16 hex digits.
        """
        outputs: dict[str, list[int] | None] = {}
        for name in sorted(set(names)):
            try:
                outputs[name] = self._outputs_of(name, as_mapping(classes.get(name, ClassMapping())))
            except InvalidInputError:  # an ImageNet index out of range: scored as no output
                outputs[name] = None
            outputs[name] = outputs[name] or None
        payload = json.dumps(["outputs", self.kind, outputs], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def scores(self, class_name: str, mapping: ClassMapping | Sequence[int] = ClassMapping()) -> bool:
        """True when some output of this label space counts as the class (:meth:`class_outputs` finds
        one): through its mapping for this kind, else an output named like its label or the class itself
        (a custom label space naming the class scores it unmapped). An ImageNet index out of range scores
        nothing."""
        try:
            return bool(self._outputs_of(class_name, as_mapping(mapping)))
        except InvalidInputError:
            return False

    def _outputs_of(self, class_name: str, mapping: ClassMapping) -> list[int]:
        """One class's outputs: its mapping for this kind, else the output named like its label or itself."""
        outputs: list[int] = []
        if self.kind == "in9" and mapping.in9:
            outputs = [self.names.index(mapping.in9)]
        elif self.kind != "custom" and mapping.imagenet:
            outputs = self._mapped(mapping.imagenet)
        elif self.kind == "imagenet" and mapping.in9:
            super_class = IN9_CLASSES.index(mapping.in9)
            outputs = [i for i, target in enumerate(self.in9_table()) if target == super_class]
        named = mapping.label or class_name
        return outputs or ([self.names.index(named)] if named in self.names else [])

    def _mapped(self, indices: Sequence[int]) -> list[int]:
        bad = [i for i in indices if not 0 <= int(i) < 1000]
        if bad:
            raise InvalidInputError(f"ImageNet indices must lie in 0..999; got {bad}")
        if self.kind == "imagenet":
            return sorted({int(i) for i in indices})
        mapping = self.in9_table()
        return sorted({mapping[int(i)] for i in indices if mapping[int(i)] >= 0})

    def in9_table(self) -> tuple[int, ...]:
        """ImageNet-1k index -> IN-9 output (-1 = none), 1000 entries: ``in9_mapping`` or the built-in map
        ``in9_map`` names (:data:`LEGACY_IN9_MAP` when none is recorded)."""
        return self.in9_mapping or in9_table(self.in9_map if self.in9_map in IN9_MAPS else LEGACY_IN9_MAP)

    @property
    def in9_map_name(self) -> str:
        """The IN-9 map in words: its recorded name, or the legacy map's name for a space stored without one."""
        return self.in9_map or f"{LEGACY_IN9_MAP} (registered before the official map became the default)"

    def to_json(self) -> dict:
        data = {"kind": self.kind, "names": list(self.names), "in9_mapping": None if self.in9_mapping is None else list(self.in9_mapping), "origin": self.origin}
        if self.in9_map:  # absent for specs stored without it, so their content keys (and runs) stay as they were
            data["in9_map"] = self.in9_map
        return data

    @classmethod
    def from_json(cls, data: Mapping) -> LabelSpace:
        mapping = data.get("in9_mapping")
        return cls(data["kind"], tuple(data["names"]), None if mapping is None else tuple(mapping), data.get("origin", ""), data.get("in9_map", ""))


def imagenet_label_space() -> LabelSpace:
    """The 1000 ImageNet-1k class names (from torchvision's bundled weight metadata; no download)."""
    import torchvision

    names = tuple(torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta["categories"])
    return LabelSpace("imagenet", names, origin="torchvision ImageNet-1k categories", in9_map=DEFAULT_IN9_MAP)


def in9_label_space(mapping: str | os.PathLike | None = None) -> LabelSpace:
    """The 9 IN-9 super-classes.

    Parameters
    ----------
    mapping : {'official', 'wordnet'}, path-like or None
        The ImageNet-1k -> IN-9 map: a name of :data:`IN9_MAPS` (None = :data:`DEFAULT_IN9_MAP`,
        the challenge's own), or a JSON file ``{"<ImageNet index>": <IN-9 index>, ...}`` (the
        format of the Backgrounds Challenge's ``in_to_in9.json``; -1 or a missing key = no IN-9 class).
    """
    if mapping is None or mapping == DEFAULT_IN9_MAP:
        return LabelSpace("in9", IN9_CLASSES, origin=_IN9_MAP_ORIGINS[DEFAULT_IN9_MAP], in9_map=DEFAULT_IN9_MAP)
    if mapping in IN9_MAPS:  # stored in full, so a model registered with it keeps it
        return LabelSpace("in9", IN9_CLASSES, in9_table(str(mapping)), origin=_IN9_MAP_ORIGINS[str(mapping)], in9_map=str(mapping))
    path = Path(mapping)
    fix = f"expected JSON {{\"<ImageNet index 0-999>\": <IN-9 index 0-8 or -1>}} or a built-in map: {', '.join(IN9_MAPS)}"
    try:
        text = read_at_most(path, "IN-9 mapping", fix).decode("utf-8")
    except InvalidInputError:  # past the size limit: already one line naming the file
        raise
    except (OSError, ValueError) as err:
        raise InvalidInputError(f"{path}: not an IN-9 mapping ({err}); {fix}") from err
    raw = parse_json(text, path, "IN-9 mapping", fix)
    try:
        table = [-1] * 1000
        for key, value in raw.items():
            index, target = int(key), int(value)
            if not (0 <= index < 1000 and -1 <= target < len(IN9_CLASSES)):
                raise ValueError(f"entry {key!r}: {value!r} out of range")
            table[index] = target
    except (ValueError, AttributeError, TypeError) as err:
        raise InvalidInputError(f"{path}: not an IN-9 mapping ({err}); {fix}") from err
    name = "file:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return LabelSpace("in9", IN9_CLASSES, tuple(table), origin=str(path), in9_map=name)


def custom_label_space(path: str | os.PathLike) -> LabelSpace:
    """Class names from a text file, one per line, in output order (blank lines ignored)."""
    path = Path(path)
    fix = "give a UTF-8 text file, one class name per line"
    try:  # at most MAX_SMALL_FILE_BYTES: a file of gigabytes (or /dev/zero) is refused, not read into memory
        names = tuple(line.strip() for line in read_at_most(path, "label file", fix).decode("utf-8").splitlines() if line.strip())
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidInputError(f"{path}: cannot read the label file ({err}); {fix}") from err
    if not names:
        raise InvalidInputError(f"{path}: the label file names no classes; write one class name per line")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidInputError(f"{path}: class names must be unique; repeated: {', '.join(duplicates)}")
    return LabelSpace("custom", names, origin=str(path))


def parse_label_space(option: str, *, in9_mapping: str | os.PathLike | None = None) -> LabelSpace:
    """``'imagenet'``, ``'in9'`` or the path of a label file (see :func:`custom_label_space`)."""
    if option == "imagenet":
        return imagenet_label_space()
    if option == "in9":
        return in9_label_space(in9_mapping)
    return custom_label_space(option)


@cache
def in9_table(name: str = DEFAULT_IN9_MAP) -> tuple[int, ...]:
    """A built-in ImageNet-1k -> IN-9 map.

    Parameters
    ----------
    name : {'official', 'wordnet'}, default='official'
        See :data:`IN9_MAPS`.

    Returns
    -------
    table : tuple of int, 1000 entries
        The IN-9 output (index into :data:`IN9_CLASSES`) of each ImageNet-1k index, -1 for none.
    """
    if name not in IN9_MAPS:
        raise InvalidInputError(f"IN-9 map must be one of {', '.join(IN9_MAPS)} (or a JSON file); got {name!r}")
    table = [-1] * 1000
    for ranges in (_OFFICIAL_IN9_RANGES, _WORDNET_EXTRA_RANGES if name == "wordnet" else {}):
        for target, in9 in enumerate(IN9_CLASSES):
            for low, high in ranges.get(in9, ()):
                table[low : high + 1] = [target] * (high - low + 1)
    return tuple(table)


def in9_imagenet_indices(in9: str, name: str = DEFAULT_IN9_MAP) -> tuple[int, ...]:
    """The ImageNet-1k indices of IN-9 class ``in9`` in a built-in map (``()`` for an unknown class).

    Parameters
    ----------
    in9 : str
        An IN-9 class name (:data:`IN9_CLASSES`).
    name : {'official', 'wordnet'}, default='official'

    Returns
    -------
    tuple of int, sorted
    """
    if in9 not in IN9_CLASSES:
        return ()
    target = IN9_CLASSES.index(in9)
    return tuple(i for i, value in enumerate(in9_table(name)) if value == target)
