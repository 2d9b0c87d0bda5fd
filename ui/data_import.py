"""Bring your own data on the Data page: the import form, reading and storing, the last result.

Streamlit-side only; reading, checking and storing files is the library's one import flow,
:func:`analytics.data.import_targets` and :func:`analytics.data.import_backgrounds`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from analytics.data import (
    COCO,
    DEFAULT_MIN_AREA,
    INSTANCE_LAYOUTS,
    LAYOUT_PATTERNS,
    MAX_INSTANCES,
    MAX_INSTANCES_ENV_VAR,
    MAX_PROPOSALS,
    MIN_MASK_SHARE,
    TARGET_LAYOUTS,
    VOC,
    ClassMapping,
    ImportReport,
    NothingToImportError,
    import_backgrounds,
    import_targets,
    list_backgrounds,
    list_classes,
    resolve_class,
)
from analytics.exceptions import BackdropError
from analytics.models import unscored_classes
from analytics.team import resolve_server_path, server_paths_offered
from analytics.workspace import Workspace
from ui.markdown import escape_markdown
from ui.uploads import as_uploaded, saved_upload

LAST_IMPORT = "data.last_import"  # summary of the latest import (plain values) shown after the rerun
PROPOSED = "data.proposed_masks"  # the latest import's photos with GrabCut masks, handed to ui.mask_review
GREY_HOME = "Neutral grey"
def layout_label(layout: str) -> str:
    """``folder — images/<class>/<photo> (with masks/…)``: the layout and the files it reads."""
    return f"{layout} — {LAYOUT_PATTERNS[layout]}"


#: :func:`import_source`'s words for the two files of a COCO import: its JSON, then its images.
COCO_JSON = {"what": "COCO annotations JSON", "uploaded": "COCO annotations JSON", "types": ("json",), "placeholder": "/data/export/instances.json"}
COCO_IMAGES = {"what": "Images folder (or .zip)", "uploaded": "Images zip", "placeholder": "/data/export/images"}


@contextmanager
def import_source(
    from_upload: bool, *, key: str, what: str = "Folder (or .zip)", uploaded: str = "Zip file", types: tuple[str, ...] = ("zip",),
    placeholder: str = "/data/my-targets",
) -> Iterator[Path | None]:
    """The folder or zip (or ``types`` of file) to import: a server path, or an upload saved to a temporary folder."""
    if not from_upload:
        text = st.text_input(f"{what} on the server", key=f"{key}.path", placeholder=placeholder)
        yield Path(text.strip()) if text.strip() else None  # as typed: resolve_server_path expands '~' (one line if it cannot)
        return
    upload = st.file_uploader(uploaded, type=list(types), key=f"{key}.upload")
    if upload is None:
        yield None
        return
    with saved_upload(upload) as saved:  # an error raised inside names the upload, not its temporary copy
        yield saved


@dataclass(frozen=True)
class ImportRequest:
    """What the import form asks for (plain values; the files come from :func:`import_source`)."""

    targets: bool
    from_upload: bool
    layout: str = "folder"
    home_id: str | None = None
    propose_masks: bool = False
    min_area: float = DEFAULT_MIN_AREA  # coco, voc: the smallest instance kept, every instance or the largest, the categories
    all_instances: bool = False
    classes: tuple[str, ...] | None = None
    split: str | None = None  # voc: the ids of ImageSets/Segmentation/<split>.txt (None: every mask)
    crops_per_photo: int = 1
    package: str = ""
    licence: str = ""


def ask_import(workspace: Workspace) -> ImportRequest:
    st.caption("Add a target set or a background pool; every file is checked and rejected files are listed with the reason.")
    kind_column, from_column = st.columns(2)
    kind = kind_column.radio(
        "What to import", ["Target set", "Background pool"], horizontal=True, key="data.import_kind", on_change=forget_last_import,
    )  # fmt: skip
    sources = ["Folder on the server", "Uploaded zip"] if server_paths_offered(workspace) else ["Uploaded zip"]
    origin = from_column.radio("From", sources, horizontal=True, key="data.import_from")
    options: dict = {"targets": kind == "Target set", "from_upload": origin == "Uploaded zip"}
    if options["targets"]:
        options["layout"] = st.selectbox(
            "Layout", TARGET_LAYOUTS, format_func=layout_label, key="data.import_layout",
            help="At the top of the zip or folder, or inside one enclosing folder; cut-outs are RGBA PNGs (alpha = mask); "
            "coco: the instance segmentation JSON that CVAT, Label Studio, FiftyOne or Roboflow export, with its images; "
            "voc: a Pascal VOC tree (JPEGImages, SegmentationObject and SegmentationClass palette PNGs).",
        )  # fmt: skip
        if options["layout"] in INSTANCE_LAYOUTS:
            options.update(ask_instances())
        if options["layout"] == VOC:
            split = st.text_input(
                "Split (optional)", key="data.import_split", placeholder="e.g. val",
                help="Import the ids listed in ImageSets/Segmentation/<split>.txt (a name such as val, not a path); empty imports every mask.",
            )  # fmt: skip
            options["split"] = split.strip() or None
        elif options["layout"] == "cutouts":
            homes = [GREY_HOME, *list_backgrounds(workspace)["id"]]
            home = st.selectbox("Home background the cut-outs are pasted on", homes, key="data.import_home")
            options["home_id"] = None if home == GREY_HOME else home
        options["propose_masks"] = options["layout"] not in INSTANCE_LAYOUTS and st.checkbox(
            "Propose GrabCut masks for photos without one", key="data.import_propose",
            help="Ordinary photos (no mask file, no transparency): GrabCut outlines the object from a centred box; "
            f"review every mask below (accept, redraw or drop) before the targets are stored. At most {MAX_PROPOSALS} photos an import.",
        )  # fmt: skip
    else:
        options["crops_per_photo"] = int(st.number_input("Distinct square crops per photo", 1, 32, 1, key="data.import_crops"))
    package_column, licence_column = st.columns(2)
    options["package"] = package_column.text_input("Source collection (optional)", key="data.import_package", placeholder="e.g. my-photos-2024").strip()
    options["licence"] = licence_column.text_input("Licence (optional)", key="data.import_licence", placeholder="e.g. CC-BY-4.0").strip()
    return ImportRequest(**options)


def ask_instances() -> dict:
    """The choices of an instance-mask import (COCO, VOC): the smallest instance kept, every instance or the largest, the categories."""
    area_column, classes_column = st.columns(2)
    min_area = area_column.number_input(  # four decimals: the floor it can lower is 0.002
        "Smallest instance (share of its image)", 0.0, 1.0, DEFAULT_MIN_AREA, step=0.001, format="%.4f", key="data.import_min_area",
        help="Instances covering less of their image are skipped (and counted); crowd regions always are. "
        f"A target's object must cover {MIN_MASK_SHARE * 100:g} % of its image, or it is rejected; a smaller value here "
        "lowers that floor too (0 keeps every instance with a pixel left at the stored size).",
    )  # fmt: skip
    names = classes_column.text_input("Categories (optional)", key="data.import_classes", placeholder="e.g. dog, cat", help="Comma-separated category names; empty imports every category.")
    every = st.checkbox(
        "Every instance", key="data.import_all_instances",
        help=f"A target per instance; otherwise the largest instance of each image. An import makes at most {MAX_INSTANCES:,} targets "
        f"unless the server sets another limit (`{MAX_INSTANCES_ENV_VAR}`); a larger one is refused before any image is decoded.",
    )  # fmt: skip
    return {"min_area": float(min_area), "all_instances": every, "classes": tuple(n.strip() for n in names.split(",") if n.strip()) or None}


def import_files(
    workspace: Workspace, request: ImportRequest, source: Path, annotations: Path | None = None, *, uploads: Sequence[Path] = ()
) -> ImportReport:
    """Read, check and store the files through the library's one import flow
    (:func:`analytics.data.import_targets`, :func:`analytics.data.import_backgrounds`, as the CLI's
    ``add-targets`` and ``add-backgrounds`` and :mod:`analytics.api` do): one file (or COCO / VOC
    instance) decoded at a time, targets all or nothing, backgrounds in batches. Stored records carry
    the source and licence the user gave, and an uploaded file's origin as the user knows it
    (``photos.zip/images/a.png``, never the server's temporary copy: :func:`ui.uploads.as_uploaded`
    of each of ``uploads``). A COCO import reads ``annotations`` over the images in ``source``; the
    masks proposed for mask-less photos wait for review (``proposed``).

    Raises
    ------
    NothingToImportError
        Nothing valid to add; its ``report`` lists the rejected and skipped files.
    """
    def origin(path: str) -> str:
        return as_uploaded(path, *uploads)

    if not request.targets:
        return import_backgrounds(workspace, source, crops_per_photo=request.crops_per_photo, package=request.package, licence=request.licence, origin=origin)
    coco, instances = request.layout == COCO, request.layout in INSTANCE_LAYOUTS
    return import_targets(
        workspace, None if coco else source, layout=request.layout, annotations=annotations if coco else None, images=source if coco else None,
        home_id=request.home_id, classes=request.classes if instances else None, min_area=request.min_area if instances else None,
        all_instances=request.all_instances and instances, split=request.split if request.layout == VOC else None,
        propose_masks=request.propose_masks and not instances, package=request.package, licence=request.licence, origin=origin,
    )  # fmt: skip


def import_data(workspace: Workspace) -> None:
    request = ask_import(workspace)
    coco = request.targets and request.layout == COCO
    json_source = import_source(request.from_upload, key="data.import_coco", **COCO_JSON) if coco else nullcontext()
    try:  # an error leaves through import_source, which names an upload as the user knows it (ui.uploads)
        with json_source as annotations, import_source(request.from_upload, key="data.import_source", **(COCO_IMAGES if coco else {})) as source:
            if not st.button("Import", type="primary", disabled=source is None or (coco and annotations is None), key="data.import_go"):
                return
            if not request.from_upload:  # read by the server: only inside the data roots (analytics.team.paths)
                source = resolve_server_path(workspace, str(source))
                annotations = annotations and resolve_server_path(workspace, str(annotations))
            uploads = [p for p in (annotations, source) if p] if request.from_upload else []
            with st.spinner("Reading and checking the files" + (", proposing a GrabCut mask for each photo" if request.propose_masks else "") + "…", show_time=True):
                try:
                    report = import_files(workspace, request, source, annotations, uploads=uploads)
                except NothingToImportError as err:  # shown below with the reasons, as any import's result
                    report = err.report
            st.session_state[LAST_IMPORT] = {
                "source": " over ".join(str(p.name if request.from_upload else p) for p in (annotations, source) if p),
                "added": report.added,
                "accepted": report.accepted,
                "rejected": [(as_uploaded(short_path(r.file, source), *uploads), as_uploaded(r.reason, *uploads)) for r in report.rejected],
                "unmapped": unmapped_classes(workspace, report.classes),
                "proposed": len(report.proposed),
                "skipped": {
                    reason: {**item, "examples": [as_uploaded(str(e), *uploads) for e in item["examples"]]} for reason, item in report.skip_report().items()
                },
            }
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    st.session_state[PROPOSED] = report.proposed
    st.rerun()  # so the grids and counts include the new images


def short_path(file: str, source: Path) -> str:
    """A file's path inside the imported folder; for a zip (extracted elsewhere) its last three parts."""
    path = Path(file)
    if path.is_relative_to(source):
        return str(path.relative_to(source))
    return str(Path(*path.parts[-3:]))


