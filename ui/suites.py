"""Helpers of the Suites page: the request form, the preview grid (the paper's Figure 17) and the
distance histogram per method (its Figure 11).

The library (:mod:`analytics.suites`, :mod:`analytics.suites.sampling`) samples and stores. A request is
first previewed: sampled in this process for :data:`PREVIEW_TARGETS` targets only (spread over the
classes; nothing saved; the ontology's fit is judged on every selected target, not on these few),
with a progress bar. The form's Classes pick the targets a suite covers (all of them by default). Saving (after a preview, or straight from the form) samples every target in a background job
(:mod:`analytics.jobs`, kind ``suite``: :func:`analytics.api.build_suite`, the flow the command line's ``suite``
and a notebook call) whose progress, Cancel and Resume :mod:`ui.jobs` shows; a
target's draw depends on the seed and that target's own inputs, so the saved suite holds the
previewed backgrounds (except for a target without detected keywords, whose class keywords are
counted over the sampled targets). This module lays out widgets, caches saved suites (keyed by
their content id) and draws. ``st.session_state`` keeps the id of the job the page started and the
last preview.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from analytics.comparison import comparison_targets
from analytics.data import list_backgrounds, list_targets
from analytics.exceptions import BackdropError
from analytics.keywords import list_keyword_tables, newest_keyword_tables
from analytics.models import list_models
from analytics.ontology import DEFAULT_MIN_CONFIDENCE, DEFAULT_MIN_SUPPORT, ontologies_from, ontology_labels
from analytics.suites import (
    DEFAULT_REALISM_THRESHOLD,
    NAME_MAX_LENGTH,
    SAMPLERS,
    Suite,
    build_suite,
    check_suite_name,
    default_distance_models,
    ensure_keyword_tables,
    ensure_ontology,
    list_suites,
    load_suite,
    screening_warning,
    select_targets,
    suite_params,
    suite_stats,
)
from analytics.workspace import Workspace
from ui import cache, jobs, state, widgets
from ui.markdown import escape_markdown

KEY = "suites."  # prefix of every widget key of the page
JOB = KEY + "job"  # session-state key: the id of the suite job this session started
PREVIEW = KEY + "preview"  # session-state key: (request, unsaved suite) of the last preview
OPEN = KEY + "open"  # the saved-suite picker (a link's ``?suite=``)
PREVIEW_TARGETS = 3  # targets sampled for a preview (spread over the classes)
DEFAULT_N = 32
METHOD_HELP = {
    "random": "uniformly random backgrounds (baseline)",
    "nearest": "the N backgrounds closest to the original (top-K by embedding distance)",
    "interval": "one background per equal-width distance bin, from near to far",
    "keyword": "one background per distinct detected keyword of the target's scene, then cycling",
    "ontology": "one background per distinct keyword of the ontology expansion, by level then weight (the paper's method)",
}


@dataclass(frozen=True)
class SuiteRequest:
    """What the form asks :func:`analytics.suites.build_suite` for (plain, hashable values)."""

    method: str
    n: int
    seed: int
    target_table: str | None = None
    background_table: str | None = None
    ontology_id: str | None = None
    distance_models: tuple[str, ...] = ()
    realism_threshold: float = DEFAULT_REALISM_THRESHOLD
    top_up: bool = True
    classes: tuple[str, ...] | None = None  # None = every class (the suite id of a suite without a selection)
    name: str = ""  # the user's name for the suite (checked by analytics.suites.check_suite_name; not in its id)

    def build_kwargs(self) -> dict:
        """The preview's parameters: those of :func:`analytics.suites.build_suite` (which samples a few targets unsaved)."""
        tables = {"target": self.target_table, "background": self.background_table}
        return {
            "method": self.method,
            "n": self.n,
            "seed": self.seed,
            "classes": None if self.classes is None else list(self.classes),
            "keyword_tables": {kind: name for kind, name in tables.items() if name} or None,
            "ontology_id": self.ontology_id,
            "distance_models": list(self.distance_models) or None,
            "realism_threshold": self.realism_threshold,
            "top_up": self.top_up,
            "name": self.name,
        }

    def job_kwargs(self) -> dict:
        """The suite job's parameters: those of :func:`analytics.api.build_suite`, the flow the command
        line's ``suite`` and a notebook call (:data:`analytics.jobs.JOB_KINDS`)."""
        return {
            "method": self.method,
            "n": self.n,
            "seed": self.seed,
            "classes": None if self.classes is None else list(self.classes),
            "target_table": self.target_table,
            "background_table": self.background_table,
            "ontology": self.ontology_id,
            "distance_models": list(self.distance_models) or None,
            "realism_threshold": self.realism_threshold,
            "top_up": self.top_up,
            "name": self.name,
        }


