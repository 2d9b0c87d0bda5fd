"""Judge: label models invariant, borderline or variant from their four variance matrices, one model
at a time, from a queue of the models you have not judged yet on a suite.

A thin view: the queue, cached matrices and figures are :mod:`ui.judge`; judgments are stored with
:func:`analytics.judging.judgments.add_judgment` (history kept: a changed judgment is a new row) by the
session's workspace, which in team mode acts as the signed-in account (so the library checks the
role, the annotator's name and the assignments). Annotators (no ``browse`` permission) see only
their queue, under blind aliases; leads (``adjudicate``) get an Assignments panel. The page catches
only :class:`~analytics.exceptions.BackdropError`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.data import list_targets
from analytics.exceptions import BackdropError
from analytics.judging import (
    LABELS,
    QueueItem,
    add_judgment,
    annotator_progress,
    annotator_queue,
    assign,
    blind_name,
    get_plan,
    judging_accounts,
    judging_progress,
    last_judgment,
    set_plan,
    unjudged_models,
)
from analytics.models import get_model_spec
from analytics.runs import runs_snapshot
from analytics.saliency import BASELINES
from analytics.workspace import Workspace, model_keys
from ui import judge as view
from ui import saliency, state
from ui.auth import may, require_page
from ui.markdown import escape_markdown

CONFIDENCE = view.KEY + "confidence"
CONFIDENCE_LEVELS = {"low": 1 / 3, "medium": 2 / 3, "high": 1.0}
SKIPPED = view.KEY + "skipped"  # models put at the end of the queue in this session
SALIENCY_SETTINGS = saliency.Settings("saliency", (), 0.2, None, BASELINES[0])
SALIENCY_TARGETS, SALIENCY_COMPOSITES = 3, 4
ASSIGN_MODELS, ASSIGN_PEOPLE, PLAN_K = view.KEY + "assign_models", view.KEY + "assign_people", view.KEY + "plan_k"


def ask_annotator() -> str:
    """The annotator's name; asks for it on the page (once per browser session) when the sidebar has none."""
    name = state.annotator()
    if name:
        return name
    st.info("Who is judging? Your name signs your judgments (once per browser session; also in the sidebar).")
    with st.form(view.KEY + "who", border=False):
        typed = st.text_input("Your name", key=view.KEY + "name", placeholder="e.g. ana")
        start = st.form_submit_button("Start judging", type="primary")
    if start and typed.strip():
        st.session_state[state.ANNOTATOR] = typed.strip()
        st.rerun()
    st.stop()


def record(
    workspace: Workspace, annotator: str, model: str, run_id: str | None, suite_id: str | None, label: str, shown_as: str, *, change: bool
) -> None:
    """Button callback: store one judgment, then clear the note and confidence for the next model.

    A queue button (``change=False``) only judges a model the annotator has not judged on the suite: a
    click that lands while the page is still updating belongs to the model shown before, which is
    judged already. ``workspace`` acts as the signed-in account in team mode.
    """
    if not change and not unjudged_models(workspace, annotator, suite_id, [model]):
        st.session_state[view.FLASH] = ("warning", f"Nothing saved: {shown_as} was judged already (a click during a page update?).")
        return
    confidence = st.session_state.get(CONFIDENCE)
    try:
        add_judgment(
            workspace,
            annotator=annotator,
            model=model,
            label=label,
            run_id=run_id,
            suite_id=suite_id,
            confidence=CONFIDENCE_LEVELS.get(confidence),
            note=str(st.session_state.get(view.NOTE, "")).strip(),
        )
    except BackdropError as err:
        st.session_state[view.FLASH] = ("error", str(err))
        return
    st.session_state[view.NOTE] = ""
    st.session_state[CONFIDENCE] = None
    st.session_state[view.FLASH] = ("success", f"Saved: {shown_as} is **{label}**.")


def skip(model: str) -> None:
    skipped = [m for m in st.session_state.get(SKIPPED, []) if m != model]
    st.session_state[SKIPPED] = [*skipped, model]


def show_flash() -> None:
    flash = st.session_state.pop(view.FLASH, None)
    if flash is not None:
        kind, text = flash
        show, icon = {"error": (st.error, ":material/error:"), "warning": (st.warning, ":material/warning:")}.get(kind, (st.success, ":material/done:"))
        show(text, icon=icon)


def choose_suite(suites: pd.DataFrame, blind_only: bool) -> tuple[str, bool]:
    """The suite to judge and whether names are hidden (always for someone who judges blind)."""
    left, right = st.columns([4, 1], vertical_alignment="bottom")
    labels = dict(zip(suites["id"], suites["label"]))
    suite_id = left.selectbox("Suite", list(labels), format_func=labels.__getitem__, key=view.KEY + "suite")
    if blind_only:
        return suite_id, True
    blind = right.toggle(
        "Blind mode", value=True, key=view.KEY + "blind", help="Hide the model's name, architecture, accuracy and construction."
    )
    return suite_id, blind


