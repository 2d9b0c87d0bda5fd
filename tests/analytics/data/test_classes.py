"""Class mappings: ImageNet search, the shared resolver, set_class_mapping, and what outputs a class counts as."""

from __future__ import annotations

import pytest

from analytics.data import (
    IN9_CLASSES,
    ClassMapping,
    LabelSpace,
    custom_label_space,
    imagenet_classes,
    imagenet_label_space,
    in9_label_space,
    list_class_mappings,
    list_classes,
    resolve_class,
    search_imagenet,
    set_class_mapping,
)
from analytics.data.datasets import add_classes
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.workspace import class_mapping_key


@pytest.fixture
def labels3(tmp_path) -> LabelSpace:
    path = tmp_path / "labels3.txt"
    path.write_text("cat\ndog\nball\n")
    return custom_label_space(path)


# -- ImageNet-1k names and WordNet ids -------------------------------------------------------
def test_imagenet_classes_carry_wordnet_ids_in_index_order():
    classes = imagenet_classes()
    assert len(classes) == 1000 and [c.index for c in classes] == list(range(1000))
    assert (classes[0].wnid, classes[0].name) == ("n01440764", "tench")
    assert (classes[852].wnid, classes[852].name) == ("n04409515", "tennis ball")
    assert len({c.wnid for c in classes}) == 1000


@pytest.mark.parametrize("query", ["tennis", "Tennis_Ball", "n04409515", "852"])
def test_search_finds_tennis_ball_by_name_wnid_or_index(query):
    assert search_imagenet(query)[0].index == 852


def test_search_ranks_exact_then_prefix_then_substring_and_respects_the_limit():
    names = [m.name for m in search_imagenet("terrier", limit=50)]
    assert names and all("terrier" in n for n in names)
    balls = [m.name.startswith("ball") for m in search_imagenet("ball", limit=50)]
    assert any(balls) and not all(balls) and balls == sorted(balls, reverse=True)  # "balloon" before "tennis ball"
    assert len(search_imagenet("a", limit=5)) == 5
    assert search_imagenet("   ") == []
    with pytest.raises(InvalidInputError, match="limit"):
        search_imagenet("dog", limit=0)


# -- the resolver ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, expected",
    [
        ("tennis_ball", ClassMapping((852,))),
        ("n04409515", ClassMapping((852,))),
        ("dog", ClassMapping(in9="dog")),
        ("00_dog", ClassMapping(in9="dog")),  # a Backgrounds Challenge folder
        ("widget", ClassMapping()),
    ],
)
def test_resolve_class_from_its_name(name, expected):
    assert resolve_class(name) == expected


def test_resolve_class_prefers_the_explicit_map_and_checks_it():
    assert resolve_class("tennis_ball", {"tennis_ball": [853, 852, 852]}) == ClassMapping((852, 853))
    with pytest.raises(InvalidInputError, match="class 'widget'.*0..999"):
        resolve_class("widget", {"widget": [1000]})


# -- storing mappings ------------------------------------------------------------------------
def test_set_class_mapping_stores_each_kind_and_changes_the_key(tiny_workspace):
    before = class_mapping_key(tiny_workspace, ["disc"])
    other = class_mapping_key(tiny_workspace, ["square"])
    assert set_class_mapping(tiny_workspace, "disc", imagenet=[853, 852]) == ClassMapping((852, 853))
    assert list_classes(tiny_workspace)["disc"] == [852, 853]  # older callers see the indices
    after_imagenet = class_mapping_key(tiny_workspace, ["disc"])
    set_class_mapping(tiny_workspace, "disc", in9="Dog")
    assert list_class_mappings(tiny_workspace)["disc"] == ClassMapping(in9="dog")  # other parts cleared
    after_in9 = class_mapping_key(tiny_workspace, ["disc"])
    set_class_mapping(tiny_workspace, "disc", label=" ball ")
    assert list_class_mappings(tiny_workspace)["disc"] == ClassMapping(label="ball")
    keys = {before, after_imagenet, after_in9, class_mapping_key(tiny_workspace, ["disc"])}
    assert len(keys) == 4
    assert class_mapping_key(tiny_workspace, ["square"]) == other  # only the remapped class's key moved


@pytest.mark.parametrize(
    "name, options, error, message",
    [
        ("nope", {"imagenet": [1]}, NotFoundError, "no class 'nope'.*classes: disc, square"),
        ("disc", {}, InvalidInputError, "give ImageNet indices, an IN-9 class or a custom label"),
        ("disc", {"imagenet": [1000]}, InvalidInputError, r"0..999; got \[1000\]"),
        ("disc", {"imagenet": []}, InvalidInputError, "0..999"),
        ("disc", {"in9": "cat"}, InvalidInputError, "IN-9 class must be one of dog, bird"),
    ],
)
def test_set_class_mapping_refuses_bad_input_and_writes_nothing(tiny_workspace, name, options, error, message):
    before = list_class_mappings(tiny_workspace)
    with pytest.raises(error, match=message):
        set_class_mapping(tiny_workspace, name, **options)
    assert list_class_mappings(tiny_workspace) == before