# -- caches -------------------------------------------------------------------------------------
@st.cache_data(max_entries=64, show_spinner=False)
def cached_saved_suite(workspace_path: str, suite_id: str) -> Suite:
    """A saved suite (its id is its content, so the entry never goes stale)."""
    return load_suite(state.open_workspace(workspace_path), suite_id)


# -- widgets ------------------------------------------------------------------------------------
def request_form(workspace: Workspace, n_pool: int) -> tuple[str, SuiteRequest] | None:
    """The form: classes (every one by default), method, N, seed, keyword tables, ontology, distance models, realism, top-up, and
    two buttons: Preview (a few targets, nothing saved) and Build (every target, saved, no preview
    needed).

    Returns
    -------
    (action, SuiteRequest) or None
        ``action`` is ``'preview'`` or ``'build'``; None when neither button was pressed, or (with
        a warning) when no class is picked.
    """
    tables = list_keyword_tables(workspace)
    ontology_names = ontology_labels(workspace)  # oldest first
    registered = [spec.name for spec in list_models(workspace)]
    present = sorted(set(list_targets(workspace)["class_name"]))
    with st.form(KEY + "form"):
        picked = st.multiselect(
            "Classes", present, default=present, key=KEY + "classes",
            help="The suite covers only the targets of these classes: pick your own class to test just your photos.",
        )  # fmt: skip
        left, middle, right = st.columns(3)
        method = left.selectbox("Method", list(SAMPLERS), format_func=lambda m: f"{m} — {METHOD_HELP[m]}", key=KEY + "method")
        n = int(
            middle.number_input(
                "Backgrounds per target (N)", 1, max(1, n_pool), min(DEFAULT_N, max(1, n_pool)), key=KEY + "n",
                help="The paper's N is 32 (the default). The authors' code used 31 backgrounds plus the original, 32 images "
                "per target: pick 31 to match their image count.",
            )
        )  # fmt: skip
        seed = int(right.number_input("Seed", 0, 2**31 - 1, 0, key=KEY + "seed"))
        name = st.text_input(
            "Name (optional)", key=KEY + "name", max_chars=NAME_MAX_LENGTH, placeholder="e.g. My photos, ontology",
            help="What the pages, the report and the command line call this suite. Without one it is called by method, N, seed "
            "and targets; the same settings give the same suite, so building it again under another name renames it.",
        )  # fmt: skip
        left, middle, right = st.columns(3)
        target_table = _table_choice(left, tables, "target")
        background_table = _table_choice(middle, tables, "background")
        ontology_id = right.selectbox(
            "Ontology (method ontology)",
            [None, *reversed(ontology_names)],
            format_func=lambda v: "newest of these keyword tables" if v is None else ontology_names[v],
            help="an ontology mined from other keywords is refused: it would not expand these targets",
            key=KEY + "ontology",
        )
        # a row of its own: three model names in a third of the form were cut off at 1400 px (the rest hidden)
        models = st.multiselect("Distance ensemble", registered, default=default_distance_models(workspace), key=KEY + "models")
        middle, right = st.columns(2)
        threshold = middle.slider("Realism threshold (seam harmony)", 0.0, 1.0, DEFAULT_REALISM_THRESHOLD, 0.05, key=KEY + "realism")
        top_up = right.checkbox(
            "Top up with random backgrounds", value=True, key=KEY + "top_up",
            help="Keyword methods (keywords, ontology): a target whose keywords match fewer than N backgrounds gets random ones to make up N.",
        )  # fmt: skip
        left, right = st.columns(2)
        previewed = left.form_submit_button(
            "Preview", type="primary", key=KEY + "go", icon=":material/visibility:", use_container_width=True,
            help=f"Samples {PREVIEW_TARGETS} targets here, saving nothing; then save the suite for every target.",
        )  # fmt: skip
        built = right.form_submit_button(
            "Build and save for every target", key=KEY + "build", icon=":material/save:", use_container_width=True,
            help="Skips the preview: samples every target in the background (progress and Cancel) and saves the suite.",
        )  # fmt: skip
    if not (previewed or built):
        return None
    if not picked:
        st.warning("Pick at least one class: the suite covers the targets of the classes picked.", icon=":material/warning:")
        return None
    classes = None if set(picked) == set(present) else tuple(sorted(picked))
    try:
        name = check_suite_name(name)
    except BackdropError as err:
        st.error(escape_markdown(err))
        return None
    request = SuiteRequest(method, n, seed, target_table, background_table, ontology_id, tuple(models), float(threshold), bool(top_up), classes, name)
    return ("build" if built else "preview"), request


