"""Backgrounds Challenge: the eight IN-9 variants of Xiao et al. ("Noise or Signal", 2020) generated
from the workspace's targets, accuracy per variant and model, BG-Gap, per-image categories, an
example grid, the adversarial-background gallery and a CSV of every prediction.

A thin view: the method is :mod:`analytics.robustness.bgchallenge`, tables and figures :mod:`ui.bgchallenge`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.exceptions import BackdropError
from analytics.figures import challenge_categories_chart, variant_accuracy_chart
from analytics.models import list_models
from analytics.robustness.bgchallenge import VARIANT_NAMES, per_class_accuracy, variant_accuracy, workspace_data
from analytics.workspace import to_csv
from analytics.zoo import models_to_open_on
from ui import bgchallenge as view
from ui import state
from ui.auth import offer, require_page
from ui.markdown import escape_markdown
from ui.widgets import image_grid

RESULTS = "bgchallenge.results"


def show_accuracy(tables: dict[str, pd.DataFrame]) -> None:
    st.subheader("Accuracy per variant")
    st.dataframe(view.accuracy_table(tables), hide_index=True, width="stretch", column_config={
        name: st.column_config.NumberColumn(format="percent") for name in [*VARIANT_NAMES.values(), "BG-Gap", "Mixed-Same − Mixed-Next"]
    })  # fmt: skip
    paper = ", ".join(f"{k} {v:.1%}" for k, v in view.PAPER_RESNET50.items())
    st.caption(f"BG-Gap = Mixed-Same − Mixed-Rand. The paper's ImageNet ResNet-50 on IN-9: {paper}, BG-Gap 6.0 points.")
    columns = st.columns(2)
    for k, (name, table) in enumerate(tables.items()):
        columns[k % 2].plotly_chart(variant_accuracy_chart(variant_accuracy(table), name), width="stretch")
    st.subheader("Per class")
    model = st.selectbox("Model", list(tables), key="bgchallenge.class_model")
    st.dataframe(per_class_accuracy(tables[model]).rename(columns=VARIANT_NAMES), width="stretch")


def show_categories(tables: dict[str, pd.DataFrame]) -> None:
    st.subheader("Per-image categories")
    counts = view.categories_table(tables)
    st.dataframe(counts, hide_index=True, width="stretch")
    st.plotly_chart(challenge_categories_chart(counts), width="stretch")
    st.caption(
        "From correctness on Original (full image), Mixed-Rand (the foreground) and Only-BG-T (the background), "
        "as the paper's Table 3: BG Irrelevant when full and foreground agree; BG Required ✓✗✓, BG+FG Required ✓✗✗, "
        "BG Fools ✗✓✗, BG+FG Fools ✗✓✓."
    )


def show_examples(data, tables: dict[str, pd.DataFrame], seed: int, blend: bool) -> None:
    st.subheader("One target across the variants")
    source = st.selectbox("Target", range(len(data.ids)), format_func=lambda i: f"{data.ids[i]} ({data.classes[i]})", key="bgchallenge.target")
    images, captions = view.example_images(data, source, seed=seed, blend=blend, tables=tables)
    image_grid(images, captions, n_columns=4)


def show_adversarial(workspace, models: list[str], data) -> None:
    st.subheader("Adversarial backgrounds")
    exclude_own = st.toggle(
        "Leave out each foreground's own background", key="bgchallenge.exclude_own",
        help="The challenge's own search (the default) tries every Only-BG-T image, the foreground's own included; left out, only other images' scenes count.",
    )  # fmt: skip
    pool = len(data.ids) - 1 if exclude_own else len(data.ids)
    st.caption(
        f"Each foreground on {'every other' if exclude_own else 'every'} target's Only-BG-T background ({pool} per foreground, one forward pass each). "
        "Fooled *to the background's class*: some background of another class makes the model predict that class; *any error*: some background makes it wrong."
    )
    results = view.search_with_progress(workspace, models, data, include_own=not exclude_own)
    summary = pd.DataFrame(
        [{"Model": name, "Foregrounds": r.summary()["n_foregrounds"], "Fooled to the background's class": r.summary()["fooled_to_background_share"],
          "Fooled, any error": r.summary()["fooled_any_share"]} for name, r in results.items()]
    )  # fmt: skip
    share = st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)
    st.dataframe(summary, hide_index=True, width="stretch", column_config={"Fooled to the background's class": share, "Fooled, any error": share})
    model = st.selectbox("Gallery of model", models, key="bgchallenge.gallery_model")
    images, captions = view.gallery(results[model])
    if images:
        image_grid(images, captions, n_columns=5)
    else:
        st.info("No background turned a foreground of another class into its own class.")


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Backgrounds Challenge")
    st.caption("Xiao et al.'s eight IN-9 variants, generated from this workspace's targets and masks.")
    workspace = state.current_workspace()
    names = [spec.name for spec in list_models(workspace)]
    if not names:
        st.info("No models yet. Register one on the **Models** page.")
        st.stop()
    models = st.multiselect("Models", names, default=models_to_open_on(workspace), key="bgchallenge.models")
    left, middle, right = st.columns(3)
    seed = int(left.number_input("Seed of the Mixed-* pairings", min_value=0, value=0, step=1, key="bgchallenge.seed"))
    # a short label: a third of the row at 1400 px cut "Blend the seams (Backdrop) instead of the paper's hard paste"
    blend = middle.toggle("Blend the seams", key="bgchallenge.blend", help="Backdrop's blended seams instead of the paper's hard paste.")
    adversarial = right.toggle("Search adversarial backgrounds", key="bgchallenge.adversarial")
    # evaluating runs the models and caches their predictions: roles that run models (the library refuses others too)
    if offer(user, "run_models", "Evaluate") and st.button("Evaluate", type="primary", key="bgchallenge.run", disabled=not models):
        st.session_state[RESULTS] = (tuple(models), seed, blend, adversarial)
    request = st.session_state.get(RESULTS)
    if request is None:
        show_stored(workspace, models, seed, blend, adversarial)
        return
    models, seed, blend, adversarial = list(request[0]), *request[1:]
    try:
        data = workspace_data(workspace)
        tables = view.evaluate_with_progress(workspace, models, data, seed=seed, blend=blend)
        show_results(workspace, data, tables, seed, blend, adversarial=adversarial)
    except BackdropError as err:
        st.error(escape_markdown(err))
        st.stop()


def show_stored(workspace, models: list[str], seed: int, blend: bool, adversarial: bool) -> None:
    """Before Evaluate in this session: the stored evaluation of the chosen models with these settings,
    so a revisit shows the results without a click (issue 42.11c); nothing runs."""
    try:
        data = workspace_data(workspace)
    except BackdropError:  # e.g. no targets yet: Evaluate says why
        data = None
    tables = {} if data is None else view.stored_tables(workspace, models, data, seed=seed, blend=blend)
    if not tables:
        st.info("Pick models and press **Evaluate** (results are cached in the workspace; a repeat is fast).")
        st.stop()
    notes = [escape_markdown(f"Stored results of {', '.join(tables)} with these settings.")]
    if missing := [name for name in models if name not in tables]:
        notes.append(escape_markdown(f"Not evaluated with them yet: {', '.join(missing)}.") + " Press **Evaluate** for those.")
    if adversarial:
        notes.append("The adversarial search runs after **Evaluate**.")
    st.caption(" ".join(notes))
    try:
        show_results(workspace, data, tables, seed, blend, adversarial=False)  # the search runs models: after Evaluate only
    except BackdropError as err:
        st.error(escape_markdown(err))


def show_results(workspace, data, tables: dict[str, pd.DataFrame], seed: int, blend: bool, *, adversarial: bool) -> None:
    show_accuracy(tables)
    show_categories(tables)
    show_examples(data, tables, seed, blend)
    everything = pd.concat([t.assign(model=name) for name, t in tables.items()], ignore_index=True)
    st.download_button(
        f"Download every prediction ({len(everything)} rows, CSV)", to_csv(everything).encode(),
        file_name="bgchallenge.csv", mime="text/csv", icon=":material/download:", key="bgchallenge.download",
    )  # fmt: skip
    if adversarial:
        show_adversarial(workspace, list(tables), data)


main()
