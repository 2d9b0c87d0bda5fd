"""Home's story view (issue 16): the headline failure pattern of each model in one screen, so a demo
starts with the finding.

Per model (the newest finished current run of each model over the workspace's main suite, the one
most registered real models ran over; real models first, then zoo heads with a note on what they
are; the :data:`MAX_MODELS` the backgrounds hit hardest, lowest composite accuracy first, the measure of
Home's headline: :func:`analytics.findings.composite_ranking`), one tab:
its worst scene keywords (:func:`analytics.findings.failures.failure_table`), one variance matrix on the
suite's fixed colour scale (the signal that fills most of that scale, :func:`analytics.findings.telling_signal`) and two flips (composites
whose background changed the prediction, :func:`analytics.findings.galleries.flips`), each with a link to
the full view on the Matrices or Failures page. Before the tabs, where the workspace holds zoo runs
(the demo does), the zoo's point (issue 42.12): its heads were built with a known reliance on the
background, and their worst-case accuracy against that strength shows Backdrop measures it
(:func:`show_reliance`). The tabs are lazy (``on_change="rerun"``): only the
open tab's model is read, so Home stays fast with many models.

Caching: the keyword table and the matrices are the Failures and Matrices pages' own caches
(:func:`ui.failures.failures`, :func:`ui.runs.run_matrices`, :func:`ui.colour_scale.suite_scale`),
so opening a link reuses them; the flips and their images, and each run's composite outcomes (the
headline's and the tabs' ranking, :func:`run_outcomes`), are ``st.cache_data`` keyed by workspace path,
run id and finishing time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
import streamlit as st

from analytics.data import background_label
from analytics.exceptions import BackdropError
from analytics.figures import reliance_chart, variance_heatmap
from analytics.findings import HEADLINE_ALPHA, GalleryItem, Headline, composite_outcomes, composite_ranking, flips, item_images, telling_signal
from analytics.runs import SIGNALS
from analytics.variance import DEFAULT_SETTINGS
from analytics.workspace import Workspace
from analytics.zoo import RelianceEnds, reliance_curve, reliance_ends
from ui import colour_scale, state
from ui import failures as failure_view
from ui import runs as run_view
from ui.markdown import escape_markdown

KEY = "story."
MAX_MODELS = 8  # tabs (lazy, so more cost nothing until opened); the demo has about 7 models
TOP_KEYWORDS = 3
N_FLIPS = 2
MIN_COUNT = 3  # composites per keyword, the Failures page's default
MATRIX_HEIGHT = 380
#: Columns of :func:`keyword_rows`.
KEYWORD_HEADERS = ["Keyword", "Composites", "Errors", "Error rate", "95% interval"]
#: What the zoo heads are, wherever they appear beside real models (names as :func:`analytics.zoo.zoo_model_name`).
ZOO_NOTE = (
    "Models named `zoo-s<strength>-<plain|aug>-seed<k>` (or `zoo-fig8-…`) are the background-reliance zoo: small "
    "heads trained in this workspace on a real backbone's embedding, from training images in which the background "
    "predicts the class with a set strength s (0: never, 1: always; `aug`: also trained on objects over random "
    "backgrounds). Synthetic models of known reliance that check the assessor (Models page), not models anyone deploys."
)


@st.cache_data(max_entries=64, show_spinner=False)
def run_outcomes(workspace_path: str, run_id: str, finished: str) -> pd.Series:
    """:func:`analytics.findings.composite_outcomes` of a run; ``finished`` keys a redone run afresh."""
    return composite_outcomes(state.open_workspace(workspace_path), run_id)


def outcomes(workspace_path: str, runs: pd.DataFrame) -> Callable[[str], pd.Series]:
    """Run id (of ``runs``) -> :func:`run_outcomes`: the loader :func:`analytics.findings.headline` and
    :func:`analytics.findings.composite_ranking` take."""
    finished = {run_id: str(done or "") for run_id, done in zip(runs["id"], runs["finished"])}
    return lambda run_id: run_outcomes(workspace_path, run_id, finished[run_id])


def story_runs(workspace_path: str, runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`analytics.findings.composite_ranking` of ``runs``: the :data:`MAX_MODELS` tabs, the model the
    backgrounds hit hardest first (real models first)."""
    return composite_ranking(runs, outcomes(workspace_path, runs), limit=MAX_MODELS)