def start_build(workspace: Workspace, request: SuiteRequest) -> bool:
    """Start the job that samples and saves ``request`` for every target; its id goes to
    :data:`JOB`. False (the reason shown by :mod:`ui.jobs`) when it could not start."""
    job = jobs.start_job(workspace, "suite", request.job_kwargs())
    if job is None:
        return False
    st.session_state[JOB] = job.id
    return True


def sample_preview(workspace: Workspace, request: SuiteRequest) -> Suite | None:
    """``request`` sampled for :data:`PREVIEW_TARGETS` targets in this process, nothing saved, with a
    progress bar; None (and the reason shown) when the library refuses it."""
    bar = st.progress(0.0, text=f"Screening the pool and sampling {PREVIEW_TARGETS} targets for the preview…")
    steps: list[str] = []  # issue 47.8: each step named as it starts (the library's ``say``), the distances counted

    def say(step: str) -> None:
        steps.append(step)
        bar.progress(0.0, text=f"Step {len(steps)}: {step}…")

    def report(done: int, total: int, _message: str = "") -> None:
        bar.progress(done / total if total else 0.0, text=f"Step {len(steps)}: semantic distances of the preview's composites, {done:,} of {total:,}")

    try:
        targets = comparison_targets(workspace, PREVIEW_TARGETS, classes=request.classes)
        every = select_targets(workspace, classes=request.classes)  # the few previewed targets do not decide whether the suite fits
        with st.spinner(f"Sampling the {request.method} preview for {len(targets)} targets (the bar names each step)…", show_time=True):
            return build_suite(workspace, **request.build_kwargs(), target_ids=targets, fit_target_ids=every, save=False, progress=report, say=say)
    except BackdropError as err:
        st.error(escape_markdown(err))
        return None
    finally:
        bar.empty()


def _table_choice(column, tables: pd.DataFrame, kind: str) -> str | None:
    names = tables.loc[tables["item_kind"] == kind, "name"].tolist()
    return column.selectbox(
        f"{kind.capitalize()} keywords (keyword methods)", [None, *names[::-1]], format_func=lambda v: "newest" if v is None else v, key=KEY + kind + "_table",
        help=widgets.KEYWORD_TABLE_HELP,
    )  # fmt: skip


def missing_inputs(workspace: Workspace) -> None:
    """Buttons that compute classifier-patch keywords, and mine the default ontology of the newest
    keyword tables, when absent (tables of replaced model weights count as absent)."""
    latest = {kind: name for kind, name in newest_keyword_tables(workspace).items() if kind in ("target", "background")}
    if len(latest) == 2 and ontologies_from(workspace, list(latest.values())):
        return
    with st.expander("Keywords and ontology for the keyword methods", expanded=True):
        if len(latest) < 2:
            st.caption("The keyword methods need keyword tables for the targets and the pool.")
            if st.button("Compute classifier-patch keywords", key=KEY + "keywords"):
                bar = st.progress(0.0, text="Scoring images…")
                names, computed = ensure_keyword_tables(workspace, progress=lambda done, total: bar.progress(done / total, text=f"Scoring images… {done}/{total}"))
                st.success(f"Computed {escape_markdown(', '.join(names[k] for k in computed)) or 'nothing (tables exist)'}.")
                st.rerun()
        else:
            st.caption(
                "The ontology method needs an ontology mined from the newest keyword tables "
                f"({', '.join(latest.values())}): tune one on the Ontology page, or mine the default."
            )
            label = f"Mine the default ontology (FP-Growth, support {DEFAULT_MIN_SUPPORT}, confidence {DEFAULT_MIN_CONFIDENCE})"
            if st.button(label, key=KEY + "ontology_go"):
                ontology_id, _ = ensure_ontology(workspace, latest)
                st.success(f"Saved ontology {escape_markdown(ontology_labels(workspace)[ontology_id])}.")
                st.rerun()


