"""The built-in ImageNet -> IN-9 maps: the official one (the default) entry by entry against the
Backgrounds Challenge's in_to_in9.json, the WordNet one as a named option, and IN-9-only classes
seen with their ImageNet indices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analytics.data import IN9_CLASSES, ClassMapping, imagenet_label_space, in9_label_space, list_classes
from analytics.data.datasets import add_classes
from analytics.data.label_spaces import DEFAULT_IN9_MAP, in9_imagenet_indices, in9_table
from analytics.exceptions import InvalidInputError

REFERENCE_IN9 = Path(__file__).resolve().parents[4] / "shared" / "reference" / "backgrounds_challenge" / "in_to_in9.json"
WORDNET_EXTRA = [80, 81, 82, 83, 84, 85, 86, 171, 172, 281, 282, 283, 284, 285, 575, 660]


@pytest.fixture
def reference() -> tuple[int, ...]:
    if not REFERENCE_IN9.is_file():
        pytest.skip(f"reference map {REFERENCE_IN9} is absent (it lives in ../shared/reference)")
    raw = json.loads(REFERENCE_IN9.read_text())
    return tuple(int(raw[str(i)]) for i in range(1000))


def test_the_default_map_is_the_challenges_file_entry_by_entry(reference):
    assert DEFAULT_IN9_MAP == "official"
    assert in9_table() == reference
    assert in9_label_space().in9_table() == reference
    assert imagenet_label_space().in9_table() == reference
    assert in9_label_space(REFERENCE_IN9).in9_mapping == reference  # the file itself still reads


def test_the_wordnet_map_is_an_option_with_16_more_classes(reference):
    wordnet = in9_label_space("wordnet")
    assert wordnet.in9_mapping == in9_table("wordnet")  # stored in full: a model registered with it keeps it
    assert sorted(i for i in range(1000) if wordnet.in9_mapping[i] != reference[i]) == WORDNET_EXTRA
    assert all(reference[i] == -1 for i in WORDNET_EXTRA)
    assert in9_label_space("official").in9_mapping is None  # the default, like no map given


def test_classes_read_through_the_default_map():
    space = in9_label_space()
    outputs = space.class_outputs({"beagle": [162], "violin": [889], "zebra+goldfish": [340, 1], "fish": []})
    assert outputs == {"beagle": [0], "violin": [6], "zebra+goldfish": [8], "fish": [8]}
    with pytest.raises(InvalidInputError, match="'tabby'"):
        space.class_outputs({"tabby": [281]})  # a domestic cat: no IN-9 class in the official map
    assert in9_label_space("wordnet").class_outputs({"tabby": [281]}) == {"tabby": [IN9_CLASSES.index("carnivore")]}


def test_in9_imagenet_indices():
    assert in9_imagenet_indices("dog") == (*range(151, 171), *range(173, 269))
    assert len(in9_imagenet_indices("dog", "wordnet")) == len(in9_imagenet_indices("dog")) + 2
    assert in9_imagenet_indices("cat") == ()
    with pytest.raises(InvalidInputError, match="official, wordnet"):
        in9_table("imagenet")


def test_an_in9_only_class_lists_its_imagenet_indices(tiny_workspace):
    """Issue 28: an IN-9 class folder (``00_dog``) is stored as IN-9 only; screening and keyword
    exclusion read ImageNet indices, so it lists those of the official map."""
    add_classes(tiny_workspace, {"00_dog": ClassMapping(in9="dog"), "own": ClassMapping((852,), "dog")})
    classes = list_classes(tiny_workspace)
    assert classes["00_dog"] == list(in9_imagenet_indices("dog"))
    assert classes["own"] == [852]  # explicit ImageNet indices win


def test_a_space_records_its_map_name_and_one_stored_without_keeps_the_wordnet_map_it_was_scored_with(reference, tmp_path):
    from analytics.data import LabelSpace
    from analytics.data.label_spaces import LEGACY_IN9_MAP
    from analytics.models import ModelSpec

    assert (in9_label_space().in9_map, in9_label_space("wordnet").in9_map, imagenet_label_space().in9_map) == ("official", "wordnet", "official")
    copied = tmp_path / "map.json"
    copied.write_text(REFERENCE_IN9.read_text())
    assert in9_label_space(copied).in9_map == in9_label_space(REFERENCE_IN9).in9_map != in9_label_space(wordnet_map_file(tmp_path)).in9_map
    assert in9_label_space(copied).in9_map.startswith("file:")
    for space in (in9_label_space(), in9_label_space("wordnet"), in9_label_space(copied)):
        assert LabelSpace.from_json(space.to_json()) == space

    # an IN-9 model registered while the built-in map was WordNet's stored no map at all
    legacy = {"kind": "in9", "names": list(IN9_CLASSES), "in9_mapping": None, "origin": "built-in"}
    old = LabelSpace.from_json(legacy)
    assert LEGACY_IN9_MAP == "wordnet" and old.in9_table() == in9_table("wordnet") != reference
    assert old.class_outputs({"whippet": [172]}) == {"whippet": [IN9_CLASSES.index("dog")]}  # as its saved runs scored it
    with pytest.raises(InvalidInputError, match="'whippet'"):
        in9_label_space().class_outputs({"whippet": [172]})  # a model registered now: the official map has no IN-9 class for it
    assert "registered before the official map" in old.in9_map_name
    # re-read and written back unchanged, so its content key, and with it its runs, stay current
    assert old.to_json() == legacy
    spec = {"name": "old", "source": "torchvision", "arch": "resnet18", "checkpoint": "m.pt", "label_space": legacy, "input_size": 224,
            "preprocessing": "imagenet", "embedding_layer": "avgpool", "n_params": 1, "backbone": None, "construction": None, "origin": ""}
    assert ModelSpec.from_json(spec).to_json() == spec
    # an ImageNet model of that time read IN-9-only classes through the same map
    imagenet_old = LabelSpace.from_json({"kind": "imagenet", "names": list(imagenet_label_space().names), "in9_mapping": None, "origin": ""})
    assert 281 in imagenet_old.class_outputs({"cat": ClassMapping(in9="carnivore")})["cat"]
    assert 281 not in imagenet_label_space().class_outputs({"cat": ClassMapping(in9="carnivore")})["cat"]


def wordnet_map_file(folder: Path) -> Path:
    """The WordNet map written as a challenge-format file (another file, another name)."""
    path = folder / "wordnet.json"
    path.write_text(json.dumps({str(i): v for i, v in enumerate(in9_table("wordnet"))}))
    return path
