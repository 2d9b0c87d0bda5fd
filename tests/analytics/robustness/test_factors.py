"""ImageNet-X factors (``analytics.robustness.factors``, CLI ``factors``): the package's numbers on the four
reference prediction files, hand-computable error ratios and prevalences on made-up predictions,
the checks of predictions files, and predictions of a workspace model over a folder of images."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
from imagenet_x import FACTORS, error_ratio, get_factor_accuracies, load_annotations
from torch import nn

from analytics.cli import main
from analytics.data import fit_square, imagenet_label_space, read_image
from analytics.exceptions import InvalidInputError
from analytics.models import load_model, register_torchscript
from analytics.robustness import analyse_models, factor_names, load_predictions, matched_rows, predict_imagenet_val
from analytics.robustness.factors import CHUNK, compare_models, error_prevalence, factor_table
from tests.fixtures.models import SIZE, TinyNet, save_torchscript

REFERENCE = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "imagenetx"
REFERENCE_MODELS = ("DINO", "ResNet50", "SimCLR", "ViT")
IMAGENET_MODEL = "tiny-imagenet"


@pytest.fixture(scope="module")
def reference_folder() -> Path:
    """The four reference prediction files, read in place; skips when they are absent."""
    if not all((REFERENCE / f"{name}.csv").is_file() for name in REFERENCE_MODELS):
        pytest.skip(f"reference predictions {REFERENCE} are absent (they live in ../shared/reference)")
    return REFERENCE


@pytest.fixture(scope="module")
def direct_accuracies(reference_folder) -> pd.DataFrame:
    """The package's own factor accuracies of the reference folder (index model, as it names them)."""
    return get_factor_accuracies(str(reference_folder)).loc[list(REFERENCE_MODELS)]


@pytest.fixture(scope="module")
def annotations() -> pd.DataFrame:
    return load_annotations()


def made_up(annotations: pd.DataFrame, *, n: int = 400, wrong_factor: str = "texture", wrong_share: float = 1.0, seed: int = 0) -> pd.DataFrame:
    """Predictions on ``n`` annotated images (some of ``wrong_factor`` always among them), right
    except on a share of the ``wrong_factor`` images (predicted one class off)."""
    rng = np.random.default_rng(seed)
    factor_rows = annotations[annotations[wrong_factor] == 1].head(40)
    rows = pd.concat([factor_rows, annotations.drop(factor_rows.index).sample(n - len(factor_rows), random_state=seed)])
    wrong = (rows[wrong_factor] == 1).to_numpy() & (rng.random(len(rows)) < wrong_share)
    classes = np.where(wrong, (rows["class"] + 1) % 1000, rows["class"])
    return pd.DataFrame({"file_name": rows["file_name"].to_numpy(), "predicted_class": classes, "predicted_probability": 0.5})


# -- the package's numbers ----------------------------------------------------------------------------
def test_reference_error_ratios_equal_the_packages(reference_folder, direct_accuracies):
    models = {name: load_predictions(reference_folder / f"{name}.csv") for name in REFERENCE_MODELS}
    ours, direct = compare_models(models), direct_accuracies
    pd.testing.assert_frame_equal(ours[list(FACTORS)], error_ratio(direct), check_names=False)
    np.testing.assert_allclose(ours["accuracy"], direct["average"])
    assert (ours["images"] == len(load_annotations())).all()  # every annotated image has a prediction
    single = factor_table(models["ResNet50"])
    np.testing.assert_allclose(single["error_ratio"], ours.loc["ResNet50", list(FACTORS)].astype(float))
    np.testing.assert_allclose(single["accuracy"], direct.loc["ResNet50", list(FACTORS)].astype(float))


