"""The Ontology page's keyword-table builder: classifier patches, a keyword file (CSV upload, or
HDF5 / CSV on the server), ADE20K + Places365 checkpoints; the last build's report and the
workspace's keyword tables.

Streamlit-side only; scoring, reading and storing keyword tables is :mod:`analytics.keywords`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from analytics._progress import Progress
from analytics.data import list_backgrounds, list_classes, list_targets
from analytics.exceptions import InvalidInputError
from analytics.keywords import (
    KEYWORD_ITEM_KINDS,
    VOCABULARIES,
    ClassifierPatchBackend,
    KeywordTable,
    SceneModelsBackend,
    build_keyword_tables,
    check_csv_size,
    import_keyword_table,
    list_keyword_tables,
    read_keyword_csv,
    read_keyword_file,
    read_row_names,
)
from analytics.models import list_models
from analytics.team import MAX_CSV_UPLOAD_MB, resolve_server_path, server_paths_offered
from analytics.workspace import Workspace
from ui import cache
from ui.markdown import escape_markdown

BUILD_KEY = "ontology.kw."  # widgets of the builder (on the Ontology page, whose keys start with "ontology.")
BUILD_REPORT = BUILD_KEY + "report"  # session state: what the last build stored and warned about
PATCH, FILE, SCENES = "classifier-patch", "precomputed", "scene-models"
BUILD_BACKENDS = {
    PATCH: "Classifier patches (a registered ImageNet classifier)",
    FILE: "Keyword file (CSV upload, or HDF5 / CSV on the server)",
    SCENES: "ADE20K + Places365 checkpoints (the paper's setup)",
}
SERVER_PATH_SETTINGS = ("path", "row_names", "encoder", "decoder", "places")  # builder settings naming server files
#: Images scored per call while building a table: the bar counts after each call (issue 47.8: at 32 a
#: busy CPU showed "Scoring images…" with no count for minutes); the network's batches are the backend's.
IMAGES_PER_CALL = 8
BUILD_ITEMS = {"both": KEYWORD_ITEM_KINDS, "targets": ("target",), "backgrounds": ("background",)}
CSV_HELP = (
    "CSV columns, long layout: `image,keyword[,score]` (one row per keyword of an image); wide layout: "
    "`image[,label],<keyword 1>,<keyword 2>,…` (one numeric column per keyword, 0/1 or scores). `image` is the "
    "workspace id (`zebra/zebra-field`, a background's `beach`) or the original file name or stem."
)


@dataclass(frozen=True)
class BuildRequest:
    """What the builder form asked for: a backend, the item kinds and that backend's settings."""

    backend: str
    item_kinds: tuple[str, ...]
    settings: dict[str, Any] = field(default_factory=dict)


def keyword_builder(workspace: Workspace) -> BuildRequest | None:
    """The keyword-table builder's widgets; the request when its button was clicked, else None."""
    backends = list(BUILD_BACKENDS) if server_paths_offered(workspace) else [PATCH, FILE]  # scene models: checkpoints on the server
    backend = st.radio("Keywords from", backends, format_func=BUILD_BACKENDS.get, horizontal=True, key=BUILD_KEY + "backend")
    items = st.radio("Tables for", list(BUILD_ITEMS), horizontal=True, key=BUILD_KEY + "items")
    settings = {PATCH: _patch_settings, FILE: _file_settings, SCENES: _scene_settings}[backend](workspace)
    if not st.button("Build keyword tables", type="primary", key=BUILD_KEY + "build"):
        return None
    return BuildRequest(backend, BUILD_ITEMS[items], settings)


