"""Failures: which scenes break a model. Per background keyword and ontology level of a run, the error
rate and the drop of the true-class probability with 95 % intervals, after the keyword x model heat
map of the suite's models (by default every model, or :data:`ui.failures.HEATMAP_MODELS` of them:
the run's and the newest; the page opens on the suite most registered real models ran over); the
galleries (per class, one composite per target, the background that lowers its true-class probability
most, the targets already wrong on their original apart; the flips, with saliency overlays on request);
the self-contained HTML report. A Classes filter (every class by default) narrows the tables, the heat
map and the galleries to the composites of the classes picked. A thin view: numbers from
:mod:`analytics.findings.failures` and :mod:`analytics.findings.galleries`, layout from :mod:`ui.failures`.

Deep links (:mod:`ui.deeplink`): ``run``, ``class``, ``keyword`` and ``method`` live in the address.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import pandas as pd
import streamlit as st

from analytics.exceptions import BackdropError
from analytics.figures import keyword_heatmap
from analytics.findings import main_suite_first
from analytics.runs import current_runs, runs_snapshot
from analytics.saliency import METHODS
from ui import deeplink, state, widgets
from ui import failures as view
from ui import saliency as saliency_view
from ui.auth import require_page
from ui.markdown import escape_markdown

ANY_KEYWORD = "(any keyword)"
SALIENCY_THRESHOLD = 0.2  # top share of a map outlined in the overlays, as on the Saliency page


def main() -> None:
    require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Failures")
    st.caption(
        "Which scene keywords go with a model's mistakes? A composite counts for every keyword of its background; "
        "rates have Wilson intervals, mean drops of the true-class probability bootstrap intervals (95 %)."
    )
    workspace = state.current_workspace()
    runs = current_runs(workspace)
    runs = runs[runs["status"] == "done"]
    if runs.empty:
        st.info("No finished run yet: run a model over a suite on the Run page.")
        st.stop()
    runs = main_suite_first(runs)  # opens on the suite most real models ran over
    records = {row["id"]: row for row in runs.to_dict("records")}
    unknown = deeplink.adopt("run", view.KEY + "run", list(records))
    run_id = st.selectbox("Run", list(records), format_func=lambda r: records[r]["label"], key=view.KEY + "run")
    if unknown:
        st.warning(f"The link names run {escape_markdown(repr(unknown))}, which is not a finished current run of this workspace; showing {escape_markdown(records[run_id]['label'])}.")
    run = records[run_id]
    path = str(workspace.root)
    left, right = st.columns([1, 2])
    min_count = left.slider("Minimum composites per keyword", 1, 50, 3, key=view.KEY + "min_count")
    with right:
        classes = widgets.pick_classes(view.run_classes(path, run_id, run["finished"] or ""), key=view.KEY + "classes")
    models = keyword_by_model(path, runs, run, min_count, classes)
    st.subheader(f"{escape_markdown(run['model'])}: every keyword" + (f" of {escape_markdown(', '.join(classes))}" if classes else ""))
    try:
        table = view.failures(path, run_id, run["finished"] or "", min_count, classes)
    except BackdropError as err:
        st.error(escape_markdown(err))
        st.stop()
    st.write(
        f"{table.composites} composites; overall error rate {table.error_rate:.3f}, mean drop {table.mean_drop:.3f} "
        f"(keywords: {escape_markdown(table.keyword_source)})."
    )
    if table.keywords.empty:
        st.info("No keyword has that many composites (or the suite's backgrounds have no keywords: compute a keyword table on the Suites page).")
    st.dataframe(
        view.display(table.keywords), hide_index=True, width="stretch", column_config=view.NUMBER_FORMAT, key=view.KEY + "keywords",
        on_select=partial(view.pick_keyword, list(table.keywords["keyword"])), selection_mode="single-row",
    )  # fmt: skip
    st.caption("Select a row to see its keyword's composites in the galleries below.")
    st.subheader("By ontology level")
    st.caption("Level of the keyword the suite drew the background for: 0 detected on the target, 1+ through the ontology, −1 random.")
    st.dataframe(view.display(table.levels), hide_index=True, width="stretch", column_config=view.NUMBER_FORMAT, key=view.KEY + "levels")

    class_name, keyword = show_gallery(path, run_id, run["finished"] or "", list(table.keywords["keyword"]), classes)
    method = show_flips(path, run, class_name, keyword)

    suite_runs = runs[runs["suite_id"] == run["suite_id"]].drop_duplicates("model", keep="first")  # newest per model
    show_baseline(path, run, suite_runs, min_count)

    st.subheader("Report")
    compare = [m for m in models if m != run["model"]]
    st.caption(escape_markdown(f"{run['model']} over suite {run['suite']}, compared with {', '.join(compare) or 'no other model'} (the models chosen above)."))
    view.report_button(workspace, run["model"], compare, run["suite_id"], min_count)
    deeplink.publish(run=run_id, keyword=keyword, method=method, **{"class": class_name})


def show_baseline(path: str, run: Mapping, suite_runs: pd.DataFrame, min_count: int) -> None:
    """The keywords whose error rate rose most from a baseline model's run over the same suite to this run."""
    st.subheader("Against a baseline")
    others = {row["id"]: row for row in suite_runs.to_dict("records") if row["model"] != run["model"]}
    if not others:
        st.caption("No other model has a finished run over this suite: run the last release over it on the Run page to compare.")
        return
    baseline = st.selectbox("Baseline model (e.g. the last release)", list(others), format_func=lambda r: others[r]["model"], key=view.KEY + "baseline")
    try:
        changes = view.changes(path, run["id"], baseline, (run["finished"] or "", others[baseline]["finished"] or ""), min_count)
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    st.caption(
        escape_markdown(f"Error rate per keyword of {run['model']} and of {others[baseline]['model']} on the same composites, largest rise first; ")
        + "95 % Wilson intervals; McNemar's exact test on the paired right/wrong outcomes (the release gate's keyword rule)."
    )
    st.dataframe(view.display(changes), hide_index=True, width="stretch", column_config=view.NUMBER_FORMAT, key=view.KEY + "changes")


