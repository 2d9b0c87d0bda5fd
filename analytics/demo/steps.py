"""The demo workspace, built offline from Debian packages (README.md, 'The demo workspace').

``build_demo`` runs the ordered steps of :data:`DEMO_STEPS`; each step says when it is done, so a
second build skips everything that is there (and an interrupted one resumes). Later stages add
their own steps (register models, detect keywords, build the ontology, sample suites, run models)
each as a :class:`DemoStep` in :data:`DEMO_STEPS`.

What the demo holds is data, not code: ``assets/demo_catalogue.json`` lists the classes (with
their ImageNet-1k indices), the targets (a Tux Paint photo stamp, the "home" photo it is pasted
on, scale, mirroring) and the background photos with their Debian package. Every stored target and
background records its source package(s) and licence.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

import numpy as np

from analytics._install import project_file
from analytics._progress import Progress, with_message
from analytics.data import (
    Background,
    Target,
    check_mask_share,
    crop_id,
    image_size,
    on_home,
    paste_cutout,
    read_backgrounds,
    read_image,
    read_image_rgba,
    store_backgrounds,
    store_targets,
)
from analytics.exceptions import InvalidInputError
from analytics.models import list_models, register_efficientnet_lite
from analytics.runs import start_runs
from analytics.suites import build_suite, ensure_keyword_tables, ensure_ontology
from analytics.workspace import Workspace, count_rows
from analytics.zoo import zoo_built, zoo_runs_done, zoo_runs_step, zoo_step

from .assets import fetch_packages, licence_of

CATALOGUE_PATH = project_file("assets/demo_catalogue.json")


# -- the catalogue ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Photo:
    """A photo inside an unpacked Debian package.

    ``crop`` (homes only) is ``(top, left, side)`` as fractions of the photo's shorter side, giving
    a square; ``licence`` overrides what the package's copyright file says (when the package's
    own notes are more specific than its copyright file).
    """

    package: str
    path: str
    crop: tuple[float, float, float] = (0.0, 0.0, 1.0)
    licence: str = ""

    @property
    def name(self) -> str:
        """A readable name: a KDE wallpaper's folder name, else the file stem."""
        parts = Path(self.path).parts
        return parts[-4] if parts[-3:-1] == ("contents", "images") else Path(self.path).stem


@dataclass(frozen=True)
class DemoTarget:
    """One demo target: a photo stamp pasted on its home photo."""

    id: str
    class_name: str
    stamp: str
    home: str
    scale: float = 0.7
    mirror: bool = False


@dataclass(frozen=True)
class Catalogue:
    """The parsed ``assets/demo_catalogue.json`` (see :func:`load_catalogue`)."""

    digest: str
    stamps_package: str
    packages: dict[str, dict[str, Any]]
    classes: dict[str, list[int]]
    homes: dict[str, Photo]
    targets: list[DemoTarget]
    backgrounds: list[Photo]
    crop_rule: dict[str, Any] = field(default_factory=dict)

    def package_licence(self, package: str) -> str:
        return str(self.packages.get(package, {}).get("licence", ""))

    def crops_per_photo(self, photo: np.ndarray) -> int:
        """Crops taken from one background photo: one per ``megapixels_per_crop``, clipped to [min, max]."""
        megapixels = photo.shape[0] * photo.shape[1] / 1e6
        count = round(megapixels / self.crop_rule["megapixels_per_crop"])
        return int(np.clip(count, self.crop_rule["min"], self.crop_rule["max"]))


@functools.lru_cache(maxsize=4)
def load_catalogue(path: str | os.PathLike[str] = CATALOGUE_PATH) -> Catalogue:
    """Read and check the demo catalogue.

    Raises
    ------
    InvalidInputError
        A target names an unknown class or home, ids repeat, or a background name repeats.
    """
    path = Path(path)
    text = path.read_text()
    raw = json.loads(text)
    homes = {name: _photo(spec) for name, spec in raw["homes"].items()}
    classes = {name: [int(i) for i in spec["imagenet"]] for name, spec in raw["classes"].items()}
    targets = [
        DemoTarget(t["id"], t["class"], t["stamp"], t["home"], float(t.get("scale", 0.7)), bool(t.get("mirror", False)))
        for t in raw["targets"]
    ]
    backgrounds = [_photo(spec) for spec in raw["backgrounds"]]
    for target in targets:
        if target.class_name not in classes:
            raise InvalidInputError(f"{path}: target {target.id!r} has unknown class {target.class_name!r}; add it to 'classes'")
        if target.home not in homes:
            raise InvalidInputError(f"{path}: target {target.id!r} has unknown home {target.home!r}; add it to 'homes'")
    for kind, names in (("target id", [t.id for t in targets]), ("background name", [b.name for b in backgrounds])):
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise InvalidInputError(f"{path}: {kind}s must be unique; repeated: {', '.join(repeated)}")
    return Catalogue(
        digest=hashlib.sha256(text.encode()).hexdigest()[:12],
        stamps_package=raw["stamps_package"],
        packages=raw["packages"],
        classes=classes,
        homes=homes,
        targets=targets,
        backgrounds=backgrounds,
        crop_rule=raw["background_crops"],
    )


