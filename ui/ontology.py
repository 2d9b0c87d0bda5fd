"""Helpers of the Ontology page: building the workspace's keyword tables (classifier-patch, a
keyword file, ADE20K + Places365 checkpoints), keyword sources, cached ontology builds, the rules
table, the network view and the expansion explorer.

The library (:mod:`analytics.ontology`, :mod:`analytics.keywords`) computes; this module caches,
draws Plotly figures and lays out widgets. Cache keys are paths, table names and content hashes;
keyword tables and ontologies are passed as ``_``-prefixed (unhashed) arguments beside their hash.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.colors import sample_colorscale

from analytics.datasets import list_classes
from analytics.exceptions import BackdropError, InvalidInputError
from analytics.keywords import (
    KeywordTable,
    list_keyword_tables,
    load_keyword_table,
    read_keyword_file,
    save_keyword_table,
)
from analytics.keywords.classifier_patch import VOCABULARIES, ClassifierPatchBackend
from analytics.keywords.precomputed import check_csv_size, import_keyword_table, read_keyword_csv, read_row_names
from analytics.keywords.scene_models import SceneModelsBackend
from analytics.keywords.store import ITEM_KINDS, build_keyword_tables
from analytics.models import list_models
from analytics.ontology import (
    ALGORITHMS,
    DEFAULT_MAX_LEN,
    DEFAULT_MAXITS,
    DEFAULT_MIN_CONFIDENCE,
    DEFAULT_MIN_SUPPORT,
    WEIGHTS,
    Ontology,
    build_ontology,
    expand_item,
    expand_table,
    level_statistics,
)
from analytics.team.paths import resolve_server_path
from analytics.workspace import PROJECT_ROOT, Workspace
from ui import cache, widgets
from ui.auth import may

REFERENCE_FILE = PROJECT_ROOT.parent / "shared" / "reference" / "bgtest" / "bgdb_items_val.hdf5"
WORKSPACE_SOURCE, FILE_SOURCE = "Workspace keyword tables", "Keyword file on the server"
CONFIDENCE_COLORSCALE = "Viridis"
N_EDGE_BINS = 5  # Plotly draws one width per line trace: edges are grouped by confidence
LAYOUT_SEED = 0
CENTRED_VIEW, OVERVIEW_VIEW = "Around one keyword", "Whole graph"
NETWORK_VIEWS = (CENTRED_VIEW, OVERVIEW_VIEW)
MAX_NEIGHBOURS = 25  # default keywords per ring of the centred view: more crowd the labels of ring 1
OVERVIEW_LABELS = 20  # the whole-graph view labels only its best-connected keywords (hover names the rest)
NETWORK_HEIGHT = 720  # px: a legible graph at a 1400 px wide window

KEY = "ontology."  # prefix of every widget key of the page
BUILD_KEY = KEY + "kw."  # widgets of the keyword-table builder
BUILD_REPORT = BUILD_KEY + "report"  # session state: what the last build stored and warned about
PATCH, FILE, SCENES = "classifier-patch", "precomputed", "scene-models"
BUILD_BACKENDS = {
    PATCH: "Classifier patches (a registered ImageNet classifier)",
    FILE: "Keyword file (CSV upload, or HDF5 / CSV on the server)",
    SCENES: "ADE20K + Places365 checkpoints (the paper's setup)",
}
SERVER_PATH_SETTINGS = ("path", "row_names", "encoder", "decoder", "places")  # builder settings naming server files
BUILD_ITEMS = {"both": ITEM_KINDS, "targets": ("target",), "backgrounds": ("background",)}
CSV_HELP = (
    "CSV columns, long layout: `image,keyword[,score]` (one row per keyword of an image); wide layout: "
    "`image[,label],<keyword 1>,<keyword 2>,…` (one numeric column per keyword, 0/1 or scores). `image` is the "
    "workspace id (`zebra/zebra-field`, a background's `beach`) or the original file name or stem."
)


@dataclass(frozen=True)
class Source:
    """Where the transactions come from: workspace tables (``names``) or a file (``path``)."""

    kind: str
    names: tuple[str, ...] = ()
    path: str = ""
    places_top_k: int = 1
    threshold: float | None = None

    @property
    def label(self) -> str:
        return ", ".join(self.names) if self.kind == WORKSPACE_SOURCE else f"file:{self.path}"


@dataclass(frozen=True)
class BuildRequest:
    """What the builder form asked for: a backend, the item kinds and that backend's settings."""

    backend: str
    item_kinds: tuple[str, ...]
    settings: dict[str, Any] = field(default_factory=dict)


