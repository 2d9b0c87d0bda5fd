"""Models: the registry, registering new models, training the zoo, and accuracy on the original targets.

A thin view: loading, validating and storing models is :mod:`analytics.models`; evaluation is
:mod:`analytics.inference`; the zoo (:mod:`analytics.zoo`) trains as a background job (kind ``zoo``:
progress, Cancel, Resume via :mod:`ui.jobs`; ``st.session_state`` keeps only its id). The page
catches only :class:`~analytics.exceptions.BackdropError`.
"""

from __future__ import annotations

from contextlib import ExitStack

import streamlit as st
import torchvision

from analytics.data import list_targets, parse_label_space, targets_stamp
from analytics.exceptions import BackdropError
from analytics.figures import per_class_accuracy_chart
from analytics.models import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    LITE_VARIANTS,
    RESIZE_FILTERS,
    ModelSpec,
    list_models,
    register_efficientnet_lite,
    register_onnx,
    register_timm,
    register_torchscript,
    register_torchvision,
    register_transformers,
)
from analytics.team import resolve_server_path, server_paths_offered
from analytics.workspace import Workspace, model_keys
from ui import cache, state
from ui import jobs as job_view
from ui import models as ui_models
from ui.auth import may, require_page
from ui.markdown import escape_markdown
from ui.uploads import saved_upload

KINDS = (
    "EfficientNet-Lite (bundled ImageNet weights)", "torchvision architecture + checkpoint", "TorchScript file",
    "timm architecture + checkpoint", "transformers model (zip of a save_pretrained folder)", "ONNX file",
)  # fmt: skip
LABEL_CHOICES = {"ImageNet-1k": "imagenet", "IN-9": "in9", "Custom class list": "custom"}
FROM_MODEL = "From the model (config.json's id2label)"  # transformers only
OWN_INTERPOLATION = "the model's own"  # timm and ONNX: no --interpolation
#: Checkpoint file types per kind (after EfficientNet-Lite, which needs none).
CHECKPOINT_TYPES = (["pt", "pth", "bin", "safetensors"], ["pt", "pth", "ts"], ["pt", "pth", "safetensors"], ["zip"], ["onnx"])
LAST_REGISTERED = "models.last_registered"
TAB = "models.tab"  # the open tab (its label)


def show_registry(workspace: Workspace) -> None:
    specs = list_models(workspace)
    if not specs:
        st.info("No models yet — register one in the **Register** tab, or run `python -m analytics add-model --arch efficientnet-lite0`.")
        return
    st.caption("Embedding = the layer before the classifier head (what the embedding signals read).")
    st.dataframe(ui_models.model_table(specs), hide_index=True, width="stretch")


def checkpoint_input(key: str, types: list[str], *, server_paths: bool) -> tuple[object | None, str]:
    """An uploaded file or (where :func:`~analytics.team.server_paths_offered`) a path on the server; the upload wins."""
    upload = st.file_uploader("Upload", type=types, key=f"{key}.upload")
    path = st.text_input("…or a path on the server", key=f"{key}.path").strip() if server_paths else ""
    return upload, path


