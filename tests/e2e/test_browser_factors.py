"""The Factors page in a real browser: upload two predictions CSVs (made-up models on annotated
ImageNet validation images), see the error-ratio chart with both models, switch to a log axis, and
get the CSV download — with no exception and no error box."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from imagenet_x import load_annotations
from playwright.sync_api import Page, expect

LONG_MS = 120_000  # first visit imports torch and reads the annotations on a loaded 2-core machine
FIRST_PLOT = '[data-testid="stPlotlyChart"] .js-plotly-plot'  # the error-ratio chart comes first


@pytest.fixture(scope="module")
def prediction_files(tmp_path_factory) -> list[Path]:
    """``texture-fails.csv`` and ``pose-fails.csv``: right on 200 annotated images except on that factor."""
    folder = tmp_path_factory.mktemp("factors")
    annotations = load_annotations()
    rows = pd.concat([annotations[annotations["texture"] == 1].head(20), annotations[annotations["texture"] == 0].head(180)])
    paths = []
    for factor in ("texture", "pose"):
        classes = np.where(rows[factor] == 1, (rows["class"] + 1) % 1000, rows["class"])
        path = folder / f"{factor}-fails.csv"
        pd.DataFrame({"file_name": rows["file_name"], "predicted_class": classes, "predicted_probability": 0.8}).to_csv(path, index=False)
        paths.append(path)
    return paths


def settle(page: Page) -> None:
    expect(page.get_by_test_id("stStatusWidgetRunningIcon")).to_have_count(0, timeout=LONG_MS)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)


def test_upload_predictions_and_see_the_error_ratio_chart(page, app_url, prediction_files):
    page.goto(f"{app_url}/Factors")
    expect(page.get_by_role("heading", name="Factors", exact=True)).to_be_visible(timeout=LONG_MS)
    expect(page.get_by_test_id("stAlertContentInfo").filter(has_text="ILSVRC2012_val_00000001.JPEG")).to_be_visible()
    upload = page.get_by_test_id("stFileUploader").filter(has_text="Predictions CSVs").get_by_test_id("stFileUploaderDropzoneInput")
    upload.set_input_files([str(path) for path in prediction_files])
    chart = page.get_by_test_id("stPlotlyChart").first
    expect(chart).to_be_visible(timeout=LONG_MS)
    settle(page)
    assert page.evaluate(f"() => document.querySelector('{FIRST_PLOT}')._fullLayout.yaxis.type") == "linear"
    expect(chart.locator(".legendtext", has_text="texture-fails")).to_be_visible()
    expect(chart.locator(".legendtext", has_text="pose-fails")).to_be_visible()
    expect(chart.locator(".gtitle", has_text=re.compile("^Error ratio per factor"))).to_be_visible()
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()
    page.get_by_test_id("stCheckbox").filter(has_text="Logarithmic axis").click()  # st.toggle renders as a checkbox
    settle(page)
    # the rerun may start after settle() looked: wait for the redrawn chart itself
    page.wait_for_function(f"() => document.querySelector('{FIRST_PLOT}')._fullLayout.yaxis.type === 'log'", timeout=LONG_MS)
    expect(page.get_by_test_id("stDownloadButton").filter(has_text="All factors of all models (CSV)")).to_be_visible()