# -- cached loading and building --------------------------------------------------------------
@st.cache_data(max_entries=16, show_spinner="Loading keyword tables…")
def load_tables(workspace_path: str, names: tuple[str, ...], present_hashes: tuple[str, ...]) -> list[KeywordTable]:
    """Keyword tables of a workspace (``present_hashes`` only keys the cache: a changed table reloads)."""
    workspace = Workspace(workspace_path, create=False)
    return [load_keyword_table(workspace, name) for name in names]


@st.cache_data(max_entries=8, show_spinner="Reading the keyword file…")
def read_file(path: str, modified: float, places_top_k: int, threshold: float | None) -> KeywordTable:
    """A keyword file (``modified`` = its mtime, so an edited file is read again)."""
    return read_keyword_file(path, places_top_k=places_top_k, threshold=threshold)


@st.cache_data(max_entries=16, show_spinner="Mining itemsets and rules…")
def cached_ontology(
    _tables: list[KeywordTable], digests: tuple[str, ...], algorithm: str, min_support: float, min_confidence: float, max_len: int | None
) -> Ontology:
    """:func:`analytics.ontology.build_ontology`, keyed by the tables' transaction digests."""
    return build_ontology(_tables, algorithm=algorithm, min_support=min_support, min_confidence=min_confidence, max_len=max_len)


@st.cache_data(max_entries=16, show_spinner="Expanding every item…")
def cached_level_statistics(
    _ontology: Ontology, ontology_id: str, _table: KeywordTable, table_digest: str, maxits: int, minkws: int | None
) -> pd.DataFrame:
    """Min / mean / max keywords per level over all items of one table (paper Figure 9)."""
    return level_statistics(expand_table(_ontology, _table, maxits=maxits, minkws=minkws), maxits=maxits)


@st.cache_data(max_entries=16, show_spinner="Laying out the graph…")
def cached_network_figure(_graph: nx.DiGraph, ontology_id: str, max_edges: int) -> go.Figure:
    return network_figure(_graph, max_edges=max_edges)


def tables_for(source: Source, workspace: Workspace | None) -> list[KeywordTable]:
    """The keyword tables of ``source`` (through the caches)."""
    if source.kind == FILE_SOURCE:
        return [read_file(source.path, os.path.getmtime(source.path) if os.path.exists(source.path) else 0.0, source.places_top_k, source.threshold)]
    listed = list_keyword_tables(workspace).set_index("name")
    hashes = tuple(listed.loc[list(source.names), "present_hash"])
    return load_tables(str(workspace.root), source.names, hashes)