def keyword_by_model(path: str, runs: pd.DataFrame, run: Mapping, min_count: int, classes: tuple[str, ...] | None) -> list[str]:
    """The keyword × model heat map of the run's suite over ``classes`` (None = every class), by default
    every model or :data:`ui.failures.HEATMAP_MODELS` of them, the run's model and the newest (the
    newest run of each); returns the models chosen."""
    st.subheader("Keyword × model")
    suite_runs = runs[runs["suite_id"] == run["suite_id"]].drop_duplicates("model", keep="first")  # newest per model
    default = list(dict.fromkeys([run["model"], *suite_runs["model"]]))[: view.HEATMAP_MODELS]  # another suite: this model and the newest
    widgets.prefill(view.KEY + "models", default, follows=run["suite_id"])
    models = st.multiselect("Models", list(suite_runs["model"]), key=view.KEY + "models")
    if len(suite_runs) > len(default) and models == default:
        st.caption(f"{len(default)} of the suite's {len(suite_runs)} models (this one and the newest); add others above (each adds its run's table).")
    chosen = suite_runs[suite_runs["model"].isin(models)]
    if chosen.empty:
        st.caption("Pick models above to compare their error rates per keyword.")
        return models
    try:
        matrix = view.keyword_matrix(path, tuple(chosen["id"]), tuple(chosen["finished"].fillna("")), min_count, classes)
    except BackdropError as err:  # another model's run may lack a class of this one
        st.error(escape_markdown(err))
        return models
    if matrix.empty:
        st.info("No keyword to compare.")
    else:
        st.caption("Error rate of each model on the composites whose background carries the keyword: a dark column is a model the scene breaks.")
        st.plotly_chart(keyword_heatmap(matrix), width="stretch", key=view.KEY + "heatmap")
    return models


