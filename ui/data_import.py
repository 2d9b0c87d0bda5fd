"""Bring your own data on the Data page: the import form, reading and storing, the last result.

Streamlit-side only; reading and checking files is :mod:`analytics.data.datasets`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import streamlit as st

from analytics.data import (
    COCO,
    DEFAULT_MIN_AREA,
    LAYOUT_PATTERNS,
    MAX_INSTANCES,
    MAX_INSTANCES_ENV_VAR,
    MAX_PROPOSALS,
    MIN_MASK_SHARE,
    TARGET_LAYOUTS,
    VOC,
    Background,
    ClassMapping,
    ImportResult,
    Target,
    add_backgrounds,
    add_targets,
    image_size,
    list_backgrounds,
    list_class_mappings,
    list_classes,
    load_backgrounds,
    on_home,
    resolve_class,
    stream_backgrounds,
    stream_coco,
    stream_targets,
    stream_voc,
)
from analytics.exceptions import BackdropError
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
        if options["layout"] in (COCO, VOC):
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
        options["propose_masks"] = options["layout"] not in (COCO, VOC) and st.checkbox(
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
) -> tuple[ImportResult, list[str], int, list[str]]:
    """Read, check and store the files; stored records carry the source and licence the user gave,
    and an uploaded file's origin as the user knows it (``photos.zip/images/a.png``, never the
    server's temporary copy: :func:`ui.uploads.as_uploaded` of each of ``uploads``).

    Both kinds stream as the CLI's ``add-targets`` and ``add-backgrounds`` do: one file (or COCO /
    VOC instance) decoded at a time into :func:`analytics.data.add_targets` (every row committed at
    the end or none) or :func:`analytics.data.add_backgrounds` (rows committed in batches), so an
    import never sits decoded in the server's memory. A COCO import reads ``annotations`` over the
    images in ``source`` (:func:`analytics.data.stream_coco`), a VOC import the tree in ``source``
    (:func:`analytics.data.stream_voc`); the masks proposed for mask-less photos wait for review.

    Returns
    -------
    result : ImportResult
        The rejected files, the proposed masks and the skipped instances (``accepted`` stays empty).
    accepted : list of str
        Ids of the accepted images.
    added : int
        How many of them were new to the workspace.
    classes : list of str
        The classes of the accepted targets (none for backgrounds), in the order met.
    """
    size, result, accepted = image_size(workspace), ImportResult(), []
    classes: dict[str, None] = {}  # the accepted targets' classes, in the order met

    def tagged(records: Iterable[Target | Background], home_photo: str | None = None) -> Iterator:
        for record in records:
            accepted.append(record.id)
            if isinstance(record, Target):
                classes.setdefault(record.class_name)
            # a cut-out's origin names its home photo: none of that photo's crops becomes its background
            origin = as_uploaded(record.origin, *uploads)
            origin = origin if home_photo is None else on_home(origin, home_photo)
            yield replace(record, origin=origin, package=request.package, licence=request.licence)

    if not request.targets:
        with stream_backgrounds(source, result, size=size, crops_per_photo=request.crops_per_photo) as photos:
            return result, accepted, add_backgrounds(workspace, tagged(photos)), []
    if request.layout == COCO:
        assert annotations is not None  # the form asks for the JSON with a COCO layout
        reading = stream_coco(annotations, source, result, size=size, classes=request.classes, min_area=request.min_area, all_instances=request.all_instances)
    elif request.layout == VOC:
        reading = stream_voc(source, result, size=size, split=request.split, classes=request.classes, min_area=request.min_area, all_instances=request.all_instances)
    else:
        home = None if request.home_id is None else load_backgrounds(workspace, [request.home_id])[0]
        reading = stream_targets(source, result, layout=request.layout, size=size, home=home, propose_masks=request.propose_masks)
    home_photo = None if request.home_id is None else str(list_backgrounds(workspace).set_index("id").at[request.home_id, "origin"])
    with reading as targets:
        added = add_targets(workspace, tagged(targets, home_photo), classes=resolve_class)
    return result, accepted, added, list(classes)


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
                result, accepted, added, classes = import_files(workspace, request, source, annotations, uploads=uploads)
            st.session_state[LAST_IMPORT] = {
                "source": " over ".join(str(p.name if request.from_upload else p) for p in (annotations, source) if p),
                "added": added,
                "accepted": accepted,
                "rejected": [(as_uploaded(short_path(r.file, source), *uploads), as_uploaded(r.reason, *uploads)) for r in result.rejected],
                "unmapped": unmapped_classes(workspace, classes),
                "proposed": len(result.proposed),
                "skipped": {
                    reason: {**item, "examples": [as_uploaded(str(e), *uploads) for e in item["examples"]]} for reason, item in result.skip_report().items()
                },
            }
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    st.session_state[PROPOSED] = result.proposed
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
    """Those of the imported targets' ``classes`` that have no mapping yet."""
    names = set(classes)
    return [name for name, mapping in list_class_mappings(workspace).items() if name in names and not mapping.mapped]


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
            f"No model output is known yet for class {', '.join(unmapped)}: map it in the **Classes** tab "
            "(ImageNet indices, an IN-9 class or a custom label) before running models."
        )
    accepted_tab, rejected_tab, *skipped_tab = st.tabs([f"Accepted ({len(accepted)})", f"Rejected ({len(rejected)})", *([f"Skipped ({n_skipped})"] if skipped else [])])
    accepted_tab.dataframe(pd.DataFrame({"id": accepted}), hide_index=True)
    if rejected:  # a static table wraps long reasons: readable without scrolling sideways
        rejected_tab.table(pd.DataFrame([(escape_markdown(f), escape_markdown(r)) for f, r in rejected], columns=["file", "reason"]).set_index("file"))
    if skipped:
        rows = [(escape_markdown(reason), item["count"], escape_markdown("; ".join(item["examples"]))) for reason, item in skipped.items()]
        skipped_tab[0].table(pd.DataFrame(rows, columns=["reason", "count", "first entries"]).set_index("reason"))