# -- widgets ----------------------------------------------------------------------------------
def source_picker(workspace: Workspace | None) -> Source | None:
    """Choose workspace keyword tables or a keyword file on the server; None until one is given."""
    names = list_keyword_tables(workspace)["name"].tolist() if workspace is not None else []
    kinds = ([WORKSPACE_SOURCE] if names else []) + ([FILE_SOURCE] if server_paths_allowed(workspace) else [])
    if not kinds:
        return None
    kind = st.radio("Transactions from", kinds, horizontal=True, key=KEY + "source")
    if kind == WORKSPACE_SOURCE:
        default = None if KEY + "tables" in st.session_state else names  # a build chose its new tables
        chosen = st.multiselect("Keyword tables (their rows are stacked)", names, default=default, key=KEY + "tables", help=widgets.KEYWORD_TABLE_HELP)
        return Source(WORKSPACE_SOURCE, names=tuple(chosen)) if chosen else None
    if not names:
        st.caption("The workspace has no keyword tables yet: load a keyword file (and save it to the workspace below).")
    default = str(REFERENCE_FILE) if REFERENCE_FILE.is_file() else ""
    path = st.text_input("Keyword file (reference HDF5, CSV or Backdrop HDF5)", value=default, key=KEY + "path").strip()
    left, right = st.columns(2)
    top_k = int(left.number_input("Places365 scenes kept per image (reference HDF5)", 1, 20, 1, key=KEY + "top_k"))
    threshold = right.text_input("Presence threshold for a CSV of scores (blank: 0/1 table)", key=KEY + "threshold").strip()
    if not path:
        return None
    try:
        path = str(resolve_server_path(workspace, path))  # read by the server: only inside the data roots
    except BackdropError as err:
        st.error(str(err))
        return None
    try:
        value = float(threshold) if threshold else None
    except ValueError:
        st.error(f"The CSV threshold must be a number; got {threshold!r}.")
        return None
    return Source(FILE_SOURCE, path=path, places_top_k=top_k, threshold=value)


def server_paths_allowed(workspace: Workspace | None) -> bool:
    """Whether the session may type paths on the server (team mode: admins; see :mod:`analytics.team.paths`)."""
    return may(getattr(workspace, "actor", None), "server_paths")


def keyword_builder(workspace: Workspace) -> BuildRequest | None:
    """The keyword-table builder's widgets; the request when its button was clicked, else None."""
    backends = list(BUILD_BACKENDS) if server_paths_allowed(workspace) else [PATCH, FILE]  # scene models: checkpoints on the server
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
    upload = st.file_uploader("Keyword CSV", type=["csv"], key=BUILD_KEY + "upload")
    path = row_names = ""
    if server_paths_allowed(workspace):
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
    bar = st.progress(0.0, text="Scoring images…")
    tables = build_keyword_tables(
        workspace, backend, item_kinds=request.item_kinds, progress=lambda kind, done, total: bar.progress(done / total, text=f"Scoring {kind}s… {done}/{total}")
    )
    return {"tables": tables, "warnings": []}


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


def remember_build(report: dict[str, Any]) -> None:
    """Keep the build's report for the next run and make its tables the page's transactions."""
    st.session_state[BUILD_REPORT] = report
    st.session_state[KEY + "source"] = WORKSPACE_SOURCE
    st.session_state[KEY + "tables"] = list(report["tables"].values())


def build_report() -> None:
    """What the last build stored, and its warnings (unknown image names, items without rows)."""
    report = st.session_state.get(BUILD_REPORT)
    if report is None:
        return
    st.success("Built keyword tables: " + ", ".join(f"{kind}s → `{name}`" for kind, name in report["tables"].items()))
    for warning in report["warnings"]:
        st.warning(warning)


def keyword_tables_view(workspace: Workspace) -> None:
    """The workspace's keyword tables with the backend, source and vocabulary each one used."""
    tables = list_keyword_tables(workspace)
    if tables.empty:
        st.caption("No keyword table yet.")
        return
    st.table(tables.set_index("name")[["backend", "item_kind", "n_items", "n_keywords", "source", "vocabulary", "created"]])


def mining_controls() -> dict:
    """Algorithm, min support, min confidence and max itemset length; returns build_ontology kwargs."""
    columns = st.columns(4)
    algorithm = columns[0].selectbox("Algorithm", sorted(ALGORITHMS), index=sorted(ALGORITHMS).index("fpgrowth"), key=KEY + "algorithm")
    defaults = "the defaults reproduce the paper's Figure 9 on its keyword file (growth over four levels)"
    min_support = columns[1].number_input("Min support", 0.001, 1.0, DEFAULT_MIN_SUPPORT, step=0.005, format="%.3f", key=KEY + "min_support", help=defaults)
    min_confidence = columns[2].number_input("Min confidence", 0.01, 1.0, DEFAULT_MIN_CONFIDENCE, step=0.05, format="%.2f", key=KEY + "min_confidence", help=defaults)
    max_len = int(columns[3].number_input("Max itemset size (0 = any)", 0, 10, DEFAULT_MAX_LEN, key=KEY + "max_len", help="pairs (2) make the graph"))
    return {"algorithm": algorithm, "min_support": float(min_support), "min_confidence": float(min_confidence), "max_len": max_len or None}