def show_gallery(path: str, run_id: str, finished: str, ranked: list[str], picked: tuple[str, ...] | None) -> tuple[str | None, str | None]:
    """Per class (of ``picked``; None = every class), the backgrounds that fool the model most; returns
    the chosen class and keyword."""
    st.subheader("Galleries")
    st.caption(
        "One composite per target: the background that lowers its true-class probability most, biggest drop first, each after "
        "its original, with the predicted class, the true-class probability before → after and the background's keywords. "
        "Targets the model already gets wrong on their original are shown apart, below."
    )
    left, middle, right = st.columns(3)
    keywords = [ANY_KEYWORD, *ranked, *sorted(set(view.run_keywords(path, run_id, finished)) - set(ranked))]  # by effect, then the rare ones
    view.keep_valid(view.KEY + "keyword", keywords)
    unknown_keyword = deeplink.adopt("keyword", view.KEY + "keyword", keywords)
    chosen = middle.selectbox("Background keyword", keywords, key=view.KEY + "keyword", help="Only composites whose background carries it.")
    keyword = None if chosen == ANY_KEYWORD else chosen
    per_class = right.slider("Targets per class", 1, 24, 4, key=view.KEY + "per_class", help="In each part: right and already wrong on the original.")
    try:
        gallery = view.gallery(path, run_id, finished, per_class, keyword)
    except BackdropError as err:
        st.error(escape_markdown(err))
        return None, keyword
    classes = [name for name in gallery if picked is None or name in picked]
    view.keep_valid(view.KEY + "class", classes)
    unknown_class = deeplink.adopt("class", view.KEY + "class", classes)
    class_name = left.selectbox("Class", classes, key=view.KEY + "class")
    for param, text in (("keyword", unknown_keyword), ("class", unknown_class)):
        if text:
            st.warning(f"The link names {param} {escape_markdown(repr(text))}, which this run's composites do not have; pick one above.")
    found = gallery.get(class_name)
    if not found:
        st.info(escape_markdown(f"No background {'with ' + repr(keyword) + ' ' if keyword else ''}lowers the true-class probability of a {class_name}."))
        return class_name, keyword
    if found.hurt:
        st.dataframe(view.gallery_table(found.hurt), hide_index=True, width="stretch", column_config=view.GALLERY_FORMAT, key=view.KEY + "gallery")
        widgets.image_grid(*view.gallery_cards(path, found.hurt), n_columns=4)
    else:
        st.info(escape_markdown(f"No background {'with ' + repr(keyword) + ' ' if keyword else ''}lowers the probability of a {class_name} the model gets right on its original."))
    if found.already_wrong:
        st.markdown("**Already wrong on the original**")
        st.caption("Targets the model misclassifies on their own photo: a background cannot be blamed for these errors. Each with its biggest drop.")
        st.dataframe(
            view.gallery_table(found.already_wrong), hide_index=True, width="stretch", column_config=view.GALLERY_FORMAT, key=view.KEY + "gallery_wrong"
        )  # fmt: skip
        widgets.image_grid(*view.gallery_cards(path, found.already_wrong), n_columns=4)
    return class_name, keyword


def show_flips(path: str, run: Mapping, class_name: str | None, keyword: str | None) -> str | None:
    """The composites whose prediction differs from the original's, with saliency overlays on request;
    returns the saliency method shown (None when off)."""
    st.subheader("Flips")
    if class_name is None:
        return None
    st.caption(
        f"Composites of class {escape_markdown(class_name)}{' with ' + escape_markdown(repr(keyword)) if keyword else ''} on which the model predicts another "
        "class than on the original: originals classified correctly first, then biggest drop first."
    )
    left, right = st.columns(2)
    limit = left.slider("Flips shown", 1, 16, 4, key=view.KEY + "flips")
    if st.query_params.get("method") and view.KEY + "saliency" not in st.session_state:
        st.session_state[view.KEY + "saliency"] = True  # a link with a method shows its overlays
    with_saliency = right.toggle("Saliency overlays", key=view.KEY + "saliency", help="Computed on request for the flips shown, then cached.")
    finished = run["finished"] or ""
    items = view.flip_items(path, run["id"], finished, limit, class_name, keyword)
    if not items:
        st.info("No composite of this class changes the model's prediction.")
        return None
    method = choose_method(path, run["model"]) if with_saliency else None
    for item in items:
        images, captions = view.flip_cards(path, item)
        if method is not None:
            maps = view.pair_saliency(path, run["id"], finished, run["model"], item, method)
            if maps is not None:
                images += view.flip_overlays(path, item, maps, SALIENCY_THRESHOLD)
                captions += [f"{METHODS[method].name} · original", f"{METHODS[method].name} · composite"]
        widgets.image_grid(images, captions, n_columns=4)
    return method


def choose_method(path: str, model: str) -> str | None:
    """The saliency method picker over the methods the run's model can run (clearest first)."""
    spec_key = saliency_view.registered_models(state.current_workspace()).get(model, "")
    methods = saliency_view.runnable_methods(path, model, spec_key)
    unknown = deeplink.adopt("method", view.KEY + "method", methods)
    method = st.selectbox("Saliency method", methods, format_func=lambda k: METHODS[k].name, key=view.KEY + "method")
    if unknown:
        st.warning(f"The link names method {escape_markdown(repr(unknown))}, which {escape_markdown(model)} cannot run (or which does not exist); showing {METHODS[method].name}.")
    legend, words = st.columns([1, 3], vertical_alignment="center")
    legend.image(saliency_view.colour_legend(), width="stretch")
    words.caption(
        f"{saliency_view.LEGEND_CAPTION} {saliency_view.MASK_COLOUR_NAME.capitalize()}: the object's outline; "
        f"{saliency_view.BINARY_COLOUR_NAME}: the top {SALIENCY_THRESHOLD:.0%} of the map."
    )
    return method


with runs_snapshot():  # the runs are listed once per rerun, however many parts ask
    main()