def headline_sentence(found: Headline) -> str:
    """Home's first sentence on :func:`analytics.findings.headline`: the measure by name (composite
    accuracy), the model the backgrounds hit hardest and the one they hit least where McNemar's test
    sets them apart, else that the models lie within the uncertainty (not ranked). Names escaped."""
    suite, low, high = escape_markdown(found.suite), found.lowest, found.highest
    if found.n_models == 1:
        scope = f" ({found.n_models} real model and {found.n_zoo} zoo head{'s' * (found.n_zoo > 1)})" if found.mixed else ""
        return (
            f"On suite {suite}{scope}, **{escape_markdown(low['model'])}** gets {low['composite_accuracy']:.0%} of the suite's composites "
            f"right (composite accuracy: each target on a new background), against {low['original_accuracy']:.0%} of the targets on their own "
            f"photos; {low['worst_case_accuracy']:.0%} are right under every one of their backgrounds."
        )
    n, n_zoo = found.n_models, found.n_zoo
    scope = f"{n} real models and {n_zoo} zoo head{'s' * (n_zoo > 1)}" if found.mixed else f"{n} models"
    measure = "composite accuracy (the share of the suite's composites, each target on a new background, that a model gets right)"
    test = (
        f"McNemar's exact test on {found.pairs:,} paired composites: p = {found.p_most:.2g}" if n == 2 else
        f"McNemar's exact test on {found.pairs:,} paired composites, against the nearest other model: p = {found.p_most:.2g} for the lowest, "
        f"{found.p_least:.2g} for the highest"
    )  # fmt: skip
    level = f"a model is named at p < {HEADLINE_ALPHA:g}"

    def name(row: Mapping) -> str:
        return f"**{escape_markdown(row['model'])}**"

    def figures(row: Mapping) -> str:
        return f"{row['composite_accuracy']:.0%} of the composites right ({row['original_accuracy']:.0%} of the targets on their own photos)"

    if found.most is not None and found.least is not None:
        return (
            f"On suite {suite} ({scope}), by {measure}, {name(low)} is hit hardest by the backgrounds: {figures(low)}; "
            f"{name(high)} least: {figures(high)} ({test}). Their variance matrices show where."
        )
    if found.most is not None:
        return (
            f"On suite {suite} ({scope}), by {measure}, {name(low)} is hit hardest by the backgrounds: {figures(low)}; the highest, "
            f"{name(high)} ({high['composite_accuracy']:.0%}), is within the uncertainty of the others ({test}; {level})."
        )
    if found.least is not None:
        return (
            f"On suite {suite} ({scope}), by {measure}, {name(high)} is hit least by the backgrounds: {figures(high)}; the lowest, "
            f"{name(low)} ({low['composite_accuracy']:.0%}), is within the uncertainty of the others ({test}; {level})."
        )
    return (
        f"On suite {suite} ({scope}), {measure} does not tell the models apart: from {low['composite_accuracy']:.0%} ({name(low)}) to "
        f"{high['composite_accuracy']:.0%} ({name(high)}) is within its uncertainty ({test}; {level})."
    )


def keyword_rows(keywords: pd.DataFrame) -> pd.DataFrame:
    """The first :data:`TOP_KEYWORDS` rows of :attr:`analytics.findings.failures.FailureTable.keywords` (sorted
    by effect), columns :data:`KEYWORD_HEADERS`; the interval is the Wilson interval of the rate."""
    top = keywords.head(TOP_KEYWORDS)
    intervals = [f"{low:.2f}–{high:.2f}" for low, high in zip(top["error_low"], top["error_high"])]
    values = [top["keyword"], top["count"], top["errors"], top["error_rate"].round(3), intervals]
    return pd.DataFrame(dict(zip(KEYWORD_HEADERS, values))).reset_index(drop=True)


