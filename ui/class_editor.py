"""The class editor on the Data page: what model outputs count as each workspace class.

Streamlit-side only; searching ImageNet-1k and storing mappings is :mod:`analytics.data.classes` (the
same resolver as ``python -m analytics classes`` / ``set-class``).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics.data import IN9_CLASSES, ClassMapping, class_target_counts, imagenet_classes, list_class_mappings, search_imagenet, set_class_mapping
from analytics.exceptions import BackdropError
from analytics.models import class_scorers, list_models, unscored_classes
from analytics.runs import runs_of_class
from analytics.team import User
from analytics.workspace import Workspace
from ui.auth import offer
from ui.markdown import escape_markdown

SAVED = "data.class_saved"  # message about the last save, shown after the rerun
SEEN_UNMAPPED = "data.class_unmapped_seen"  # the unmapped classes when the editor was last drawn
PICKED = "data.class_search_picked"  # widget key -> the search results last clicked for it
NO_IN9 = "(none)"
SEARCH_LIMIT = 30


def show(workspace: Workspace, user: User | None) -> None:
    """The table of classes with their mappings, then the editor of one class (for roles that may change it)."""
    mappings = list_class_mappings(workspace)
    if not mappings:
        st.info("No classes yet — import a target set first; its class folders become the classes.")
        return
    st.caption(
        "A class counts as the model outputs it is mapped to: ImageNet-1k indices (ImageNet classifiers), an IN-9 "
        "class (IN-9 classifiers; ImageNet classifiers then use its ImageNet classes) or a custom output label "
        "(label-file models; default: the class's own name). Runs scored with an older mapping are marked stale."
    )
    if message := st.session_state.pop(SAVED, None):
        st.success(message)
    st.dataframe(mapping_table(workspace, mappings), hide_index=True, width="stretch")
    if warning := scoring_warning(workspace, mappings):
        st.warning(warning)
    if offer(user, "import_data", "Changing a class mapping"):
        edit_class(workspace, mappings)


def scoring_warning(workspace: Workspace, mappings: dict[str, ClassMapping]) -> str | None:
    """The warning about the classes no registered model scores (:func:`analytics.models.unscored_classes`),
    naming the models that score the others; None when every class is scored (issue 47.7: a model
    registered with its own class names scores them unmapped)."""
    unscored = unscored_classes(workspace, mappings)
    if not unscored:
        return None
    names = ", ".join(escape_markdown(name) for name in unscored)
    it = "it" if len(unscored) == 1 else "them"
    if not list_models(workspace):
        return (
            f"Not mapped yet: {names}. No model is registered yet: an ImageNet or IN-9 model scores a class only "
            "through its mapping (or an output with the class's name); a model registered with its own class names "
            f"scores the classes it names. Map {it} below."
        )
    unmapped = [name for name in unscored if not mappings[name].mapped]
    lead = f"Not mapped yet: {names}." if len(unmapped) == len(unscored) else f"No registered model scores {names}."
    scorers = class_scorers(workspace, [name for name in mappings if name not in unscored])
    models = sorted({model for found in scorers.values() for model in found})
    others = f" The other classes are scored by {', '.join(escape_markdown(m) for m in models)}." if models else ""
    return (
        f"{lead} No registered model has an output for {it}.{others} Map {it} below (ImageNet indices, an IN-9 class, "
        f"or a custom label naming a model's output), or register a model that names {it}."
    )


def mapping_table(workspace: Workspace, mappings: dict[str, ClassMapping]) -> pd.DataFrame:
    """One row per class: targets, ImageNet indices with names, IN-9 class, custom label."""
    names = imagenet_classes()
    counts = class_target_counts(workspace)
    return pd.DataFrame(
        [
            {
                "class": name,
                "targets": counts.get(name, 0),
                "ImageNet": ", ".join(f"{i} {names[i].name}" for i in mapping.imagenet),
                "IN-9": mapping.in9,
                "label": mapping.label,
            }
            for name, mapping in mappings.items()
        ],
        columns=["class", "targets", "ImageNet", "IN-9", "label"],
    )


def edit_class(workspace: Workspace, mappings: dict[str, ClassMapping]) -> None:
    """Pick a class (an unmapped one first), search ImageNet, choose indices / an IN-9 class / a
    label, and save; replacing a mapping asks for a tick first, naming the runs it makes stale."""
    names = list(mappings)
    unmapped = [name for name in names if not mappings[name].mapped]
    follow_new_unmapped(unmapped)
    name = st.selectbox("Class to map", names, index=names.index(unmapped[0]) if unmapped else 0, key="data.class_edit")
    current = mappings[name]
    query = st.text_input("Search ImageNet-1k (name, WordNet id or index)", key="data.class_search", placeholder="e.g. tennis")
    if query.strip():
        matches = search_imagenet(query, limit=SEARCH_LIMIT)
        if matches:
            found = pd.DataFrame([{"index": m.index, "WordNet id": m.wnid, "name": m.name} for m in matches])
            st.caption("Click a row to add its index to the ImageNet-1k indices below.")
            event = st.dataframe(found, hide_index=True, width="stretch", on_select="rerun", selection_mode="multi-row", key="data.class_search_pick")
            add_picked_indices(f"data.class_imagenet.{name}", current, [int(found["index"].iloc[row]) for row in event.selection.rows])
        else:
            st.caption(f"No ImageNet-1k class matches {escape_markdown(repr(query.strip()))}.")
    # per-class keys: switching the class shows that class's stored mapping. Typing "207" + Enter must add
    # class 207 alone (issue 42.11a): the default fuzzy filter matched 85 labels and Enter took the
    # "Select 85 matches" entry on top. With substring matching on "index · name" labels in index order
    # and no bulk entry, the typed index is the first match (a number containing "207" is at least 207).
    picker = f"data.class_imagenet.{name}"
    indices = st.multiselect(
        "ImageNet-1k indices",
        range(len(imagenet_classes())),
        default=None if picker in st.session_state else list(current.imagenet),  # a clicked search result set it
        format_func=imagenet_option_label,
        key=picker,
        filter_mode="contains",
        select_all=False,
        help="Type an index (Enter adds that class) or part of a name; the search above also finds WordNet ids.",
    )
    choices = [NO_IN9, *IN9_CLASSES]
    in9 = st.selectbox("IN-9 class", choices, index=choices.index(current.in9 or NO_IN9), key=f"data.class_in9.{name}")
    label = st.text_input("Custom output label", value=current.label, key=f"data.class_label.{name}", placeholder=name)
    wanted = ClassMapping(tuple(int(i) for i in indices), "" if in9 == NO_IN9 else in9, label.strip())
    confirmed = confirm_replacement(workspace, name, current, wanted)
    if not st.button(f"Save mapping of {escape_markdown(name)}", type="primary", disabled=not confirmed, key="data.class_save"):
        return
    try:
        saved = set_class_mapping(workspace, name, imagenet=indices or None, in9=None if in9 == NO_IN9 else in9, label=label)
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    st.session_state[SAVED] = escape_markdown(f"Saved {name}: {saved.describe()}.")
    st.session_state.pop(f"data.class_replace.{name}", None)  # the next replacement asks again
    st.rerun()  # so the table shows the new mapping


def follow_new_unmapped(unmapped: list[str]) -> None:
    """Open "Class to map" on a class that became unmapped since this session last drew the editor (an
    import of a new class): the widget otherwise keeps the class it showed before, often a mapped one
    (issue 27.3, seen in the browser). A class the user picks is kept while no new unmapped one appears."""
    seen = st.session_state.get(SEEN_UNMAPPED)
    new = [name for name in unmapped if seen is not None and name not in seen]
    if new:
        st.session_state["data.class_edit"] = new[0]
    st.session_state[SEEN_UNMAPPED] = tuple(unmapped)


def add_picked_indices(picker: str, current: ClassMapping, picked: list[int]) -> None:
    """Add the ImageNet indices of newly clicked search results to the indices widget ``picker`` (its
    state before it is drawn); a result stays added until removed there, also while its row stays ticked."""
    applied = st.session_state.get(PICKED, {}).get(picker, set())
    new = [index for index in picked if index not in applied]
    st.session_state[PICKED] = {**st.session_state.get(PICKED, {}), picker: set(picked)}
    if new:
        chosen = list(st.session_state.get(picker, list(current.imagenet)))
        st.session_state[picker] = chosen + [index for index in new if index not in chosen]


def confirm_replacement(workspace: Workspace, name: str, current: ClassMapping, wanted: ClassMapping | None = None) -> bool:
    """True when saving may go ahead: the class has no mapping yet, or the user ticked the box that
    replaces it (naming the current mapping and the runs that saving ``wanted`` would make stale: only
    those whose model scores the class differently under it, analytics.runs.runs_of_class)."""
    if not current.mapped:
        return True
    runs = runs_of_class(workspace, name, wanted)
    stale = f"{len(runs)} runs scored with it ({', '.join(sorted(set(runs['model'])))}) turn stale" if len(runs) else "no run's scoring changes"
    return st.checkbox(
        escape_markdown(f"Replace the mapping of {name} ({current.describe()}): {stale}"),
        key=f"data.class_replace.{name}",
        help="A second click, so that mapping a new class never overwrites another one by accident.",
    )


def imagenet_option_label(index: int) -> str:
    """``"207 · golden retriever"``: the index first, no WordNet id (its digits, e.g. n0207…, would make a
    typed index match other classes' labels)."""
    return f"{index} · {imagenet_classes()[index].name}"
