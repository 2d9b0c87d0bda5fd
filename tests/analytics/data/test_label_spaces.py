"""The built-in ImageNet -> IN-9 maps: the official one (the default) entry by entry against the
Backgrounds Challenge's in_to_in9.json, the WordNet one as a named option, and IN-9-only classes
seen with their ImageNet indices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analytics.data import (
    DEFAULT_IN9_MAP,
    IN9_CLASSES,
    ClassMapping,
    add_classes,
    imagenet_label_space,
    in9_imagenet_indices,
    in9_label_space,
    in9_table,
    list_classes,
)
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