def show_identity(workspace: Workspace, item: QueueItem, blind: bool, runs: pd.DataFrame) -> str:
    """The model's heading (its alias in blind mode); returns how the model is called on the page."""
    if item.wanted:
        st.caption(f"This model has {item.judged} of the {item.wanted} judgments wanted so far.")
    if blind:
        st.subheader(item.alias)
        st.caption("Blind mode: name, architecture, accuracy and construction are hidden, so the pattern alone decides.")
        return item.alias
    spec = get_model_spec(workspace, item.model)
    run = runs.set_index("id").loc[item.run_id]
    st.subheader(escape_markdown(item.model))
    st.caption(
        f"{spec.arch if spec.arch == spec.source else f'{spec.arch} ({spec.source})'} · accuracy {run['accuracy']:.0%} · worst-case accuracy {run['worst_case_accuracy']:.0%} "
        f"· original accuracy {run['original_accuracy']:.0%}"
    )
    if spec.construction:
        details = ", ".join(f"{k} {v}" for k, v in spec.construction.items() if k in ("strength", "augment", "seed"))
        st.caption(f"Construction (how the model was built — not a human judgment): {escape_markdown(details or spec.construction)}")
    return item.model


def show_buttons(workspace: Workspace, annotator: str, item: QueueItem, suite_id: str, shown_as: str) -> None:
    left, right = st.columns([1, 2])
    left.segmented_control("Confidence (optional)", list(CONFIDENCE_LEVELS), key=CONFIDENCE)
    right.text_input("Note (optional)", key=view.NOTE, placeholder="what made you decide")
    st.html(view.button_css())
    for column, label in zip(st.columns(3), LABELS):
        text, icon, shortcut = view.LABEL_BUTTONS[label]
        column.button(
            text, key=view.button_key(label), icon=icon, shortcut=shortcut, width="stretch",
            on_click=record, args=(workspace, annotator, item.model, item.run_id, suite_id, label, shown_as),
            kwargs={"change": False},
        )  # fmt: skip
    left, right = st.columns([4, 1])
    left.caption("Keys **1** / **2** / **3** choose Invariant / Borderline / Variant; Tab moves between the buttons.")
    right.button("Skip for now", key=view.KEY + "skip", on_click=skip, args=(item.model,), width="stretch", type="tertiary")


def show_saliency(workspace: Workspace, item: QueueItem, suite_id: str) -> None:
    if not st.toggle("Show the saliency summary", key=view.KEY + "saliency", help="Where the model looks: computed on demand, then cached."):
        return
    targets = tuple(list_targets(workspace)["id"].head(SALIENCY_TARGETS))  # the first targets by id
    spec_key = model_keys(workspace).keys[item.model]
    try:
        row = saliency.inside_share_comparison(
            str(workspace.root), item.model, spec_key, SALIENCY_SETTINGS, suite_id, targets, SALIENCY_COMPOSITES
        )
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    left, right = st.columns(2)
    left.metric("Attribution on the object: originals", f"{row['Inside share (originals)']:.0%}", border=True)
    right.metric("Attribution on the object: composites", f"{row['Inside share (composites)']:.0%}", border=True)
    st.caption(
        f"{row['Method']} maps of the true class on the first {row['Originals']} targets and {row['Composites']} of their "
        "composites: share of positive attribution inside the object's mask. A model that keeps looking at the object "
        "when the scene changes is a good sign."
    )


def show_change_last(workspace: Workspace, annotator: str, suite_id: str, blind: bool) -> None:
    last = last_judgment(workspace, annotator, suite_id)
    if last is None:
        return
    with st.expander("Change my last judgment on this suite"):
        shown_as = blind_name(workspace, suite_id, last["model"]) if blind else last["model"]
        st.markdown(f"Your last judgment: **{escape_markdown(shown_as)}** is **{last['label']}** ({last['created'][:19].replace('T', ' ')}).")
        st.caption("Changing it adds a new judgment; the history keeps the old one, and the newest counts.")
        run_id = None if pd.isna(last["run_id"]) else last["run_id"]
        for column, label in zip(st.columns(3), LABELS):
            column.button(
                f"Make it {label}", key=view.button_key(label, change=True), disabled=label == last["label"], width="stretch",
                on_click=record, args=(workspace, annotator, last["model"], run_id, suite_id, label, shown_as),
                kwargs={"change": True},
            )  # fmt: skip