def save_file_table(workspace: Workspace, table: KeywordTable, default_name: str) -> None:
    """Form that stores a keyword table read from a file in the workspace."""
    with st.form(KEY + "save_table"):
        st.markdown("**Save this keyword file in the workspace**")
        left, right = st.columns(2)
        name = left.text_input("Table name", value=default_name, key=KEY + "table_name")
        kind = right.selectbox("Rows are", ITEM_KINDS, key=KEY + "item_kind")
        if st.form_submit_button("Save keyword table", key=KEY + "save_table_go"):
            save_keyword_table(workspace, table, name=name.strip(), item_kind=kind)
            st.success(f"Saved keyword table `{name.strip()}` ({table.n_items} rows).")


def rules_view(ontology: Ontology) -> None:
    """The rules table, filterable by keyword (sortable by clicking a column header)."""
    if ontology.rules.empty:
        st.info("No rule passes these thresholds; lower the min support or the min confidence.")
        return
    left, right = st.columns([3, 1])
    keywords = left.multiselect("Rules mentioning any of", sorted(ontology.graph.nodes), key=KEY + "rule_keywords")
    edges_only = right.checkbox("Graph edges only (one keyword each side)", key=KEY + "edges_only")
    shown = rules_frame(ontology, keywords=keywords, edges_only=edges_only)
    st.caption(f"{len(shown)} of {len(ontology.rules)} rules; click a column header to sort.")
    st.dataframe(shown, hide_index=True, width="stretch", key=KEY + "rules_table")


def rules_frame(ontology: Ontology, *, keywords: Sequence[str] = (), edges_only: bool = False) -> pd.DataFrame:
    """Rules as text: antecedents, consequents, support, confidence, lift (strongest first).

    A rule is kept when it mentions any of ``keywords`` (all rules when none is given).
    """
    rules = ontology.rules
    keep = np.ones(len(rules), dtype=bool)
    if keywords:
        wanted = set(keywords)
        keep &= [bool(wanted & (a | c)) for a, c in zip(rules["antecedents"], rules["consequents"])]
    if edges_only:
        keep &= (rules["antecedents"].map(len) == 1).to_numpy() & (rules["consequents"].map(len) == 1).to_numpy()
    shown = rules[keep].copy()
    for column in ("antecedents", "consequents"):
        shown[column] = shown[column].map(lambda items: ", ".join(sorted(items)))
    columns = ["antecedents", "consequents", "support", "confidence", "lift"]
    return shown[columns].sort_values(["confidence", "support"], ascending=False).reset_index(drop=True)