def test_cli_on_the_reference_files_prints_the_packages_ratios(capsys, reference_folder, direct_accuracies):
    paths = [str(reference_folder / f"{name}.csv") for name in REFERENCE_MODELS]
    assert main(["factors", *[arg for path in paths for arg in ("--predictions", path)], "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    direct = error_ratio(direct_accuracies)
    assert list(result["models"]) == list(REFERENCE_MODELS)
    for name in REFERENCE_MODELS:
        ratios = {factor: row["error_ratio"] for factor, row in result["models"][name]["factors"].items()}
        assert ratios == pytest.approx(direct.loc[name].to_dict())
        assert result["models"][name]["accuracy"] == pytest.approx(direct_accuracies.loc[name, "average"])


# -- hand-computed on made-up predictions -----------------------------------------------------------
def test_error_ratio_and_accuracy_of_a_model_wrong_on_one_factor(annotations):
    predictions = made_up(annotations)
    merged = predictions.merge(annotations, on="file_name")
    n_texture = int(merged["texture"].sum())
    overall_error = n_texture / len(merged)
    table = factor_table(predictions)
    assert list(table.index) == list(FACTORS) == list(factor_names())
    assert table.loc["texture", "images"] == n_texture
    assert table.loc["texture", "accuracy"] == 0
    assert table.loc["texture", "error_ratio"] == pytest.approx(1 / overall_error)
    others = table.drop(index="texture")
    present = others["images"] > 0
    assert (others.loc[present, "error_ratio"] == 0).all() and (others.loc[present, "accuracy"] == 1).all()
    assert others.loc[~present, "accuracy"].isna().all()  # no image of the factor: undefined, not 0 or 1


def test_prevalence_among_errors(annotations):
    predictions = made_up(annotations, wrong_factor="pose", wrong_share=0.5, seed=1)
    merged = predictions.merge(annotations, on="file_name")
    table = error_prevalence(predictions)
    wrong = merged["predicted_class"] != merged["class"]
    assert table.loc["pose", "errors"] == wrong.sum() > 0
    assert table.loc["pose", "share_of_errors"] == 1 and table["share_of_errors"].sum() == pytest.approx(1)
    assert table.loc["pose", "share_of_images"] == pytest.approx(merged["pose"].mean())
    # the package's shift is share among errors over share overall, minus one
    expected = table["share_of_errors"] / table["share_of_images"] - 1
    np.testing.assert_allclose(table["shift"], expected.fillna(0))


def test_a_perfect_model_has_undefined_ratios_and_no_error_shares(annotations):
    predictions = made_up(annotations, wrong_share=0.0)
    assert compare_models({"perfect": predictions})[list(FACTORS)].isna().all(axis=None)
    assert error_prevalence(predictions)["share_of_errors"].isna().all()


def test_details_and_comparison_keep_the_models_order(annotations):
    models = {"b": made_up(annotations, seed=2), "a": made_up(annotations, wrong_factor="color", seed=3)}
    assert list(compare_models(models).index) == ["b", "a"]
    analysis = analyse_models(models)
    pd.testing.assert_frame_equal(analysis.summary, compare_models(models))
    details = analysis.details
    assert details["model"].tolist() == ["b"] * 16 + ["a"] * 16
    a = details[details["model"] == "a"].set_index("factor")
    pd.testing.assert_frame_equal(a[["images", "accuracy", "error_ratio"]], factor_table(models["a"]))
    pd.testing.assert_frame_equal(a[["errors", "share_of_errors", "share_of_images", "shift"]], error_prevalence(models["a"]))
    assert details.loc[details["model"] == "a"].set_index("factor")["error_ratio"].idxmax() == "color"
    only_unannotated = pd.DataFrame({"file_name": ["holiday.jpg"], "predicted_class": [3]})
    with pytest.raises(InvalidInputError, match="predictions c: 0 of its 1 rows name an annotated .*holiday.jpg.*ILSVRC2012_val_00000001.JPEG"):
        compare_models({**models, "c": only_unannotated})
    assert matched_rows(only_unannotated) == 0 and matched_rows(models["a"]) == len(models["a"])
    with pytest.raises(InvalidInputError, match="no predictions given"):
        compare_models({})


# -- reading predictions files ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,predicted_class\nILSVRC2012_val_00000001.JPEG,3\n", "no column 'file_name'"),
        ("file_name,predicted_class\nILSVRC2012_val_00000001.JPEG,1000\n", "'1000' on line 2 is not an ImageNet-1k class index"),
        ("file_name,predicted_class\nILSVRC2012_val_00000001.JPEG,2\nILSVRC2012_val_00000002.JPEG,cat\n", "'cat' on line 3"),
        ("file_name,predicted_class\nILSVRC2012_val_00000001.JPEG,2\nILSVRC2012_val_00000001.JPEG,3\n", "more than one row .line 3."),
        ("file_name,predicted_class,predicted_probability\nILSVRC2012_val_00000001.JPEG,2,1.5\n", "'1.5' on line 2 is not a probability"),
        ("file_name,predicted_class\n,2\n", "empty file_name on line 2"),
        ("file_name,predicted_class\n", "no rows"),
        ("", "not a readable CSV"),
    ],
)
def test_bad_predictions_files_are_named_with_the_fix(tmp_path, text, message):
    path = tmp_path / "preds.csv"
    path.write_text(text)
    with pytest.raises(InvalidInputError, match=message) as err:
        load_predictions(path)
    assert str(path) in str(err.value)
    with pytest.raises(InvalidInputError, match=message):
        load_predictions(text.encode(), name="upload.csv")


def test_missing_and_oversized_files_are_refused(tmp_path, monkeypatch):
    with pytest.raises(InvalidInputError, match="not found"):
        load_predictions(tmp_path / "nothing.csv")
    monkeypatch.setattr("analytics.robustness.factors.MAX_PREDICTIONS_BYTES", 16)
    with pytest.raises(InvalidInputError, match="big.csv: .* MiB is more than"):
        load_predictions(b"file_name,predicted_class\nILSVRC2012_val_00000001.JPEG,3\n", name="big.csv")


def test_a_valid_file_reads_with_plain_dtypes(tmp_path):
    path = tmp_path / "ok.csv"
    path.write_text(" file_name , predicted_class\nILSVRC2012_val_00000002.JPEG,7.0\nILSVRC2012_val_00000001.JPEG,0\n")
    table = load_predictions(path)
    assert table["predicted_class"].tolist() == [7, 0] and table["predicted_class"].dtype == np.int64
    assert table.columns.tolist() == ["file_name", "predicted_class"]