# -- views --------------------------------------------------------------------------------------
def summary(suite: Suite) -> None:
    """Metrics of a suite (with the share topped up at random for keyword methods), what it was
    sampled from, and its warnings."""
    stats = suite_stats(suite)
    columns = st.columns(6 if stats.topup_share is not None else 5)
    columns[0].metric("Targets", stats.targets)
    columns[1].metric("Backgrounds per target", stats.per_target_min if stats.per_target_min == stats.per_target_max else f"{stats.per_target_min}–{stats.per_target_max}")
    columns[2].metric("Keyword diversity", f"{stats.keyword_diversity:.2f}", help="distinct keywords per target, mean")
    columns[3].metric("Mean distance", _number(stats.distance_mean))
    columns[4].metric("Distance spread (std)", _number(stats.distance_std))
    if stats.topup_share is not None:
        columns[5].metric(
            "Topped up",  # a sixth of the row at 1400 px cut "Topped up at random"; the help says it
            f"{stats.topup_share:.0%}",
            help=f"Share of backgrounds drawn at random: {stats.topped_up} backgrounds of {stats.topped_up_targets} targets, whose keywords ran out",
        )
    source = provenance(suite.params)
    if source:
        st.caption(source)
    skipped = screening_warning(suite.params.get("pool_screening") or {})
    if skipped:
        st.warning(escape_markdown(skipped), icon=":material/warning:")
    others = [warning for warning in suite.warnings if warning != skipped]  # the screening warning is shown above
    if others:
        with st.expander(f"{len(others)} warnings"):
            st.markdown("\n".join(f"- {escape_markdown(warning)}" for warning in others))


def provenance(params: Mapping) -> str:
    """One line naming the selected classes, the keyword tables (and backends) and the ontology (and
    its mining settings) a suite used ('' for a suite of every class by a method without keywords)."""
    tables = params.get("keyword_tables") or {}
    parts = [f"{kind} keywords `{t['name']}` ({t.get('backend') or 'unknown backend'})" for kind, t in tables.items()]
    ontology = params.get("ontology")
    if isinstance(ontology, dict):
        parts.append(
            f"ontology `{ontology['id']}` ({ontology['algorithm']}, support {ontology['min_support']}, confidence "
            f"{ontology['min_confidence']}; {ontology['keywords']} keywords, {ontology['edges']} edges)"
        )
    elif ontology:  # suites saved before the ontology's parameters were recorded
        parts.append(f"ontology `{ontology}`")
    sources = "Sampled from " + "; ".join(parts) if parts else ""
    classes = (params.get("selection") or {}).get("classes")
    if not classes:
        return sources
    selected = f"Only the classes {', '.join(escape_markdown(name) for name in classes)}"
    return f"{selected}. {sources}" if sources else selected


def _number(value: float) -> str:
    return "—" if np.isnan(value) else f"{value:.3f}"


def caption(row, *, keyword_method: bool) -> str:
    """``#position · keyword (level L) · d=0.123 [· below realism bar]`` for one suite item (row of ``Suite.items``)."""
    if row.keyword:
        keyword = f"{row.keyword} (level {row.level})"
    else:
        keyword = "random top-up" if keyword_method else ""
    distance = "" if np.isnan(row.distance) else f"d={row.distance:.3f}"
    realism = "below realism bar" if row.below_realism else ""
    return " · ".join(part for part in (f"#{row.position}", keyword, distance, realism) if part)