@st.cache_data(max_entries=32, show_spinner="Finding flips…")
def flip_images(workspace_path: str, run_id: str, finished: str, limit: int) -> list[tuple[GalleryItem, np.ndarray, np.ndarray]]:
    """:func:`analytics.findings.galleries.flips` with each item's original and composite ((s, s, 3) uint8 each);
    ``finished`` keys a redone run afresh."""
    workspace = state.open_workspace(workspace_path)
    return [(item, *item_images(workspace, item)) for item in flips(workspace, run_id, limit=limit)]


def reliance_sentence(ends: list[RelianceEnds]) -> str:
    """The zoo's finding in words: the first line of ``ends`` (:func:`analytics.zoo.reliance_ends`:
    plain heads first) read at its two ends, then the other line's ends after a semicolon."""
    main, *others = ends
    kind = "augmented heads" if main.augment else "plain heads"
    if main.falls:
        measured = (
            f"Backdrop measures it: the worst-case accuracy of the {kind} (targets right under every background, mean over the "
            f"seeds, {main.heads} heads) falls from **{main.at_weakest:.0%}** at strength {main.weakest:g} to **{main.at_strongest:.0%}** at strength {main.strongest:g}"
        )
    else:  # never claim what the runs do not show: a zoo trained on too few images may not lean on its backgrounds
        measured = (
            f"Here the runs do not show it: the worst-case accuracy of the {kind} (mean over the seeds, {main.heads} heads) is {main.at_weakest:.0%} at "
            f"strength {main.weakest:g} and {main.at_strongest:.0%} at strength {main.strongest:g}"
        )
    others_text = "".join(f"; heads also trained on random backgrounds: {other.at_weakest:.0%} → {other.at_strongest:.0%}" for other in others)
    return (
        f"The model zoo's heads were trained with a known reliance on the background: with strength s the training "
        f"background predicts the class (0: never, 1: always), so the higher s, the more new backgrounds should break a head. "
        f"{measured}{others_text}."
    )


# -- layout ------------------------------------------------------------------------------------------
def show_story(workspace: Workspace, runs: pd.DataFrame, *, matrices_page: str | None, failures_page: str | None) -> None:
    """One lazy tab per model of :func:`story_runs` (nothing when no run is finished and current).

    Parameters
    ----------
    workspace : Workspace
    runs : DataFrame
        :func:`analytics.runs.list_runs`.
    matrices_page, failures_page : str or None
        Page paths for the links to the full views (None: that page is not installed, no link).
    """
    chosen = story_runs(str(workspace.root), runs)
    if chosen.empty:
        return
    st.subheader("What breaks each model", anchor=False)
    st.caption(
        f"Suite {escape_markdown(chosen['suite'].iloc[0])}, the newest finished run of each model: the scene keywords with the highest "
        f"error rate (at least {MIN_COUNT} composites), one variance matrix on the suite's colour scale, and two composites "
        "whose background changed the prediction."
    )
    if chosen["zoo"].any():
        st.caption(ZOO_NOTE)
    done = runs[(runs["status"] == "done") & (runs["suite_id"] == chosen["suite_id"].iloc[0])]
    suite_run_ids = tuple(sorted(done["id"]))  # the Matrices page's key of the suite scale, so both share it
    tabs = st.tabs([escape_markdown(model) for model in chosen["model"]], key=KEY + "model", on_change="rerun")
    for tab, run in zip(tabs, chosen.to_dict("records")):
        if tab.open:
            with tab:
                show_model(str(workspace.root), run, suite_run_ids, matrices_page=matrices_page, failures_page=failures_page)