def network_view(ontology: Ontology) -> None:
    """The graph, by default centred on one keyword (searchable) with its neighbourhood; keywords
    without edges are hidden and counted. The whole graph stays available as an overview."""
    graph = ontology.graph
    if graph.number_of_nodes() == 0:
        st.info("The ontology has no keyword at this min support; lower it.")
        return
    linked, n_hidden = without_isolates(graph)
    hidden = f"{n_hidden} keyword{'s' * (n_hidden != 1)} without edges hidden" if n_hidden else "every keyword has an edge"
    if linked.number_of_nodes() == 0:
        st.info(f"None of the {graph.number_of_nodes()} keywords has an edge at these thresholds; lower the min confidence.")
        return
    mode = st.radio("View", NETWORK_VIEWS, horizontal=True, key=KEY + "network_view")
    if mode == CENTRED_VIEW:
        by_degree = sorted(linked, key=lambda n: (-linked.degree(n), n))  # default centre: the best-connected keyword
        left, middle, right = st.columns([3, 1, 1])
        centre = left.selectbox(
            "Centre keyword (type to search)", by_degree, key=KEY + "centre",
            format_func=lambda n: f"{n} ({linked.degree(n)} edges)",
        )  # fmt: skip
        depth = middle.radio("Depth", (1, 2), horizontal=True, key=KEY + "depth", help="Keywords up to this many edges away (either direction).")
        limit = int(right.number_input("Neighbours at most", 5, 200, MAX_NEIGHBOURS, step=5, key=KEY + "neighbours", help="Per depth, strongest edges first."))
        figure = cached_neighbourhood_figure(linked, ontology.id, centre, depth, limit)
        shown = len(figure.data[-1].customdata)  # the keyword names (x may come back as a packed typed array)
        st.caption(
            f"{shown} keywords within {depth} edge{'s' * (depth > 1)} of **{centre}** · {hidden}. Labels: the centre and its "
            "direct neighbours; hover a dot for the others. Scroll to zoom, drag to pan, double-click to reset."
        )
    else:
        n_edges = linked.number_of_edges()
        max_edges = n_edges
        if n_edges > 50:
            max_edges = int(st.slider("Strongest edges shown", 10, n_edges, min(300, n_edges), step=10, key=KEY + "max_edges"))
        figure = cached_network_figure(linked, ontology.id, max_edges)
        st.caption(
            f"{hidden}. Layout: seeded spring layout; the {OVERVIEW_LABELS} best-connected keywords are labelled, hover a dot "
            "for the others. Scroll to zoom, drag to pan."
        )
    st.plotly_chart(figure, width="stretch", config={"scrollZoom": True, "displaylogo": False}, key=KEY + "network")
    st.caption("Node size = support; edge A → B (arrow towards B) width and colour = confidence(A → B).")


def without_isolates(graph: nx.DiGraph) -> tuple[nx.DiGraph, int]:
    """The subgraph of keywords with at least one edge, and how many keywords had none."""
    isolates = set(nx.isolates(graph))
    return graph.subgraph(node for node in graph if node not in isolates).copy(), len(isolates)


def neighbourhood(graph: nx.DiGraph, centre: str, *, depth: int = 1, limit: int = MAX_NEIGHBOURS) -> list[list[str]]:
    """Rings of keywords around ``centre``: ``[[centre], ring 1, ring 2 …]`` up to ``depth``.

    Edges count in either direction; each ring keeps its ``limit`` keywords with the strongest
    edge (confidence) from the ring inside it, strongest first, ring 2 grouped by parent so the
    radial layout puts keywords next to the neighbour that reached them.

    Parameters
    ----------
    graph : networkx.DiGraph
        Ontology graph; edges carry ``confidence``.
    centre : str
        A keyword of ``graph``.
    depth : int, default=1
        Rings beyond the centre (fewer when nothing is left to reach).
    limit : int, default=MAX_NEIGHBOURS
        Keywords kept per ring.

    Returns
    -------
    list of list of str
        ``[[centre], ring 1, …]``; every keyword appears once.
    """
    if centre not in graph:
        raise InvalidInputError(f"keyword {centre!r} is not in the ontology graph; pick one of its keywords")
    rings, seen = [[centre]], {centre}
    for _ in range(depth):
        best: dict[str, tuple[float, int]] = {}  # keyword -> (strongest confidence, index of the parent)
        for index, parent in enumerate(rings[-1]):
            for other in set(graph.successors(parent)) | set(graph.predecessors(parent)):
                if other in seen:
                    continue
                strength = max(graph.get_edge_data(parent, other, {}).get("confidence", 0.0), graph.get_edge_data(other, parent, {}).get("confidence", 0.0))
                if other not in best or strength > best[other][0]:
                    best[other] = (strength, index)
        kept = sorted(best, key=lambda n: (-best[n][0], n))[:limit]
        ring = sorted(kept, key=lambda n: (best[n][1], -best[n][0], n))
        if not ring:
            break
        rings.append(ring)
        seen.update(ring)
    return rings


