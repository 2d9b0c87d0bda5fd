"""Runs of several models where some cannot score the suite's classes (issue 42.7)."""

from __future__ import annotations

import pytest

from analytics.data import custom_label_space
from analytics.exceptions import InvalidInputError
from analytics.inference import class_problems
from analytics.models import register_torchscript
from analytics.runs import list_runs, start_runs_that_can
from tests.fixtures.models import TINY_SUITE


@pytest.fixture
def pets(tiny_model_workspace, tiny_model_files, tmp_path) -> str:
    labels = tmp_path / "pets.txt"
    labels.write_text("cat\ndog\n")
    register_torchscript(tiny_model_workspace, "pets", checkpoint=tiny_model_files["tiny"], label_space=custom_label_space(labels), input_size=64)
    return "pets"


def test_class_problems_name_the_models_that_cannot_score_the_classes(tiny_model_workspace, pets):
    assert class_problems(tiny_model_workspace, ["tiny", pets, "fg-only"]).keys() == {pets}
    assert class_problems(tiny_model_workspace, [pets], TINY_SUITE)[pets].startswith("workspace class 'disc'")


def test_every_model_that_can_runs_and_the_others_are_reported(tiny_model_workspace, pets):
    started = start_runs_that_can(tiny_model_workspace, [pets, "fg-only"], TINY_SUITE, device="cpu")
    assert list(started.run_ids) == ["fg-only"] and list(started.failed) == [pets]
    assert "has no output" in started.failed[pets]
    assert list(list_runs(tiny_model_workspace)["model"]) == ["fg-only"]
    assert started.to_dict()["run_ids"] == list(started.run_ids.values())
    with pytest.raises(InvalidInputError, match="no model can score this suite's classes: pets: workspace class"):
        start_runs_that_can(tiny_model_workspace, [pets], TINY_SUITE, device="cpu")


def test_pages_open_on_the_real_models_that_can_score_the_classes(tiny_model_workspace, pets):
    from analytics.zoo import models_to_open_on

    assert models_to_open_on(tiny_model_workspace) == ["bg-only", "fg-only", "tiny"]  # every real one that can; not pets
