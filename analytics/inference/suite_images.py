"""What a suite's images are: :class:`SuiteImage`, the images of a suite, and the workspace rows they need.

A suite holds, per target, n background ids; the images themselves (n + 1 per target: the original
and its composites) are never stored. An :class:`SuiteImage` names one of them; the engine adds each
target's foreground-only image m ⊗ x (:func:`with_foreground`) to pick its top-k embedding neurons.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from analytics.data import ClassMapping, list_class_mappings
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.models import get_model_spec
from analytics.workspace import Workspace


@dataclass(frozen=True)
class SuiteImage:
    """One image of a suite: position 0 (``background_id`` None) is the original target image.

    ``foreground=True`` asks for the target's foreground-only image m ⊗ x instead (the background
    is ignored); the engine uses it to pick the top-k embedding neurons.
    """

    target_id: str
    position: int
    background_id: str | None
    foreground: bool = False


def stored_suite_images(workspace: Workspace, suite_id: str) -> tuple[list[SuiteImage], dict[tuple[str, int], float | None]]:
    """The images of a suite (per target: the original, then positions 1..n) and their distances."""
    if workspace.query_one("SELECT id FROM suites WHERE id = ?", (suite_id,)) is None:
        known = [row["id"] for row in workspace.query("SELECT id FROM suites ORDER BY created DESC LIMIT 5")]
        raise NotFoundError(f"no suite {suite_id!r} in workspace {workspace.root}; recent suites: {', '.join(known) or 'none'}")
    rows = workspace.query(
        "SELECT target_id, position, background_id, distance FROM suite_items WHERE suite_id = ? ORDER BY target_id, position", (suite_id,)
    )
    images, distances, previous = [], {}, None
    for target_id, position, background_id, distance in rows:  # unpacked: faster than by name at 56,000 rows
        if target_id != previous:
            previous = target_id
            images.append(SuiteImage(target_id, 0, None))
            distances[(target_id, 0)] = 0.0
        images.append(SuiteImage(target_id, position, background_id))
        distances[(target_id, position)] = distance
    return images, distances


def with_foreground(images: Sequence[SuiteImage]) -> list[SuiteImage]:
    """``images`` (grouped by target) with each target's foreground-only image put before its first image."""
    out, seen = [], set()
    for image in images:
        if image.target_id not in seen:
            seen.add(image.target_id)
            out.append(SuiteImage(image.target_id, 0, None, foreground=True))
        out.append(image)
    return out


def image_hashes(workspace: Workspace, table: str, columns: str, ids: set[str]) -> dict[str, tuple[str, ...]]:
    """The array hashes (``columns``, e.g. ``"image_hash, mask_hash"``) of the rows ``ids`` of ``table``.

    Parameters
    ----------
    workspace : Workspace
    table : str
        ``"targets"`` or ``"backgrounds"``.
    columns : str
        Comma-separated hash columns of that table.
    ids : set of str

    Returns
    -------
    dict of str to tuple of str
        Row id -> its hashes, in ``columns`` order.

    Raises
    ------
    NotFoundError
        Some of ``ids`` are not in the table (the message names up to five).
    """
    found: dict[str, tuple[str, ...]] = {}
    unique = sorted(ids)
    for start in range(0, len(unique), 500):  # SQLite caps the number of ? placeholders
        chunk = unique[start : start + 500]
        rows = workspace.query(f"SELECT id, {columns} FROM {table} WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        found.update({row["id"]: tuple(row)[1:] for row in rows})
    missing = [i for i in unique if i not in found]
    if missing:
        raise NotFoundError(f"{len(missing)} {table} of the images are not in workspace {workspace.root}: {', '.join(missing[:5])}")
    return found


def target_classes(workspace: Workspace, target_ids: Iterable[str]) -> dict[str, str]:
    """Target id -> its workspace class, for the targets ``target_ids``."""
    ids = sorted(set(target_ids))
    classes = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        rows = workspace.query(f"SELECT id, class_name FROM targets WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        classes.update({row["id"]: row["class_name"] for row in rows})
    return classes


def used_classes(workspace: Workspace, names: Iterable[str]) -> dict[str, ClassMapping]:
    """The workspace classes (with their mappings) that some of the targets have."""
    used = set(names)
    return {name: mapping for name, mapping in list_class_mappings(workspace).items() if name in used}


def class_problems(workspace: Workspace, model_names: Sequence[str], suite_id: str | None = None) -> dict[str, str]:
    """Model -> why it cannot score the classes of a suite's targets (of every target when
    ``suite_id`` is None): the one line :func:`~analytics.inference.plan_runs` would raise. Models
    that can score them are absent, so an empty dict means all can.

    Raises
    ------
    NotFoundError
        An unknown model or suite.
    """
    if suite_id is None:
        names = {row["class_name"] for row in workspace.query("SELECT DISTINCT class_name FROM targets")}
    else:
        names = set(target_classes(workspace, {image.target_id for image in stored_suite_images(workspace, suite_id)[0]}).values())
    classes = used_classes(workspace, names)
    problems = {}
    for name in dict.fromkeys(model_names):
        try:
            get_model_spec(workspace, name).label_space.class_outputs(classes)
        except InvalidInputError as err:
            problems[name] = str(err)
    return problems