def radial_layout(rings: Sequence[Sequence[str]]) -> dict[str, np.ndarray]:
    """The centre at the origin and ring ``r`` evenly spread on the circle of radius ``r``.

    Parameters
    ----------
    rings : sequence of sequence of str
        From :func:`neighbourhood`.

    Returns
    -------
    dict of str to ndarray of shape (2,), float
        Position of every keyword; ring members clockwise from the top in their ring's order.
    """
    positions = {rings[0][0]: np.zeros(2)}
    for radius, ring in enumerate(rings[1:], start=1):
        angles = np.pi / 2 - 2 * np.pi * np.arange(len(ring)) / len(ring)  # clockwise from the top
        positions.update({node: radius * np.array([np.cos(a), np.sin(a)]) for node, a in zip(ring, angles)})
    return positions


@st.cache_data(max_entries=32, show_spinner=False)
def cached_neighbourhood_figure(_graph: nx.DiGraph, ontology_id: str, centre: str, depth: int, limit: int) -> go.Figure:
    """:func:`neighbourhood_figure`, keyed by the ontology's id."""
    return neighbourhood_figure(_graph, centre, depth=depth, limit=limit)


def neighbourhood_figure(graph: nx.DiGraph, centre: str, *, depth: int = 1, limit: int = MAX_NEIGHBOURS) -> go.Figure:
    """Plotly view of ``centre`` and its :func:`neighbourhood`: radial layout, the edges that touch
    the centre or ring 1, labels on the centre and ring 1 only (outside the circle, so they do not
    overlap the edges), hover text on every keyword."""
    rings = neighbourhood(graph, centre, depth=depth, limit=limit)
    positions = radial_layout(rings)
    inner = set(rings[0]) | set(rings[1] if len(rings) > 1 else ())
    edges = [(a, b, c) for a, b, c in graph.subgraph(positions).edges(data="confidence") if a in inner or b in inner]
    figure = _graph_figure(graph.subgraph(positions), sorted(edges, key=lambda e: (-e[2], e[0], e[1])), positions, labelled=inner)
    figure.data[-1].marker.line.width = [3 if node == centre else 1 for node in figure.data[-1].customdata]
    return figure


def network_figure(graph: nx.DiGraph, *, max_edges: int | None = None, seed: int = LAYOUT_SEED) -> go.Figure:
    """Plotly overview of an ontology graph.

    Node size grows with support; edges are drawn in ``N_EDGE_BINS`` confidence bins (width and
    colour by confidence) with an arrowhead near the head. The ``max_edges`` strongest edges are
    drawn (all when None); every node is drawn, the :data:`OVERVIEW_LABELS` best-connected ones
    labelled. Positions come from a seeded spring layout.
    """
    edges = sorted(graph.edges(data="confidence"), key=lambda e: (-e[2], e[0], e[1]))[:max_edges]
    positions = graph_layout(graph, edges, seed=seed)
    labelled = sorted(graph, key=lambda n: (-graph.degree(n), n))[:OVERVIEW_LABELS]
    return _graph_figure(graph, edges, positions, labelled=set(labelled))


