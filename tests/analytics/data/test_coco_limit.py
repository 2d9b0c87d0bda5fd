"""The instance limit of COCO and VOC imports (issue 48.2): an import that would make more targets
than :func:`analytics.data.instances.instance_limit` is refused in one line naming the count, the limit
and the ways out, before any image or mask is decoded, and nothing is written."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from analytics.data import coco, instances, list_targets
from analytics.data.coco import read_coco
from analytics.data.voc import read_voc
from analytics.exceptions import InvalidInputError
from tests.analytics.data.test_voc import write_voc
from tests.analytics.test_cli_coco import coco_args
from tests.analytics.test_cli_data import run, snapshot


@pytest.fixture
def nothing_decoded(monkeypatch) -> None:
    """Decoding an image or expanding a mask fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("decoded before the limit was checked")

    monkeypatch.setattr(coco, "read_image", refuse)
    monkeypatch.setattr(coco, "_bitmap", refuse)


def test_every_instance_past_the_limit_is_one_line_and_writes_nothing(capsys, tiny_workspace, coco_export, monkeypatch, nothing_decoded):
    monkeypatch.setattr(instances, "MAX_INSTANCES", 3)  # the export keeps 4 instances (2 on a.png), on 3 images
    before = snapshot(tiny_workspace)
    code, _, err = run(capsys, *coco_args(coco_export, tiny_workspace, "--all-instances"))
    assert code == 2 and err.count("\n") == 1
    assert (
        f"{coco_export.annotations}: 4 instances to import, past the limit of 3 targets per import; import the largest instance "
        "of each image instead of every instance (3 targets), choose fewer categories or a higher minimum area, or raise the limit: "
        "--max-instances 4 (the Data page: BACKDROP_MAX_INSTANCES=4 where the server starts)"
    ) in err  # the command line's flag: add-targets passes its names (analytics.commands.data.FLAGS)
    assert snapshot(tiny_workspace) == before


def test_a_new_workspace_is_not_created_for_a_refused_import(capsys, tmp_path, coco_export, nothing_decoded):
    args = coco_args(coco_export, SimpleNamespace(root=tmp_path / "new-ws"), "--all-instances", "--max-instances", "2")
    code, _, err = run(capsys, *args)
    assert code == 2 and "4 instances to import, past the limit of 2 targets per import" in err
    assert "largest instance" not in err  # 3 images: the largest of each would not fit either
    assert not (tmp_path / "new-ws").exists()


def test_the_largest_instance_fits_under_the_limit_and_the_option_raises_it(capsys, tiny_workspace, coco_export, monkeypatch):
    monkeypatch.setattr(instances, "MAX_INSTANCES", 3)
    code, out, err = run(capsys, *coco_args(coco_export, tiny_workspace))  # the largest of each image: 3 targets
    assert code == 0 and out["added"] == 3, err
    code, out, err = run(capsys, *coco_args(coco_export, tiny_workspace, "--all-instances", "--max-instances", "4"))
    assert code == 0 and out["added"] == 1 and len(out["rejected"]) == 3, err  # the other 3 are stored already
    assert len(list_targets(tiny_workspace)) == 6 + 4


def test_the_environment_sets_the_limit_and_a_bad_value_is_one_line(coco_export, monkeypatch, nothing_decoded):
    monkeypatch.setenv("BACKDROP_MAX_INSTANCES", "2")
    with pytest.raises(InvalidInputError, match=r"instances\.json: 4 instances to import, past the limit of 2 targets per import"):
        read_coco(coco_export.annotations, coco_export.images, all_instances=True)
    for bad in ("0", "many", "-3"):
        monkeypatch.setenv("BACKDROP_MAX_INSTANCES", bad)
        with pytest.raises(InvalidInputError, match=rf"^BACKDROP_MAX_INSTANCES must be a positive whole number of targets; got '{bad}'; unset it for the default 10000$"):
            read_coco(coco_export.annotations, coco_export.images)
    with pytest.raises(InvalidInputError, match=r"^max_instances must be a positive whole number of targets; got 0$"):
        read_coco(coco_export.annotations, coco_export.images, max_instances=0)


def test_a_voc_import_has_the_same_limit(tmp_path):
    voc = write_voc(tmp_path / "voc")
    every = len(read_voc(voc.root, size=36, all_instances=True).accepted)
    with pytest.raises(InvalidInputError, match=rf"{every} instances to import, past the limit of {every - 1} targets per import") as refused:
        read_voc(voc.root, size=36, all_instances=True, max_instances=every - 1)
    assert "\n" not in str(refused.value) and f"raise the limit: max_instances={every} (the Data page" in str(refused.value)
    assert "--" not in str(refused.value)  # Python's message names the parameter