def _photo(spec: dict[str, Any]) -> Photo:
    crop = tuple(float(v) for v in spec.get("crop", (0.0, 0.0, 1.0)))
    return Photo(spec["package"], spec["path"], crop, spec.get("licence", ""))  # type: ignore[arg-type]


# -- steps -----------------------------------------------------------------------------------
@dataclass
class DemoContext:
    """What steps share during one :func:`build_demo`: the catalogue, the asset cache, progress."""

    catalogue: Catalogue
    cache_dir: Path | None = None
    progress: Progress | None = None
    _roots: dict[str, Path] = field(default_factory=dict, repr=False)

    def report(self, done: int, total: int, step: str = "") -> None:
        if self.progress is not None:
            self.progress(done, total, step)

    def fetch(self, packages: list[str] | None = None) -> None:
        """Make sure ``packages`` (default: all of the catalogue's) are unpacked in the cache."""
        wanted = [p for p in (list(self.catalogue.packages) if packages is None else packages) if p not in self._roots]
        if wanted:
            done = len(self._roots)
            total = len(self._roots) + len(wanted)

            def tick(fetched: int, _of: int, _package: str = "") -> None:
                self.report(done + fetched, total, "assets")

            self._roots.update(fetch_packages(wanted, cache_dir=self.cache_dir, progress=tick))

    def path(self, photo_or_package: Photo | str, relpath: str | None = None) -> Path:
        """The unpacked file of a photo (or of ``package`` + ``relpath``); fetches the package if needed."""
        if isinstance(photo_or_package, Photo):
            package, relpath = photo_or_package.package, photo_or_package.path
        elif relpath is None:
            raise TypeError(f"path({photo_or_package!r}) needs the file's relpath inside the package")
        else:
            package = photo_or_package
        self.fetch([package])
        return self._roots[package] / relpath

    def licence(self, package: str, relpath: str, override: str = "") -> str:
        """The licence of one file: the catalogue's override, else the package's own notes."""
        if override:
            return override
        self.fetch([package])
        return licence_of(self._roots[package], package, relpath) or self.catalogue.package_licence(package)


class DemoStep(NamedTuple):
    """A named, idempotent step of the demo build."""

    name: str
    run: Callable[[Workspace, DemoContext], None]
    is_done: Callable[[Workspace], bool]


def _marker(step: str) -> str:
    return f"demo_step:{step}"


def _is_marked(workspace: Workspace, step: str) -> bool:
    """Whether ``step`` finished with the current catalogue."""
    return workspace.get_meta(_marker(step)) == load_catalogue().digest


def _mark(workspace: Workspace, step: str, context: DemoContext) -> None:
    workspace.set_meta(_marker(step), context.catalogue.digest)


def fetch_demo_assets(workspace: Workspace, context: DemoContext) -> None:
    """Download and unpack every package the catalogue uses (skips those in the cache)."""
    context.fetch()


def _assets_needed_done(workspace: Workspace) -> bool:
    # The packages are only read by the targets and backgrounds steps: once both are done a
    # rebuild needs no download, even with an emptied cache.
    return _is_marked(workspace, "targets") and _is_marked(workspace, "backgrounds")


def add_demo_targets(workspace: Workspace, context: DemoContext) -> None:
    """Paste every catalogue stamp on its home photo and store the targets with their classes."""
    catalogue, size = context.catalogue, image_size(workspace)
    homes: dict[str, np.ndarray] = {}
    targets = []
    for done, entry in enumerate(catalogue.targets, start=1):
        if entry.home not in homes:
            homes[entry.home] = crop_square(read_image(context.path(catalogue.homes[entry.home])), catalogue.homes[entry.home].crop)
        targets.append(make_demo_target(entry, homes[entry.home], size=size, context=context))
        context.report(done, len(catalogue.targets), "targets")
    store_targets(workspace, targets, classes=catalogue.classes)
    _mark(workspace, "targets", context)


