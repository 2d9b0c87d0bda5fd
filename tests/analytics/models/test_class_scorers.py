"""Which registered models score which workspace classes (issue 47.7): a model registered with its own
class names scores the classes it names, mapped or not; only the classes no model scores are warned about."""

from __future__ import annotations

from analytics.data import IN9_CLASSES, ClassMapping, LabelSpace, list_class_mappings, set_class_mapping
from analytics.data.datasets import add_classes
from analytics.models import class_scorers, unscored_classes
from tests.fixtures.models import TINY_MODELS


def test_a_custom_label_space_scores_the_classes_it_names_and_imagenet_spaces_need_a_mapping():
    custom = LabelSpace("custom", ("disc", "square"))
    assert custom.scores("disc") and custom.scores("coin", ClassMapping(label="square"))
    assert not custom.scores("coin") and not custom.scores("coin", ClassMapping((852,)))  # an ImageNet index is not read
    in9 = LabelSpace("in9", IN9_CLASSES)
    assert in9.scores("dog") and in9.scores("coin", ClassMapping(in9="bird")) and in9.scores("coin", ClassMapping((207,)))  # 207: a dog
    assert not in9.scores("coin") and not in9.scores("coin", ClassMapping((852,)))  # tennis ball: no IN-9 class
    imagenet = LabelSpace("imagenet", tuple(f"class {i}" for i in range(1000)))
    assert imagenet.scores("coin", ClassMapping((852,))) and imagenet.scores("coin", ClassMapping(in9="dog"))
    assert not imagenet.scores("coin") and not imagenet.scores("coin", ClassMapping((1000,)))  # out of range: nothing


def test_only_the_class_no_model_scores_is_unscored(tiny_model_workspace):
    add_classes(tiny_model_workspace, {"coin": ClassMapping()})
    assert all(not mapping.mapped for mapping in list_class_mappings(tiny_model_workspace).values())
    scorers = class_scorers(tiny_model_workspace)
    assert scorers == {"coin": [], "disc": sorted(TINY_MODELS), "square": sorted(TINY_MODELS)}
    assert unscored_classes(tiny_model_workspace) == ["coin"]
    assert unscored_classes(tiny_model_workspace, ["square", "coin"]) == ["coin"]
    set_class_mapping(tiny_model_workspace, "coin", imagenet=[852])  # no registered model reads ImageNet indices
    assert unscored_classes(tiny_model_workspace) == ["coin"]
    set_class_mapping(tiny_model_workspace, "coin", imagenet=[852], label="disc")
    assert unscored_classes(tiny_model_workspace) == []


def test_without_models_the_unmapped_classes_are_unscored_as_before(tiny_workspace):
    add_classes(tiny_workspace, {"coin": ClassMapping()})
    assert unscored_classes(tiny_workspace) == ["coin", "disc", "square"]
    assert class_scorers(tiny_workspace, ["disc"]) == {"disc": []}
    set_class_mapping(tiny_workspace, "coin", imagenet=[852])
    assert unscored_classes(tiny_workspace) == ["disc", "square"]
    assert unscored_classes(tiny_workspace, ["coin", "missing"]) == ["missing"]  # a class the workspace lacks is unmapped


def test_add_targets_prints_the_classes_no_registered_model_scores(tiny_model_workspace, tmp_path, capsys):
    from tests.analytics.test_cli_data import run, target_folder

    folder = target_folder(tmp_path / "set", classes=("disc", "widget"))
    code, out, _ = run(capsys, "add-targets", "--workspace", str(tiny_model_workspace.root), "--path", str(folder), "--layout", "folder", "--json")
    assert code == 0
    assert out["unmapped_classes"] == ["widget"]  # new and without a mapping
    assert out["unscored_classes"] == ["widget"]  # disc: unmapped, but the tiny models name it