def _graph_figure(graph: nx.DiGraph, edges: list, positions: dict[str, np.ndarray], *, labelled: set[str]) -> go.Figure:
    figure = go.Figure()
    if edges:
        confidences = np.array([c for _, _, c in edges])
        high = float(confidences.max())
        low = min(float(confidences.min()), high - 0.05)  # equal confidences: a bar ending at their value, not Plotly's value ± 0.5
        bins = np.minimum(((confidences - low) / max(high - low, 1e-9) * N_EDGE_BINS).astype(int), N_EDGE_BINS - 1)
        for b in range(N_EDGE_BINS):
            chosen = [edge for edge, in_bin in zip(edges, bins == b) if in_bin]
            if chosen:
                figure.add_trace(_edge_trace(chosen, positions, b, low, high))
        figure.add_trace(_arrow_trace(edges, positions, low, high))
    figure.add_trace(_node_trace(graph, positions, labelled=labelled))
    xy = np.array(list(positions.values()))
    pad_x, pad_y = 0.45 * max(np.ptp(xy[:, 0]), 1.0), 0.12 * max(np.ptp(xy[:, 1]), 1.0)  # room for labels left and right
    figure.update_layout(
        showlegend=False,
        height=NETWORK_HEIGHT,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis={"visible": False, "range": [xy[:, 0].min() - pad_x, xy[:, 0].max() + pad_x]},
        yaxis={"visible": False, "scaleanchor": "x", "range": [xy[:, 1].min() - pad_y, xy[:, 1].max() + pad_y]},
        plot_bgcolor="white",
        dragmode="pan",
    )
    return figure


def graph_layout(graph: nx.DiGraph, edges: list[tuple[str, str, float]], *, seed: int = LAYOUT_SEED) -> dict[str, np.ndarray]:
    """Node positions: a seeded spring layout of the nodes joined by the drawn ``edges`` in
    [-1, 1]², and the remaining (isolated) nodes in rows below it. Without this, the spring layout
    pushes isolated nodes far out and squeezes the connected part into a corner."""
    linked = nx.DiGraph((a, b) for a, b, _ in edges)
    positions = nx.spring_layout(linked, seed=seed, k=2 / np.sqrt(max(len(linked), 1))) if len(linked) else {}
    alone = sorted(node for node in graph if node not in positions)
    per_row = max(1, int(np.ceil(np.sqrt(len(alone) * 3))))
    for i, node in enumerate(alone):
        row, col = divmod(i, per_row)
        positions[node] = np.array([-1 + 2 * (col + 0.5) / per_row, -1.3 - 0.25 * row])
    return positions


def _edge_trace(edges, positions, b: int, low: float, high: float) -> go.Scatter:
    xs, ys = [], []
    for a, c, _ in edges:
        xs += [positions[a][0], positions[c][0], None]
        ys += [positions[a][1], positions[c][1], None]
    middle = low + (b + 0.5) / N_EDGE_BINS * (high - low)
    colour = sample_colorscale(CONFIDENCE_COLORSCALE, [(middle - low) / max(high - low, 1e-9)])[0]
    return go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", line={"width": 0.5 + 3.5 * (b + 0.5) / N_EDGE_BINS, "color": colour}, opacity=0.7)


def _arrow_trace(edges, positions, low: float, high: float) -> go.Scatter:
    """Arrowheads 80 % along each edge, carrying the hover text and the confidence colour bar."""
    starts = np.array([positions[a] for a, _, _ in edges])
    ends = np.array([positions[c] for _, c, _ in edges])
    tips = starts + 0.8 * (ends - starts)
    delta = ends - starts
    angles = np.degrees(np.arctan2(delta[:, 0], delta[:, 1]))  # Plotly: clockwise from 'up'
    return go.Scatter(
        x=tips[:, 0],
        y=tips[:, 1],
        mode="markers",
        marker={
            "symbol": "triangle-up",
            "size": 9,
            "angle": angles,
            "color": [c for _, _, c in edges],
            "colorscale": CONFIDENCE_COLORSCALE,
            "cmin": low,
            "cmax": high,
            "showscale": True,
            "colorbar": {"title": {"text": "confidence", "side": "right"}, "len": 0.6, "thickness": 14},
        },
        text=[f"{a} → {c}<br>confidence {w:.3f}" for a, c, w in edges],
        hoverinfo="text",
    )