# -- predictions of a workspace model -----------------------------------------------------------------
@pytest.fixture
def imagenet_workspace(tiny_workspace, tmp_path):
    """``tiny_workspace`` with ``tiny-imagenet``: the fixtures' TinyNet with 1000 ImageNet outputs."""
    network = TinyNet()
    network.fc = nn.Linear(8, 1000)
    path = save_torchscript(network, tmp_path / "tiny-imagenet.pt")
    register_torchscript(tiny_workspace, IMAGENET_MODEL, checkpoint=path, label_space=imagenet_label_space(), input_size=SIZE)
    return tiny_workspace


@pytest.fixture
def val_folder(tmp_path, annotations) -> tuple[Path, list[str]]:
    """Made-up images under annotated file names (one in a class subfolder), plus files that must be ignored."""
    folder = tmp_path / "val"
    (folder / "n01440764").mkdir(parents=True)
    names = sorted(annotations["file_name"])[:5]
    rng = np.random.default_rng(0)
    for i, name in enumerate(names):
        target = folder / "n01440764" / name if i == 0 else folder / name
        cv2.imwrite(str(target), rng.integers(0, 255, (48 + 8 * i, 80, 3), dtype=np.uint8), [cv2.IMWRITE_JPEG_QUALITY, 95])
        assert target.stat().st_size > 0
    (folder / "holiday.JPEG").write_bytes((folder / names[1]).read_bytes())  # not an ImageNet-X name
    (folder / "notes.txt").write_text("not an image")
    return folder, names


def test_predictions_of_a_workspace_model_over_a_folder(imagenet_workspace, val_folder, monkeypatch):
    folder, names = val_folder
    steps = []
    predictions = predict_imagenet_val(imagenet_workspace, IMAGENET_MODEL, folder, batch_size=2, progress=lambda d, t: steps.append((d, t)))
    assert predictions["file_name"].tolist() == names
    assert steps[-1] == (5, 5) and len(steps) == -(-5 // CHUNK)
    model = load_model(imagenet_workspace, IMAGENET_MODEL, device="cpu")
    paths = [next(folder.rglob(name)) for name in names]
    probabilities = model.predict(np.stack([fit_square(read_image(p), None, SIZE)[0] for p in paths])).probabilities
    assert predictions["predicted_class"].tolist() == probabilities.argmax(axis=1).tolist()
    np.testing.assert_allclose(predictions["predicted_probability"], probabilities.max(axis=1), rtol=1e-5)
    pd.testing.assert_frame_equal(load_predictions(predictions.to_csv(index=False).encode()), predictions)
    assert factor_table(predictions)["images"].sum() == 5

    def no_model(*args, **kwargs):
        raise AssertionError("a repeated run must come from the workspace cache")

    monkeypatch.setattr("analytics.models.load_model", no_model)
    pd.testing.assert_frame_equal(predict_imagenet_val(imagenet_workspace, IMAGENET_MODEL, folder, batch_size=4), predictions)


def test_a_folder_without_validation_images_and_a_non_imagenet_model_are_refused(imagenet_workspace, tiny_model_workspace, val_folder, tmp_path):
    empty = tmp_path / "holidays"
    empty.mkdir()
    (empty / "beach.JPEG").write_bytes(b"not used")
    with pytest.raises(InvalidInputError, match="no image named like an annotated ImageNet validation image"):
        predict_imagenet_val(imagenet_workspace, IMAGENET_MODEL, empty)
    with pytest.raises(InvalidInputError, match="not a folder"):
        predict_imagenet_val(imagenet_workspace, IMAGENET_MODEL, tmp_path / "missing")
    with pytest.raises(InvalidInputError, match="'tiny' has the custom label space .2 outputs.*imagenet label space"):
        predict_imagenet_val(tiny_model_workspace, "tiny", val_folder[0])


def test_cli_predicts_writes_the_csv_and_analyses_it(capsys, imagenet_workspace, val_folder, tmp_path):
    folder, names = val_folder
    out = tmp_path / "out" / "tiny.csv"
    argv = ["factors", "--workspace", str(imagenet_workspace.root), "--model", IMAGENET_MODEL, "--imagenet-val", str(folder), "--out", str(out), "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["predictions_out"] == str(out) and load_predictions(out)["file_name"].tolist() == names
    assert result["models"][IMAGENET_MODEL]["images"] == 5
    assert "predict tiny-imagenet" in captured.err  # the tqdm bar


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "give --predictions FILE.csv, or --model M --imagenet-val DIR"),
        (["--imagenet-val", "x"], "go with --model"),
        (["--predictions", "a.csv", "--names", "a", "b"], "2 name.s. for 1 --predictions file"),
        (["--predictions", "x/a.csv", "--predictions", "y/a.csv"], "both called 'a'"),
    ],
)
def test_cli_user_errors_exit_2_with_one_line(capsys, argv, message):
    assert main(["factors", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error:")
    assert re.search(message, err), err