def make_demo_target(entry: DemoTarget, home: np.ndarray, *, size: int, context: DemoContext) -> Target:
    """One demo target: the stamp (mirrored if asked) pasted at ``entry.scale`` on the square ``home``.

    home : ndarray of shape (side, side, 3), uint8
    """
    catalogue = context.catalogue
    stamps = catalogue.stamps_package
    rgba = read_image_rgba(context.path(stamps, entry.stamp))
    if entry.mirror:
        rgba = rgba[:, ::-1].copy()
    image, mask = paste_cutout(rgba, home, size=size, scale=entry.scale)
    home_photo = catalogue.homes[entry.home]
    origin = on_home(f"{stamps}:/{entry.stamp}", f"{home_photo.package}:/{home_photo.path}")
    check_mask_share(mask, origin)
    licence = (
        f"stamp: {context.licence(stamps, entry.stamp)}; "
        f"home photo: {context.licence(home_photo.package, home_photo.path, home_photo.licence)}"
    )
    package = stamps if home_photo.package == stamps else f"{stamps}, {home_photo.package}"
    return Target(entry.id, entry.class_name, image, mask, origin=origin, package=package, licence=licence)


def crop_square(photo: np.ndarray, crop: tuple[float, float, float]) -> np.ndarray:
    """The square ``(top, left, side)`` of a photo, given as fractions of its height, width and
    shorter side; clipped to stay inside the photo.

    photo : ndarray of shape (height, width, 3), uint8 -> ndarray of shape (side, side, 3), uint8
    """
    height, width = photo.shape[:2]
    side = max(1, min(round(crop[2] * min(height, width)), height, width))
    top = min(round(crop[0] * height), height - side)
    left = min(round(crop[1] * width), width - side)
    return photo[top : top + side, left : left + side]


def add_demo_backgrounds(workspace: Workspace, context: DemoContext) -> None:
    """Cut every catalogue photo into distinct square scenes and store them with package and licence."""
    catalogue, size = context.catalogue, image_size(workspace)
    backgrounds: list[Background] = []
    rule = catalogue.crop_rule
    for done, photo in enumerate(catalogue.backgrounds, start=1):
        path = context.path(photo)
        result = read_backgrounds(path.parent, files=[path], size=size, crops_per_photo=catalogue.crops_per_photo, seed=rule["seed"])
        if result.rejected:
            raise InvalidInputError(f"demo background {photo.package}:/{photo.path}: {result.rejected[0].reason}")
        licence = context.licence(photo.package, photo.path, photo.licence)
        for bg in result.accepted:
            top, left, side = bg.crop
            backgrounds.append(
                replace(bg, id=crop_id(photo.name, top, left, side), origin=f"{photo.package}:/{photo.path}", package=photo.package, licence=licence)
            )
        context.report(done, len(catalogue.backgrounds), "backgrounds")
    store_backgrounds(workspace, backgrounds)
    _mark(workspace, "backgrounds", context)


# -- analysis steps: what a new user should find ready in the dashboard ------------------------
DEMO_MODELS = ("efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2")
class SuiteChoice(TypedDict):
    """How a suite is chosen: :func:`analytics.suites.build_suite`'s method, size and seed."""

    method: str
    n: int
    seed: int


DEMO_SUITE: SuiteChoice = {"method": "ontology", "n": 32, "seed": 0}
"""The demo's suite: the paper's method (keywords + ontology expansion), 32 backgrounds per target."""


def register_demo_models(workspace: Workspace, context: DemoContext) -> None:
    """Register the three real ImageNet classifiers that ship inside PyPI packages."""
    have = {spec.name for spec in list_models(workspace)}
    for done, name in enumerate(DEMO_MODELS, start=1):
        if name not in have:
            register_efficientnet_lite(workspace, int(name[-1]))
        context.report(done, len(DEMO_MODELS), "models")


def _has_demo_models(workspace: Workspace) -> bool:
    return set(DEMO_MODELS) <= {row["name"] for row in workspace.query("SELECT name FROM models")}


