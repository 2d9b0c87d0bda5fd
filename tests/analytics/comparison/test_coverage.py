import json

import numpy as np
import pytest
import torch
from torch import nn

from analytics.cli import main
from analytics.comparison import suite_coverage
from analytics.comparison.coverage import collect_activations, coverage_from_maxima, neuron_coverage
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.workspace import now


def test_coverage_counts_neurons_above_threshold_after_per_input_scaling():
    activations = {
        # input 1 scales to (0, .5, 1), input 2 to (1, .5, 0): maxima (1, .5, 1)
        "a": np.array([[1.0, 2.0, 3.0], [30.0, 20.0, 10.0]]),
        # a constant output scales to 0: nothing covered
        "b": np.array([[5.0, 5.0]]),
    }
    result = neuron_coverage(activations, threshold=0.5)
    table = result.per_layer.set_index("layer")
    assert table.loc["a", ["covered", "neurons"]].tolist() == [2, 3]  # 0.5 does not exceed 0.5
    assert table.loc["b", ["covered", "neurons"]].tolist() == [0, 2]
    assert result.coverage == pytest.approx(2 / 5)
    assert neuron_coverage(activations, threshold=0.4).covered == 3
    np.testing.assert_allclose(result.maxima["a"], [1.0, 0.5, 1.0])


def test_scaling_is_per_input_not_per_suite():
    small = np.array([[0.0, 1.0, 0.0]])
    # a second input with huge values must not shrink the first input's scaled activations
    both = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1000.0]])
    assert neuron_coverage({"x": small}).covered == 1
    assert neuron_coverage({"x": both}).covered == 2


def test_conv_maps_are_scaled_as_a_whole_then_averaged_per_channel():
    # one input, 2 channels of 2x2: map min 0, max 4
    conv = np.array([[[[0.0, 4.0], [0.0, 0.0]], [[2.0, 2.0], [3.0, 3.0]]]])
    result = neuron_coverage({"conv": conv}, threshold=0.5)
    expected = [np.mean([0, 1, 0, 0]), np.mean([0.5, 0.5, 0.75, 0.75])]  # (0.25, 0.625)
    np.testing.assert_allclose(result.maxima["conv"], expected)
    assert result.covered == 1


def test_a_new_threshold_needs_no_new_activations():
    rng = np.random.default_rng(0)
    activations = {"a": rng.normal(size=(20, 16)), "b": rng.normal(size=(20, 4, 3, 3))}
    result = neuron_coverage(activations, threshold=0.5)
    for threshold in (0.0, 0.3, 0.9):
        assert result.at(threshold).to_dict() == neuron_coverage(activations, threshold=threshold).to_dict()
    assert result.at(0.9).coverage <= result.coverage <= result.at(0.0).coverage


@pytest.mark.parametrize("threshold", [1.0, -0.1, float("nan"), "0.5"])
def test_bad_threshold_raises(threshold):
    with pytest.raises(InvalidInputError, match=r"threshold must be a number in \[0, 1\)"):
        neuron_coverage({"a": np.ones((2, 2))}, threshold=threshold)


@pytest.mark.parametrize("activations", [{}, {"a": np.ones(3)}, {"a": np.ones((0, 3))}])
def test_bad_activations_raise(activations):
    with pytest.raises(InvalidInputError, match="activations"):
        neuron_coverage(activations)


