"""Helpers of the Ontology page: keyword sources, cached ontology builds, the rules table, the
network view and the expansion explorer (the keyword-table builder is :mod:`ui.keyword_tables`).

The library (:mod:`analytics.ontology`, :mod:`analytics.keywords`) computes, also which keywords
the network shows and where; this module caches, draws Plotly figures and lays out widgets. Cache
keys are paths, table names and content hashes; keyword tables and ontologies are passed as
``_``-prefixed (unhashed) arguments beside their hash.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.colors import sample_colorscale

from analytics.exceptions import BackdropError
from analytics.figures import apply_style, plain_text
from analytics.keywords import (
    KEYWORD_ITEM_KINDS,
    KeywordTable,
    list_keyword_tables,
    load_keyword_table,
    read_keyword_file,
    save_keyword_table,
)
from analytics.ontology import (
    ALGORITHMS,
    DEFAULT_MAX_LEN,
    DEFAULT_MAXITS,
    DEFAULT_MIN_CONFIDENCE,
    DEFAULT_MIN_SUPPORT,
    WEIGHTS,
    Ontology,
    best_connected,
    build_ontology,
    expand_item,
    expand_table,
    graph_layout,
    level_statistics,
    neighbourhood,
    radial_layout,
    rules_table,
    strongest_edges,
    without_isolates,
)
from analytics.team import resolve_server_path, server_paths_offered
from analytics.workspace import Workspace
from ui import state, widgets
from ui.keyword_tables import BUILD_REPORT
from ui.markdown import escape_markdown

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


# -- cached loading and building --------------------------------------------------------------
@st.cache_data(max_entries=16, show_spinner="Loading keyword tables…")
def load_tables(workspace_path: str, names: tuple[str, ...], present_hashes: tuple[str, ...]) -> list[KeywordTable]:
    """Keyword tables of a workspace (``present_hashes`` only keys the cache: a changed table reloads)."""
    workspace = state.open_workspace(workspace_path)
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
    kinds = ([WORKSPACE_SOURCE] if names else []) + ([FILE_SOURCE] if server_paths_offered(workspace) else [])
    if not kinds:
        return None
    kind = st.radio("Transactions from", kinds, horizontal=True, key=KEY + "source")
    if kind == WORKSPACE_SOURCE:
        default = None if KEY + "tables" in st.session_state else names  # a build chose its new tables
        chosen = st.multiselect("Keyword tables (their rows are stacked)", names, default=default, key=KEY + "tables", help=widgets.KEYWORD_TABLE_HELP)
        return Source(WORKSPACE_SOURCE, names=tuple(chosen)) if chosen else None
    if not names:
        st.caption("The workspace has no keyword tables yet: load a keyword file (and save it to the workspace below).")
    # only the workspace's own data and files the user names: no file of the developer's checkout is offered
    path = st.text_input("Keyword file (reference HDF5, CSV or Backdrop HDF5)", key=KEY + "path", placeholder="a path inside the data roots").strip()
    left, right = st.columns(2)
    top_k = int(left.number_input("Places365 scenes kept per image (reference HDF5)", 1, 20, 1, key=KEY + "top_k"))
    threshold = right.text_input("Presence threshold for a CSV of scores (blank: 0/1 table)", key=KEY + "threshold").strip()
    if not path:
        return None
    try:
        path = str(resolve_server_path(workspace, path))  # read by the server: only inside the data roots
    except BackdropError as err:
        st.error(escape_markdown(err))
        return None
    try:
        value = float(threshold) if threshold else None
    except ValueError:
        st.error(f"The CSV threshold must be a number; got {escape_markdown(repr(threshold))}.")
        return None
    return Source(FILE_SOURCE, path=path, places_top_k=top_k, threshold=value)


def remember_build(report: dict[str, Any]) -> None:
    """Keep the build's report for the next run and make its tables the page's transactions."""
    st.session_state[BUILD_REPORT] = report
    st.session_state[KEY + "source"] = WORKSPACE_SOURCE
    st.session_state[KEY + "tables"] = list(report["tables"].values())


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
        kind = right.selectbox("Rows are", KEYWORD_ITEM_KINDS, key=KEY + "item_kind")
        if st.form_submit_button("Save keyword table", key=KEY + "save_table_go"):
            save_keyword_table(workspace, table, name=name.strip(), item_kind=kind)
            st.success(f"Saved keyword table {escape_markdown(name.strip())} ({table.n_items} rows).")


def rules_view(ontology: Ontology) -> None:
    """The rules table, filterable by keyword (sortable by clicking a column header)."""
    if ontology.rules.empty:
        st.info("No rule passes these thresholds; lower the min support or the min confidence.")
        return
    left, right = st.columns([3, 1])
    keywords = left.multiselect("Rules mentioning any of", sorted(ontology.graph.nodes), key=KEY + "rule_keywords")
    edges_only = right.checkbox("Graph edges only", key=KEY + "edges_only", help="Only the rules with one keyword each side: the graph's edges.")
    shown = rules_table(ontology, keywords=keywords, edges_only=edges_only)
    st.caption(f"{len(shown)} of {len(ontology.rules)} rules; click a column header to sort.")
    st.dataframe(shown, hide_index=True, width="stretch", key=KEY + "rules_table")


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
        left, middle, right = st.columns([3, 1, 1])
        centre = left.selectbox(  # default centre: the best-connected keyword
            "Centre keyword (type to search)", best_connected(linked), key=KEY + "centre",
            format_func=lambda n: f"{n} ({linked.degree(n)} edges)",
        )  # fmt: skip
        depth = middle.radio("Depth", (1, 2), horizontal=True, key=KEY + "depth", help="Keywords up to this many edges away (either direction).")
        limit = int(right.number_input("Neighbours at most", 5, 200, MAX_NEIGHBOURS, step=5, key=KEY + "neighbours", help="Per depth, strongest edges first."))
        figure = cached_neighbourhood_figure(linked, ontology.id, centre, depth, limit)
        shown = len(figure.data[-1].customdata)  # the keyword names (x may come back as a packed typed array)
        st.caption(
            f"{shown} keywords within {depth} edge{'s' * (depth > 1)} of **{centre}** · {hidden}. Labels: the centre and its "
            "direct neighbours; hover a dot for the others. Drag to pan, zoom with the toolbar's + and −, double-click to reset."
        )
    else:
        n_edges = linked.number_of_edges()
        max_edges = n_edges
        if n_edges > 50:
            max_edges = int(st.slider("Strongest edges shown", 10, n_edges, min(300, n_edges), step=10, key=KEY + "max_edges"))
        figure = cached_network_figure(linked, ontology.id, max_edges)
        st.caption(
            f"{hidden}. Layout: seeded spring layout; the {OVERVIEW_LABELS} best-connected keywords are labelled, hover a dot "
            "for the others. Drag to pan, zoom with the toolbar's + and −."
        )
    # scrolling over the graph scrolls the page (a wheel zoom trapped readers on a long page); zoom from the toolbar
    st.plotly_chart(figure, width="stretch", config={"scrollZoom": False, "displaylogo": False}, key=KEY + "network")
    st.caption("Node size = support; edge A → B (arrow towards B) width and colour = confidence(A → B).")


@st.cache_data(max_entries=32, show_spinner=False)
def cached_neighbourhood_figure(_graph: nx.DiGraph, ontology_id: str, centre: str, depth: int, limit: int) -> go.Figure:
    """:func:`neighbourhood_figure`, keyed by the ontology's id."""
    return neighbourhood_figure(_graph, centre, depth=depth, limit=limit)


