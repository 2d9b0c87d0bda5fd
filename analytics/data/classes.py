"""Workspace classes and what a model output counts as each of them.

A class maps to ImageNet-1k indices, to an IN-9 class, or to a custom output label (columns
``imagenet_indices``, ``in9``, ``label`` of the ``classes`` table). One resolver serves the CLI and
the Data page: :func:`resolve_class` guesses the mapping of a newly imported class,
:func:`search_imagenet` finds ImageNet-1k classes by name, WordNet id or index, and
:func:`set_class_mapping` stores a mapping the user chose. Runs record the key of the mappings
they were scored with (:func:`analytics.workspace.class_mapping_key`), so a run whose classes were
remapped since is stale. :class:`ClassMapping` itself lives with the label spaces it selects outputs of.

ImageNet names are torchvision's (:func:`analytics.data.imagenet_label_space`); WordNet ids come
from the ``imagenet_x`` package's ``annotations/imagenet_labels.txt`` (``wnid,name`` in index
order) and are empty strings if that file is missing.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.team import require_permission
from analytics.workspace import Workspace, pin_legacy_keys

from .label_spaces import IN9_CLASSES, ClassMapping, imagenet_label_space

N_IMAGENET = 1000
_NUMBERED = re.compile(r"\d+ (.+)")  # Backgrounds Challenge folders 00_dog, 01_bird, ... once normalised


@dataclass(frozen=True)
class ImageNetClass:
    """One ImageNet-1k class: its output index, WordNet id (``''`` if unknown) and name."""

    index: int
    wnid: str
    name: str


# -- ImageNet-1k names and WordNet ids -------------------------------------------------------
@lru_cache(maxsize=1)
def imagenet_classes() -> tuple[ImageNetClass, ...]:
    """The 1000 ImageNet-1k classes in output order, with WordNet ids where available."""
    names = imagenet_label_space().names
    wnids = _imagenet_wnids()
    return tuple(ImageNetClass(i, wnids[i] if len(wnids) == N_IMAGENET else "", name) for i, name in enumerate(names))


def _imagenet_wnids() -> list[str]:
    """WordNet ids by ImageNet index from imagenet_x's bundled label file (found without importing it)."""
    spec = importlib.util.find_spec("imagenet_x")
    if spec is None or not spec.submodule_search_locations:
        return []
    path = Path(next(iter(spec.submodule_search_locations))) / "annotations" / "imagenet_labels.txt"
    if not path.is_file():
        return []
    return [line.split(",", 1)[0].strip() for line in path.read_text().splitlines() if line.strip()]