def test_add_classes_stores_full_mappings_and_plain_indices(tiny_workspace):
    add_classes(tiny_workspace, {"ball": ClassMapping((852,), "", "ball"), "lizard": ClassMapping(in9="reptile"), "old": [1, 2]})
    mappings = list_class_mappings(tiny_workspace)
    assert mappings["ball"] == ClassMapping((852,), "", "ball")
    assert mappings["lizard"] == ClassMapping(in9="reptile")
    assert mappings["old"] == ClassMapping((1, 2))


# -- what outputs a class counts as ----------------------------------------------------------
def test_an_in9_class_maps_to_its_output_and_to_its_imagenet_classes():
    mapping = {"pooch": ClassMapping(in9="dog")}
    assert in9_label_space().class_outputs(mapping) == {"pooch": [IN9_CLASSES.index("dog")]}
    indices = imagenet_label_space().class_outputs(mapping)["pooch"]
    assert indices == [*range(151, 171), *range(173, 269)]  # the official IN-9 map's dog classes
    assert all(in9_label_space().in9_table()[i] == 0 for i in indices)


def test_an_in9_class_wins_over_imagenet_indices_for_in9_models_only():
    mapping = {"odd": ClassMapping((340,), "fish")}  # zebra, which no IN-9 class holds
    assert in9_label_space().class_outputs(mapping) == {"odd": [IN9_CLASSES.index("fish")]}
    assert imagenet_label_space().class_outputs(mapping) == {"odd": [340]}


def test_a_label_maps_to_the_output_of_that_name(labels3):
    assert labels3.class_outputs({"tennis_ball": ClassMapping((852,), label="ball")}) == {"tennis_ball": [2]}
    assert labels3.class_outputs({"cat": ClassMapping()}) == {"cat": [0]}  # default: the class's own name
    with pytest.raises(InvalidInputError, match="label 'bal'"):
        labels3.class_outputs({"tennis_ball": ClassMapping(label="bal")})


def test_an_unmapped_class_names_the_real_controls():
    with pytest.raises(InvalidInputError) as raised:
        imagenet_label_space().class_outputs({"my_ball": []})
    message = str(raised.value)
    assert "'my_ball' (unmapped)" in message
    assert "class editor on the Data page" in message and "set_class_mapping(workspace, 'my_ball', imagenet=[...])" in message and "python -m analytics set-class" in message


def test_a_class_imported_unmapped_becomes_scorable_once_mapped(tiny_workspace):
    add_classes(tiny_workspace, {"my_ball": resolve_class("my_ball")})
    space = imagenet_label_space()
    with pytest.raises(InvalidInputError, match="my_ball"):
        space.class_outputs({"my_ball": list_class_mappings(tiny_workspace)["my_ball"]})
    set_class_mapping(tiny_workspace, "my_ball", in9="instrument", imagenet=[852])
    outputs = space.class_outputs({"my_ball": list_class_mappings(tiny_workspace)["my_ball"]})
    assert outputs == {"my_ball": [852]}
    mapped = {"my_ball": list_class_mappings(tiny_workspace)["my_ball"]}
    assert in9_label_space().class_outputs(mapped) == {"my_ball": [IN9_CLASSES.index("instrument")]}


def test_remapping_a_class_makes_its_legacy_runs_stale(run_workspace, run_ids):
    from analytics.runs import list_runs

    with run_workspace.transaction() as conn:  # runs stored before classes_key existed
        conn.execute("UPDATE runs SET classes_key = ''")
    assert not list_runs(run_workspace)["stale"].any()  # a legacy run counts as scored with the current mappings
    set_class_mapping(run_workspace, "disc", label="round thing")
    table = list_runs(run_workspace)
    assert table["stale"].all() and (table["classes_key"] != "").all()


def test_class_target_counts_list_every_class_and_the_stamp_follows_targets_and_mappings(tiny_workspace):
    from analytics.data import class_target_counts, targets_stamp

    assert class_target_counts(tiny_workspace) == {"disc": 3, "square": 3}
    stamp = targets_stamp(tiny_workspace)
    add_classes(tiny_workspace, {"ball": ClassMapping((852,))})
    assert class_target_counts(tiny_workspace) == {"ball": 0, "disc": 3, "square": 3}  # a class without targets counts 0
    assert targets_stamp(tiny_workspace) != stamp
    stamp = targets_stamp(tiny_workspace)
    set_class_mapping(tiny_workspace, "disc", imagenet=[1])
    assert targets_stamp(tiny_workspace) != stamp  # a remapped class: evaluations are stale