def new_classes(workspace: Workspace, names: Iterable[str]) -> dict[str, ClassMapping]:
    """The classes among ``names`` the workspace lacks, with the mapping :func:`resolve_class` gives them."""
    known = set(list_classes(workspace))
    return {name: resolve_class(name) for name in dict.fromkeys(names) if name not in known}


def unmapped_classes(workspace: Workspace, classes: Iterable[str]) -> list[str]:
    """Those of the imported targets' ``classes`` that no registered model scores yet, by name
    (:func:`analytics.models.unscored_classes`: without a model, those without a mapping). A class a
    model registered with its own class names scores needs no mapping (issue 47.7)."""
    return unscored_classes(workspace, sorted(set(classes)))


def forget_last_import() -> None:
    """Drop the result of the latest import: after a switch of import kind, a target import's result
    under the background form reads as the result of the background import (issue 42.11e). The
    photos awaiting mask review stay (:data:`PROPOSED`): ``ui.mask_review`` shows them on its own."""
    st.session_state.pop(LAST_IMPORT, None)


def show_last_import() -> None:
    summary = st.session_state.get(LAST_IMPORT)
    if summary is None:
        st.caption("The result of an import shows here: the files accepted, and those rejected with the reason.")
        return
    accepted, rejected, proposed = summary["accepted"], summary["rejected"], summary.get("proposed", 0)
    skipped = summary.get("skipped") or {}  # a COCO import's entries left out by choice, by reason
    n_skipped = sum(item["count"] for item in skipped.values())
    if proposed:
        st.info(f"{proposed} photos without a mask got a proposed GrabCut mask: review them below, then import them in one go.")
    if not accepted and not proposed:
        st.error(f"Nothing valid to add from {escape_markdown(summary['source'])}; the workspace is unchanged. Reasons below.")
    elif accepted:
        already = len(accepted) - summary["added"]
        note = f" ({already} already in the workspace)" if already else ""
        st.success(f"Imported from {escape_markdown(summary['source'])}: {summary['added']} new of {len(accepted)} accepted{note}, {len(rejected)} rejected"
                   + (f", {n_skipped} skipped." if skipped else "."))
    if unmapped := summary.get("unmapped"):
        st.warning(
            f"No model output is known yet for class {', '.join(escape_markdown(name) for name in unmapped)}: no registered model "
            "scores it. Map it in the **Classes** tab (ImageNet indices, an IN-9 class or a custom label) before running models."
        )
    accepted_tab, rejected_tab, *skipped_tab = st.tabs([f"Accepted ({len(accepted)})", f"Rejected ({len(rejected)})", *([f"Skipped ({n_skipped})"] if skipped else [])])
    accepted_tab.dataframe(pd.DataFrame({"id": accepted}), hide_index=True)
    if rejected:  # a static table wraps long reasons: readable without scrolling sideways
        rejected_tab.table(pd.DataFrame([(escape_markdown(f), escape_markdown(r)) for f, r in rejected], columns=["file", "reason"]).set_index("file"))
    if skipped:
        rows = [(escape_markdown(reason), item["count"], escape_markdown("; ".join(item["examples"]))) for reason, item in skipped.items()]
        skipped_tab[0].table(pd.DataFrame(rows, columns=["reason", "count", "first entries"]).set_index("reason"))
