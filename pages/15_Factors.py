"""Factors: ImageNet-X (Idrissi et al.) — which factors of variation (pose, background, texture,
subcategory, …) a model's ImageNet validation errors go with. Per factor: accuracy, the error ratio
(1 − accuracy on the factor) / (1 − overall accuracy) and the factor's share among the errors, for
several models side by side.

Predictions come from uploaded CSVs in the imagenet-x format or from a workspace model run over a
folder of ImageNet validation images on the server. A thin view: the numbers are
:mod:`analytics.robustness.factors` (the ``imagenet-x`` package), tables and figures :mod:`ui.factors`.
"""

from __future__ import annotations

import streamlit as st

from analytics.exceptions import BackdropError
from analytics.figures import error_ratio_chart, prevalence_chart
from analytics.team import MAX_CSV_UPLOAD_MB, server_paths_offered
from analytics.workspace import to_csv
from ui import factors as view
from ui import state
from ui.auth import may, require_page
from ui.markdown import escape_markdown


def predictions(user) -> dict:
    """``{name: predictions}`` from the uploads and, when requested, the workspace model."""
    uploads = st.file_uploader(
        f"Predictions CSVs (one per model, up to {MAX_CSV_UPLOAD_MB} MB each)", type=["csv"],
        accept_multiple_files=True, key=view.KEY + "upload", help=view.FORMAT_TEXT,
        max_upload_size=MAX_CSV_UPLOAD_MB,  # the widget's own "Limit … per file" then agrees with the reader's cap
    )  # fmt: skip
    models = view.uploaded_predictions(uploads or [])
    workspace = state.current_workspace()
    if may(user, "run_models") and server_paths_offered(workspace):  # the model reads a folder on the server
        with st.expander("…or predict with a workspace model over ImageNet validation images", expanded=view.PREDICT in st.session_state):
            view.prediction_form(workspace)
        request = st.session_state.get(view.PREDICT)
        if request:
            predicted = view.workspace_predictions(workspace, request)
            if predicted is not None:
                models[view.unique_name(request["model"], models)] = predicted
                st.download_button(
                    f"{escape_markdown(request['model'])}'s predictions (imagenet-x CSV)", to_csv(predicted).encode(),
                    file_name=f"{request['model']}-imagenet-val.csv", mime="text/csv", icon=":material/download:", key=view.KEY + "predictions_csv",
                )  # fmt: skip
    return models


def show(analysis) -> None:
    st.dataframe(
        view.summary_table(analysis.summary), hide_index=True, width="stretch",
        column_config={name: st.column_config.NumberColumn(format="%.3f") for name in ("Accuracy", "Worst-factor accuracy", "Ratio")},
    )  # fmt: skip
    log = st.toggle("Logarithmic axis", key=view.KEY + "log", help="Ratios of 2 and 0.5 then lie equally far from the line at 1.")
    st.plotly_chart(error_ratio_chart(analysis.summary, log=log), width="stretch", key=view.KEY + "ratios")
    st.caption("Above 1: the model errs more often on images with this factor than overall; a perfectly robust model has 1 everywhere.")
    st.plotly_chart(prevalence_chart(analysis.details), width="stretch", key=view.KEY + "prevalence")
    st.caption("Each factor's share of the errors; the black marks give its share of all images. Hover for the prevalence shift (share of errors / share of images − 1).")
    value = st.radio("Per-factor table", list(view.VALUES), format_func=view.VALUES.__getitem__, horizontal=True, key=view.KEY + "value")
    number_format = "%d" if value == "images" else "%.3f"
    table = view.factor_pivot(analysis.details, value)
    st.dataframe(table, hide_index=True, width="stretch", column_config={c: st.column_config.NumberColumn(format=number_format) for c in table.columns[1:]})
    st.download_button(
        "All factors of all models (CSV)", to_csv(analysis.details).encode(), file_name="imagenet-x-factors.csv",
        mime="text/csv", icon=":material/download:", key=view.KEY + "download",
    )  # fmt: skip


def main() -> None:
    user = require_page("browse")  # team mode: the sign-in form until signed in, then the role the page needs
    st.title("Factors")
    st.caption(
        "ImageNet-X: 16 human-annotated factors of variation per ImageNet validation image. Which of them go with a "
        "model's mistakes? Error ratios and prevalences are computed by the imagenet-x package on its own annotations."
    )
    models = predictions(user)
    if not models:
        st.info(f"Upload one or more predictions CSVs to compare models. {view.FORMAT_TEXT}")
        st.stop()
    try:
        analysis = view.analysis(models)
    except BackdropError as err:
        st.error(escape_markdown(err))
        st.stop()
    show(analysis)


main()