def preview(workspace: Workspace, suite: Suite, *, key: str = KEY + "target") -> None:
    """One target's suite as a grid: the original first, then each composite with its keyword,
    level and distance (the paper's Figure 17); ``key`` is the target picker's widget key."""
    target_id = st.selectbox("Target", suite.target_ids, key=key)
    targets = list_targets(workspace).set_index("id")
    backgrounds = list_backgrounds(workspace).set_index("id")
    root = str(workspace.root)
    target = targets.loc[target_id]
    keyword_method = SAMPLERS[suite.method].needs_keywords
    images = [cache.target_thumbnail(root, target.image_hash, target.mask_hash)]
    captions = [f"original ({target.class_name})"]
    for row in suite.target_items(target_id).itertuples(index=False):
        background_hash = backgrounds.loc[row.background_id, "image_hash"]
        images.append(cache.composite_preview(root, target.image_hash, target.mask_hash, background_hash, levels=4, band=3)[1])
        captions.append(caption(row, keyword_method=keyword_method))
    widgets.image_grid(images, captions, n_columns=6)


def distances_by_method(workspace: Workspace) -> dict[str, np.ndarray]:
    """Composite distances of every saved suite, grouped by method.

    Returns
    -------
    dict of label -> ndarray of shape (n_items,), float (suites without distances left out)
    """
    grouped: dict[str, list[np.ndarray]] = {}
    root = str(workspace.root)
    saved = list_suites(workspace)
    for row in saved.itertuples(index=False):
        distances = cached_saved_suite(root, row.id).items["distance"].dropna().to_numpy(float)
        if distances.size:
            grouped.setdefault(row.method, []).append(distances)
    return {method: np.concatenate(parts) for method, parts in grouped.items()}


def distance_figure(distances: Mapping[str, np.ndarray]):
    """The shared histogram chart (:func:`analytics.figures.distance_histogram`)."""
    from analytics.figures import distance_histogram

    return distance_histogram(distances, title="Semantic distance of composites to their originals, per method")


#: Column configuration of :func:`saved_table`: N, seed and the target count are in the suite's label (hidden),
#: short headers and fixed widths, so every column fits a 1400 px window (#47 item 9); a longer text is cut
#: in its cell and shown whole on hover.
SAVED_COLUMNS = {
    "suite": st.column_config.TextColumn("Suite", width=220),
    "method": st.column_config.TextColumn("Method"),
    "n": None, "seed": None, "targets": None,
    "classes": st.column_config.TextColumn("Classes", width=90),
    "items": st.column_config.NumberColumn("Items", help="Composites: targets × backgrounds."),
    "mean_distance": st.column_config.NumberColumn("Distance", format="%.3f", help="Mean semantic distance of the composites to their originals."),
    "created": st.column_config.TextColumn("Saved", help="When the suite was saved (UTC)."),
    "topup_share": st.column_config.NumberColumn("Topped up", format="percent", help="Share of the backgrounds topped up at random (keyword methods)."),
    "params": st.column_config.TextColumn("Parameters", width=100),
    "id": st.column_config.TextColumn("Id", width=110),
}  # fmt: skip


def saved_table(workspace: Workspace, listing: pd.DataFrame) -> pd.DataFrame:
    """Saved suites, newest first: the label a person reads first, the share topped up at random
    (keyword methods; None for the others and for suites saved before it was recorded), the classes
    picked, the parameters as JSON text and the id last (what the CLI also takes).

    ``listing`` is :func:`analytics.suites.list_suites` (not changed).
    """
    if listing.empty:
        return listing
    listing = listing.copy()
    params = suite_params(workspace)
    listing["topup_share"] = [params[i].get("topup_share") for i in listing["id"]]
    listing["classes"] = [", ".join(c) or "all" for c in listing["classes"]]
    listing["params"] = [json.dumps(params[i], sort_keys=True) for i in listing["id"]]
    listing["created"] = [str(c)[:16].replace("T", " ") for c in listing["created"]]  # 2026-11-29 03:59
    return listing[["label", *(c for c in listing.columns if c not in ("label", "id", "name")), "id"]].rename(columns={"label": "suite"})