class Reuse(nn.Module):
    """A conv net that calls one ReLU twice (as torchvision's ResNet blocks do)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv1, self.conv2 = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 5, 3, padding=1)
        self.relu = nn.ReLU()
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(5, 6), nn.GELU(), nn.Linear(6, 2))

    def body(self, x):
        return self.relu(self.conv2(self.relu(self.conv1(x))))

    def forward(self, x):
        return self.head(self.body(x))


def test_hooks_see_every_activation_call_and_match_the_math():
    network = Reuse().eval()
    inputs = torch.randn(10, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    maxima = collect_activations(network, [inputs[:4], inputs[4:]], layers="all")
    assert list(maxima) == ["relu", "relu#1", "head.3"]
    with torch.no_grad():
        first = network.relu(network.conv1(inputs))
        second = network.relu(network.conv2(first))
        gelu = network.head[:4](second)
    expected = neuron_coverage({"relu": first.numpy(), "relu#1": second.numpy(), "head.3": gelu.numpy()})
    for name, values in expected.maxima.items():
        np.testing.assert_allclose(maxima[name], values, rtol=1e-5, atol=1e-6)
    assert [len(v) for v in maxima.values()] == [4, 5, 6]


def test_streaming_equals_one_batch():
    network = Reuse().eval()
    inputs = torch.randn(9, 3, 8, 8, generator=torch.Generator().manual_seed(2))
    streamed = collect_activations(network, inputs.split(2), layers="all")
    whole = collect_activations(network, [inputs], layers="all")
    for name in whole:
        np.testing.assert_allclose(streamed[name], whole[name], rtol=1e-6)


def test_embedding_defaults_to_the_input_of_the_last_linear():
    network = Reuse().eval()
    inputs = torch.randn(6, 3, 8, 8, generator=torch.Generator().manual_seed(3))
    maxima = collect_activations(network, [inputs])
    with torch.no_grad():
        embedding = network.head[:4](network.body(inputs))  # pool, flatten, linear, GELU
    assert list(maxima) == ["embedding"]
    np.testing.assert_allclose(maxima["embedding"], neuron_coverage({"e": embedding.numpy()}).maxima["e"], rtol=1e-5)
    pooled = collect_activations(network, [inputs], embedding_fn=lambda batch: network.head[:2](network.body(batch)))
    assert pooled["embedding"].shape == (5,)


def test_hooks_are_removed_afterwards():
    network = Reuse().eval()
    collect_activations(network, [torch.randn(2, 3, 8, 8)], layers="all")
    assert all(not module._forward_hooks and not module._forward_pre_hooks for module in network.modules())


def test_networks_without_layers_to_read_are_refused():
    with pytest.raises(InvalidInputError, match="no activation module"):
        collect_activations(nn.Sequential(nn.Flatten(), nn.Linear(3, 2)), [torch.randn(2, 3)], layers="all")
    with pytest.raises(InvalidInputError, match="pass embedding_fn"):
        collect_activations(nn.Sequential(nn.ReLU()), [torch.randn(2, 3)])
    with pytest.raises(InvalidInputError, match="batches is empty"):
        collect_activations(Reuse(), [], layers="all")
    with pytest.raises(InvalidInputError, match="layers must be one of 'embedding', 'all'"):
        collect_activations(Reuse(), [torch.randn(2, 3, 8, 8)], layers="some")


def test_coverage_from_maxima_needs_neurons():
    with pytest.raises(InvalidInputError, match="at least one neuron"):
        coverage_from_maxima({"a": np.zeros(0)})


# -- a real registered model on a real suite of the tiny workspace ----------------------------------
@pytest.fixture
def suite_workspace(tiny_workspace, tmp_path):
    """tiny_workspace with a random-weight MobileNetV3-small (2 classes, 64 px) and a 4-per-target suite."""
    import torchvision

    from analytics.data import custom_label_space
    from analytics.models import register_torchvision

    torch.manual_seed(0)
    checkpoint = tmp_path / "mobilenet.pt"
    torch.save(torchvision.models.mobilenet_v3_small(num_classes=2).state_dict(), checkpoint)
    labels = tmp_path / "labels.txt"
    labels.write_text("disc\nsquare\n")
    label_space = custom_label_space(labels)
    register_torchvision(
        tiny_workspace, "tiny-mobilenet", arch="mobilenet_v3_small", checkpoint=checkpoint, label_space=label_space, input_size=64
    )
    targets = [row["id"] for row in tiny_workspace.query("SELECT id FROM targets ORDER BY id")]
    backgrounds = [row["id"] for row in tiny_workspace.query("SELECT id FROM backgrounds ORDER BY id")]
    with tiny_workspace.transaction() as conn:
        conn.execute("INSERT INTO suites(id, method, n, seed, params, created) VALUES ('s1', 'random', 4, 0, '{}', ?)", (now(),))
        conn.executemany(
            "INSERT INTO suite_items(suite_id, target_id, position, background_id) VALUES ('s1', ?, ?, ?)",
            [(t, p + 1, backgrounds[(i + p) % len(backgrounds)]) for i, t in enumerate(targets) for p in range(4)],
        )
    return tiny_workspace


def test_suite_coverage_on_a_registered_model(suite_workspace):
    from analytics.models import load_model

    embedding = suite_coverage(suite_workspace, "tiny-mobilenet", "s1", layers="embedding", device="cpu", batch_size=5)
    assert embedding.per_layer["layer"].tolist() == ["embedding"]
    images = suite_workspace.get_array(suite_workspace.query_one("SELECT image_hash FROM targets")["image_hash"])[None]
    assert embedding.neurons == load_model(suite_workspace, "tiny-mobilenet", device="cpu").predict(images).embeddings.shape[1]
    assert 0 < embedding.coverage <= 1
    every = suite_coverage(suite_workspace, "tiny-mobilenet", "s1", layers="all", threshold=0.3, device="cpu")
    assert len(every.per_layer) > 10
    assert every.threshold == 0.3
    with pytest.raises(NotFoundError, match="no suite 'nope'"):
        suite_coverage(suite_workspace, "tiny-mobilenet", "nope")


def test_cli_coverage(suite_workspace, capsys):
    argv = ["coverage", "--workspace", str(suite_workspace.root), "--model", "tiny-mobilenet", "--suite", "s1", "--device", "cpu"]
    assert main([*argv, "--threshold", "0.25", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["layers"] == "embedding"
    assert printed["threshold"] == 0.25
    expected = suite_coverage(suite_workspace, "tiny-mobilenet", "s1", threshold=0.25, device="cpu")
    assert printed["coverage"] == pytest.approx(expected.coverage)
    assert main([*argv, "--threshold", "1.5"]) == 2
    assert "threshold must be a number in [0, 1)" in capsys.readouterr().err