def _patch_settings(workspace: Workspace) -> dict[str, Any]:
    models = [spec.name for spec in list_models(workspace)]
    if not models:
        st.caption("No model is registered: register an ImageNet classifier on the Models page first.")
    columns = st.columns(4)
    model = columns[0].selectbox("Classifier", models, key=BUILD_KEY + "model")
    vocabulary = columns[1].selectbox(
        "Vocabulary", VOCABULARIES, key=BUILD_KEY + "vocabulary", help="auto: the scene classes of an ImageNet-1k model, else all outputs"
    )
    grid = int(columns[2].number_input("Patches per side", 1, 6, 3, key=BUILD_KEY + "grid"))
    threshold = float(columns[3].number_input("Present at probability ≥", 0.01, 1.0, 0.1, step=0.05, key=BUILD_KEY + "patch_threshold"))
    return {"model": model, "vocabulary": vocabulary, "grid": grid, "threshold": threshold}


def _file_settings(workspace: Workspace) -> dict[str, Any]:
    st.caption(CSV_HELP)
    # the reader's cap, not the server's larger one: the widget's "Limit … per file" then tells the truth
    upload = st.file_uploader(f"Keyword CSV (up to {MAX_CSV_UPLOAD_MB} MB)", type=["csv"], key=BUILD_KEY + "upload", max_upload_size=MAX_CSV_UPLOAD_MB)
    path = row_names = ""
    if server_paths_offered(workspace):
        path = st.text_input("…or a keyword file on the server (reference HDF5, Backdrop HDF5 or CSV)", key=BUILD_KEY + "path").strip()
        row_names = st.text_input(
            "Row names file on the server (reference HDF5 only: one image name per row)", key=BUILD_KEY + "row_names"
        ).strip()
    columns = st.columns(3)
    threshold = columns[0].text_input("Scores present when > (blank: 0/1 or listed)", key=BUILD_KEY + "threshold").strip()
    top_k = int(columns[1].number_input("…or the top k of each row (0: off)", 0, 100, 0, key=BUILD_KEY + "top_k"))
    places_top_k = int(columns[2].number_input("Places365 scenes kept (reference HDF5)", 1, 20, 1, key=BUILD_KEY + "places_top_k"))
    return {"upload": upload, "path": path, "row_names": row_names, "threshold": threshold, "top_k": top_k or None, "places_top_k": places_top_k}


def _scene_settings(workspace: Workspace) -> dict[str, Any]:
    st.caption(
        "The published CSAIL files: `encoder_epoch_20.pth` / `decoder_epoch_20.pth` of ade20k-resnet18dilated-ppm_deepsup "
        "and `resnet18_places365.pth.tar`; `object150_info.csv` and `categories_places365.txt` are looked up next to them."
    )
    left, middle, right = st.columns(3)
    settings = {
        "encoder": left.text_input("ADE20K encoder checkpoint", key=BUILD_KEY + "encoder").strip(),
        "decoder": middle.text_input("ADE20K decoder checkpoint", key=BUILD_KEY + "decoder").strip(),
        "places": right.text_input("Places365 checkpoint", key=BUILD_KEY + "places").strip(),
    }
    left, middle, right = st.columns(3)
    settings["input_size"] = int(left.number_input("Segmentation short side (px)", 64, 1000, 300, step=8, key=BUILD_KEY + "input_size"))
    settings["min_share"] = float(middle.number_input("Object present above pixel share", 0.0, 1.0, 0.01, step=0.005, format="%.3f", key=BUILD_KEY + "min_share"))
    settings["places_top_k"] = int(right.number_input("Places365 scenes kept", 1, 20, 1, key=BUILD_KEY + "scene_top_k"))
    return settings


