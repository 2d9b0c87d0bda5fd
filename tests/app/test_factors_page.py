"""The Factors page (``pages/15_Factors.py``): uploaded predictions CSVs give the error-ratio chart,
the tables and the CSV; bad uploads are named; a workspace model predicts over a server folder."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pandas as pd
import pytest
from imagenet_x import FACTORS, load_annotations
from torch import nn

from analytics.data import imagenet_label_space
from analytics.models import register_torchscript
from analytics.robustness.factors import compare_models
from tests.fixtures.app import as_shown
from tests.fixtures.models import SIZE, TinyNet, save_torchscript

FACTORS_PAGE = "pages/15_Factors.py"


@pytest.fixture(scope="module")
def predictions() -> dict[str, pd.DataFrame]:
    """Two made-up models on 300 annotated images: one wrong on every texture image, one on every pose image."""
    annotations = load_annotations()
    rows = pd.concat([annotations[annotations["texture"] == 1].head(30), annotations[annotations["texture"] == 0].head(270)])
    models = {}
    for name, factor in (("texture-fails", "texture"), ("pose-fails", "pose")):
        classes = np.where(rows[factor] == 1, (rows["class"] + 1) % 1000, rows["class"])
        models[name] = pd.DataFrame({"file_name": rows["file_name"], "predicted_class": classes, "predicted_probability": 0.9})
    return models


def upload(app, files: dict[str, bytes]):
    app.file_uploader(key="factors.upload").set_value([(name, data, "text/csv") for name, data in files.items()])
    return app.run()


def csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def test_without_uploads_the_page_explains_the_format(tiny_workspace, app_runner):
    app = app_runner(FACTORS_PAGE, tiny_workspace)
    assert not app.exception, app.exception
    assert "ILSVRC2012_val_00000001.JPEG" in app.info[0].value


def test_uploads_give_the_comparison(tiny_workspace, app_runner, predictions):
    app = upload(app_runner(FACTORS_PAGE, tiny_workspace), {f"{name}.csv": csv(frame) for name, frame in predictions.items()})
    assert not app.exception, app.exception
    assert not app.error
    summary = app.dataframe[0].value
    assert summary["Model"].tolist() == ["texture-fails", "pose-fails"]
    assert summary["Highest error ratio"].tolist()[0] == "texture"
    expected = compare_models(predictions)
    ratio_chart, prevalence_chart = app.get("plotly_chart")
    bars = json.loads(ratio_chart.proto.spec)["data"]
    assert [bar["name"] for bar in bars] == ["texture-fails", "pose-fails"]
    assert bars[0]["y"][FACTORS.index("texture")] == pytest.approx(expected.loc["texture-fails", "texture"])
    assert len(json.loads(prevalence_chart.proto.spec)["data"]) == 3  # two models + the share of all images
    table = app.dataframe[1].value
    assert table.columns.tolist() == ["Factor", "texture-fails", "pose-fails"]
    assert table.set_index("Factor").loc["texture", "texture-fails"] == 0  # accuracy on texture images
    app.radio(key="factors.value").set_value("error_ratio").run()
    assert app.dataframe[1].value.set_index("Factor").loc["pose", "pose-fails"] == pytest.approx(expected.loc["pose-fails", "pose"])
    app.toggle(key="factors.log").set_value(True).run()
    assert not app.exception, app.exception
    assert json.loads(app.get("plotly_chart")[0].proto.spec)["layout"]["yaxis"]["type"] == "log"


def test_a_bad_upload_is_named_and_the_others_stay(tiny_workspace, app_runner, predictions):
    bad = b"file_name,predicted_class\nILSVRC2012_val_00000001.JPEG,5000\n"
    app = upload(app_runner(FACTORS_PAGE, tiny_workspace), {"broken.csv": bad, "good.csv": csv(predictions["pose-fails"])})
    assert not app.exception, app.exception
    assert "broken.csv" in as_shown(app.error[0].value) and "0..999" in as_shown(app.error[0].value)
    assert app.dataframe[0].value["Model"].tolist() == ["good"]


def test_a_csv_matching_no_imagenet_x_image_says_how_many_rows_matched_and_what_the_file_must_hold(tiny_workspace, app_runner, predictions):
    stray = b"file_name,predicted_class\nholiday_001.jpg,3\nholiday_002.jpg,7\n"
    app = upload(app_runner(FACTORS_PAGE, tiny_workspace), {"photos.csv": stray, "good.csv": csv(predictions["pose-fails"])})
    assert not app.exception, app.exception
    (error,) = [as_shown(e.value) for e in app.error]
    assert "photos.csv: 0 of its 2 rows name an annotated ImageNet-X validation image" in error and "holiday_001.jpg" in error
    assert "ILSVRC2012_val_00000001.JPEG" in error and "predicted_class" in error  # what the file must hold
    assert any("good.csv (model good): 300 of its 300 rows" in as_shown(c.value) for c in app.caption)
    assert app.dataframe[0].value["Model"].tolist() == ["good"]  # the matching file is still analysed
    alone = upload(app_runner(FACTORS_PAGE, tiny_workspace), {"photos.csv": stray})
    assert not alone.exception and not alone.get("plotly_chart") and "0 of its 2 rows" in as_shown(alone.error[0].value)


def test_a_workspace_model_predicts_over_a_server_folder(tiny_workspace, app_runner, tmp_path):
    network = TinyNet()
    network.fc = nn.Linear(8, 1000)
    register_torchscript(
        tiny_workspace, "tiny-imagenet", checkpoint=save_torchscript(network, tmp_path / "t.pt"), label_space=imagenet_label_space(), input_size=SIZE
    )
    folder = tmp_path / "val"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name in sorted(load_annotations()["file_name"])[:3]:
        cv2.imwrite(str(folder / name), rng.integers(0, 255, (40, 56, 3), dtype=np.uint8))
    app = app_runner(FACTORS_PAGE, tiny_workspace)
    app.selectbox(key="factors.model").set_value("tiny-imagenet")
    app.text_input(key="factors.folder").set_value(str(folder))
    app = app.button[0].click().run()
    assert not app.exception, app.exception
    assert not app.error, app.error[0].value
    summary = app.dataframe[0].value
    assert summary["Model"].tolist() == ["tiny-imagenet"] and summary["Images"].tolist() == [3]
    assert any(as_shown(button.label).startswith("tiny-imagenet's predictions") for button in app.get("download_button"))