def build_demo_suite(workspace: Workspace, context: DemoContext) -> None:
    """Keywords of targets and pool (classifier-patch on EfficientNet-Lite0), the association
    ontology, and the ontology suite with distances from the three models' ensemble."""
    tables, _ = ensure_keyword_tables(workspace, progress=with_message(context.report, "keywords"))
    ontology_id, _ = ensure_ontology(workspace, tables)
    build_suite(
        workspace,
        **DEMO_SUITE,
        keyword_tables=tables,
        ontology_id=ontology_id,
        progress=with_message(context.report, "suite"),
    )
    _mark(workspace, "suite", context)


def demo_suite_id(workspace: Workspace) -> str | None:
    """The id of the demo's ontology suite (the first saved one of its method, n and seed)."""
    row = workspace.query_one(
        "SELECT id FROM suites WHERE method = ? AND n = ? AND seed = ? ORDER BY created LIMIT 1",
        (DEMO_SUITE["method"], DEMO_SUITE["n"], DEMO_SUITE["seed"]),
    )
    return None if row is None else row["id"]


def run_demo_models(workspace: Workspace, context: DemoContext) -> None:
    """Run the three classifiers over the demo suite (resumable; finished runs are reused)."""
    suite_id = demo_suite_id(workspace)
    if suite_id is None:  # the suite step runs before this one, so only a damaged workspace gets here
        raise InvalidInputError(f"{workspace.root}: the demo suite is missing; run `backdrop demo` again to rebuild it")
    start_runs(workspace, list(DEMO_MODELS), suite_id, progress=with_message(context.report, "runs"))
    _mark(workspace, "runs", context)


DEMO_STEPS: list[DemoStep] = [
    DemoStep("assets", fetch_demo_assets, _assets_needed_done),
    DemoStep("targets", add_demo_targets, lambda ws: _is_marked(ws, "targets")),
    DemoStep("backgrounds", add_demo_backgrounds, lambda ws: _is_marked(ws, "backgrounds")),
    DemoStep("models", register_demo_models, _has_demo_models),
    DemoStep("suite", build_demo_suite, lambda ws: _is_marked(ws, "suite") and demo_suite_id(ws) is not None),
    DemoStep("runs", run_demo_models, lambda ws: _is_marked(ws, "runs")),
    DemoStep("zoo", lambda ws, context: zoo_step(ws, progress=context.report), zoo_built),
    DemoStep("zoo runs", lambda ws, context: zoo_runs_step(ws, progress=context.report), zoo_runs_done),
]
"""The ordered steps of :func:`build_demo`; each is idempotent and resumes after an interruption."""


# -- the build -------------------------------------------------------------------------------
@dataclass(frozen=True)
class DemoReport:
    """What :func:`build_demo` did and what the workspace now holds."""

    workspace: str
    steps_run: tuple[str, ...]
    steps_skipped: tuple[str, ...]
    targets: int
    classes: int
    backgrounds: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace,
            "steps_run": list(self.steps_run),
            "steps_skipped": list(self.steps_skipped),
            "targets": self.targets,
            "classes": self.classes,
            "backgrounds": self.backgrounds,
        }


def build_demo(
    workspace: Workspace,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    steps: list[DemoStep] | None = None,
) -> DemoReport:
    """Build (or complete) the demo workspace; steps already done are skipped.

    Parameters
    ----------
    workspace : Workspace
    cache_dir : path-like, default=None
        Where Debian packages are fetched to; None means :func:`analytics.demo.default_cache_dir`.
    progress : callable, default=None
        ``progress(done, total, step)``, e.g. to drive a progress bar.
    steps : list of DemoStep, default=None
        The steps to run, in order; None means :data:`DEMO_STEPS`.

    Returns
    -------
    DemoReport

    Raises
    ------
    analytics.demo.AssetError
        The Debian packages cannot be fetched here (the message says how to use your own data).
    """
    context = DemoContext(load_catalogue(), Path(cache_dir) if cache_dir is not None else None, progress)
    run, skipped = [], []
    for step in DEMO_STEPS if steps is None else steps:
        if step.is_done(workspace):
            skipped.append(step.name)
            continue
        step.run(workspace, context)
        run.append(step.name)
    counts = count_rows(workspace, ("targets", "classes", "backgrounds"))
    return DemoReport(str(workspace.root), tuple(run), tuple(skipped), counts["targets"], counts["classes"], counts["backgrounds"])
