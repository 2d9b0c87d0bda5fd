"""The authors' last-conv-map signals in a run: stored per image beside the paper's signals, a matrix
built from them on request (never by default), a clear message for runs without them, and
``fill_conv`` adding them to an old run without touching its other values."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from analytics.data import load_targets
from analytics.exceptions import InvalidInputError
from analytics.inference import run_models
from analytics.models import load_model
from analytics.models.conv_map import conv_map_statistics
from analytics.runs import CONV_SIGNALS, SIGNALS, image_table, load_run, run_matrices, run_row
from analytics.runs.read import summarize_run
from analytics.variance import MatrixSettings
from tests.fixtures.models import TINY_SUITE

SETTINGS = MatrixSettings.of("smooth", grid=16)
CONV = tuple(CONV_SIGNALS)


def _originals(workspace, run_id: str) -> pd.DataFrame:
    return image_table(workspace, run_id).query("position == 0").set_index("target_id")


def test_a_run_stores_the_statistics_of_the_map_the_network_pools(tiny_cnn_workspace):
    run_id, = run_models(tiny_cnn_workspace, ["tiny-cnn"], TINY_SUITE, device="cpu", batch_size=8)
    stored = _originals(tiny_cnn_workspace, run_id)
    model = load_model(tiny_cnn_workspace, "tiny-cnn", device="cpu")
    maps = []
    model.network.body.conv5.register_forward_hook(lambda module, args, output: maps.append(output))  # shufflenet pools conv5 with x.mean
    images, _ = load_targets(tiny_cnn_workspace, list(stored.index))
    with torch.no_grad():
        model.network(model.preprocess(np.stack(images)))
    expected = conv_map_statistics(maps[-1]).numpy()
    np.testing.assert_allclose(stored[["conv_max", "conv_max_mean"]].to_numpy(), expected, rtol=1e-4, atol=1e-5)

    data = load_run(tiny_cnn_workspace, run_id)
    assert set(data.signals) == set(SIGNALS) | set(CONV_SIGNALS) and not data.absent
    matrices = run_matrices(tiny_cnn_workspace, run_id, settings=SETTINGS, signals=CONV)
    default = run_matrices(tiny_cnn_workspace, run_id, settings=SETTINGS)
    assert list(matrices) == list(CONV) and list(default) == list(SIGNALS)  # the paper's four (and max_prob) stay the default
    assert matrices["conv_max"].d_max == default["true_prob"].d_max and matrices["conv_max"].matrix.max() > 0
    assert run_matrices(tiny_cnn_workspace, run_id, settings=SETTINGS, signals=CONV)["conv_max"].matrix.tobytes() == matrices["conv_max"].matrix.tobytes()


def test_a_model_without_a_map_stores_none_and_its_run_says_why(tiny_cnn_workspace):
    run_id, = run_models(tiny_cnn_workspace, ["tiny"], TINY_SUITE, device="cpu", batch_size=8)  # TorchScript: no hooks
    assert image_table(tiny_cnn_workspace, run_id)["conv_max"].isna().all()
    assert "TorchScript" in json.loads(run_row(tiny_cnn_workspace, run_id)["summary"])["conv_map"]
    with pytest.raises(InvalidInputError, match="has no last convolutional map .*TorchScript"):
        run_matrices(tiny_cnn_workspace, run_id, settings=SETTINGS, signals=("conv_max",))
    assert list(run_matrices(tiny_cnn_workspace, run_id, settings=SETTINGS)) == list(SIGNALS)


def test_an_old_run_without_them_says_to_fill_them_and_fill_conv_adds_them_keeping_the_rest(tiny_cnn_workspace):
    run_id, = run_models(tiny_cnn_workspace, ["tiny-cnn"], TINY_SUITE, device="cpu", batch_size=8)
    summarize_run(tiny_cnn_workspace, run_id)
    before = image_table(tiny_cnn_workspace, run_id)
    with tiny_cnn_workspace.transaction() as conn:  # as stored before the columns existed
        conn.execute("UPDATE run_images SET conv_max = NULL, conv_max_mean = NULL, true_prob = true_prob + 1e-3 WHERE run_id = ?", (run_id,))
        conn.execute("UPDATE runs SET summary = ? WHERE id = ?", (json.dumps({"top_k": 3}), run_id))
    with pytest.raises(InvalidInputError, match=f"lacks the authors' conv-map statistics .*models='tiny-cnn', suite='{TINY_SUITE}', fill_conv=True"):
        run_matrices(tiny_cnn_workspace, run_id, settings=SETTINGS, signals=CONV)
    assert run_models(tiny_cnn_workspace, ["tiny-cnn"], TINY_SUITE, device="cpu") == [run_id]  # reused untouched without the option
    assert image_table(tiny_cnn_workspace, run_id)["conv_max"].isna().all()

    assert run_models(tiny_cnn_workspace, ["tiny-cnn"], TINY_SUITE, device="cpu", fill_conv=True) == [run_id]
    after = image_table(tiny_cnn_workspace, run_id)
    np.testing.assert_allclose(after[["conv_max", "conv_max_mean"]], before[["conv_max", "conv_max_mean"]], rtol=1e-5)
    np.testing.assert_array_equal(after["true_prob"], before["true_prob"] + 1e-3)  # the stored values were kept, not recomputed
    assert run_matrices(tiny_cnn_workspace, run_id, settings=SETTINGS, signals=CONV)["conv_max_mean"].matrix.max() > 0


def test_cli_lists_the_new_signals_and_exports_them_on_request(tiny_cnn_workspace, tmp_path, capsys):
    from analytics.cli import main

    ws = str(tiny_cnn_workspace.root)
    with pytest.raises(SystemExit):
        main(["matrices", "--help"])
    shown = capsys.readouterr().out
    assert all(signal in shown for signal in (*SIGNALS, *CONV_SIGNALS))
    assert main(["run", "--workspace", ws, "--model", "tiny-cnn", "--suite", TINY_SUITE, "--device", "cpu", "--fill-conv", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run"]
    out = tmp_path / "out"
    assert main(["matrices", "--workspace", ws, "--run", run_id, "--out", str(out), "--grid", "16", "--signal", "conv_max", "--signal", "true_prob", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result["matrices"]) == ["conv_max", "true_prob"] and result["colour_scale"]["own_range"] == ["conv_max"]
    np.testing.assert_array_equal(np.load(out / "conv_max.npy"), run_matrices(tiny_cnn_workspace, run_id, settings=MatrixSettings.of("smooth", grid=16), signals=("conv_max",))["conv_max"].matrix)
    with pytest.raises(SystemExit):
        main(["matrices", "--workspace", ws, "--run", run_id, "--out", str(out), "--signal", "conv_min"])  # not a choice
    assert "invalid choice: 'conv_min'" in capsys.readouterr().err


def test_a_head_reads_its_backbones_map(tiny_cnn_workspace):
    from analytics.models import register_head

    register_head(tiny_cnn_workspace, "cnn-head", backbone="tiny-cnn", weight=np.random.default_rng(0).normal(size=(2, 1024)), bias=np.zeros(2),
                  class_names=["disc", "square"])  # fmt: skip
    head, backbone = run_models(tiny_cnn_workspace, ["cnn-head", "tiny-cnn"], TINY_SUITE, device="cpu", batch_size=8)
    conv = [image_table(tiny_cnn_workspace, run_id)[["conv_max", "conv_max_mean"]] for run_id in (head, backbone)]
    assert conv[0].notna().all().all()
    pd.testing.assert_frame_equal(*conv)  # one backbone pass, one map: the heads on a backbone share these signals
