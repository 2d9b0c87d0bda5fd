"""The ADE20K + Places365 backend, loaded from randomly initialised checkpoints saved in the published formats."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision

from analytics.exceptions import InvalidInputError
from analytics.keywords import read_keyword_file
from analytics.keywords._base import BACKENDS
from analytics.keywords._csail import PPMDeepSup, ResNet18Dilated, build_places_resnet18
from analytics.keywords.precomputed import apply_rules, rules_from_params
from analytics.keywords.scene_models import SceneModelsBackend, _segmentation_size
from tests.fixtures.keywords import REFERENCE_HDF5

N_ADE, N_PLACES = 150, 365
SIDE = 48  # image side; segmentation runs at input_size=SIDE to keep the tests fast


def write_names(folder: Path, n_objects: int = N_ADE, n_scenes: int = N_PLACES) -> None:
    """Class-name files in the published formats (made-up names)."""
    rows = "".join(f"{i},0.001,1,1,0,thing{i};other\n" for i in range(1, n_objects + 1))
    (folder / "object150_info.csv").write_text("Idx,Ratio,Train,Val,Stuff,Name\n" + rows)
    (folder / "categories_places365.txt").write_text("".join(f"/p/place{i} {i}\n" for i in range(n_scenes)))


def save_places(network: torch.nn.Module, path: Path) -> Path:
    """The published Places365 layout: a DataParallel state dict nested under 'state_dict'."""
    state = {f"module.{key}": value for key, value in network.state_dict().items()}
    torch.save({"epoch": 90, "arch": "resnet18", "state_dict": state, "best_prec1": 54.7}, path)
    return path


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("scene_models")
    torch.manual_seed(0)
    networks = {"encoder": ResNet18Dilated(), "decoder": PPMDeepSup(), "places": build_places_resnet18()}
    paths = {"encoder": folder / "encoder_epoch_20.pth", "decoder": folder / "decoder_epoch_20.pth"}
    for role in ("encoder", "decoder"):  # CSAIL's published files are plain state dicts
        torch.save(networks[role].state_dict(), paths[role])
    paths["places"] = save_places(networks["places"], folder / "resnet18_places365.pth.tar")
    write_names(folder)
    return paths


@pytest.fixture(scope="module")
def backend(checkpoints) -> SceneModelsBackend:
    # the names files are found next to the checkpoints
    return SceneModelsBackend(checkpoints["encoder"], checkpoints["decoder"], checkpoints["places"], input_size=SIDE, device="cpu")


@pytest.fixture(scope="module")
def images() -> np.ndarray:
    return np.random.default_rng(1).integers(0, 256, (3, SIDE, SIDE, 3), dtype=np.uint8)


def make_backend(checkpoints: dict[str, Path], **override) -> SceneModelsBackend:
    paths = {**checkpoints, **{k: v for k, v in override.items() if k in checkpoints}}
    options = {k: v for k, v in override.items() if k not in checkpoints}
    names = checkpoints["decoder"].parent
    options.setdefault("ade_names", names / "object150_info.csv")
    options.setdefault("places_names", names / "categories_places365.txt")
    return SceneModelsBackend(paths["encoder"], paths["decoder"], paths["places"], input_size=SIDE, device="cpu", **options)


def test_registered_under_its_name():
    assert BACKENDS["ade20k-places365"] is SceneModelsBackend


def test_loaded_weights_are_the_saved_ones(backend, checkpoints):
    saved = torch.load(checkpoints["places"], weights_only=True)["state_dict"]
    for key, value in backend.places.state_dict().items():
        torch.testing.assert_close(value, saved[f"module.{key}"])
    for role in ("encoder", "decoder"):
        saved = torch.load(checkpoints[role], weights_only=True)
        for key, value in getattr(backend, role).state_dict().items():
            torch.testing.assert_close(value, saved[key])


def test_vocabulary_is_prefixed_and_unique(backend):
    assert len(backend.vocabulary) == N_ADE + N_PLACES == len(set(backend.vocabulary))
    assert backend.vocabulary[0] == "ade:thing1" and backend.vocabulary[N_ADE] == "places:place0"


@pytest.mark.skipif(not REFERENCE_HDF5.is_file(), reason="shared reference data not available")
def test_vocabulary_matches_the_reference_file_columns(checkpoints):
    folder = REFERENCE_HDF5.parent
    scene = make_backend(
        checkpoints, ade_names=folder / "object150_info.csv", places_names=folder / "categories_places365.txt"
    )
    assert scene.vocabulary == read_keyword_file(REFERENCE_HDF5).vocabulary


def test_scores_layout(backend, images):
    scores = backend.scores(images)
    assert scores.shape == (len(images), N_ADE + N_PLACES) and scores.dtype == np.float32
    shares = scores[:, :N_ADE]
    assert (shares >= 0).all()
    np.testing.assert_allclose(shares.sum(axis=1), 100.0, rtol=1e-5)  # percent, as in the reference file
    assert np.isfinite(scores[:, N_ADE:]).all() and (scores[:, N_ADE:] < 0).any()  # logits, not probabilities


def test_shares_count_the_unmasked_pixels(backend, images):
    labels = backend.segment(images)
    assert labels.shape == images.shape[:3] and labels.dtype == np.int64
    assert len(np.unique(labels[0])) > 1, "random weights gave a one-class map; masking could not change it"
    # mask the most frequent class of image 0 and the left half of image 1
    masks = np.zeros(images.shape[:3], bool)
    masks[0] = labels[0] == np.bincount(labels[0].ravel()).argmax()
    masks[1, :, : SIDE // 2] = True
    masked, unmasked = backend.scores(images, masks), backend.scores(images)
    for row in range(len(images)):
        kept = labels[row][~masks[row]]
        expected = 100 * np.bincount(kept, minlength=N_ADE) / kept.size
        np.testing.assert_allclose(masked[row, :N_ADE], expected, rtol=1e-5, atol=1e-5)
    assert not np.allclose(masked[0, :N_ADE], unmasked[0, :N_ADE])
    np.testing.assert_array_equal(masked[2], unmasked[2])  # no mask, same scores


def test_fully_masked_image_has_no_object_keywords(backend, images):
    masks = np.ones(images.shape[:3], bool)
    scores = backend.scores(images, masks)
    assert (scores[:, :N_ADE] == 0).all()
    assert not backend.present(scores)[:, :N_ADE].any()


def test_non_square_images(backend):
    images = np.random.default_rng(2).integers(0, 256, (2, 40, 72, 3), dtype=np.uint8)
    scores = backend.scores(images)
    np.testing.assert_allclose(scores[:, :N_ADE].sum(axis=1), 100.0, rtol=1e-5)
    assert backend.segment(images).shape == (2, 40, 72)


@pytest.mark.parametrize(
    ("height", "width", "short_side", "expected"),
    [(256, 256, 300, (304, 304)), (40, 72, 64, (64, 120)), (100, 2000, 300, (56, 1000))],
)
def test_segmentation_size_follows_csail(height, width, short_side, expected):
    assert _segmentation_size(height, width, short_side) == expected


def test_present_rule_by_hand(backend, checkpoints):
    scores = np.zeros((2, N_ADE + N_PLACES), np.float32)
    scores[0, :4] = [0.5, 1.0, 1.5, 97.0]  # only shares above 1 % count
    scores[1, 10] = 100.0
    scores[:, N_ADE:] = np.linspace(-3, 3, N_PLACES)[None]
    scores[1, N_ADE + 7] = 10.0
    present = backend.present(scores)
    assert np.flatnonzero(present[0, :N_ADE]).tolist() == [2, 3]
    assert np.flatnonzero(present[1, :N_ADE]).tolist() == [10]
    assert np.flatnonzero(present[0, N_ADE:]).tolist() == [N_PLACES - 1]
    assert np.flatnonzero(present[1, N_ADE:]).tolist() == [7]
    wider = make_backend(checkpoints, min_share=0.02, places_top_k=3)
    present = wider.present(scores)
    assert np.flatnonzero(present[0, :N_ADE]).tolist() == [3]
    assert np.flatnonzero(present[1, N_ADE:]).tolist() == [7, N_PLACES - 2, N_PLACES - 1]


def test_table_records_rules_a_precomputed_import_can_reuse(backend, images):
    table = backend.table(images, ["a", "b", "c"])
    assert table.backend == "ade20k-places365" and table.params["share_scale"] == "percent"
    assert set(table.params["checkpoints"]) == {"encoder", "decoder", "places"}
    rules = rules_from_params(table.params, len(table.vocabulary), "table")
    np.testing.assert_array_equal(apply_rules(table.scores, rules), table.present)
    assert (table.present[:, N_ADE:].sum(axis=1) == 1).all()


def test_mask_of_the_wrong_shape(backend, images):
    with pytest.raises(InvalidInputError, match="masks must have shape"):
        backend.scores(images, np.zeros((3, SIDE, SIDE + 1), bool))


def test_checkpoints_without_batchnorm_counters_load(checkpoints, tmp_path):
    """Checkpoints saved by older torch lack 'num_batches_tracked'; inference does not need it."""
    state = {k: v for k, v in torch.load(checkpoints["encoder"], weights_only=True).items() if "num_batches" not in k}
    torch.save(state, tmp_path / "old.pth")
    assert make_backend(checkpoints, encoder=tmp_path / "old.pth").encoder is not None


class _Payload:
    """Unpickling this would create ``marker``: the test proves it never runs."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (str(self.marker),))