def show_model(workspace_path: str, run: Mapping, suite_run_ids: tuple[str, ...], *, matrices_page: str | None, failures_page: str | None) -> None:
    """One model's block: accuracies, worst keywords, the telling matrix, two flips, links."""
    st.caption(
        f"Composites right {run['composite_accuracy']:.0%} · on their own photos {run['original_accuracy']:.0%} · "
        f"right under every background {run['worst_case_accuracy']:.0%} · accuracy over all images {run['accuracy']:.0%}"
    )
    finished = run["finished"] or ""
    left, right = st.columns(2, gap="large")
    try:
        with left:
            show_keywords(workspace_path, run, finished, failures_page)
        with right:
            show_matrix(workspace_path, run, finished, suite_run_ids, matrices_page)
        show_flips(workspace_path, run, finished)
    except BackdropError as err:
        st.error(escape_markdown(err))


def show_keywords(workspace_path: str, run: Mapping, finished: str, failures_page: str | None) -> None:
    st.markdown("**Scenes that break it most**")
    table = failure_view.failures(workspace_path, run["id"], finished, MIN_COUNT)
    if table.keywords.empty:
        st.caption(f"No scene keyword has {MIN_COUNT} composites: the suite's backgrounds carry no keywords (Suites page).")
    else:
        st.dataframe(keyword_rows(table.keywords), hide_index=True, width="stretch", key=f"{KEY}keywords.{run['id']}")
        st.caption(f"Overall: {table.error_rate:.0%} of {table.composites} composites misclassified.")
    if failures_page:
        st.page_link(failures_page, label="Every keyword and the galleries on Failures", icon=":material/arrow_forward:", query_params={"run": run["id"]})


def show_matrix(workspace_path: str, run: Mapping, finished: str, suite_run_ids: tuple[str, ...], matrices_page: str | None) -> None:
    settings = DEFAULT_SETTINGS
    matrices = run_view.run_matrices(workspace_path, run["id"], finished, settings)
    scale = colour_scale.suite_scale(workspace_path, run["suite_id"], suite_run_ids, settings)
    signal = telling_signal(matrices, scale.tops, scale.bottoms)
    st.markdown(f"**{SIGNALS[signal]}** (the signal that fills most of the suite's colour scale)")
    bottom, top = scale.colour_range(signal)
    figure = variance_heatmap(matrices[signal], zmin=bottom, zmax=top)
    figure.update_layout(height=MATRIX_HEIGHT)
    st.plotly_chart(figure, key=f"{KEY}matrix.{run['id']}", config={"displayModeBar": False})
    if matrices_page:
        st.page_link(
            matrices_page, label="All matrices and the image pairs on Matrices", icon=":material/arrow_forward:",
            query_params={"run": run["id"], "signal": signal, "preset": settings.preset},
        )  # fmt: skip


def show_flips(workspace_path: str, run: Mapping, finished: str) -> None:
    st.markdown("**Flips: the background changes the answer**")
    found = flip_images(workspace_path, run["id"], finished, N_FLIPS)
    if not found:
        st.caption("No composite changes this model's prediction.")
        return
    for column, (item, original, composite) in zip(st.columns(N_FLIPS, gap="large"), found):
        with column:
            first, second = st.columns(2)
            first.image(original, caption=escape_markdown(f"{item.target_id}: {item.original_predicted} · p(true) {item.original_true_prob:.2f}"), width="stretch")
            second.image(composite, caption=escape_markdown(f"on {background_label(item.background_id)}: {item.predicted} · p(true) {item.true_prob:.2f}"), width="stretch")
            if item.keywords:
                st.caption("Scene: " + escape_markdown(", ".join(item.keywords[:6])))


def show_reliance(workspace: Workspace) -> None:
    """The zoo's point: :func:`reliance_sentence` and :func:`analytics.figures.reliance_chart` of
    :func:`analytics.zoo.reliance_curve` (stored run summaries only); nothing without zoo runs at two
    strengths or more."""
    curve = reliance_curve(workspace)
    ends = reliance_ends(curve)
    if not ends:
        return
    st.subheader("Known reliance, measured", anchor=False)
    left, right = st.columns([2, 3], gap="large")
    left.markdown(reliance_sentence(ends))
    left.caption("Each point: the heads of one strength, their mean and (bar) their range over the seeds. How the heads were built: Models page.")
    right.plotly_chart(reliance_chart(curve), key=KEY + "reliance", config={"displayModeBar": False})