def register_form(workspace: Workspace) -> None:
    kind = st.radio("Model", KINDS, key="models.kind")
    if kind == KINDS[0]:
        variant = st.selectbox("Variant", LITE_VARIANTS, format_func=lambda v: f"efficientnet-lite{v}", key="models.lite")
        if st.button("Register", key="models.register_lite"):
            _register(lambda: register_efficientnet_lite(workspace, variant))
        return
    name = st.text_input("Name", key="models.name").strip()
    arch = None
    if kind == KINDS[1]:
        arch = st.selectbox("Architecture", torchvision.models.list_models(module=torchvision.models), index=None, key="models.arch")
    elif kind == KINDS[3]:
        arch = st.text_input("timm architecture", placeholder="resnet18, vit_tiny_patch16_224, convnext_atto, …", key="models.timm_arch").strip()
    server_paths = server_paths_offered(workspace)
    upload, path = checkpoint_input("models.checkpoint", CHECKPOINT_TYPES[KINDS.index(kind) - 1], server_paths=server_paths)
    choices = [FROM_MODEL, *LABEL_CHOICES] if kind == KINDS[4] else list(LABEL_CHOICES)
    labels = LABEL_CHOICES.get(st.radio("Label space", choices, horizontal=True, key="models.labels"), "model")
    label_upload, label_path = (None, "")
    if labels == "custom":
        st.caption("A text file with one class name per line, in the order of the model's outputs.")
        label_upload, label_path = checkpoint_input("models.label_file", ["txt"], server_paths=server_paths)
    own = kind in KINDS[3:]  # the model reads its own preprocessing (analytics.models.ImageTransform)
    if not own:
        input_size = st.number_input("Input size (px)", 16, 1024, 224, step=8, key="models.input_size")
    elif kind != KINDS[4]:
        st.caption("timm models read their preprocessing from timm; an ONNX graph gives its input side but not its normalisation.")
        input_size = st.number_input("Input size (px; 0: the model's own)", 0, 1024, 0, step=8, key="models.own_input_size")
    if kind == KINDS[5]:
        mean = st.text_input("Mean (R,G,B of [0, 1] pixels)", ",".join(map(str, IMAGENET_MEAN)), key="models.mean")
        std = st.text_input("Std (R,G,B)", ",".join(map(str, IMAGENET_STD)), key="models.std")
    crop_pct, interpolation = None, None
    if kind in (KINDS[3], KINDS[5]):  # timm and ONNX resize and crop; the CLI's --crop-pct and --interpolation
        crop_column, filter_column = st.columns(2)
        crop = crop_column.number_input(
            "Centre-crop fraction (0: the model's own)", 0.0, 1.0, 0.0, step=0.025, format="%.3f", key="models.crop_pct",
            help="The image is resized to input size / fraction, then its centre cropped to the input size; 1 crops nothing. "
            "0 keeps timm's pretrained_cfg crop_pct (ONNX: no crop).",
        )  # fmt: skip
        crop_pct = float(crop) or None
        chosen = filter_column.selectbox(
            "Resize interpolation", [OWN_INTERPOLATION, *RESIZE_FILTERS], key="models.interpolation",
            help="timm: its pretrained_cfg interpolation by default; ONNX: Backdrop's area resize, or bilinear when a crop fraction is given.",
        )  # fmt: skip
        interpolation = None if chosen == OWN_INTERPOLATION else chosen
    if st.button("Register", key="models.register"):
        if not name or not (upload or path) or (kind in (KINDS[1], KINDS[3]) and not arch) or (labels == "custom" and not (label_upload or label_path)):
            st.warning("Fill in the name, the architecture, the checkpoint and (for custom labels) the class list.")
            return

        def register():
            with ExitStack() as stack:
                # a typed path is read by the server: only inside the data roots (analytics.team.paths)
                checkpoint = stack.enter_context(saved_upload(upload)) if upload else resolve_server_path(workspace, path)
                option = labels
                if labels == "custom":
                    option = str(stack.enter_context(saved_upload(label_upload)) if label_upload else resolve_server_path(workspace, label_path))
                space = None if labels == "model" else parse_label_space(option)
                if kind == KINDS[3]:
                    return register_timm(
                        workspace, name, arch=arch, checkpoint=checkpoint, label_space=space, input_size=int(input_size) or None,
                        crop_pct=crop_pct, interpolation=interpolation,
                    )  # fmt: skip
                if kind == KINDS[4]:
                    return register_transformers(workspace, name, folder=checkpoint, label_space=space)
                if kind == KINDS[5]:
                    numbers = [tuple(part.strip() for part in text.split(",")) for text in (mean, std)]
                    return register_onnx(
                        workspace, name, checkpoint=checkpoint, label_space=space, input_size=int(input_size) or None, mean=numbers[0],
                        std=numbers[1], crop_pct=crop_pct, interpolation=interpolation,
                    )  # fmt: skip
                if arch:
                    return register_torchvision(workspace, name, arch=arch, checkpoint=checkpoint, label_space=space, input_size=int(input_size))
                return register_torchscript(workspace, name, checkpoint=checkpoint, label_space=space, input_size=int(input_size))

        _register(register)