def _bad_checkpoints(checkpoints: dict[str, Path], folder: Path, case: str) -> tuple[dict, str, Path]:
    """(override for make_backend, expected message pattern, file the message must name) for one bad-input case."""
    if case == "missing":
        bad = folder / "nope.pth"
        return {"encoder": bad}, r"ADE20K encoder checkpoint \(expected: encoder_epoch_20.pth.*not found", bad
    if case == "swapped":
        bad = checkpoints["decoder"]
        return {"encoder": bad}, r"ADE20K encoder checkpoint.*do not fit.*missing keys \d+ \(conv1.weight.*unexpected keys", bad
    if case == "truncated":
        data = checkpoints["decoder"].read_bytes()
        bad = folder / "cut.pth"
        bad.write_bytes(data[: len(data) // 3])
        return {"decoder": bad}, r"ADE20K decoder checkpoint.*truncated or corrupt", bad
    if case == "pickle":
        bad = folder / "evil.pth"
        torch.save({"conv1.weight": _Payload(folder / "pwned")}, bad)
        return {"encoder": bad}, r"ADE20K encoder checkpoint.*refused to load", bad
    if case == "not-a-state-dict":
        bad = folder / "list.pth"
        torch.save([torch.zeros(2)], bad)
        return {"decoder": bad}, r"ADE20K decoder checkpoint.*not a state dict", bad
    if case == "decoder-classes":
        bad = folder / "dec10.pth"
        torch.save(PPMDeepSup(n_classes=10).state_dict(), bad)
        return {"decoder": bad}, r"decoder_epoch_20.pth.*'conv_last.4.weight' has 10 classes; .*150-class", bad
    if case == "places-classes":
        bad = save_places(build_places_resnet18(1000), folder / "imagenet.pth.tar")
        return {"places": bad}, r"Places365 checkpoint.*'fc.weight' has 1000 classes; .*365-class", bad
    if case == "places-arch":
        bad = save_places(torchvision.models.resnet34(num_classes=N_PLACES), folder / "r34.pth.tar")
        return {"places": bad}, r"resnet18_places365.pth.tar.*unexpected keys \d+ \(layer1.2", bad
    if case == "names-count":
        write_names(folder, n_objects=3)
        bad = folder / "object150_info.csv"
        return {"ade_names": bad}, r"ade_names: .* names 3 classes; the published model has 150", bad
    assert case == "names-missing"  # a Places365 checkpoint alone in its folder, no names given
    places = folder / checkpoints["places"].name
    places.write_bytes(checkpoints["places"].read_bytes())
    pattern = r"places_names: class-name file .* not found \(looked next to the checkpoint"
    return {"places_names": None, "places": places}, pattern, folder / "categories_places365.txt"


@pytest.mark.parametrize(
    "case",
    ["missing", "swapped", "truncated", "pickle", "not-a-state-dict", "decoder-classes", "places-classes",
     "places-arch", "names-count", "names-missing"],
)
def test_bad_files_are_refused_with_their_name(checkpoints, tmp_path, case):
    override, pattern, named = _bad_checkpoints(checkpoints, tmp_path, case)
    with pytest.raises(InvalidInputError, match=pattern) as info:
        make_backend(checkpoints, **override)
    assert str(named) in str(info.value)
    assert not (tmp_path / "pwned").exists()


def test_cli_builds_workspace_tables_from_the_checkpoints(checkpoints, tiny_workspace, capsys):
    """``keywords --backend scene-models``: the names files are found next to the checkpoints."""
    from analytics.cli import main
    from analytics.data import list_targets
    from analytics.keywords import list_keyword_tables, load_keyword_table

    argv = ["keywords", "--workspace", str(tiny_workspace.root), "--backend", "scene-models", "--items", "targets",
            "--ade20k-encoder", str(checkpoints["encoder"]), "--ade20k-decoder", str(checkpoints["decoder"]),
            "--places365", str(checkpoints["places"]), "--input-size", str(SIDE), "--places-top-k", "2", "--device", "cpu", "--json"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    table = load_keyword_table(tiny_workspace, result["tables"]["target"])
    assert table.backend == "ade20k-places365" and table.ids == list_targets(tiny_workspace)["id"].tolist()
    assert len(table.vocabulary) == N_ADE + N_PLACES and table.params["places_top_k"] == 2
    assert (table.present[:, N_ADE:].sum(axis=1) == 2).all()
    np.testing.assert_allclose(table.scores[:, :N_ADE].sum(axis=1), 100.0, rtol=1e-4)  # shares of the background part
    assert list_keyword_tables(tiny_workspace)["source"].iloc[0].startswith("checkpoints decoder ")
    assert main(argv[:-9] + ["--json"]) == 2  # no --places365 checkpoint
    assert "needs the checkpoints --places365" in capsys.readouterr().err