def neighbourhood_figure(graph: nx.DiGraph, centre: str, *, depth: int = 1, limit: int = MAX_NEIGHBOURS) -> go.Figure:
    """Plotly view of ``centre`` and its :func:`~analytics.ontology.neighbourhood`: radial layout, the edges that touch
    the centre or ring 1, labels on the centre and ring 1 only (outside the circle, so they do not
    overlap the edges), hover text on every keyword."""
    rings = neighbourhood(graph, centre, depth=depth, limit=limit)
    positions = radial_layout(rings)
    inner = set(rings[0]) | set(rings[1] if len(rings) > 1 else ())
    edges = [(a, b, c) for a, b, c in strongest_edges(graph.subgraph(positions)) if a in inner or b in inner]
    figure = _graph_figure(graph.subgraph(positions), edges, positions, labelled=inner)
    figure.data[-1].marker.line.width = [3 if node == centre else 1 for node in figure.data[-1].customdata]
    return figure


def network_figure(graph: nx.DiGraph, *, max_edges: int | None = None, seed: int = LAYOUT_SEED) -> go.Figure:
    """Plotly overview of an ontology graph.

    Node size grows with support; edges are drawn in ``N_EDGE_BINS`` confidence bins (width and
    colour by confidence) with an arrowhead near the head. The ``max_edges`` strongest edges are
    drawn (all when None); every node is drawn, the :data:`OVERVIEW_LABELS` best-connected ones
    labelled. Positions come from a seeded spring layout.
    """
    edges = strongest_edges(graph, limit=max_edges)
    positions = graph_layout(graph, edges, seed=seed)
    return _graph_figure(graph, edges, positions, labelled=set(best_connected(graph)[:OVERVIEW_LABELS]))


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
        text=[f"{plain_text(a)} → {plain_text(c)}<br>confidence {w:.3f}" for a, c, w in edges],
        hoverinfo="text",
    )