def search_imagenet(query: str, *, limit: int = 20) -> list[ImageNetClass]:
    """ImageNet-1k classes matching ``query``, best first.

    Parameters
    ----------
    query : str
        Part of a class name (case-insensitive, ``_`` read as a space), a WordNet id
        (``n04409515``) or an index (``852``).
    limit : int, default=20
        At most this many results.

    Returns
    -------
    matches : list of ImageNetClass
        Exact index / WordNet id / name matches first, then names starting with the query, then
        names containing it (each in index order). Empty for a blank query.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"limit must be an integer >= 1; got {limit!r}")
    wanted = _normalised(query)
    if not wanted:
        return []

    def rank(item: ImageNetClass) -> int | None:
        name = _normalised(item.name)
        if wanted in (str(item.index), item.wnid, name):
            return 0
        if name.startswith(wanted):
            return 1
        return 2 if wanted in name else None

    ranked = sorted((r, item.index, item) for item in imagenet_classes() if (r := rank(item)) is not None)
    return [item for _, _, item in ranked[:limit]]


def _normalised(text: str) -> str:
    return " ".join(str(text).replace("_", " ").casefold().split())


# -- resolving and storing mappings ----------------------------------------------------------
def resolve_class(name: str, mapping: Mapping[str, Sequence[int]] | None = None) -> ClassMapping:
    """The mapping of a newly imported class, guessed from its name.

    Parameters
    ----------
    name : str
        The class (folder) name.
    mapping : mapping of str to list of int, optional
        Explicit ImageNet indices per class (``add-targets --imagenet-map``); used first.

    Returns
    -------
    mapping : ClassMapping
        In order: ``mapping[name]``; the ImageNet class whose name (case-insensitive, ``_`` as a
        space) or WordNet id equals ``name``; the IN-9 class named ``name`` (also ``00_dog``-style
        Backgrounds Challenge folders); else unmapped (map it with :func:`set_class_mapping`).
    """
    if mapping and name in mapping:
        return ClassMapping(check_imagenet_indices(mapping[name], f"class {name!r}"))
    wanted = _normalised(name)
    exact = [item.index for item in imagenet_classes() if wanted == _normalised(item.name) or wanted == item.wnid]
    if exact:
        return ClassMapping(tuple(exact))
    numbered = _NUMBERED.fullmatch(wanted)
    for candidate in (wanted, numbered.group(1) if numbered else None):
        if candidate in IN9_CLASSES:
            return ClassMapping(in9=candidate)
    return ClassMapping()


def check_imagenet_indices(indices: Iterable[int], what: str) -> tuple[int, ...]:
    """Sorted unique ImageNet-1k indices, or InvalidInputError naming ``what`` and the bad values."""
    values = list(indices)
    bad = [i for i in values if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < N_IMAGENET]
    if bad or not values:
        raise InvalidInputError(
            f"{what}: ImageNet-1k indices must be integers in 0..{N_IMAGENET - 1}; got {values!r}; "
            "find indices in the class editor on the Data page, with `analytics.data.search_imagenet(name)` or with `python -m analytics classes`"
        )
    return tuple(sorted(set(values)))


def list_class_mappings(workspace: Workspace) -> dict[str, ClassMapping]:
    """Class name -> its full mapping, sorted by name."""
    rows = workspace.query("SELECT name, imagenet_indices, in9, label FROM classes ORDER BY name")
    return {row["name"]: ClassMapping(tuple(json.loads(row["imagenet_indices"])), row["in9"], row["label"]) for row in rows}


def class_target_counts(workspace: Workspace) -> dict[str, int]:
    """Targets per class: every class of the workspace (0 for one without targets), sorted by name.

    The one count of targets per class that Home, the class editor and the ``data`` command show.
    """
    counts = {row["class_name"]: int(row["n"]) for row in workspace.query("SELECT class_name, COUNT(*) AS n FROM targets GROUP BY class_name")}
    names = {row["name"] for row in workspace.query("SELECT name FROM classes")} | set(counts)
    return {name: counts.get(name, 0) for name in sorted(names)}


def targets_stamp(workspace: Workspace) -> str:
    """A text that changes whenever targets are added or a class's ImageNet indices change (a cache key
    of what is computed from the targets and their mapping, e.g. a model's evaluation)."""
    row = workspace.query_one(
        "SELECT (SELECT COUNT(*) || ':' || IFNULL(MAX(added), '') FROM targets) || '|' || "
        "(SELECT IFNULL(GROUP_CONCAT(name || imagenet_indices), '') FROM classes) AS stamp"
    )
    return str(row["stamp"])


def set_class_mapping(
    workspace: Workspace,
    name: str,
    *,
    imagenet: Sequence[int] | None = None,
    in9: str | None = None,
    label: str | None = None,
) -> ClassMapping:
    """Replace what model outputs count as class ``name``.

    The stored mapping becomes exactly the given parts (parts left out are cleared), so the
    class's :func:`analytics.workspace.class_mapping_key` changes and runs scored with the old
    mapping become stale (runs stored without keys get them pinned first:
    :func:`analytics.workspace.pin_legacy_keys`).

    Parameters
    ----------
    workspace : Workspace
    name : str
        An existing workspace class.
    imagenet : sequence of int, optional
        ImageNet-1k indices (0..999) for ImageNet classifiers.
    in9 : str, optional
        An IN-9 class for IN-9 classifiers (ImageNet classifiers then use its ImageNet classes
        when ``imagenet`` is not given).
    label : str, optional
        The output name in a custom label space (default there: the class's own name).

    Returns
    -------
    mapping : ClassMapping
        What was stored.

    Raises
    ------
    NotFoundError
        The workspace has no class ``name``.
    InvalidInputError
        Nothing given, an index outside 0..999, or an unknown IN-9 class.
    """
    require_permission(workspace, "import_data")
    known = list_class_mappings(workspace)
    if name not in known:
        listed = ", ".join(known) or "none yet"
        raise NotFoundError(f"no class {name!r} in workspace {workspace.root} (classes: {listed}); import its targets first")
    if imagenet is None and not in9 and not (label or "").strip():
        raise InvalidInputError(f"class {name!r}: give ImageNet indices, an IN-9 class or a custom label to map it to")
    indices = () if imagenet is None else check_imagenet_indices(imagenet, f"class {name!r}")
    in9 = (in9 or "").strip().casefold()
    if in9 and in9 not in IN9_CLASSES:
        raise InvalidInputError(f"class {name!r}: IN-9 class must be one of {', '.join(IN9_CLASSES)}; got {in9!r}")
    result = ClassMapping(indices, in9, (label or "").strip())
    # runs stored before keys existed count as current; pin their keys while the old mapping still holds
    pin_legacy_keys(workspace)
    with workspace.transaction() as conn:
        conn.execute(
            "UPDATE classes SET imagenet_indices = ?, in9 = ?, label = ? WHERE name = ?",
            (json.dumps(list(result.imagenet)), result.in9, result.label, name),
        )
    return result