def store_assignments(workspace: Workspace, suite_id: str) -> None:
    """Button callback: assign the chosen models to the chosen annotators."""
    models, people = st.session_state.get(ASSIGN_MODELS, []), st.session_state.get(ASSIGN_PEOPLE, [])
    try:
        made = assign(workspace, suite_id, models, people)
    except BackdropError as err:
        st.session_state[view.FLASH] = ("error", str(err))
        return
    st.session_state[view.FLASH] = ("success", f"Assigned: {len(made)} (model, annotator) pairs on this suite.")


def store_plan(workspace: Workspace, suite_id: str) -> None:
    """Button callback: everyone judges every model of the suite, k judgments wanted per model."""
    try:
        plan = set_plan(workspace, suite_id, int(st.session_state.get(PLAN_K, 1)))
    except BackdropError as err:
        st.session_state[view.FLASH] = ("error", str(err))
        return
    st.session_state[view.FLASH] = ("success", f"Everyone judges every model of this suite; {plan.judgments_wanted} judgments wanted per model.")


def show_assignments(workspace: Workspace, suite_id: str, runs: pd.DataFrame) -> None:
    """A lead's panel: progress per model and annotator, assigning models x annotators, or the everyone plan."""
    plan = get_plan(workspace, suite_id)
    with st.expander("Assignments", icon=":material/assignment_ind:"):
        if plan is not None and plan.everyone:
            st.caption(f"Plan: everyone judges every model, {plan.judgments_wanted} judgments wanted per model (set by {escape_markdown(plan.set_by or 'the CLI')}).")
        left, right = st.columns([3, 2])
        left.dataframe(
            judging_progress(workspace, suite_id)[["model", "alias", "judged", "wanted", "annotators"]],
            hide_index=True, column_config={"alias": "Blind alias", "judged": "Judgments", "wanted": "Wanted"},
        )  # fmt: skip
        right.dataframe(annotator_progress(workspace, suite_id), hide_index=True, column_config={"done": "Judged", "assigned": "Assigned"})
        accounts = judging_accounts(workspace)
        # A form: both picks reach the server with the click, so a quick second pick is never lost to
        # the rerun the first one started.
        with st.form(view.KEY + "assign_form", border=False):
            left, right = st.columns(2)
            left.multiselect("Models", sorted(runs["model"]), key=ASSIGN_MODELS)
            right.multiselect(
                "Annotators", accounts, key=ASSIGN_PEOPLE, accept_new_options=not accounts,
                help="Accounts that may judge" if accounts else "Type the names that sign judgments",
            )  # fmt: skip
            st.form_submit_button("Assign", key=view.KEY + "assign", on_click=store_assignments, args=(workspace, suite_id))
        left, right = st.columns([1, 2], vertical_alignment="bottom")
        left.number_input("Judgments wanted per model (k)", min_value=1, value=plan.judgments_wanted if plan else 2, step=1, key=PLAN_K)
        right.button("Everyone judges everything", key=view.KEY + "plan", on_click=store_plan, args=(workspace, suite_id))


def main() -> None:
    user = require_page("judge")  # team mode: sign-in first, then a role that may judge
    st.title("Judge")
    st.caption("Is the model invariant to the background? Decide from its variance matrices, one model at a time.")
    workspace = state.current_workspace()
    annotator = ask_annotator()
    blind_only = not may(user, "browse")  # annotators judge blind, and only what is assigned to them
    suites = view.suites_with_runs(workspace, annotator if blind_only else None)
    if suites.empty:
        if blind_only:
            st.info("Nothing is assigned to you yet: ask a lead (an analyst or admin) to assign you models to judge.")
        else:
            st.info("Nothing to judge yet: run models over a suite first (Run page, or `python -m analytics run`).")
        st.stop()
    suite_id, blind = choose_suite(suites, blind_only)
    runs = view.finished_runs(workspace, suite_id)
    if may(user, "adjudicate"):
        show_assignments(workspace, suite_id, runs)
    queue, total = annotator_queue(workspace, annotator, suite_id, blind_only=blind_only)
    skipped = st.session_state.get(SKIPPED, [])
    queue.sort(key=lambda item: item.model in skipped)  # stable: skipped models go last
    judged = total - len(queue)
    st.progress(judged / total if total else 1.0, text=f"**{judged} of {total}** judged by {escape_markdown(annotator)}")
    show_flash()
    if not queue:
        later = "" if blind_only else " See how you agree with others on the Agreement page."
        st.success(f"You have judged all {total} models{' assigned to you' if blind_only else ''} on this suite.{later}")
    else:
        item = queue[0]
        shown_as = show_identity(workspace, item, blind, runs)
        view.matrix_panel(workspace, suite_id, item.run_id, key=view.KEY + "preset", compare=tuple(runs["id"]))
        show_buttons(workspace, annotator, item, suite_id, shown_as)
        show_saliency(workspace, item, suite_id)
    show_change_last(workspace, annotator, suite_id, blind)


with runs_snapshot():  # the runs are listed once per rerun, however many parts ask
    main()