def _register(action) -> None:
    try:
        with st.spinner("Loading the model and checking a test batch…"):
            spec = action()
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    st.session_state[LAST_REGISTERED] = spec.name
    st.rerun()


def show_zoo(workspace: Workspace) -> None:
    """The zoo form; the zoo job this session started (else the newest active one) with its heads once done."""
    st.caption(
        "A zoo of small heads on one frozen backbone, each trained where the class predicts the background with a "
        "known strength s: models whose background reliance is known by construction (for the Assessor page)."
    )
    params = ui_models.zoo_form(workspace)
    if params is not None:
        job = job_view.start_job(workspace, "zoo", params)
        if job is not None:
            st.session_state[ui_models.ZOO_JOB] = job.id
    job = job_view.follow_job(workspace, "zoo", state_key=ui_models.ZOO_JOB, key=ui_models.ZOO_KEY)
    if job is not None and job.status == "done":
        heads = len(job.result["models"])
        st.success(f"The zoo has {heads} heads; {job.result['trained']} trained now, {heads - job.result['trained']} kept.")
        st.dataframe(
            ui_models.zoo_result_table(job.result), hide_index=True, width="stretch",
            column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("Accuracy", "Held-out accuracy")},
        )  # fmt: skip


def show_accuracy(workspace: Workspace) -> None:
    specs = {spec.name: spec for spec in list_models(workspace)}
    if not specs:
        st.info("Register a model to see its accuracy on the original target images.")
        return
    name = st.selectbox("Model", list(specs), key="models.evaluate")
    spec = specs[name]
    try:
        result = ui_models.evaluation(str(workspace.root), name, model_keys(workspace).keys[name], targets_stamp(workspace))
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    left, middle, right = st.columns(3)
    left.metric("Accuracy on original targets", f"{result.accuracy:.1%}")
    middle.metric("Targets", result.n)
    right.metric("Label space", f"{spec.label_space.kind} ({spec.n_outputs})")
    chart, table = st.columns([3, 2])
    chart.plotly_chart(per_class_accuracy_chart(result), width="stretch")
    table.dataframe(
        ui_models.per_class_table(result), hide_index=True,
        column_config={"Accuracy": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)},
    )
    with st.expander("Per target"):
        st.dataframe(result.table, hide_index=True, width="stretch")
    show_top_predictions(workspace, spec)


def show_top_predictions(workspace: Workspace, spec: ModelSpec) -> None:
    targets = list_targets(workspace)
    st.subheader("Top predictions on one target")
    target = st.selectbox("Target", targets["id"], key="models.target")
    image_hash = targets.set_index("id").loc[target, "image_hash"]
    image_column, table_column = st.columns([1, 2])
    image_column.image(cache.load_array(str(workspace.root), image_hash), caption=escape_markdown(target), width="stretch")
    try:
        top = ui_models.top_predictions(str(workspace.root), spec.name, model_keys(workspace).keys[spec.name], image_hash)
    except BackdropError as err:
        st.error(escape_markdown(err))
        return
    table_column.dataframe(
        top, hide_index=True, width="stretch",
        column_config={"probability": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)},
    )


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Models")
    workspace = state.current_workspace()
    if st.session_state.get(LAST_REGISTERED):
        st.success(f"Registered {escape_markdown(repr(st.session_state.pop(LAST_REGISTERED)))}.")
    # registering loads model files (TorchScript and ONNX are code): admins only; the library refuses others too
    registering, training = may(user, "register_models"), may(user, "run_models")
    names = ["Registered", *(["Register"] if registering else []), *(["Zoo"] if training else []), "Accuracy"]
    # a stateful tab bar: the chosen tab is kept in session state, so the rerun after an action (the
    # "Registered …" message above shifts the page) reopens it instead of "Registered" (issue 42.11b)
    tabs = dict(zip(names, st.tabs(names, key=TAB, on_change="rerun")))
    with tabs["Registered"]:
        show_registry(workspace)
    if registering:
        with tabs["Register"]:
            register_form(workspace)
    if training:
        with tabs["Zoo"]:
            show_zoo(workspace)
    with tabs["Accuracy"]:
        show_accuracy(workspace)


main()