def run_build(workspace: Workspace, request: BuildRequest) -> dict[str, Any]:
    """Build the tables of ``request``: ``{'tables': {kind: name}, 'warnings': [...]}`` (raises BackdropError)."""
    # every path typed in the builder is read by the server: only inside the data roots
    settings = {
        key: str(resolve_server_path(workspace, value)) if key in SERVER_PATH_SETTINGS and value else value
        for key, value in request.settings.items()
    }
    if request.backend == FILE:
        report = import_keyword_table(
            workspace,
            _keyword_file(settings),
            item_kinds=request.item_kinds,
            row_names=read_row_names(settings["row_names"]) if settings["row_names"] else None,
        )
        return {"tables": report.tables, "warnings": report.warnings}
    if request.backend == PATCH:
        if not settings["model"]:
            raise InvalidInputError("no classifier chosen; register an ImageNet classifier on the Models page first")
        model = cache.load_model(str(workspace.root), settings["model"])
        options = {key: settings[key] for key in ("grid", "threshold", "vocabulary")}
        backend = ClassifierPatchBackend(model, exclude_classes=list_classes(workspace), **options)
    else:
        missing = [role for role in ("encoder", "decoder", "places") if not settings[role]]
        if missing:
            raise InvalidInputError(f"give the path of the {', '.join(missing)} checkpoint on the server")
        roles = ("encoder", "decoder", "places")
        backend = SceneModelsBackend(*(settings[role] for role in roles), **{k: v for k, v in settings.items() if k not in roles})
    tables = build_keyword_tables(workspace, backend, item_kinds=request.item_kinds, batch_size=IMAGES_PER_CALL, progress=scoring_bar(workspace, request.item_kinds))
    return {"tables": tables, "warnings": []}


def scoring_bar(workspace: Workspace, item_kinds: tuple[str, ...]) -> Progress:
    """A progress bar for :func:`analytics.keywords.build_keyword_tables` over ``item_kinds``, counting
    images from the start: ``Scoring targets: 16 of 60 · 16 of 324 images in all``."""
    counts = {"target": len(list_targets(workspace)), "background": len(list_backgrounds(workspace))}
    kinds = [kind for kind in KEYWORD_ITEM_KINDS if kind in item_kinds]
    total = sum(counts[kind] for kind in kinds)
    before = {kind: sum(counts[k] for k in kinds[:i]) for i, kind in enumerate(kinds)}  # images of the kinds scored earlier
    what = " and ".join(f"{counts[kind]:,} {kind}s" for kind in kinds)
    bar = st.progress(0.0, text=f"Scoring {what}: 0 of {total:,} images (the count moves every {IMAGES_PER_CALL} images)…")

    def report(done: int, of: int, kind: str = "", /) -> None:
        overall = before.get(kind, 0) + done
        bar.progress(min(overall / total, 1.0) if total else 0.0, text=f"Scoring {kind}s: {done:,} of {of:,} · {overall:,} of {total:,} images in all")

    return report


def _keyword_file(settings: dict[str, Any]) -> KeywordTable:
    """The uploaded CSV (refused above the size limit) or the file on the server."""
    threshold = _optional_number(settings["threshold"], "The presence threshold")
    upload = settings["upload"]
    if upload is not None:
        check_csv_size(upload.size, upload.name)
        return read_keyword_csv(upload.getvalue(), name=upload.name, threshold=threshold, top_k=settings["top_k"])
    if not settings["path"]:
        raise InvalidInputError("upload a keyword CSV or give the path of a keyword file on the server")
    return read_keyword_file(settings["path"], threshold=threshold, top_k=settings["top_k"], places_top_k=settings["places_top_k"])


def _optional_number(text: str, what: str) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        raise InvalidInputError(f"{what} must be a number; got {text!r}") from None


def build_report() -> None:
    """What the last build stored, and its warnings (unknown image names, items without rows)."""
    report = st.session_state.get(BUILD_REPORT)
    if report is None:
        return
    st.success("Built keyword tables: " + ", ".join(f"{kind}s → {escape_markdown(name)}" for kind, name in report["tables"].items()))
    for warning in report["warnings"]:
        st.warning(escape_markdown(warning))


def keyword_tables_view(workspace: Workspace) -> None:
    """The workspace's keyword tables with the backend, source and vocabulary each one used."""
    tables = list_keyword_tables(workspace)
    if tables.empty:
        st.caption("No keyword table yet.")
        return
    st.table(tables.set_index("name")[["backend", "item_kind", "n_items", "n_keywords", "source", "vocabulary", "created"]])