def _node_trace(graph: nx.DiGraph, positions: dict[str, np.ndarray], *, labelled: set[str]) -> go.Scatter:
    """Keywords as dots sized by support; ``labelled`` ones carry their name, placed away from the
    centre of the drawing (right of dots on the right, left on the left) so labels do not cross."""
    nodes = [(n, s) for n, s in graph.nodes(data="support") if n in positions]
    supports = np.array([s for _, s in nodes])
    sizes = 8 + 40 * np.sqrt(supports / supports.max()) if len(nodes) else []
    xy = np.array([positions[n] for n, _ in nodes]).reshape(-1, 2)
    middle = xy.mean(axis=0) if len(xy) else np.zeros(2)
    sides = ["middle right" if x >= middle[0] else "middle left" for x in xy[:, 0]]
    return go.Scatter(
        x=xy[:, 0],
        y=xy[:, 1],
        name="keywords",
        customdata=[n for n, _ in nodes],
        mode="markers+text",
        marker={"size": sizes, "color": "#f4a261", "line": {"width": 1, "color": "#6d3b14"}},
        text=[n if n in labelled else "" for n, _ in nodes],
        textposition=sides,
        textfont={"size": 13},
        hovertext=[f"{n}<br>support {s:.3f}<br>{graph.in_degree(n)} edges in, {graph.out_degree(n)} out" for n, s in nodes],
        hoverinfo="text",
    )


def expansion_explorer(ontology: Ontology, tables: list[KeywordTable], table_names: list[str]) -> None:
    """One item's keywords level by level, with the path that reached each; plus per-level
    statistics over the whole table."""
    index = 0
    if len(tables) > 1:
        index = table_names.index(st.selectbox("Keyword table", table_names, key=KEY + "explore_table", help=widgets.KEYWORD_TABLE_HELP))
    table = tables[index]
    labels = table.labels or [""] * table.n_items
    row = st.selectbox(
        "Item",
        range(table.n_items),
        format_func=lambda r: f"{table.ids[r]} ({labels[r]}): {len(table.keywords_of(r))} keywords" if labels[r] else table.ids[r],
        key=KEY + "explore_row",
    )
    columns = st.columns(3)
    maxits = int(columns[0].number_input(
        "Expansion levels", 0, 10, DEFAULT_MAXITS, key=KEY + "maxits",
        help="The paper's MAXITS: how many times the expansion follows the ontology's edges outward; each level adds the "
        "keywords that the previous level's keywords imply.",
    ))  # fmt: skip
    minkws = int(columns[1].number_input(
        "Stop at this many keywords (0 = no limit)", 0, 200, 0, key=KEY + "minkws",
        help="The paper's MINKWS: the expansion stops once the item has at least this many keywords.",
    )) or None  # fmt: skip
    rank_by = columns[2].radio("Rank by", WEIGHTS, horizontal=True, key=KEY + "rank_by")
    detected = table.keywords_of(row)
    expansion = expand_item(ontology, table, row, maxits=maxits, minkws=minkws, rank_by=rank_by)
    if expansion.note:
        st.warning(expansion.note)
    st.markdown(f"**Detected keywords (level 0):** {', '.join(detected) or 'none'}")
    frame = expansion.to_frame()
    for level, part in frame.groupby("level"):
        st.markdown(f"**Level {level}** — {len(part)} keywords")
        st.dataframe(part.drop(columns="level"), hide_index=True, width="stretch")
    if st.toggle("Level statistics over all items of this table (paper Figure 9)", key=KEY + "level_stats"):
        stats = cached_level_statistics(ontology, ontology.id, table, table.digest(), maxits, minkws)
        st.plotly_chart(level_figure(stats), width="stretch")
        st.dataframe(stats, hide_index=True)


def level_figure(stats: pd.DataFrame) -> go.Figure:
    """Min / mean / max keywords per expansion level (lines with markers)."""
    figure = go.Figure()
    for column, dash in (("max", "dot"), ("mean", "solid"), ("min", "dot")):
        figure.add_trace(go.Scatter(x=stats["level"], y=stats[column], mode="lines+markers", name=column, line={"dash": dash}))
    figure.update_layout(xaxis_title="ontology level i", yaxis_title="|OL_x[i]| keywords per item", height=350, margin={"t": 20})
    return figure


def default_table_name(path: str) -> str:
    return Path(path).stem or "keywords"