#: CSS text shadow of the node labels: a white halo around each letter.
LABEL_HALO = "0 0 2px white, 0 0 3px white, 0 0 4px white"
#: Label positions by the direction from the drawing's centre, counter-clockwise from the right in 45° steps.
OUTWARD = ("middle right", "top right", "top center", "top left", "middle left", "bottom left", "bottom center", "bottom right")


def label_sides(xy: np.ndarray) -> list[str]:
    """Plotly ``textposition`` of each point of ``xy`` (n, 2): outward from their mean, the one at the
    centre (a neighbourhood's centre keyword) above its dot."""
    if not len(xy):
        return []
    offsets = xy - xy.mean(axis=0)
    spread = max(float(np.abs(offsets).max()), 1e-9)
    angles = np.degrees(np.arctan2(offsets[:, 1], offsets[:, 0]))
    steps = np.round(angles / 45).astype(int) % 8
    return ["top center" if np.hypot(*offset) < 0.05 * spread else OUTWARD[step] for offset, step in zip(offsets, steps)]


def _node_trace(graph: nx.DiGraph, positions: dict[str, np.ndarray], *, labelled: set[str]) -> go.Scatter:
    """Keywords as dots sized by support; ``labelled`` ones carry their name, placed outward from the
    centre of the drawing (:func:`label_sides`: above a dot at the top, left of one on the left…) so
    labels keep off the edges inside, and drawn over a white halo so an edge crossing a label
    leaves it readable (#47 item 9: a label sat under the edges)."""
    nodes = [(n, s) for n, s in graph.nodes(data="support") if n in positions]
    supports = np.array([s for _, s in nodes])
    sizes = 8 + 40 * np.sqrt(supports / supports.max()) if len(nodes) else []
    xy = np.array([positions[n] for n, _ in nodes]).reshape(-1, 2)
    sides = label_sides(xy)
    return go.Scatter(
        x=xy[:, 0],
        y=xy[:, 1],
        name="keywords",
        customdata=[n for n, _ in nodes],  # the keywords as they are (never drawn): matched against the centre
        mode="markers+text",
        marker={"size": sizes, "color": "#f4a261", "line": {"width": 1, "color": "#6d3b14"}},
        text=[plain_text(n) if n in labelled else "" for n, _ in nodes],
        textposition=sides,
        textfont={"size": 13, "shadow": LABEL_HALO},
        hovertext=[f"{plain_text(n)}<br>support {s:.3f}<br>{graph.in_degree(n)} edges in, {graph.out_degree(n)} out" for n, s in nodes],
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
    with_keywords = np.flatnonzero(np.asarray(table.present).any(axis=1))
    row = st.selectbox(
        "Item",
        range(table.n_items),
        index=int(with_keywords[0]) if len(with_keywords) else 0,  # open on an item that has something to expand
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
    st.markdown(f"**Detected keywords (level 0):** {escape_markdown(', '.join(detected)) or 'none'}")
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
    return apply_style(figure)


def default_table_name(path: str) -> str:
    return Path(path).stem or "keywords"
