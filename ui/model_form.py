"""The Models page's registration form, generated from the model sources
(:data:`analytics.models.SOURCES`): one choice per registrable source, one widget per option of the
chosen source (:class:`analytics.models.Option`), and the registration through
:func:`analytics.models.add_model`. A source added to the registry appears here with no edit.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import streamlit as st

from analytics.data import parse_label_space
from analytics.exceptions import BackdropError
from analytics.models import ModelSource, ModelSpec, Option, add_model, registrable_sources
from analytics.team import resolve_server_path, server_paths_offered
from analytics.workspace import Workspace
from ui.markdown import escape_markdown
from ui.uploads import saved_upload

KIND = "models.kind"  # the radio of sources (their labels)
LABEL_CHOICES = {"ImageNet-1k": "imagenet", "IN-9": "in9", "Custom class list": "custom"}
FROM_MODEL = "From the model (config.json's id2label)"  # a labels option whose default is None
OWN = "the model's own"  # a choice option the model may decide: no value
LAST_REGISTERED = "models.last_registered"
MISSING = "Fill in the name, the architecture, the checkpoint and (for custom labels) the class list."


def checkpoint_input(key: str, types: list[str], *, server_paths: bool) -> tuple[Any, str]:
    """An uploaded file or (where :func:`~analytics.team.server_paths_offered`) a path on the server; the upload wins."""
    upload = st.file_uploader("Upload", type=types or None, key=f"{key}.upload")
    path = st.text_input("…or a path on the server", key=f"{key}.path").strip() if server_paths else ""
    return upload, path


def register_form(workspace: Workspace) -> None:
    """The form: pick a source, fill in its options, register (errors shown as one line)."""
    sources = {source.label: source for source in registrable_sources()}
    source = sources[st.radio("Model", list(sources), key=KIND)]
    if source.form_caption:
        st.caption(source.form_caption)
    name = st.text_input("Name", key="models.name").strip() if source.needs_name else None
    server_paths = server_paths_offered(workspace)
    readers = {option.name: _widget(source, option, server_paths) for option in source.options if option.in_form}
    if not st.button("Register", key="models.register"):
        return
    ready = {key: reader for key, reader in readers.items() if reader is not None}
    if (source.needs_name and not name) or len(ready) < len(readers):
        st.warning(MISSING)
        return

    def register() -> ModelSpec:
        with ExitStack() as stack:
            options = {key: value for key, reader in ready.items() if (value := reader(workspace, stack)) is not None}
            return add_model(workspace, source.name, name, **options)

    _register(register)


Reader = Callable[[Workspace, ExitStack], Any]


def _widget(source: ModelSource, option: Option, server_paths: bool) -> Reader | None:
    """Show the option's widget; returns what reads its value at registration (None: missing though required)."""
    if option.kind == "path":
        upload, path = checkpoint_input(option.key, list(option.file_types), server_paths=server_paths)
        if not (upload or path):
            return None if option.required else _constant(None)
        # a typed path is read by the server: only inside the data roots (analytics.team.paths)
        return lambda workspace, stack: stack.enter_context(saved_upload(upload)) if upload else resolve_server_path(workspace, path)
    if option.kind == "labels":
        return _labels_widget(option, server_paths)
    if option.kind == "choice":
        choices = list(source.choices(option))
        shown = [OWN, *choices] if option.default is None and not option.required else choices
        index = shown.index(option.default) if option.default in shown else (0 if shown[:1] == [OWN] else None)
        chosen = st.selectbox(option.label, shown, index=index, key=option.key, help=option.help)
        if chosen is None:
            return None if option.required else _constant(None)
        return _constant(None if chosen == OWN else chosen)
    if option.kind == "int":
        value = int(st.number_input(option.label, 0 if option.default == 0 else 16, 1024, int(option.default or 224), step=8, key=option.key))
        return _constant(value or None)  # 0: the model's own
    if option.kind == "fraction":
        fraction = float(st.number_input(option.label, 0.0, 1.0, float(option.default or 0.0), step=0.025, format="%.3f", key=option.key, help=option.help))
        return _constant(fraction or None)
    text = st.text_input(option.label, "" if option.default is None else str(option.default), key=option.key, help=option.help).strip()
    if not text:
        return None if option.required else _constant(None)
    if option.kind == "triple":
        return _constant(tuple(part.strip() for part in text.split(",")))  # the library checks the numbers
    return _constant(text)


def _labels_widget(option: Option, server_paths: bool) -> Reader | None:
    choices = [FROM_MODEL, *LABEL_CHOICES] if option.default is None else list(LABEL_CHOICES)
    labels = LABEL_CHOICES.get(st.radio(option.label, choices, horizontal=True, key=option.key), "model")
    if labels == "model":
        return _constant(None)
    if labels != "custom":
        return lambda workspace, stack: parse_label_space(labels)
    st.caption("A text file with one class name per line, in the order of the model's outputs.")
    upload, path = checkpoint_input("models.label_file", ["txt"], server_paths=server_paths)
    if not (upload or path):
        return None

    def read(workspace: Workspace, stack: ExitStack) -> Any:
        return parse_label_space(str(stack.enter_context(saved_upload(upload)) if upload else resolve_server_path(workspace, path)))

    return read


def _constant(value: Any) -> Reader:
    return lambda workspace, stack: value


def _register(action: Callable[[], ModelSpec]) -> None:
    try:
        with st.spinner("Loading the model and checking a test batch…"):
            spec = action()
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    st.session_state[LAST_REGISTERED] = spec.name
    st.rerun()
